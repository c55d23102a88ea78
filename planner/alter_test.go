package planner

import "testing"

// PostgreSQL's storage parameters and column storage settings, which
// pg_dump and migration tools write, are taken and change nothing; a
// parameter PostgreSQL does not have, or a column the table lacks, is
// still an error.
func TestStorageSettingsTaken(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE s (time timestamptz NOT NULL, f1 text) WITH (fillfactor = 70, autovacuum_enabled = false)", "tag:CREATE TABLE"},
		{0, "ALTER TABLE s SET (toast_tuple_target = 4080, parallel_workers = 4, toast.autovacuum_enabled = false)", "tag:ALTER TABLE"},
		{0, "ALTER TABLE s RESET (fillfactor)", "tag:ALTER TABLE"},
		{0, "ALTER TABLE ONLY s ALTER COLUMN f1 SET STORAGE EXTERNAL", "tag:ALTER TABLE"},
		{0, "ALTER TABLE s ALTER COLUMN f1 SET STATISTICS 100", "tag:ALTER TABLE"},
		{0, "ALTER TABLE s ALTER COLUMN f1 SET COMPRESSION pglz", "tag:ALTER TABLE"},
		{0, "ALTER TABLE s ALTER COLUMN nope SET STORAGE MAIN", "err:42703"},
		{0, "ALTER TABLE s SET (bogus = 1)", "err:22023"},
		{0, "CREATE TABLE s2 (time timestamptz NOT NULL) WITH (bogus = 1)", "err:22023"},
		{0, "INSERT INTO s VALUES ('2026-01-01', 'x')", "tag:INSERT 0 1"},
		{0, "SELECT f1 FROM ONLY s", "x"},
	})
}
