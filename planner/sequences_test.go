package planner

import "testing"

// Temporary sequences are the session's: nextval, currval and setval find
// them by their name, another session does not, and a select list's
// nextval runs after ORDER BY and LIMIT, for the rows they keep (and the
// ones OFFSET skips), as PostgreSQL's plan computes it.
func TestTemporarySequences(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE TEMP SEQUENCE s", "tag:CREATE SEQUENCE"},
		{0, "SELECT nextval('s'), nextval('s')", "1|2"},
		{0, "SELECT currval('s'), currval('s'::regclass)", "2|2"},
		{1, "SELECT nextval('s')", "err:42P01"},
		{0, "SELECT host, nextval('s') FROM m ORDER BY v DESC LIMIT 2", "d|3;c|4"},
		{0, "SELECT currval('s')", "4"},
		{0, "SELECT host, nextval('s') AS n FROM m ORDER BY v LIMIT 1 OFFSET 2", "c|7"},
		{0, "SELECT setval('s', 100), nextval('s')", "100|101"},
		// A filter over a subquery calls it once a row of the subquery.
		{0, "SELECT * FROM (SELECT DISTINCT host FROM m) ss WHERE nextval('s') > 0 ORDER BY 1", "a;b;c;d"},
		{0, "SELECT nextval('s')", "106"},
		{0, "CREATE TEMP SEQUENCE s", "err:42P07"},
		{0, "CREATE TEMP SEQUENCE IF NOT EXISTS s", "tag:CREATE SEQUENCE"},
		{0, "CREATE TEMP SEQUENCE b START 5 INCREMENT BY 3 MAXVALUE 11", "tag:CREATE SEQUENCE"},
		{0, "SELECT nextval('b'), nextval('b'), nextval('b')", "5|8|11"},
		{0, "SELECT nextval('b')", "err:2200H"},
		{0, "CREATE TEMP SEQUENCE fresh", "tag:CREATE SEQUENCE"},
		{0, "SELECT currval('fresh')", "err:55000"},
		{0, "SELECT lastval()", "err:0A000"},
		{0, "CREATE SEQUENCE kept", "err:0A000"},
		{0, "DROP SEQUENCE s, b", "tag:DROP SEQUENCE"},
		{0, "SELECT nextval('s')", "err:42P01"},
		{0, "DROP SEQUENCE IF EXISTS s", "tag:DROP SEQUENCE"},
		{0, "DISCARD TEMP", "tag:DISCARD TEMP"},
		{0, "SELECT nextval('fresh')", "err:42P01"},
	})
}

// A sequence's name is read as regclass input reads it, and a prepared
// statement's call finds the sequence each time it runs.
func TestSequenceNames(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, `CREATE TEMP SEQUENCE "MySeq"`, "tag:CREATE SEQUENCE"},
		{0, "CREATE TEMP SEQUENCE s", "tag:CREATE SEQUENCE"},
		{0, `SELECT nextval('"MySeq"'), nextval('S'), nextval('pg_temp.s')`, "1|1|2"},
		{0, "SELECT nextval('MySeq')", "err:42P01"},
		{0, "CREATE TEMP TABLE s (a int)", "err:42P07"},
		{0, "BEGIN", "tag:BEGIN"},
		{0, "CREATE TEMP SEQUENCE inblock", "err:25001"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
	})
	// Prepared (the extended protocol's path): executed twice, a value
	// each time.
	p, err := e.s.Prepare(t.Context(), "SELECT nextval('s')", nil)
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(3); want <= 4; want++ {
		var got any
		err := e.s.ExecutePrepared(t.Context(), p, nil, func(r *Result) error {
			defer r.Rows.Close()
			for r.Rows.Next() {
				got = r.Rows.Values()[0]
			}
			return r.Rows.Err()
		})
		if err != nil || got != want {
			t.Fatalf("prepared nextval: %v %v, want %d", got, err, want)
		}
	}
}
