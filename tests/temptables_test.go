package tests

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Temporary tables: the session's own, without a time column, with
// PostgreSQL's constraints and input rules, hiding a table of the store
// by their name, gone when the session ends.
func TestTemporaryTables(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c,
		"CREATE TABLE f (ts timestamptz NOT NULL, f1 float8)",
		"INSERT INTO f VALUES ('2026-01-01', 42)",
		"CREATE TEMP TABLE f (f1 float8 PRIMARY KEY, n int DEFAULT 7 CHECK (n > 0), s varchar(3))",
		// PostgreSQL's float input (spaces around the number), defaults
		// for the columns not given, varchar(n)'s trailing spaces cut.
		"INSERT INTO f (f1) VALUES (' 0.0 '), ('1004.30 ')",
		"INSERT INTO f VALUES (-34.84, 2, 'ab  ')",
	)
	check := func(q string, want ...string) {
		t.Helper()
		if got := queryStrings(t, c, q); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
	check("SELECT f1, n, s FROM f ORDER BY f1", "-34.84|2|ab ", "0|7|<nil>", "1004.3|7|<nil>")
	// The store's f is still there, by its schema's name.
	check("SELECT f1 FROM public.f", "42")
	for _, tc := range []struct{ stmt, code string }{
		{"INSERT INTO f VALUES (0)", "23505"},
		{"INSERT INTO f VALUES (5, -1)", "23514"},
		{"INSERT INTO f VALUES (6, 1, 'abcd')", "22001"},
		{"UPDATE f SET s = 'wxyz'", "22001"},
		{"INSERT INTO f VALUES ('x')", "22P02"},
		{"CREATE TEMP TABLE f (a int)", "42P07"},
		{"CREATE TEMP TABLE g (a int REFERENCES f (f1))", "0A000"},
	} {
		if _, err := c.Exec(ctx, tc.stmt); pgCode(err) != tc.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tc.stmt, err, tc.code)
		}
	}
	execAll(t, c,
		"UPDATE f SET n = n + 1 WHERE f1 > 0",
		"DELETE FROM f WHERE f1 < 0",
		"CREATE TEMP TABLE g AS SELECT f1 * 2 AS d FROM f",
		"CREATE VIEW gv AS SELECT sum(d) AS total FROM g",
		"INSERT INTO f VALUES (7, 1) ON CONFLICT (f1) DO NOTHING",
		"INSERT INTO f VALUES (0, 1) ON CONFLICT (f1) DO UPDATE SET n = 100",
	)
	check("SELECT f1, n FROM f ORDER BY f1", "0|100", "7|1", "1004.3|8")
	// A subquery in DO UPDATE SET is computed first (the engine takes
	// none there), reading the store's tables too; one that reads the row
	// is refused.
	execAll(t, c, "INSERT INTO f VALUES (7, 1) ON CONFLICT (f1) DO UPDATE SET n = (SELECT f1 FROM public.f)::int + 1")
	check("SELECT n FROM f WHERE f1 = 7", "43")
	if _, err := c.Exec(ctx, "INSERT INTO f VALUES (7, 1) ON CONFLICT (f1) DO UPDATE SET n = (SELECT excluded.n + 1)"); pgCode(err) != "0A000" {
		t.Errorf("DO UPDATE SET with a subquery of the row: %v, want 0A000", err)
	}
	execAll(t, c, "UPDATE f SET n = 1 WHERE f1 = 7")
	check("SELECT total FROM gv", "2008.6")
	// A table made of a query whose result tsdb prints with per-value
	// scales or exact averages holds the values, which take arithmetic.
	execAll(t, c, "CREATE TEMP TABLE h AS SELECT x, (SELECT avg(y) FROM (VALUES (1), (2)) w(y)) AS a FROM (VALUES (1), (2.5)) v(x)")
	check("SELECT (x + 1)::text, (a + 1)::text FROM h ORDER BY x", "2.0|2.5", "3.5|2.5")
	// The catalogs list them in pg_temp_1, as psql's \d reads them.
	check("SELECT table_schema, table_type FROM information_schema.tables WHERE table_name = 'g'", "pg_temp_1|LOCAL TEMPORARY")
	check("SELECT c.relpersistence, n.nspname, a.attname, a.attnotnull FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid WHERE c.oid = 'f'::regclass AND a.attnum = 1",
		"t|pg_temp_1|f1|true")
	// A view of a temporary table is temporary too.
	check("SELECT count(*) FROM pg_views WHERE viewname = 'gv'", "1")
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("8\t3\n9\t\\N\n"), "COPY f (f1, n) FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	check("SELECT count(*), sum(n)::text FROM f", "5|112")
	// A transaction block may not write one: ROLLBACK could not undo it.
	execAll(t, c, "BEGIN")
	if _, err := c.Exec(ctx, "INSERT INTO f VALUES (10, 1)"); pgCode(err) != "0A000" {
		t.Errorf("INSERT in a block: %v, want 0A000", err)
	}
	execAll(t, c, "ROLLBACK")

	// Another session sees neither the table nor the view.
	other := s.connect(ctx)
	check2 := func(q string, want ...string) {
		t.Helper()
		if got := queryStrings(t, other, q); !slices.Equal(got, want) {
			t.Errorf("other session: %s = %q, want %q", q, got, want)
		}
	}
	check2("SELECT f1 FROM f", "42")
	if _, err := other.Exec(ctx, "SELECT * FROM g"); pgCode(err) != "42P01" {
		t.Errorf("other session reads g: %v", err)
	}
	execAll(t, c, "DROP TABLE g CASCADE")
	if _, err := c.Exec(ctx, "SELECT * FROM g"); pgCode(err) != "42P01" {
		t.Errorf("dropped g: %v", err)
	}
	// DISCARD TEMP (and DISCARD ALL, a pooler's reset) drops them.
	execAll(t, c, "CREATE TEMP TABLE d (x int)", "CREATE TEMP VIEW dv AS SELECT 1 AS one", "DISCARD TEMP")
	for _, q := range []string{"SELECT * FROM d", "SELECT * FROM dv"} {
		if _, err := c.Exec(ctx, q); pgCode(err) != "42P01" {
			t.Errorf("after DISCARD TEMP, %s: %v", q, err)
		}
	}
	// The session's end drops them: a new session on the pooled engine
	// connection finds the store's f.
	c.Close(ctx)
	other.Close(ctx)
	for range 3 {
		n := s.connect(ctx)
		rows := queryStrings(t, n, "SELECT f1 FROM f")
		if !slices.Equal(rows, []string{"42"}) {
			t.Errorf("a new session reads f as %q", rows)
		}
		n.Close(ctx)
	}
}

// Temporary tables through the extended protocol: parameters in INSERT,
// UPDATE and SELECT, prepared and described as for any table.
func TestTemporaryTablesExtended(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	x := pgx.QueryExecModeDescribeExec // the extended protocol, binary results
	if _, err := c.Exec(ctx, "CREATE TEMP TABLE k (id int PRIMARY KEY, v text, at timestamptz)"); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"a", "b", "c"} {
		if _, err := c.Exec(ctx, "INSERT INTO k VALUES ($1, $2, $3)", x, i, v, "2026-01-0"+string(rune('1'+i))+" 00:00:00+00"); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if _, err := c.Exec(ctx, "UPDATE k SET v = $1 WHERE id = $2", x, "z", 2); err != nil {
		t.Fatal(err)
	}
	var n int
	var v string
	if err := c.QueryRow(ctx, "SELECT count(*), max(v) FROM k WHERE id >= $1", x, 1).Scan(&n, &v); err != nil || n != 2 || v != "z" {
		t.Errorf("count, max = %d, %q, %v; want 2, z", n, v, err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO k VALUES ($1, $2, now())", x, 1, "dup"); pgCode(err) != "23505" {
		t.Errorf("duplicate key through a parameter: %v", err)
	}
}

// Columns named with words the engine reserves (at, by, map) work in
// queries as written, simple or prepared.
func TestEngineKeywordNames(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE kk (ts timestamptz NOT NULL, at int, map text, by int)",
		"INSERT INTO kk VALUES ('2026-01-01', 1, 'm', 2)", "UPDATE kk SET map = 'q' WHERE by = 2")
	for _, mode := range []any{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		var at, by int
		var m string
		if err := c.QueryRow(ctx, "SELECT at, map, by FROM kk WHERE at = 1 ORDER BY by", mode).Scan(&at, &m, &by); err != nil || at != 1 || m != "q" || by != 2 {
			t.Errorf("%v: %d %q %d %v", mode, at, m, by, err)
		}
	}
}
