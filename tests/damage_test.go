package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The tests of this file damage a table's files as an unlucky operator (or
// disk) would, and check that the damage stays with that table: the server
// starts, other tables work, the damaged table fails with XX001 naming its
// file, and /health, /metrics and the log say so. Before, one truncated
// commit stopped the server ("open table b: delta: commit 2 …"), an
// emptied one silently dropped its rows, and a corrupt data file failed
// every query with the server's absolute paths and internal SQL.

// commits returns the table's commit files, oldest first.
func commits(t *testing.T, dataDir, table string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dataDir, "tables", table, "_delta_log", "*.json"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no commits of %s: %v", table, err)
	}
	sort.Strings(m)
	return m
}

// dataFiles returns the table's Parquet files by name.
func dataFiles(t *testing.T, dataDir, table string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dataDir, "tables", table, "*.parquet"))
	sort.Strings(m)
	return m
}

// wantUnavailable runs q, which must fail with XX001 naming table and
// one of files, without the server's paths, and leave the connection
// usable.
func wantUnavailable(t *testing.T, c *pgx.Conn, dataDir, q, table string, files ...string) {
	t.Helper()
	_, err := c.Exec(context.Background(), q)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "XX001" {
		t.Fatalf("%s: %v, want SQLSTATE XX001", q, err)
	}
	text := pe.Message + " " + pe.Detail + " " + pe.Hint
	named := false
	for _, f := range files {
		named = named || strings.Contains(pe.Message, f)
	}
	if !strings.Contains(pe.Message, `"`+table+`"`) || !named {
		t.Errorf("%s: %q names not table %s and one of %v", q, pe.Message, table, files)
	}
	if strings.Contains(text, dataDir) || strings.Contains(text, "TEMP VIEW") || strings.Contains(text, "read_parquet") {
		t.Errorf("%s: the message shows the server's paths or internal SQL: %q", q, text)
	}
	if n := queryInt(t, c, "SELECT 1"); n != 1 {
		t.Fatal("connection unusable")
	}
}

func TestDamagedCommitStaysWithItsTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		why    string
	}{
		{"truncated", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, b[:len(b)/2], 0o644)
		}, "unexpected end of JSON"},
		{"emptied", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "the commit is empty"},
		{"missing", os.Remove, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			httpAddr := freeAddr(t)
			args := []string{"--http-addr", httpAddr}
			s := startServer(t, dir, args)
			ctx := context.Background()
			c := s.connect(ctx)
			execAll(t, c, "CREATE TABLE a (time TIMESTAMPTZ NOT NULL, v BIGINT)", "CREATE TABLE b (time TIMESTAMPTZ NOT NULL, v BIGINT)",
				"INSERT INTO a VALUES ('2026-01-01', 1), ('2026-01-02', 2)", "INSERT INTO b VALUES ('2026-01-01', 1)", "CHECKPOINT",
				"INSERT INTO b VALUES ('2026-01-02', 2)", "CHECKPOINT",
				// Acknowledged, not flushed: in the WAL only.
				"INSERT INTO b VALUES ('2026-01-03', 3)")
			s.kill9()
			log := commits(t, dir, "b")
			victim := log[1] // the first flush
			saved, _ := os.ReadFile(victim)
			if err := tc.damage(victim); err != nil {
				t.Fatal(err)
			}

			s = startServer(t, dir, args)
			c = s.connect(ctx)
			if n := queryInt(t, c, "SELECT sum(v) FROM a"); n != 3 {
				t.Fatalf("table a: sum %d, want 3", n)
			}
			file := filepath.Join("_delta_log", filepath.Base(victim))
			wantUnavailable(t, c, dir, "SELECT * FROM b", "b", file)
			wantUnavailable(t, c, dir, "INSERT INTO b VALUES ('2026-01-04', 4)", "b", file)
			wantUnavailable(t, c, dir, "SELECT * FROM a JOIN b USING (time)", "b", file)
			// Nothing creates a table over what is left of it.
			if _, err := c.Exec(ctx, "CREATE TABLE b (time TIMESTAMPTZ NOT NULL)"); pgCode(err) != "XX001" {
				t.Errorf("CREATE TABLE over an unavailable table: %v, want XX001", err)
			}
			execAll(t, c, "INSERT INTO a VALUES ('2026-01-03', 4)")
			code, body := httpGet("http://" + httpAddr + "/health")
			if code != 200 || !strings.HasPrefix(body, "degraded") || !strings.Contains(body, `"b"`) {
				t.Errorf("/health: %d %q, want 200 degraded naming b", code, body)
			}
			_, metrics := httpGet("http://" + httpAddr + "/metrics")
			if !strings.Contains(metrics, "tsdb_tables_unavailable 1") || !strings.Contains(metrics, "tsdb_wal_held_entries 1") {
				t.Errorf("/metrics lacks tsdb_tables_unavailable 1 and tsdb_wal_held_entries 1")
			}
			if !strings.Contains(s.logs.String(), tc.why) || !strings.Contains(s.logs.String(), "table unavailable") {
				t.Errorf("the log does not say why b is unavailable (%q)", tc.why)
			}

			// The operator restores the file; the next start has every
			// row, the WAL's included, exactly once.
			s.stop()
			if err := os.WriteFile(victim, saved, 0o644); err != nil {
				t.Fatal(err)
			}
			s = startServer(t, dir, args)
			c = s.connect(ctx)
			if n := queryInt(t, c, "SELECT count(*) * 100 + sum(v) FROM b"); n != 306 {
				t.Fatalf("b after the log is restored: count*100+sum = %d, want 306", n)
			}
			if n := queryInt(t, c, "SELECT sum(v) FROM a"); n != 7 {
				t.Fatalf("a after restart: sum %d, want 7", n)
			}
		})
	}
}

// TestDataFilesWithoutLog: a table directory whose log is gone but whose
// data files are there was taken for a crashed CREATE TABLE and deleted.
func TestDataFilesWithoutLog(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE lost (time TIMESTAMPTZ NOT NULL, v BIGINT)", "INSERT INTO lost VALUES ('2026-01-01', 1)", "CHECKPOINT")
	s.stop()
	if err := os.RemoveAll(filepath.Join(dir, "tables", "lost", "_delta_log")); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	wantUnavailable(t, c, dir, "SELECT * FROM lost", "lost", "_delta_log")
	if len(dataFiles(t, dir, "lost")) != 1 {
		t.Fatal("the data file of a table without a log was deleted")
	}
	// DROP TABLE gives it up.
	execAll(t, c, "DROP TABLE lost", "CREATE TABLE lost (time TIMESTAMPTZ NOT NULL)")
}

// TestDamagedDataFile: a data file cut short, one with flipped bytes, one
// deleted. Statements that need them fail with XX001 naming the file;
// statements that do not, other tables and writes work; the scrubber finds
// the flipped bytes no engine error reveals; VACUUM goes on; a copy goes
// to quarantine; tsdb_repair_table removes them and says what was lost.
func TestDamagedDataFile(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	args := []string{"--http-addr", httpAddr, "--scrub-interval", "200ms", "--compact-interval", "-1s"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE f (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)", "CREATE TABLE other (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO other VALUES ('2026-01-01', 5)")
	// Four files, one per day, in order.
	var files []string
	seen := map[string]bool{}
	for d := 1; d <= 4; d++ {
		execAll(t, c, "INSERT INTO f SELECT '2026-01-0"+itoa(d)+"'::timestamptz + i * interval '1 second', 'h' || (i % 7), i FROM generate_series(1, 1000) g(i)", "CHECKPOINT")
		for _, p := range dataFiles(t, dir, "f") {
			if !seen[p] {
				seen[p] = true
				files = append(files, p)
			}
		}
	}
	if len(files) != 4 {
		t.Fatalf("%d data files, want 4", len(files))
	}
	s.stop()
	// Day 1: cut short (found at start by its size). Day 2: bytes flipped
	// in the middle (found by the scrubber). Day 3: deleted.
	b, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], b[:len(b)-100], 0o644)
	b, _ = os.ReadFile(files[1])
	for i := len(b) / 3; i < len(b)/3+8; i++ {
		b[i] ^= 0x5a
	}
	os.WriteFile(files[1], b, 0o644)
	os.Remove(files[2])

	s = startServer(t, dir, args)
	c = s.connect(ctx)
	damaged := []string{filepath.Base(files[0]), filepath.Base(files[1]), filepath.Base(files[2])}
	wantUnavailable(t, c, dir, "SELECT count(*) FROM f", "f", damaged...)
	wantUnavailable(t, c, dir, "SELECT count(*) FROM f WHERE time >= '2026-01-01' AND time < '2026-01-02'", "f", damaged[0])
	wantUnavailable(t, c, dir, "SELECT count(*) FROM f WHERE time >= '2026-01-03' AND time < '2026-01-04'", "f", damaged[2])
	wantUnavailable(t, c, dir, "DELETE FROM f WHERE v = 3", "f", damaged...)
	// The scrubber reads the flipped file against its checksum.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.logs.String(), filepath.Base(files[1])) {
		if time.Now().After(deadline) {
			t.Fatal("the scrubber did not find the file with flipped bytes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantUnavailable(t, c, dir, "SELECT count(*) FROM f WHERE time >= '2026-01-02' AND time < '2026-01-03'", "f", filepath.Base(files[1]))
	// The undamaged day, other tables and writes work.
	if n := queryInt(t, c, "SELECT count(*) FROM f WHERE time >= '2026-01-04'"); n != 1000 {
		t.Fatalf("day 4: %d rows", n)
	}
	execAll(t, c, "INSERT INTO f VALUES ('2026-01-05', 'h1', 1)", "INSERT INTO other VALUES ('2026-01-02', 6)", "CHECKPOINT")
	if n := queryInt(t, c, "SELECT sum(v) FROM other"); n != 11 {
		t.Fatalf("other: sum %d", n)
	}
	// VACUUM of every table goes on past the damaged one.
	if _, err := c.Exec(ctx, "VACUUM"); err != nil {
		t.Fatalf("VACUUM with a damaged table: %v", err)
	}
	q, _ := filepath.Glob(filepath.Join(dir, "quarantine", "tables", "f", "*"))
	if len(q) != 2 {
		t.Errorf("quarantine holds %v, want copies of the two files still there", q)
	}
	code, body := httpGet("http://" + httpAddr + "/health")
	if code != 200 || !strings.HasPrefix(body, "degraded") {
		t.Errorf("/health: %d %q", code, body)
	}
	_, metrics := httpGet("http://" + httpAddr + "/metrics")
	if !strings.Contains(metrics, "tsdb_data_files_damaged 3") {
		t.Errorf("/metrics lacks tsdb_data_files_damaged 3")
	}

	// Only the admin repairs; the repair says what it removed.
	var report string
	if err := c.QueryRow(ctx, "SELECT tsdb_repair_table('f')").Scan(&report); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "removed 3 damaged files and the 3000 rows they held") {
		t.Fatalf("repair: %q", report)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM f"); n != 1001 {
		t.Fatalf("after the repair: %d rows, want 1001", n)
	}
	code, body = httpGet("http://" + httpAddr + "/health")
	if code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/health after the repair: %d %q", code, body)
	}
	if _, err := c.Exec(ctx, "SELECT 1, tsdb_repair_table('f')"); pgCode(err) != "0A000" {
		t.Errorf("tsdb_repair_table inside another query: %v, want 0A000", err)
	}
}

// TestWALLossIsReported: the WAL's files deleted while Delta records
// flushes of later sequences: start-up said "wal replayed entries=0" and
// nothing else. Now it says what is missing, loudly.
func TestWALLossIsReported(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	args := []string{"--http-addr", httpAddr}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE w (time TIMESTAMPTZ NOT NULL, v BIGINT)", "CREATE TABLE u (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO u VALUES ('2026-01-01', 1)", "INSERT INTO w VALUES ('2026-01-01', 1)", "CHECKPOINT",
		"INSERT INTO u VALUES ('2026-01-02', 2)") // in the WAL only
	s.kill9()
	if err := os.RemoveAll(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, args)
	if !strings.Contains(s.logs.String(), "WAL entries from") || !strings.Contains(s.logs.String(), "level=ERROR") {
		t.Errorf("start-up does not say the WAL lost entries:\n%s", s.logs.String())
	}
	code, body := httpGet("http://" + httpAddr + "/health")
	if code != 200 || !strings.Contains(body, "WAL") {
		t.Errorf("/health: %d %q", code, body)
	}
	// New writes get sequences past what Delta recorded: they are not
	// mistaken for flushed ones at the next start.
	c = s.connect(ctx)
	execAll(t, c, "INSERT INTO w VALUES ('2026-01-05', 5)")
	s.kill9()
	s = startServer(t, dir, args)
	c = s.connect(ctx)
	if n := queryInt(t, c, "SELECT sum(v) FROM w"); n != 6 {
		t.Fatalf("w: sum %d, want 6", n)
	}
}

// TestEngineReadErrorNamesTheFile: with the scrubber off, a file whose
// footer was overwritten (same size) is found when a query fails on it:
// the engine's error, which showed the server's absolute path and the SQL
// of tsdb's view, becomes XX001 naming the file, and the file is recorded.
func TestEngineReadErrorNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--scrub-interval", "-1s"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE g (time TIMESTAMPTZ NOT NULL, v BIGINT)", "INSERT INTO g VALUES ('2026-01-01', 1)", "CHECKPOINT")
	files := dataFiles(t, dir, "g")
	s.stop()
	b, _ := os.ReadFile(files[0])
	copy(b[len(b)-8:], "garbage!")
	os.WriteFile(files[0], b, 0o644)
	s = startServer(t, dir, args)
	c = s.connect(ctx)
	for i := 0; i < 2; i++ { // found by the engine, then known
		wantUnavailable(t, c, dir, "SELECT * FROM g", "g", filepath.Base(files[0]))
	}
	if !strings.Contains(s.logs.String(), "does not match its checksum") {
		t.Error("the log does not say the file failed its checksum")
	}
}
