package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestAddColumn: ALTER TABLE ADD COLUMN on a table with flushed files,
// buffered rows and WAL entries of the old shape. Old rows read NULL in the
// new columns everywhere: queries, DELETE/UPDATE on old files and batches,
// WAL replay after kill -9, compaction of old and new files together, and
// an independent Delta reader.
func TestAddColumn(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--compact-interval", "-1s"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	for b := range 2 {
		execAll(t, c, fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL '%d minutes' + g * INTERVAL '1 second', CASE WHEN g %% 2 = 0 THEN 'a' ELSE 'b' END, g
			FROM generate_series(0, 99) AS t(g)`, b*10), "CHECKPOINT")
	}
	execAll(t, c, `INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 01:00:00+00' + g * INTERVAL '1 second', 'a', g FROM generate_series(0, 49) AS t(g)`)
	if n := queryInt(t, c, "SELECT count(*) FROM m"); n != 250 { // mirrors the old shape
		t.Fatalf("%d rows before ALTER", n)
	}
	// A statement prepared before the ALTER, executed after it.
	if _, err := c.Prepare(ctx, "old_insert", "INSERT INTO m VALUES ($1, $2, $3)"); err != nil {
		t.Fatal(err)
	}

	execAll(t, c, "ALTER TABLE m ADD COLUMN region TEXT, ADD COLUMN n BIGINT",
		"ALTER TABLE m ADD COLUMN IF NOT EXISTS region TEXT")
	if _, err := c.Exec(ctx, "old_insert", "2026-01-01 02:00:00+00", "c", 1.5); err != nil {
		t.Fatalf("statement prepared before ALTER: %v", err)
	}
	execAll(t, c, `INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 03:00:00+00' + g * INTERVAL '1 second', 'd', g, CASE WHEN g < 5 THEN 'eu' ELSE 'us' END, g
		FROM generate_series(0, 9) AS t(g)`)
	execAll(t, c, "CHECKPOINT")
	execAll(t, c, `INSERT INTO m (time, host, region) VALUES ('2026-01-01 04:00:00+00', 'e', 'eu')`)

	const check = `SELECT count(*) || '/' || count(region) || '/' || count(n) || '/' || coalesce(sum(n), 0) || '/' || count(*) FILTER (WHERE region = 'eu') FROM m`
	state := func(c *pgx.Conn) string {
		t.Helper()
		var s string
		if err := c.QueryRow(ctx, check).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := state(c); got != "262/11/10/45/6" {
		t.Fatalf("after ALTER: %s", got)
	}
	// DML over old files, old batches and new rows.
	execAll(t, c, "UPDATE m SET region = 'old' WHERE region IS NULL AND host = 'a'", "DELETE FROM m WHERE n >= 8")
	want := "260/159/8/28/6"
	if got := state(c); got != want {
		t.Fatalf("after UPDATE/DELETE: %s, want %s", got, want)
	}
	if rows := readerRows(t, c, "SELECT host, region, n FROM m WHERE time >= '2026-01-01 02:00:00+00' ORDER BY time LIMIT 2"); strings.Join(rows, ";") != "c|NULL|NULL;d|eu|0" {
		t.Fatalf("new and old rows: %v", rows)
	}

	// Bad ALTERs change nothing.
	for q, code := range map[string]string{
		"ALTER TABLE m ADD COLUMN host TEXT":                 "42701",
		"ALTER TABLE m ADD COLUMN x BIGINT NOT NULL":         "0A000",
		"ALTER TABLE m ADD COLUMN x BIGINT DEFAULT 5":        "0A000",
		"ALTER TABLE m ADD COLUMN x geometry":                "42704",
		"ALTER TABLE m ADD COLUMN x TEXT, ADD COLUMN x TEXT": "42701",
	} {
		wantSQLState(t, c, q, code)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'm'"); n != 5 {
		t.Fatalf("information_schema lists %d columns, want 5", n)
	}
	c.Close(ctx)

	// The WAL holds rows and DML of both shapes: replay after kill -9.
	s.kill9()
	s = startServer(t, dir, args)
	c = s.connect(ctx)
	defer c.Close(ctx)
	if got := state(c); got != want {
		t.Fatalf("after kill -9: %s, want %s", got, want)
	}
	// Old and new files compacted together.
	execAll(t, c, "CHECKPOINT", "VACUUM m")
	if n := activeFiles(t, dir, "m"); n != 1 {
		t.Fatalf("%d files after VACUUM, want 1", n)
	}
	if got := state(c); got != want {
		t.Fatalf("after VACUUM: %s, want %s", got, want)
	}
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "m"))
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT count(*) AS a, count(region) AS b, count(n) AS c FROM deltaLakeLocal('%s')", table)), []string{"a", "b", "c"})
	if len(got) != 1 || got[0] != "260|159|8" {
		t.Fatalf("chDB read %v, want 260|159|8", got)
	}
}
