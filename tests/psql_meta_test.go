package tests

import (
	"context"
	"strings"
	"testing"
)

// psql's meta-commands read pg_catalog; tsdb answers them for its tables.
func TestPsqlMetaCommands(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	s.psql("CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION, n BIGINT);\nCREATE TABLE mem (ts TIMESTAMP, free INTEGER);\n" +
		"CREATE TABLE k (ts TIMESTAMPTZ NOT NULL, id INT PRIMARY KEY, host TEXT, UNIQUE (host, ts));\n" +
		"CREATE VIEW busy AS SELECT host, avg(usage) AS avg_usage FROM cpu WHERE usage > 1 AND time > '2026-01-01' GROUP BY host;\n")
	tests := []struct {
		cmd  string
		want []string
	}{
		{`\dt`, []string{"public | cpu  | table | tsdb", "public | mem  | table | tsdb", "(3 rows)"}},
		// The index PostgreSQL builds for each key, as it shows them.
		{`\d k`, []string{"Indexes:", `"k_pkey" PRIMARY KEY, btree (id)`, `"k_host_ts_key" UNIQUE CONSTRAINT, btree (host, ts)`}},
		{`\di`, []string{"public | k_host_ts_key | index | tsdb  | k", "public | k_pkey        | index | tsdb  | k"}},
		{`\d cpu`, []string{`Table "public.cpu"`, "time   | timestamp with time zone |           | not null |", "usage  | double precision", "n      | bigint"}},
		{`\d+ mem`, []string{`Table "public.mem"`, "ts     | timestamp without time zone", "free   | integer", "Access method: heap"}},
		// A view's definition as PostgreSQL 15 writes it back (pretty, in
		// the session's zone, UTC here).
		{`\d+ busy`, []string{`View "public.busy"`, "View definition:\n SELECT cpu.host,\n    avg(cpu.usage) AS avg_usage\n   FROM cpu\n" +
			"  WHERE cpu.usage > 1::double precision AND cpu.\"time\" > '2026-01-01 00:00:00+00'::timestamp with time zone\n  GROUP BY cpu.host;"}},
		{`\dn`, []string{"public | tsdb"}},
		{`\l`, []string{"tsdb | tsdb  | UTF8"}},
		{`\conninfo`, []string{`You are connected to database "tsdb" as user "tsdb"`}},
		{"\\timing on\nSELECT 1;", []string{"Timing is on.", "Time:"}},
		{`\du`, []string{"List of roles", "tsdb      | Superuser"}},
		{`\df`, []string{"List of functions", "(0 rows)"}},
		{`\dp`, []string{"Access privileges", "public | cpu  | table |"}},
		{`\dT`, []string{"List of data types"}},
		{`\dt+ cpu`, []string{"public | cpu  | table | tsdb  | permanent   | heap          | 0 bytes |"}},
	}
	for _, tt := range tests {
		out := s.psql(tt.cmd + "\n")
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.cmd, w, out)
			}
		}
	}
	// A buffered row has a size: its Arrow bytes.
	out := s.psql("INSERT INTO mem VALUES ('2026-01-01', 7);\n\\dt+ mem\n")
	if !strings.Contains(out, "public | mem  | table | tsdb  | permanent   | heap          |") || !strings.Contains(out, " bytes |") || strings.Contains(out, "| 0 bytes |") {
		t.Errorf("\\dt+ of a table with a buffered row:\n%s", out)
	}
}

// \du lists the roles CREATE ROLE made and the predefined roles they were
// granted.
func TestPsqlListsRoles(t *testing.T) {
	s := startServer(t, t.TempDir(), nil, "TSDB_ADMIN_PASSWORD=adminpw")
	ctx := context.Background()
	admin := s.connectAs(ctx, "tsdb", "adminpw")
	for _, q := range []string{"CREATE ROLE agent LOGIN PASSWORD 'a'", "GRANT pg_write_all_data TO agent", "CREATE ROLE viewer LOGIN PASSWORD 'v'"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PGPASSWORD", "adminpw")
	out := s.psql(`\du` + "\n")
	for _, w := range []string{"agent     |", "{pg_write_all_data}", "tsdb      | Superuser", "viewer    |"} {
		if !strings.Contains(out, w) {
			t.Errorf(`\du lacks %q:`+"\n%s", w, out)
		}
	}
}
