package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Row values in results are written as PostgreSQL writes records: text
// with record_out's quoting (answers recorded from PostgreSQL 15), binary
// as record_send (decoded by pgx); rows that are compared stay the
// engine's; a numeric field of a fixed scale is refused.
func TestRowValues(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE rv (time timestamptz NOT NULL, a int, b text)",
		"INSERT INTO rv VALUES ('2026-01-01 00:00:00+00', 1, 'x y'), ('2026-01-01 00:01:00+00', NULL, '')")
	for _, tc := range []struct{ query, want string }{
		{"select foo from (select 1 offset 0) as foo", "(1)\n"},
		{"select foo from (select null offset 0) as foo", "()\n"},
		{"select foo from (select 'xyzzy',1,null offset 0) as foo", "(xyzzy,1,)\n"},
		{"select x from (values (row(1, 2)), (row(1, 3))) _(x) union select x from (values (row(1, 2)), (row(1, 4))) _(x) order by 1", "(1,2)\n(1,3)\n(1,4)\n"},
		{`select row(1, 'a b', '', 'q"x', 'b\c', null, true, 1.5::float8, '2020-01-01 10:00+00'::timestamptz, row(2, 'in ner'))`,
			`(1,"a b","","q""x","b\\c",,t,1.5,"2020-01-01 10:00:00+00","(2,""in ner"")")` + "\n"},
		{"select r from rv r order by time", `("2026-01-01 00:00:00+00",1,"x y")` + "\n" + `("2026-01-01 00:01:00+00",,"")` + "\n"},
		{"select (1,2) = (1,2), (1,2) < (1,3), row(1,null) is null, (1,2) in ((1,2),(3,4))", "t|t|f|t\n"},
	} {
		if got := s.psql("SET TimeZone = 'UTC';\n"+tc.query+";\n", "-A", "-t", "-q"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.query, got, tc.want)
		}
	}
	// Binary, after a Describe: pgx decodes record_send into its fields.
	rows, err := c.Query(ctx, "SELECT row(7, 'seven', row(8, NULL))", pgx.QueryExecModeDescribeExec)
	if err != nil {
		t.Fatal(err)
	}
	var rec []any
	for rows.Next() {
		if rec, err = rows.Values(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rec); got != "[[7 seven [8 <nil>]]]" {
		t.Errorf("binary record: %s", got)
	}
	if _, err := c.Exec(ctx, "select q from (select 1, 3 union all select 2, 6.0) q"); pgCode(err) != "0A000" {
		t.Errorf("a row value with a numeric field of a fixed scale: %v, want 0A000", err)
	}
}
