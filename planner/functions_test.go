package planner

import "testing"

// A function created in a transaction block is the block's until COMMIT:
// the block calls it, another session does not see it, ROLLBACK (and
// ROLLBACK TO a savepoint before it) forgets it, COMMIT stores it.
func TestFunctionsInTransactionBlocks(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "BEGIN", "tag:BEGIN"},
		{0, "CREATE FUNCTION twice(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x * 2'", "tag:CREATE FUNCTION"},
		{0, "SELECT twice(v) FROM m ORDER BY v", "2;4;6;8"},
		{1, "SELECT twice(1)", "err:42883"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
		{0, "SELECT twice(1)", "err:42883"},
		{0, "BEGIN", "tag:BEGIN"},
		{0, "CREATE FUNCTION twice(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x * 2'", "tag:CREATE FUNCTION"},
		{0, "SAVEPOINT a", "tag:SAVEPOINT"},
		{0, "CREATE FUNCTION thrice(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x * 3'", "tag:CREATE FUNCTION"},
		{0, "SELECT thrice(2)", "6"},
		{0, "ROLLBACK TO a", "tag:ROLLBACK"},
		{0, "COMMIT", "tag:COMMIT"},
		{1, "SELECT twice(21)", "42"},
		{1, "SELECT thrice(2)", "err:42883"},
	})
}
