package planner

import "testing"

// A locking SELECT holds the rows it reads (their table) against other
// transactions' UPDATE, DELETE and locking SELECTs until it ends: they
// wait (here until their statement_timeout), NOWAIT fails with 55P03,
// SKIP LOCKED skips the rows; outside a block the locks end with the
// statement. PostgreSQL's refusals (aggregates, GROUP BY, DISTINCT, set
// operations, a read-only transaction, OF a name not in FROM) hold.
func TestRowLocks(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE jobs (time timestamptz NOT NULL, id int, state text)", "tag:CREATE TABLE"},
		{0, "INSERT INTO jobs VALUES ('2026-01-01', 1, 'new'), ('2026-01-01', 2, 'new')", "tag:INSERT 0 2"},
		{0, "SELECT id FROM jobs ORDER BY id FOR UPDATE", "1;2"},
		{1, "UPDATE jobs SET state = 'free' WHERE id = 2", "tag:UPDATE 1"},
		{0, "BEGIN", "tag:BEGIN"},
		{0, "SELECT id FROM jobs j WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE OF j", "1"},
		{1, "SET statement_timeout = '300ms'", "tag:SET"},
		{1, "UPDATE jobs SET state = 'taken' WHERE id = 1", "err:57014"},
		{1, "SELECT id FROM jobs FOR SHARE", "err:57014"},
		{1, "SELECT id FROM jobs FOR UPDATE NOWAIT", "err:55P03"},
		{1, "SELECT id FROM jobs FOR UPDATE SKIP LOCKED", ""},
		{1, "SELECT now() IS NOT NULL, (SELECT id FROM jobs LIMIT 1 FOR UPDATE SKIP LOCKED)", "err:0A000"},
		{1, "SELECT id FROM (SELECT id FROM jobs) s FOR UPDATE OF s NOWAIT", "err:55P03"},
		{1, "SELECT count(*) FROM jobs", "2"},
		{0, "UPDATE jobs SET state = 'taken' WHERE id = 1", "tag:UPDATE 1"},
		{0, "COMMIT", "tag:COMMIT"},
		{1, "SELECT id, state FROM jobs ORDER BY id FOR UPDATE SKIP LOCKED", "1|taken;2|free"},
		{1, "RESET statement_timeout", "tag:RESET"},
		{0, "SELECT count(*) FROM jobs FOR UPDATE", "err:0A000"},
		{0, "SELECT DISTINCT state FROM jobs FOR UPDATE", "err:0A000"},
		{0, "SELECT state FROM jobs GROUP BY state FOR SHARE", "err:0A000"},
		{0, "SELECT id FROM jobs UNION SELECT 3 FOR UPDATE", "err:0A000"},
		{0, "SELECT id FROM jobs FOR UPDATE OF nowhere", "err:42P01"},
		{0, "BEGIN READ ONLY", "tag:BEGIN"},
		{0, "SELECT id FROM jobs FOR KEY SHARE", "err:25006"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
		{0, "EXPLAIN SELECT id FROM jobs FOR UPDATE", "tag:EXPLAIN"},
		{0, "SELECT id FROM ONLY jobs WHERE id = 1", "1"},
	})
}
