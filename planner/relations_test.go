package planner

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"tsdb/internal/sqlerr"
)

// 'name'::regclass is the table's OID, as pg_class and pg_attribute give
// it, and a name that is no table fails as PostgreSQL fails it.
func TestRegclassLiterals(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []struct {
		q, want, code string
	}{
		{q: "SELECT count(*) FROM pg_attribute WHERE attrelid = 'cpu'::regclass", want: "4"},
		{q: "SELECT relname FROM pg_class WHERE oid = 'public.cpu'::regclass", want: "cpu"},
		{q: "SELECT relname FROM pg_class WHERE oid = 'cpu'::regclass::oid", want: "cpu"},
		{q: `SELECT relname FROM pg_class WHERE oid = '"cpu"'::regclass`, want: "cpu"},
		{q: "SELECT relname FROM pg_class WHERE oid = 'CPU'::pg_catalog.regclass", want: "cpu"},
		{q: "SELECT relname FROM pg_class WHERE oid = CAST('cpu' AS regclass)", want: "cpu"},
		{q: "SELECT 'pg_class'::regclass = 'pg_catalog.pg_class'::regclass", want: "true"},
		{q: "SELECT count(*) FROM pg_class c WHERE c.oid::regclass::oid = c.oid AND relnamespace = 2200", want: "1"},
		{q: "SELECT count(*) FROM pg_class c WHERE c.oid::regclass::oid <> c.oid", want: "0"},
		{q: "SELECT 'pg_class'::regclass::oid, 'pg_catalog.pg_type'::regclass::oid", want: "1259|1247"},
		{q: "SELECT relname FROM pg_class WHERE oid = (SELECT oid FROM pg_class WHERE relname = 'cpu')::text::regclass", want: "cpu"},
		{q: `SELECT 1 WHERE 1 = '"CPU"'::regclass`, code: sqlerr.UndefinedTable},
		{q: "SELECT 'nope'::regclass", code: sqlerr.UndefinedTable},
		{q: "SELECT 'other.cpu'::regclass", code: sqlerr.UndefinedTable},
		{q: "SELECT 'a.b.c'::regclass", code: sqlerr.InvalidName},
		{q: `SELECT '"cpu'::regclass`, code: sqlerr.InvalidName},
		{q: "SELECT 'cpu.'::regclass", code: sqlerr.InvalidName},
	}
	for _, tt := range tests {
		if tt.code != "" {
			if _, err := e.run(tt.q); sqlerr.Code(err) != tt.code {
				t.Errorf("%s: got %v, want SQLSTATE %s", tt.q, err, tt.code)
			}
			continue
		}
		if got := e.rows(tt.q); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.q, got, tt.want)
		}
	}
	// The session is still usable after the errors.
	if got := e.rows("SELECT relname FROM pg_class WHERE oid = 'cpu'::regclass"); got != "cpu" {
		t.Fatalf("after the errors: %s", got)
	}
}

// The size functions give what a table's rows take: the buffered rows'
// Arrow bytes, then the bytes of its data files once flushed.
func TestRelationSizes(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION)")
	e.must("CREATE TABLE mem (time TIMESTAMPTZ NOT NULL, free BIGINT)")
	if got := e.rows("SELECT pg_total_relation_size('cpu'), pg_table_size('mem'), pg_size_pretty(pg_relation_size('cpu'))"); got != "0|0|0 bytes" {
		t.Fatalf("empty tables: %s", got)
	}
	e.must("INSERT INTO cpu VALUES ('2026-01-01 00:00:00+00', 'a', 0.5), ('2026-01-01 00:00:10+00', 'b', 1.5)")
	buffered, err := strconv.ParseInt(e.rows("SELECT pg_table_size('cpu'::regclass)"), 10, 64)
	if err != nil || buffered <= 0 {
		t.Fatalf("buffered size %d, %v", buffered, err)
	}
	e.must("CHECKPOINT")
	var onDisk int64
	files, _ := filepath.Glob(filepath.Join(e.storeDir(), "tables", "cpu", "*.parquet"))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	if len(files) != 1 {
		t.Fatalf("data files after CHECKPOINT: %v", files)
	}
	want := strconv.FormatInt(onDisk, 10)
	tests := []queryRows{
		{"SELECT pg_total_relation_size('cpu')", want},
		{"SELECT pg_relation_size('public.cpu')", want},
		{"SELECT pg_catalog.pg_table_size(c.oid) FROM pg_class c WHERE c.relname = 'cpu'", want},
		{"SELECT relname, pg_table_size(oid) FROM pg_class WHERE relnamespace = 2200 ORDER BY relname", "cpu|" + want + ";mem|0"},
		// The catalog relations take no storage.
		{"SELECT pg_table_size('pg_class'), count(*) FROM pg_class WHERE relnamespace = 11 AND pg_table_size(oid) = 0", "0|29"},
		{"SELECT pg_indexes_size('cpu')", "0"},
		// Names the query computes, as a "table sizes" query writes them.
		{"SELECT table_name, pg_total_relation_size(quote_ident(table_name)) FROM information_schema.tables ORDER BY table_name", "cpu|" + want + ";mem|0"},
		{"SELECT pg_relation_size('public' || '.' || 'cpu')", want},
		{"SELECT pg_table_size(12345)", "NULL"},
	}
	e.expectRows("", tests)
	if _, err := e.run("SELECT pg_table_size('nope')"); sqlerr.Code(err) != sqlerr.UndefinedTable {
		t.Fatalf("size of no table: %v", err)
	}
	// Sizes change with every write; asking for them again reads them
	// fresh and keeps the session's prepared plans.
	const counted = "SELECT count(*) FROM cpu"
	e.s.noFastAgg = true // a plan the engine prepared
	e.must(counted)
	e.must("INSERT INTO cpu VALUES ('2026-01-01 00:00:20+00', 'c', 2.5)")
	if got := e.rows("SELECT pg_total_relation_size('cpu') > " + want); got != "true" {
		t.Fatalf("size after a buffered row: %s", got)
	}
	if _, ok := e.s.plans[counted]; !ok {
		t.Fatal("a size query dropped the session's prepared plans")
	}
}

// pg_size_pretty rounds as PostgreSQL's does.
func TestSizePretty(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		bytes int64
		want  string
	}{
		{0, "0 bytes"}, {10239, "10239 bytes"}, {10240, "10 kB"}, {10751, "10 kB"}, {10752, "11 kB"},
		{15 << 20, "15 MB"}, {123456789012, "115 GB"}, {-10240, "-10 kB"}, {1 << 60, "1024 PB"},
	}
	for _, tt := range tests {
		if got := e.rows("SELECT pg_size_pretty(" + strconv.FormatInt(tt.bytes, 10) + ")"); got != tt.want {
			t.Errorf("pg_size_pretty(%d) = %q, want %q", tt.bytes, got, tt.want)
		}
	}
}
