package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Hostile statements: each fails with a clear SQLSTATE and changes nothing;
// the connection stays usable. The test logs what each got back.
func TestHostileStatements(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION); INSERT INTO cpu VALUES (now(), 1); CHECKPOINT; INSERT INTO cpu VALUES (now(), 2)"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tables", "cpu", "*.parquet"))
	if len(files) != 1 {
		t.Fatalf("%d parquet files", len(files))
	}
	hostile := []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM read_csv_auto('/etc/passwd')",
		"SELECT * FROM read_parquet('/etc/passwd')",
		"SELECT * FROM read_parquet('" + files[0] + "')",
		"SELECT * FROM '" + files[0] + "'",
		"SELECT * FROM read_text('/etc/passwd')",
		"SELECT * FROM read_blob('/etc/passwd')",
		"SELECT * FROM glob('/*')",
		"SELECT * FROM parquet_metadata('" + files[0] + "')",
		"COPY cpu TO '/tmp/tsdb-hostile.csv'",
		"COPY (SELECT 1) TO '/tmp/tsdb-hostile.csv'",
		"COPY cpu FROM '/etc/passwd'",
		"COPY cpu FROM PROGRAM 'id'",
		"ATTACH '/tmp/tsdb-hostile.db' AS x",
		"DETACH x",
		"INSTALL httpfs",
		"LOAD httpfs",
		"LOAD 'httpfs'",
		"PRAGMA database_list",
		"CALL pragma_version()",
		"EXPORT DATABASE '/tmp/tsdb-export'",
		"IMPORT DATABASE '/tmp/tsdb-export'",
		"SET threads = 1",
		"SET enable_external_access = true",
		"RESET allowed_directories",
		"SET GLOBAL threads = 1",
		"SELECT current_setting('threads')",
		"SELECT current_setting('allowed_directories')",
		"CREATE MACRO evil(x) AS x",
		"CREATE FUNCTION evil() RETURNS int AS 'libc.so.6', 'system' LANGUAGE c",
		// A function written in SQL is inlined where it is called, so its
		// body is checked as any query (at CREATE and at each call).
		"CREATE FUNCTION evil() RETURNS bigint AS 'SELECT count(*) FROM read_text(''/etc/passwd'')' LANGUAGE sql",
		"CREATE VIEW v AS SELECT * FROM read_text('/etc/passwd')", // a view's query is checked as any query
		"CREATE SCHEMA s",
		"CREATE SEQUENCE sq",
		"SELECT getenv('HOME')",
		"SELECT * FROM duckdb_settings()",
		"SELECT * FROM duckdb_tables()",
		"SELECT * FROM sqlite_master",
		"SELECT * FROM _tsdb.anything",
		"INSERT INTO _tsdb.anything VALUES (1)",
		"DROP TABLE _tsdb.anything",
		"DELETE FROM _tsdb.anything",
		"SELECT * FROM temp.main.cpu",
		"SELECT * FROM memory.main.cpu",
		"SELECT * FROM query('SELECT 1')",
		"FROM read_csv('/etc/passwd')",
		"SELECT * EXCLUDE (v) FROM read_csv('/etc/passwd')",
		// PostgreSQL's comments nest and DuckDB's do not: one statement
		// to PostgreSQL's scanner, a SELECT and a SET to DuckDB's parser.
		// (The engine's configuration is not locked: a session's
		// TimeZone must reach it.)
		"FROM cpu /* /* */ ; SET threads = 1; -- */ */",
		"FROM cpu /* /* */ ; FROM cpu; -- */ */",
		"FROM cpu; SET threads = 1",
	}
	for _, q := range hostile {
		_, err := c.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%s: allowed (%v)", q, err)
			continue
		}
		if pe.Code == "XX000" {
			t.Errorf("%s: internal error %s", q, pe.Message)
		}
		t.Logf("%-60s → %s %s", q, pe.Code, pe.Message)
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM cpu").Scan(&n); err != nil || n != 2 {
			t.Fatalf("after %q: count %d, %v", q, n, err)
		}
	}
	for _, f := range []string{"/tmp/tsdb-hostile.csv", "/tmp/tsdb-hostile.db", "/tmp/tsdb-export"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was created", f)
			os.RemoveAll(f)
		}
	}
}
