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

// octet_length counts a string's bytes as PostgreSQL's does (the engine's
// takes bytes only), and a bytea's.
func TestOctetLength(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE ol (time timestamptz NOT NULL, s text, b bytea)", "tag:CREATE TABLE"},
		{0, "INSERT INTO ol VALUES ('2026-01-01', 'héllo', '\\x0102')", "tag:INSERT 0 1"},
		{0, "SELECT octet_length('é'), octet_length('é'::bytea), octet_length('abc'::varchar)", "2|2|3"},
		{0, "SELECT octet_length(s), octet_length(b), octet_length(upper(s)), octet_length(s || 'x'), octet_length(substr(b, 1, 1)), octet_length(substr(s, 1, 2)) FROM ol", "6|2|6|7|1|3"},
		{0, "SELECT count(*) FROM ol WHERE octet_length(s) = 6", "1"},
	})
}
