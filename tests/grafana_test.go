package tests

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The queries Grafana's PostgreSQL data source sends, replayed through pgx
// as simple queries the way Grafana does.
func TestGrafanaQueries(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=prefer", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, hostname TEXT, usage_user DOUBLE PRECISION)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO cpu SELECT '2026-01-01'::timestamptz + i * interval '10 seconds', 'host_' || (i % 3), i % 100 FROM range(0, 4320) t(i)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	// Health checks.
	for _, q := range []string{"-- ping", ";"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
	}
	var version int
	if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int/100 as version").Scan(&version); err != nil || version != 1600 {
		t.Fatalf("version: %d %v", version, err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'timescaledb'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("pg_extension: %d %v", n, err)
	}
	searchPath := `quote_ident(table_schema) IN (SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), array_upper(string_to_array(current_setting('search_path'),','),1)) as i, string_to_array(current_setting('search_path'),',') s)`
	var tables []string
	rows, err := c.Query(ctx, "SELECT quote_ident(table_name) as \"table\" FROM information_schema.tables WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') AND table_type = 'BASE TABLE' AND "+searchPath+" ORDER BY table_name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	if rows.Err() != nil || strings.Join(tables, ",") != "cpu" {
		t.Fatalf("table discovery: %v %v", tables, rows.Err())
	}
	var cols []string
	rows, err = c.Query(ctx, "SELECT quote_ident(column_name) as \"column\", data_type as \"type\" FROM information_schema.columns WHERE quote_ident(table_name) = 'cpu' AND "+searchPath+" ORDER BY ordinal_position")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, typ string
		rows.Scan(&name, &typ)
		cols = append(cols, name+":"+typ)
	}
	// time is a keyword PostgreSQL's quote_ident quotes (PostgreSQL 15
	// answers "time" here too); Grafana's query builder writes it so.
	if want := `"time":timestamp with time zone,hostname:text,usage_user:double precision`; rows.Err() != nil || strings.Join(cols, ",") != want {
		t.Fatalf("column discovery: %v %v", cols, rows.Err())
	}
	// Panel queries after macro expansion; results sorted by time with
	// timestamptz/float8 OIDs and SELECT n tags.
	panels := []struct {
		q    string
		rows int
		oids []uint32
	}{
		{`SELECT $__time AS "time", avg(usage_user) AS "usage" FROM cpu WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-01T06:00:00.123Z' GROUP BY 1 ORDER BY 1`, 0, nil},
		{`SELECT floor(extract(epoch from time)/60)*60 AS "time", avg(usage_user) AS "usage" FROM cpu WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-01T06:00:00.123Z' GROUP BY 1 ORDER BY 1`, 361, []uint32{701, 701}},
		{`SELECT time_bucket('60.000s', time) AS "time", hostname AS metric, avg(usage_user) AS "value" FROM cpu WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-01T01:00:00Z' GROUP BY 1, 2 ORDER BY 1, 2`, 60*3 + 1, []uint32{1184, 25, 701}},
		{`SELECT time AS "time", usage_user FROM cpu WHERE time >= to_timestamp(1767225600) AND time < to_timestamp(1767225660) ORDER BY 1`, 6, []uint32{1184, 701}},
		{`SELECT extract(epoch from time) AS "time", usage_user FROM cpu WHERE hostname = 'host_1' ORDER BY 1 LIMIT 5`, 5, nil},
	}
	for _, p := range panels {
		if strings.Contains(p.q, "$__") {
			continue // the raw macro form is expanded by Grafana before sending
		}
		rows, err := c.Query(ctx, p.q)
		if err != nil {
			t.Fatalf("%s: %v", p.q, err)
		}
		if p.oids != nil {
			for i, fd := range rows.FieldDescriptions() {
				if fd.DataTypeOID != p.oids[i] {
					t.Errorf("%s: column %s OID %d, want %d", p.q, fd.Name, fd.DataTypeOID, p.oids[i])
				}
			}
		}
		got := 0
		last := math.Inf(-1)
		for rows.Next() {
			vals, _ := rows.Values()
			if k := sortKey(vals[0]); k < last {
				t.Errorf("%s: not sorted by time", p.q)
			} else {
				last = k
			}
			got++
		}
		if rows.Err() != nil || got != p.rows || rows.CommandTag().String() != fmt.Sprintf("SELECT %d", p.rows) {
			t.Errorf("%s: %d rows (%v), tag %q; want %d", p.q, got, rows.Err(), rows.CommandTag(), p.rows)
		}
	}
}

// sortKey orders a time column whether it is a timestamp or epoch seconds.
func sortKey(v any) float64 {
	switch x := v.(type) {
	case time.Time:
		return float64(x.UnixMicro()) / 1e6
	case float64:
		return x
	}
	return math.NaN()
}
