package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"tsdb/internal/sqlerr"
)

// txStep is one statement of a transaction script: run in session sess (0
// or 1), it must give want: "err:SQLSTATE", "tag:TAG" (of its last result)
// or the rows of its last result as env.rows renders them ("set:" before
// them: in any order).
type txStep struct {
	sess int
	q    string
	want string
}

// runScript runs steps in two sessions of e and reports each that differs.
func runScript(t *testing.T, e *env, steps []txStep) {
	t.Helper()
	ctx := context.Background()
	other, err := e.p.NewSession(ctx, "tsdb")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sessions := []*Session{e.s, other}
	for i, st := range steps {
		var last result
		// As the session executor does: statement_timeout ends the
		// statement's context.
		sctx, cancel := context.WithCancel(ctx)
		if d := sessions[st.sess].Settings().StatementTimeout(); d > 0 {
			sctx, cancel = context.WithTimeout(ctx, d)
		}
		err := sessions[st.sess].Execute(sctx, st.q, func(r *Result) error {
			last = result{tag: r.Tag}
			if r.Rows != nil {
				defer r.Rows.Close()
				for r.Rows.Next() {
					last.rows = append(last.rows, renderRow(r.Rows.Values()))
				}
				return r.Rows.Err()
			}
			return nil
		})
		cancel()
		var got string
		switch {
		case err != nil:
			got = "err:" + sqlerr.Code(err)
		case strings.HasPrefix(st.want, "tag:"):
			got = "tag:" + last.tag
		default:
			var lines []string
			for _, r := range last.rows {
				lines = append(lines, strings.Join(r, "|"))
			}
			if strings.HasPrefix(st.want, "set:") {
				slices.Sort(lines)
				got = "set:" + strings.Join(lines, ";")
			} else {
				got = strings.Join(lines, ";")
			}
		}
		if got != st.want {
			t.Fatalf("step %d (session %d) %s: got %q (%v), want %q", i, st.sess, st.q, got, err, st.want)
		}
	}
}

const txSetup = `CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT);
INSERT INTO m VALUES ('2026-01-01 00:00:00+00', 'a', 1), ('2026-01-01 00:00:10+00', 'b', 2);
CHECKPOINT;
INSERT INTO m VALUES ('2026-01-01 00:00:20+00', 'c', 3), ('2026-01-01 00:00:30+00', 'd', 4)`

// Writes inside a block are the session's until COMMIT: it reads them,
// changes them again, and others see none of it; ROLLBACK discards
// everything, COMMIT publishes everything. Rows come from both layers
// (a flushed file and buffered batches).
func TestTransactionsKeepWritesUntilCommit(t *testing.T) {
	tests := []struct {
		name  string
		steps []txStep
	}{
		{"rollback discards inserts, updates and deletes", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "DELETE FROM m WHERE host IN ('a', 'c')", "tag:DELETE 2"},
			{0, "UPDATE m SET v = v * 10 WHERE host IN ('b', 'e')", "tag:UPDATE 2"},
			{0, "SELECT host, v FROM m ORDER BY host", "b|20;d|4;e|50"},
			{1, "SELECT host, v FROM m ORDER BY host", "a|1;b|2;c|3;d|4"},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "SELECT host, v FROM m ORDER BY host", "a|1;b|2;c|3;d|4"},
		}},
		{"commit publishes everything at once", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "DELETE FROM m WHERE host = 'e' OR host = 'a'", "tag:DELETE 2"},
			{0, "UPDATE m SET v = -v WHERE host <> 'b'", "tag:UPDATE 2"},
			{0, "UPDATE m SET v = v - 100 WHERE host = 'c'", "tag:UPDATE 1"},
			{1, "SELECT host, v FROM m ORDER BY host", "a|1;b|2;c|3;d|4"},
			{0, "COMMIT", "tag:COMMIT"},
			{1, "SELECT host, v FROM m ORDER BY host", "b|2;c|-103;d|-4"},
			{0, "CHECKPOINT", "tag:CHECKPOINT"},
			{1, "SELECT host, v FROM m ORDER BY host", "b|2;c|-103;d|-4"},
		}},
		{"an error fails the block until ROLLBACK; COMMIT then rolls back", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "SELECT * FROM nope", "err:" + sqlerr.UndefinedTable},
			{0, "SELECT 1", "err:" + sqlerr.InFailedTransaction},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:50+00', 'f', 6)", "err:" + sqlerr.InFailedTransaction},
			{0, "COMMIT", "tag:ROLLBACK"},
			{0, "SELECT count(*) FROM m", "4"},
		}},
		{"savepoints undo what came after them", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "SAVEPOINT s1", "tag:SAVEPOINT"},
			{0, "DELETE FROM m WHERE host IN ('a', 'e')", "tag:DELETE 2"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:50+00', 'f', 6)", "tag:INSERT 0 1"},
			{0, "SAVEPOINT s2", "tag:SAVEPOINT"},
			{0, "UPDATE m SET v = 0", "tag:UPDATE 4"},
			{0, "SELECT host, v FROM m ORDER BY host", "b|0;c|0;d|0;f|0"},
			{0, "ROLLBACK TO SAVEPOINT s2", "tag:ROLLBACK"},
			{0, "SELECT host, v FROM m ORDER BY host", "b|2;c|3;d|4;f|6"},
			{0, "SELECT * FROM nope", "err:" + sqlerr.UndefinedTable},
			{0, "ROLLBACK TO s1", "tag:ROLLBACK"},
			{0, "SELECT host, v FROM m ORDER BY host", "a|1;b|2;c|3;d|4;e|5"},
			{0, "RELEASE SAVEPOINT s1", "tag:RELEASE"},
			{0, "ROLLBACK TO s1", "err:3B001"},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "BEGIN", "tag:BEGIN"},
			{0, "SAVEPOINT a", "tag:SAVEPOINT"},
			{0, "DELETE FROM m WHERE host = 'd'", "tag:DELETE 1"},
			{0, "RELEASE a", "tag:RELEASE"},
			{0, "COMMIT", "tag:COMMIT"},
			{1, "SELECT string_agg(host, ',' ORDER BY host) FROM m", "a,b,c"},
		}},
		{"RETURNING, joins and subqueries", []txStep{
			{0, "CREATE TABLE hosts (time TIMESTAMPTZ NOT NULL, host TEXT, dc TEXT)", "tag:CREATE TABLE"},
			{0, "INSERT INTO hosts VALUES (now(), 'a', 'x'), (now(), 'b', 'y'), (now(), 'c', 'x')", "tag:INSERT 0 3"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:01:00+00', 'e', 7) RETURNING host, v * 2 AS twice", "e|14"},
			{0, "UPDATE m SET v = m.v + 100 FROM hosts h WHERE h.host = m.host AND h.dc = 'x' RETURNING m.host, v", "set:a|101;c|103"},
			{0, "DELETE FROM m USING hosts WHERE hosts.host = m.host AND hosts.dc = 'y' RETURNING *", "2026-01-01 00:00:10|b|2"},
			{0, "DELETE FROM m WHERE v = (SELECT max(v) FROM m) RETURNING host", "c"},
			{0, "WITH small AS (SELECT host FROM m WHERE v < 10) UPDATE m SET v = 0 WHERE host IN (SELECT host FROM small) RETURNING host", "set:d;e"},
			{0, "SELECT host, v FROM m ORDER BY host", "a|101;d|0;e|0"},
			{0, "UPDATE m SET v = NULL WHERE host = 'a' RETURNING v", "NULL"},
			{0, "UPDATE m SET time = NULL WHERE host = 'a'", "err:" + sqlerr.NotNullViolation},
			{0, "DELETE FROM m USING hosts WHERE hosts.host = m.host RETURNING hosts.dc", "err:" + sqlerr.FeatureNotSupported},
		}},
		{"other sessions wait for a writer of the same table", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "DELETE FROM m WHERE host = 'a'", "tag:DELETE 1"},
			{1, "SET statement_timeout = '200ms'", "tag:SET"},
			{1, "DELETE FROM m WHERE host = 'b'", "err:" + sqlerr.QueryCanceled},
			{1, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "SELECT string_agg(host, ',' ORDER BY host) FROM m", "b,c,d,e"},
			{0, "COMMIT", "tag:COMMIT"},
			{1, "DELETE FROM m WHERE host = 'b'", "tag:DELETE 1"},
			{1, "SELECT string_agg(host, ',' ORDER BY host) FROM m", "c,d,e"},
		}},
		{"repeatable read keeps its snapshot and refuses to change what changed", []txStep{
			{0, "BEGIN ISOLATION LEVEL REPEATABLE READ", "tag:BEGIN"},
			{0, "SHOW transaction_isolation", "repeatable read"},
			{0, "SELECT count(*) FROM m", "4"},
			{1, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "tag:INSERT 0 1"},
			{0, "SELECT count(*) FROM m", "4"},
			{1, "DELETE FROM m WHERE host = 'a'", "tag:DELETE 1"},
			{0, "SELECT count(*) FROM m", "4"},
			{0, "DELETE FROM m WHERE host = 'b'", "err:" + sqlerr.SerializationFailure},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "SHOW transaction_isolation", "read committed"},
			{0, "BEGIN", "tag:BEGIN"},
			{0, "SELECT count(*) FROM m", "4"},
			{1, "INSERT INTO m VALUES ('2026-01-01 00:00:50+00', 'f', 6)", "tag:INSERT 0 1"},
			{0, "SELECT count(*) FROM m", "5"},
			{0, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "err:" + sqlerr.ActiveSQLTransaction},
			{0, "ROLLBACK", "tag:ROLLBACK"},
		}},
		{"what cannot be undone is refused inside a block", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "CREATE TABLE n (time TIMESTAMPTZ NOT NULL)", "err:" + sqlerr.ActiveSQLTransaction},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "BEGIN", "tag:BEGIN"},
			{0, "CREATE TABLE IF NOT EXISTS m (time TIMESTAMPTZ NOT NULL)", "tag:CREATE TABLE"},
			{0, "ALTER TABLE m ADD COLUMN w BIGINT", "err:" + sqlerr.ActiveSQLTransaction},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "BEGIN READ ONLY", "tag:BEGIN"},
			{0, "INSERT INTO m VALUES ('2026-01-01 00:00:40+00', 'e', 5)", "err:25006"},
			{0, "ROLLBACK", "tag:ROLLBACK"},
		}},
		{"settings: ROLLBACK undoes SET, SET LOCAL ends with the block", []txStep{
			{0, "BEGIN", "tag:BEGIN"},
			{0, "SET TimeZone = 'Europe/Paris'", "tag:SET"},
			{0, "ROLLBACK", "tag:ROLLBACK"},
			{0, "SHOW TimeZone", "UTC"},
			{0, "BEGIN", "tag:BEGIN"},
			{0, "SET LOCAL statement_timeout = '5s'", "tag:SET"},
			{0, "SET application_name = 'x'", "tag:SET"},
			{0, "SHOW statement_timeout", "5s"},
			{0, "COMMIT", "tag:COMMIT"},
			{0, "SHOW statement_timeout", "0"},
			{0, "SHOW application_name", "x"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.must(txSetup)
			runScript(t, e, tc.steps)
		})
	}
}

// Outside a block, DELETE and UPDATE with a subquery or a volatile
// function run as a transaction of their own: evaluated once, their
// effect logged.
func TestStatementsEvaluatedIntoTheirEffect(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "UPDATE m SET v = v + random() * 0 + 100 WHERE host = 'c'", "tag:UPDATE 1"},
		{0, "DELETE FROM m WHERE v = (SELECT min(v) FROM m)", "tag:DELETE 1"},
		{0, "SELECT host, v FROM m ORDER BY host", "b|2;c|103;d|4"},
		{0, "DELETE FROM m WHERE host = 'b' RETURNING v", "2"},
		{1, "SELECT host, v FROM m ORDER BY host", "c|103;d|4"},
	})
}
