package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// insertMinutes inserts one row per minute for minutes [from, to) before
// now, tagged with tag.
func insertMinutes(t *testing.T, c *pgx.Conn, now time.Time, from, to int, tag string) {
	t.Helper()
	q := fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '%s' - g * INTERVAL '1 minute', '%s', g FROM generate_series(%d, %d) AS t(g)`,
		now.Format(time.RFC3339Nano), tag, from, to-1)
	execAll(t, c, q)
}

// TestRetention: ALTER TABLE … SET (retention = …) drops rows older than
// that from files (whole files without reading them, files across the
// cutoff rewritten) and from the buffer, on VACUUM and in the background;
// it survives a restart; RESET keeps rows again; bad settings get 22023.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--retention-interval", "1h", "--compact-interval", "-1s", "--bucket-duration", "10m"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	now := time.Now().UTC()
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, tag TEXT, k BIGINT)")
	// Six hours, one row a minute, flushed and compacted into one file
	// that reaches across any cutoff.
	insertMinutes(t, c, now, 0, 360, "file")
	execAll(t, c, "CHECKPOINT", "VACUUM m")
	if n := activeFiles(t, dir, "m"); n != 1 {
		t.Fatalf("%d files after VACUUM, want 1", n)
	}
	// Buffered rows, old and new.
	insertMinutes(t, c, now, 300, 310, "buffered")
	insertMinutes(t, c, now, 0, 10, "buffered")

	execAll(t, c, "ALTER TABLE m SET (retention = '2 hours')", "VACUUM m")
	// The cutoff is now-2h rounded down to the 10-minute bucket.
	old := now.Add(-2*time.Hour - 10*time.Minute)
	count := func(where string) int64 {
		t.Helper()
		return queryInt(t, c, "SELECT count(*) FROM m WHERE "+where)
	}
	if n := count(fmt.Sprintf("time < '%s'", old.Format(time.RFC3339Nano))); n != 0 {
		t.Fatalf("%d rows older than the retention survived VACUUM", n)
	}
	// The server rounds its own later clock: a bucket edge may pass
	// between now and then, so only rows well inside the retention have a
	// known fate.
	keep := fmt.Sprintf("time >= '%s'", now.Add(-2*time.Hour+10*time.Minute).Format(time.RFC3339Nano))
	if n := count(keep + " AND tag = 'file'"); n != 111 {
		t.Fatalf("%d flushed rows of the last 110 minutes, want 111", n)
	}
	if n := count("tag = 'buffered'"); n != 10 {
		t.Fatalf("%d buffered rows, want the 10 recent ones", n)
	}

	// A file entirely past the retention leaves whole. (The recent
	// buffered rows are flushed first: small buckets flushed together
	// share a file.)
	execAll(t, c, "CHECKPOINT")
	insertMinutes(t, c, now, 240, 250, "whole")
	execAll(t, c, "CHECKPOINT", "VACUUM m")
	if n := count("tag = 'whole'"); n != 0 {
		t.Fatalf("%d rows of an expired file survived", n)
	}
	if !strings.Contains(s.logs.String(), "whole_files=1") {
		t.Fatalf("the expired file should have been removed whole:\n%s", s.logs.String())
	}

	// Bad settings change nothing and keep the connection.
	for q, code := range map[string]string{
		"ALTER TABLE m SET (retention = 'soon')":                 "22023",
		"ALTER TABLE m SET (no_such_option = 50)":                "22023",
		"ALTER TABLE nope SET (retention = '1 day')":             "42P01",
		"ALTER TABLE m ALTER COLUMN k TYPE TEXT":                 "0A000",
		"ALTER TABLE m SET (retention = '1 day'), DROP COLUMN k": "0A000",
	} {
		wantSQLState(t, c, q, code)
	}
	c.Close(ctx)

	// The retention is part of the table: after a restart it still holds.
	s.stop()
	s = startServer(t, dir, args)
	c = s.connect(ctx)
	defer c.Close(ctx)
	insertMinutes(t, c, now, 200, 205, "after-restart")
	execAll(t, c, "VACUUM m")
	if n := count("tag = 'after-restart'"); n != 0 {
		t.Fatalf("%d expired rows survived after a restart", n)
	}
	execAll(t, c, "ALTER TABLE m RESET (retention)")
	insertMinutes(t, c, now, 200, 205, "kept")
	execAll(t, c, "VACUUM m")
	if n := count("tag = 'kept'"); n != 5 {
		t.Fatalf("%d old rows after RESET (retention), want 5", n)
	}
}

// TestRetentionInBackground: without VACUUM, the retention loop drops
// expired rows on its own.
func TestRetentionInBackground(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--retention-interval", "100ms", "--bucket-duration", "1m"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	now := time.Now().UTC()
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, tag TEXT, k BIGINT)")
	insertMinutes(t, c, now, 0, 120, "x")
	execAll(t, c, "CHECKPOINT")
	insertMinutes(t, c, now, 100, 110, "y")
	execAll(t, c, "ALTER TABLE m SET (retention = '1 hour')")
	deadline := time.Now().Add(20 * time.Second)
	for queryInt(t, c, fmt.Sprintf("SELECT count(*) FROM m WHERE time < '%s'", now.Add(-62*time.Minute).Format(time.RFC3339Nano))) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("expired rows were not dropped in the background within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Rows well inside the retention (the cutoff moves with the server's
	// clock, a minute at a time) all stay.
	if n := queryInt(t, c, fmt.Sprintf("SELECT count(*) FROM m WHERE time >= '%s'", now.Add(-59*time.Minute).Format(time.RFC3339Nano))); n != 60 {
		t.Fatalf("%d rows of the last 59 minutes, want 60", n)
	}
}
