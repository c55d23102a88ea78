package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tsdb/internal/s3test"
)

// s3Env is the environment that points tsdb at a versitygw server.
func s3Env(srv *s3test.Server) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey, "AWS_ENDPOINT_URL=" + srv.Endpoint, "AWS_REGION=us-east-1"}
}

// commitVersions lists the commit files of a table in versitygw's posix
// directory and checks that they run 0, 1, 2, ... without a gap.
func commitVersions(t *testing.T, logDir string) int {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			if want := fmt.Sprintf("%020d.json", n); e.Name() != want {
				t.Fatalf("commit %s where %s belongs: a version is missing", e.Name(), want)
			}
			n++
		}
	}
	return n
}

// TestS3Storage: with --storage s3://..., tables live in the bucket (the
// WAL stays local), DML and VACUUM work there, and a restart with an empty
// local cache reads everything back from the bucket. chDB reads the table
// from the server's own files.
func TestS3Storage(t *testing.T) {
	srv := s3test.Start(t, "lake")
	dir := t.TempDir()
	args := []string{"--storage", "s3://lake/prod/db", "--compact-interval", "-1s", "--deleted-file-retention", "-1s"}
	s := startServer(t, dir, args, s3Env(srv)...)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE readings (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	for b := range 3 {
		execAll(t, c, fmt.Sprintf(`INSERT INTO readings SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + INTERVAL '%d minutes' + g * INTERVAL '1 second', 'h' || (g %% 4), g
			FROM generate_series(0, 199) AS t(g)`, b*10), "CHECKPOINT")
	}
	execAll(t, c, "DELETE FROM readings WHERE host = 'h0'", "UPDATE readings SET v = -v WHERE host = 'h1'")
	const check = "SELECT count(*) * 1000000 + sum(v)::BIGINT FROM readings"
	want := queryInt(t, c, check)
	if n := queryInt(t, c, "SELECT count(*) FROM readings"); n != 450 {
		t.Fatalf("%d rows after DELETE, want 450", n)
	}
	execAll(t, c, "VACUUM readings")
	if got := queryInt(t, c, check); got != want {
		t.Fatalf("after VACUUM %d, want %d", got, want)
	}
	c.Close(ctx)

	table := filepath.Join(srv.Dir, "lake", "prod", "db", "readings")
	commits := commitVersions(t, filepath.Join(table, "_delta_log"))
	parquet, _ := filepath.Glob(filepath.Join(table, "*.parquet"))
	if len(parquet) != 1 {
		t.Fatalf("%d Parquet files in the bucket after VACUUM, want 1 (removed files deleted at once)", len(parquet))
	}
	if _, err := os.Stat(filepath.Join(dir, "tables", "readings")); !os.IsNotExist(err) {
		t.Fatalf("the table must not be in the local data dir: %v", err)
	}
	t.Logf("bucket holds %d commits and %d Parquet file", commits, len(parquet))

	// chDB reads the table straight from the server's files.
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT count(*) AS n, sum(v) AS s FROM deltaLakeLocal('%s')", table)), []string{"n", "s"})
	if len(got) != 1 || !strings.HasPrefix(got[0], "450|") {
		t.Fatalf("chDB read %v, want 450 rows", got)
	}

	// A restart without the local mirror downloads the files again.
	s.stop()
	if err := os.RemoveAll(filepath.Join(dir, "s3-cache")); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir, args, s3Env(srv)...)
	c = s.connect(ctx)
	defer c.Close(ctx)
	if got := queryInt(t, c, check); got != want {
		t.Fatalf("after restart %d, want %d", got, want)
	}
	execAll(t, c, "DROP TABLE readings")
	if _, err := os.Stat(filepath.Join(table, "_delta_log", "00000000000000000000.json")); !os.IsNotExist(err) {
		t.Fatalf("DROP TABLE left the log in the bucket: %v", err)
	}
}

// TestS3BadCredentials: a wrong secret stops start-up with an error that
// names the storage and what the server said.
func TestS3BadCredentials(t *testing.T) {
	srv := s3test.Start(t, "lake")
	env := s3Env(srv)
	env[1] = "AWS_SECRET_ACCESS_KEY=wrong"
	s, died := launch(t, t.TempDir(), []string{"--storage", "s3://lake/db"}, env...)
	if died == nil {
		t.Fatalf("tsdb started with a wrong S3 secret")
	}
	if logs := s.logs.String(); !strings.Contains(logs, "s3://lake/db") || !strings.Contains(logs, "Access Denied") {
		t.Fatalf("start-up error should name the storage and the cause:\n%s", logs)
	}
}

// TestTwoWritersOneTable: two tsdb processes, each with its own data dir
// and WAL, write the same table on one S3 store at once, flushing the same
// time buckets. Every acknowledged row lands exactly once (also rows one of
// them only had in its WAL when it was killed), commit versions have no
// gap, and each process reads the other's flushed rows.
func TestTwoWritersOneTable(t *testing.T) {
	srv := s3test.Start(t, "lake")
	args := []string{"--storage", "s3://lake/shared", "--refresh-interval", "200ms", "--compact-interval", "-1s"}
	dirA, dirB := t.TempDir(), t.TempDir()
	a := startServer(t, dirA, args, s3Env(srv)...)
	b := startServer(t, dirB, args, s3Env(srv)...)
	ctx := context.Background()
	const ddl = "CREATE TABLE IF NOT EXISTS m (time TIMESTAMPTZ NOT NULL, writer TEXT, k BIGINT)"
	ca, cb := a.connect(ctx), b.connect(ctx)
	execAll(t, ca, ddl)
	execAll(t, cb, ddl) // B finds A's table in the bucket
	ca.Close(ctx)
	cb.Close(ctx)

	// Four clients per writer, each: 15 rounds of INSERT (50 rows into the
	// same ten-minute buckets as everyone else) and CHECKPOINT, so flush
	// commits of both processes race for the same versions.
	const clients, rounds, rowsPer = 4, 15, 50
	var wg sync.WaitGroup
	for w, srvr := range map[string]*server{"a": a, "b": b} {
		for cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := srvr.tryConnect(ctx) // t.Fatal belongs to the test's goroutine
				if err != nil {
					t.Errorf("%s: %v", w, err)
					return
				}
				defer c.Close(ctx)
				for r := range rounds {
					base := (cl*rounds + r) * rowsPer
					q := fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + (g %% 1200) * INTERVAL '1 second', '%s', %d + g
						FROM generate_series(0, %d) AS t(g)`, w, base, rowsPer-1)
					if _, err := c.Exec(ctx, q); err != nil {
						t.Errorf("%s: %v", w, err)
						return
					}
					if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
						t.Errorf("%s checkpoint: %v", w, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// B acknowledges rows that only its WAL holds, then dies.
	cb = b.connect(ctx)
	execAll(t, cb, `INSERT INTO m SELECT TIMESTAMPTZ '2026-12-01 00:05:00+00', 'b', 1000000 + g FROM generate_series(0, 99) AS t(g)`)
	cb.Close(ctx)
	b.kill9()
	b = startServer(t, dirB, args, s3Env(srv)...)
	cb = b.connect(ctx)
	defer cb.Close(ctx)
	execAll(t, cb, "CHECKPOINT")

	const total = 2*clients*rounds*rowsPer + 100
	const check = "SELECT count(*), count(DISTINCT (writer, k)) FROM m"
	ca = a.connect(ctx)
	defer ca.Close(ctx)
	for name, c := range map[string]*pgx.Conn{"a": ca, "b": cb} {
		var n, distinct int64
		deadline := time.Now().Add(15 * time.Second)
		for {
			if err := c.QueryRow(ctx, check).Scan(&n, &distinct); err != nil {
				t.Fatal(err)
			}
			if n >= total || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n != total || distinct != total {
			t.Fatalf("writer %s sees %d rows (%d distinct), want %d each: a row was lost or doubled", name, n, distinct, total)
		}
	}
	// A column A adds reaches B: B writes it, A reads it.
	execAll(t, ca, "ALTER TABLE m ADD COLUMN note TEXT")
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := cb.Exec(ctx, "INSERT INTO m (time, writer, k, note) VALUES ('2026-12-01 00:30:00+00', 'b', 2000000, 'from b')"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("B never saw the column A added: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	execAll(t, cb, "CHECKPOINT")
	for {
		var note string
		if err := ca.QueryRow(ctx, "SELECT coalesce(max(note), '') FROM m").Scan(&note); err != nil {
			t.Fatal(err)
		}
		if note == "from b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A never saw B's row in the new column")
		}
		time.Sleep(100 * time.Millisecond)
	}
	versions := commitVersions(t, filepath.Join(srv.Dir, "lake", "shared", "m", "_delta_log"))
	t.Logf("both writers see all %d rows; the log has %d commits, none missing", total, versions)
}
