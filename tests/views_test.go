package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// queryStrings runs q and returns its rows as "a|b" text.
func queryStrings(t *testing.T, c *pgx.Conn, q string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// Views: CREATE [OR REPLACE] [TEMP] VIEW, read wherever a table can be
// (joins, subqueries, prepared statements), columns fixed when the view is
// made, PostgreSQL's errors for what it refuses, DROP with RESTRICT and
// CASCADE, catalogs (psql's \dv, information_schema), temporary views
// private to their session, and views kept across a restart.
func TestViews(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE cpu (time timestamptz NOT NULL, host text, usage double precision, n int)",
		"INSERT INTO cpu VALUES ('2026-01-01 00:00:00+00', 'a', 1.5, 1), ('2026-01-01 00:01:00+00', 'b', 2.5, 2), ('2026-01-01 00:02:00+00', 'a', 3.5, 4)",
		"CREATE VIEW per_host AS SELECT host, avg(usage) AS u, count(*) FROM cpu GROUP BY host",
		"CREATE VIEW busy (h, uu) AS SELECT host, u FROM per_host WHERE u > 2")
	check := func(q string, want ...string) {
		t.Helper()
		if got := queryStrings(t, c, q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", q, got, want)
		}
	}
	check("SELECT * FROM per_host ORDER BY host", "a|2.5|2", "b|2.5|1")
	check("SELECT * FROM busy ORDER BY h", "a|2.5", "b|2.5")
	check("SELECT x.h, c.n FROM public.busy x JOIN cpu c ON c.host = x.h ORDER BY c.n", "a|1", "b|2", "a|4")
	check("SELECT (SELECT count(*) FROM busy), EXISTS (SELECT 1 FROM per_host WHERE host = 'b')", "2|true")
	// A WITH query of the same name hides the view.
	check("WITH busy AS (SELECT 1 AS x) SELECT * FROM busy", "1")
	// Extended protocol: Parse, Describe, binary results.
	if got := queryStrings(t, c, "SELECT uu FROM busy WHERE h = $1", pgx.QueryExecModeDescribeExec, "b"); fmt.Sprint(got) != "[2.5]" {
		t.Errorf("prepared query of a view: %q", got)
	}
	// Columns are fixed when the view is made, as PostgreSQL expands *.
	execAll(t, c, "CREATE VIEW everything AS SELECT * FROM cpu", "ALTER TABLE cpu ADD COLUMN extra text")
	check("SELECT count(*) FROM (SELECT * FROM everything) s", "3")
	if got := queryStrings(t, c, "SELECT * FROM everything LIMIT 1"); strings.Count(got[0], "|") != 3 {
		t.Errorf("a view of * got the table's new column: %q", got)
	}
	for _, tc := range []struct{ stmt, code string }{
		{"CREATE VIEW busy AS SELECT 1", "42P07"},
		{"CREATE VIEW cpu AS SELECT 1", "42P07"},
		{"CREATE OR REPLACE VIEW cpu AS SELECT 1", "42809"},
		{"CREATE TABLE busy (time timestamptz)", "42P07"},
		{"CREATE OR REPLACE VIEW per_host AS SELECT host FROM cpu", "42P16"},
		{"CREATE OR REPLACE VIEW per_host AS SELECT host, max(usage) AS v, count(*) FROM cpu GROUP BY host", "42P16"},
		{"CREATE VIEW two (a, b, c) AS SELECT 1, 2", "42601"},
		{"CREATE VIEW dup AS SELECT 1 AS a, 2 AS a", "42701"},
		{"CREATE VIEW broken AS SELECT nope FROM cpu", "42703"},
		{"CREATE VIEW broken AS SELECT * FROM missing", "42P01"},
		{"DROP TABLE busy", "42809"},
		{"DROP VIEW cpu", "42809"},
		{"DROP VIEW missing", "42P01"},
		{"DROP TABLE cpu", "2BP01"},
		{"DROP VIEW per_host", "2BP01"},
	} {
		if _, err := c.Exec(ctx, tc.stmt); pgCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.stmt, err, tc.code)
		}
	}
	// Columns may be added at the end.
	execAll(t, c, "CREATE OR REPLACE VIEW per_host AS SELECT host, avg(usage) AS u, count(*), max(n) AS m FROM cpu GROUP BY host",
		"DROP VIEW IF EXISTS missing")
	check("SELECT * FROM per_host ORDER BY host", "a|2.5|2|4", "b|2.5|1|2")
	check("SELECT table_name, table_type FROM information_schema.tables ORDER BY 1",
		"busy|VIEW", "cpu|BASE TABLE", "everything|VIEW", "per_host|VIEW")
	check("SELECT relkind FROM pg_class WHERE oid = 'busy'::regclass", "v")
	check("SELECT viewname FROM pg_views ORDER BY 1", "busy", "everything", "per_host")
	if out := s.psql(`\dv`); !strings.Contains(out, "busy") || !strings.Contains(out, "view") {
		t.Errorf(`\dv: %s`, out)
	}

	// TEMP views are the session's own; a view over one is temporary too.
	execAll(t, c, "CREATE TEMP VIEW mine AS SELECT n FROM cpu", "CREATE VIEW over_mine AS SELECT * FROM mine")
	check("SELECT count(*), max(n) FROM over_mine", "3|4")
	other := s.connect(ctx)
	if _, err := other.Exec(ctx, "SELECT * FROM mine"); pgCode(err) != "42P01" {
		t.Errorf("another session read a temporary view: %v", err)
	}

	// Kept across a restart; the temporary ones are not.
	s.stop()
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	check("SELECT * FROM busy ORDER BY h", "a|2.5", "b|2.5")
	if _, err := c.Exec(ctx, "SELECT * FROM over_mine"); pgCode(err) != "42P01" {
		t.Errorf("a temporary view outlived its session: %v", err)
	}
	// CASCADE drops the views reading the table, through other views.
	execAll(t, c, "DROP TABLE cpu CASCADE")
	check("SELECT count(*) FROM information_schema.tables", "0")
	check("SELECT count(*) FROM pg_views", "0")
}
