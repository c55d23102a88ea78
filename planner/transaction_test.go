package planner

import (
	"strings"
	"testing"

	"tsdb/internal/sqlerr"
)

// A transaction block keeps PostgreSQL's rules: after an error, only its
// end runs, and COMMIT then answers ROLLBACK. Writes cannot be undone
// (every statement is durable when it runs), so ROLLBACK warns after them.
func TestTransactionBlock(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	steps := []struct {
		q       string
		tag     string // the last result's tag, or the error's SQLSTATE
		warning string // a part of the warning, if one is expected
	}{
		{q: "BEGIN", tag: "BEGIN"},
		{q: "SELECT count(*) FROM cpu", tag: "SELECT"},
		{q: "SELECT * FROM nope", tag: sqlerr.UndefinedTable},
		{q: "SELECT 1", tag: sqlerr.InFailedTransaction},
		{q: "INSERT INTO cpu VALUES ('2026-01-02 00:00:00+00', 'x', 1, 1)", tag: sqlerr.InFailedTransaction},
		{q: "COMMIT", tag: "ROLLBACK"},
		{q: "SELECT 1", tag: "SELECT"},
		{q: "BEGIN", tag: "BEGIN"},
		{q: "BEGIN", tag: "BEGIN", warning: "already a transaction in progress"},
		{q: "INSERT INTO cpu VALUES ('2026-01-02 00:00:00+00', 'x', 1, 1)", tag: "INSERT 0 1"},
		{q: "INSERT INTO cpu (time, host) SELECT time, 'y' FROM cpu WHERE host = 'a'", tag: "INSERT 0 1"},
		{q: "ROLLBACK", tag: "ROLLBACK", warning: "the 2 writing statements of this block were applied"},
		{q: "BEGIN", tag: "BEGIN"},
		{q: "DELETE FROM cpu WHERE host = 'nobody'", tag: "DELETE 0"},
		{q: "ROLLBACK", tag: "ROLLBACK", warning: "the writing statement of this block was applied"},
		{q: "ROLLBACK", tag: "ROLLBACK", warning: "no transaction in progress"},
		{q: "BEGIN; SELECT 1; ROLLBACK", tag: "ROLLBACK"},
	}
	for _, st := range steps {
		var last *Result
		err := e.s.Execute(t.Context(), st.q, func(r *Result) error {
			last = r
			if r.Rows != nil {
				r.Rows.Close()
			}
			return nil
		})
		switch {
		case err != nil:
			if sqlerr.Code(err) != st.tag {
				t.Fatalf("%s: %v, want %s", st.q, err, st.tag)
			}
		case last == nil || last.Tag != st.tag:
			t.Fatalf("%s: result %+v, want tag %s", st.q, last, st.tag)
		case st.warning == "" && last.Warning != nil:
			t.Fatalf("%s: unexpected warning %v", st.q, last.Warning)
		case st.warning != "" && (last.Warning == nil || !strings.Contains(last.Warning.Message, st.warning)):
			t.Fatalf("%s: warning %v, want one with %q", st.q, last.Warning, st.warning)
		}
		if e.s.InTransaction() && st.q == "COMMIT" {
			t.Fatalf("still in a transaction after COMMIT")
		}
	}
	// What the block wrote stays; what the failed block refused is not there.
	if got := e.rows("SELECT host FROM cpu WHERE host IN ('x', 'y') ORDER BY host"); got != "x;y" {
		t.Fatalf("rows after the blocks: %s", got)
	}
}
