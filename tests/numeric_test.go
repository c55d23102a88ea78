package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// numeric(p, s) columns: every way a value arrives (literals, text and
// binary parameters, COPY text and binary, INSERT … SELECT, UPDATE) keeps
// it to the column's scale, rounding half away from zero as PostgreSQL
// does; a value too wide is 22003; the values survive a restart and a
// flush, read back by chDB as Delta decimals.
func TestNumericColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE px (time TIMESTAMPTZ NOT NULL, sym TEXT, price NUMERIC(10,2), qty DECIMAL(18))",
		"INSERT INTO px VALUES ('2026-12-01 00:00:01+00', 'lit', 1.005, 100), ('2026-12-01 00:00:02+00', 'str', '-2.345', '7')")
	if _, err := c.Exec(ctx, "INSERT INTO px VALUES ($1, $2, $3, $4)", time.Date(2026, 12, 1, 0, 0, 3, 0, time.UTC), "param", "12345678.994", 1); err != nil {
		t.Fatal(err)
	}
	var bin pgtype.Numeric
	if err := bin.Scan("0.125"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO px VALUES ($1, $2, $3::numeric, 2)", time.Date(2026, 12, 1, 0, 0, 4, 0, time.UTC), "binary", bin); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"px"}, []string{"time", "sym", "price", "qty"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "copy-binary", bin, int64(3)},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:06+00\tcopy-text\t-0.005\t4\n"), "COPY px FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO px SELECT time + interval '1 hour', sym || '-x2', price * 2, qty FROM px WHERE sym = 'lit'")
	for _, stmt := range []string{
		"INSERT INTO px VALUES ('2026-12-01 00:00:09+00', 'wide', 123456789.5, 1)",
		"INSERT INTO px VALUES ('2026-12-01 00:00:09+00', 'wide', '99999999.995', 1)",
	} {
		if _, err := c.Exec(ctx, stmt); pgCode(err) != "22003" {
			t.Errorf("%s: %v, want 22003", stmt, err)
		}
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:09+00\twide\t100000000\t1\n"), "COPY px FROM STDIN"); pgCode(err) != "22003" {
		t.Errorf("COPY of a value too wide: %v, want 22003", err)
	}
	want := []string{
		"lit|1.01|100", "str|-2.35|7", "param|12345678.99|1", "binary|0.13|2", "copy-binary|0.13|3", "copy-text|-0.01|4", "lit-x2|2.02|100",
	}
	check := func(stage string) {
		t.Helper()
		got := readerRows(t, c, "SELECT sym, price::text, qty::text FROM px ORDER BY time")
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %v, want %v", stage, got, want)
		}
	}
	check("buffered")
	var typ string
	if err := c.QueryRow(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'px'::regclass AND attname = 'price'").Scan(&typ); err != nil || typ != "numeric(10,2)" {
		t.Fatalf("format_type: %q, %v", typ, err)
	}
	c.Close(ctx)
	s.stop()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	c = s.connect(ctx)
	defer c.Close(ctx)
	check("after a restart (WAL replay)")
	execAll(t, c, "CHECKPOINT", "UPDATE px SET price = price + 0.004 WHERE sym = 'str'")
	want[1] = "str|-2.35|7" // -2.346 rounds back to -2.35
	check("flushed, after UPDATE")
	execAll(t, c, "VACUUM px")
	check("after VACUUM")

	table, _ := filepath.Abs(filepath.Join(dir, "tables", "px"))
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(
		"SELECT sym, toString(price) AS price, toString(qty) AS qty FROM deltaLakeLocal('%s') ORDER BY time", table)), []string{"sym", "price", "qty"})
	var trimmed []string
	for _, w := range want {
		// chDB prints decimals without trailing zeros.
		parts := strings.Split(w, "|")
		if strings.Contains(parts[1], ".") {
			parts[1] = strings.TrimSuffix(strings.TrimRight(parts[1], "0"), ".")
		}
		trimmed = append(trimmed, strings.Join(parts, "|"))
	}
	if strings.Join(got, ",") != strings.Join(trimmed, ",") {
		t.Fatalf("chDB: %v, want %v", got, trimmed)
	}
}

// bytea columns: text by PostgreSQL's input rules (hex and escape formats)
// whichever path a value takes (literals, expressions evaluated by the
// engine, parameters, COPY text and binary), bytes kept exactly through a
// restart and a flush, and chDB reading the same bytes from the Delta
// binary column.
func TestByteaColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE bl (time TIMESTAMPTZ NOT NULL, k TEXT, b BYTEA)",
		`INSERT INTO bl VALUES ('2026-12-01 00:00:01+00', 'hex', '\x00ff10'), ('2026-12-01 00:00:02+00', 'escape', 'abc\000\\')`,
		`INSERT INTO bl VALUES (TIMESTAMPTZ '2026-12-01 00:00:03+00' + INTERVAL '0 s', 'engine', '\x0a0b'), (TIMESTAMPTZ '2026-12-01 00:00:04+00' + INTERVAL '0 s', 'decode', decode('c0ffee', 'hex'))`)
	if _, err := c.Exec(ctx, "INSERT INTO bl VALUES ($1, $2, $3)", time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "param", []byte{0, 1, 2, 255}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"bl"}, []string{"time", "k", "b"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 6, 0, time.UTC), "copy-binary", []byte{'\\', 'x', 0}},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:07+00\tcopy-text\t\\\\x7f80\n"), "COPY bl FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "UPDATE bl SET b = b || '\\x99'::bytea WHERE k = 'hex'")
	want := []string{"hex|00ff1099", "escape|616263005c", "engine|0a0b", "decode|c0ffee", "param|000102ff", "copy-binary|5c7800", "copy-text|7f80"}
	check := func(stage string) {
		t.Helper()
		got := readerRows(t, c, "SELECT k, encode(b, 'hex') FROM bl ORDER BY time")
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %v, want %v", stage, got, want)
		}
	}
	check("buffered")
	c.Close(ctx)
	s.stop()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	c = s.connect(ctx)
	defer c.Close(ctx)
	check("after a restart")
	execAll(t, c, "CHECKPOINT")
	check("flushed")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "bl"))
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(
		"SELECT k, lower(hex(b)) AS h FROM deltaLakeLocal('%s') ORDER BY time", table)), []string{"k", "h"})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("chDB: %v, want %v", got, want)
	}
}
