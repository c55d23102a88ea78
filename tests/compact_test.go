package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tsdb/delta"
)

func activeFiles(t testing.TB, dataDir, table string) int {
	t.Helper()
	store, err := delta.NewLocalStore(filepath.Join(dataDir, "tables", table))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := delta.Open(context.Background(), store, table)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Snapshot().Files)
}

// VACUUM merges flushed files into one; readers running meanwhile see
// every row exactly once, and the rows are the same afterwards and after a
// restart.
func TestVacuumCompactsWhileReadersRead(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	for b := range 8 {
		q := fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL '%d minutes' + g * INTERVAL '100 milliseconds', 'h' || (g %% 3), g
			FROM generate_series(0, 4999) AS t(g)`, b*10)
		execAll(t, c, q)
		execAll(t, c, "CHECKPOINT")
	}
	if n := activeFiles(t, dir, "m"); n != 8 {
		t.Fatalf("%d files before VACUUM, want 8", n)
	}
	const check = "SELECT count(*), count(DISTINCT time), sum(v) FROM m"
	var n, distinct int64
	var sum float64
	if err := c.QueryRow(ctx, check).Scan(&n, &distinct, &sum); err != nil || n != 40000 || distinct != 40000 {
		t.Fatalf("before: %d rows, %d distinct, %v", n, distinct, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	started := make(chan struct{})
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := s.tryConnect(ctx) // not s.connect: t.Fatal belongs to the test's goroutine
		if err != nil {
			errs <- err
			return
		}
		defer r.Close(ctx)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var rn, rd int64
			var rs float64
			if err := r.QueryRow(ctx, check).Scan(&rn, &rd, &rs); err != nil || rn != n || rd != distinct || rs != sum {
				errs <- fmt.Errorf("reader during VACUUM saw %d rows (%d distinct, sum %v): %v", rn, rd, rs, err)
				return
			}
			if reads.Add(1) == 1 {
				close(started)
			}
		}
	}()
	// The reader must be reading when VACUUM starts, or it tests nothing.
	select {
	case <-started:
	case err := <-errs:
		t.Fatal(err)
	}
	before := reads.Load()
	execAll(t, c, "VACUUM m")
	during := reads.Load() - before
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if got := activeFiles(t, dir, "m"); got != 1 {
		t.Fatalf("%d files after VACUUM, want 1", got)
	}
	s.stop()
	s = startServer(t, dir, nil)
	c2 := s.connect(ctx)
	defer c2.Close(ctx)
	var n2, d2 int64
	var sum2 float64
	if err := c2.QueryRow(ctx, check).Scan(&n2, &d2, &sum2); err != nil || n2 != n || d2 != distinct || sum2 != sum {
		t.Fatalf("after VACUUM and restart: %d rows, %d distinct, sum %v (%v); want %d, %d, %v", n2, d2, sum2, err, n, distinct, sum)
	}
	t.Logf("%d reads during VACUUM", during)
}

func parquetOnDisk(t *testing.T, dataDir, table string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dataDir, "tables", table, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// VACUUM deletes the files compaction removed once they are older than
// --deleted-file-retention, and not before.
func TestVacuumDeletesRemovedFilesAfterRetention(t *testing.T) {
	for _, tc := range []struct {
		retention string
		onDisk    int
	}{{"168h", 4}, {"0s", 1}} {
		t.Run(tc.retention, func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, dir, []string{"--compact-interval", "-1s", "--deleted-file-retention", tc.retention})
			ctx := context.Background()
			c := s.connect(ctx)
			defer c.Close(ctx)
			execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, v BIGINT)")
			for b := range 3 {
				execAll(t, c, fmt.Sprintf("INSERT INTO m VALUES ('2026-01-01 00:%02d:00+00', %d)", b*10, b))
				execAll(t, c, "CHECKPOINT")
			}
			execAll(t, c, "VACUUM")
			if n := parquetOnDisk(t, dir, "m"); n != tc.onDisk {
				t.Fatalf("%d Parquet files on disk after VACUUM, want %d", n, tc.onDisk)
			}
			var n, sum int64
			if err := c.QueryRow(ctx, "SELECT count(*), sum(v) FROM m").Scan(&n, &sum); err != nil || n != 3 || sum != 3 {
				t.Fatalf("after VACUUM: %d rows, sum %d, %v", n, sum, err)
			}
		})
	}
}

// VACUUM with a short --log-retention drops the log history before the
// newest checkpoint; the table still opens after a restart with every row.
func TestVacuumCleansLogHistory(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--compact-interval", "-1s", "--log-retention", "1ms"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, v BIGINT)")
	for i := range 12 {
		execAll(t, c, fmt.Sprintf("INSERT INTO m VALUES ('2026-01-01 %02d:00:00+00', %d)", i, i))
		execAll(t, c, "CHECKPOINT")
	}
	logDir := filepath.Join(dir, "tables", "m", "_delta_log")
	if _, err := os.Stat(filepath.Join(logDir, fmt.Sprintf("%020d.json", 0))); err != nil {
		t.Fatal("no commit 0 before VACUUM")
	}
	execAll(t, c, "VACUUM m")
	if _, err := os.Stat(filepath.Join(logDir, fmt.Sprintf("%020d.json", 0))); !os.IsNotExist(err) {
		t.Fatalf("commit 0 still there after VACUUM with a 1ms log retention: %v", err)
	}
	c.Close(ctx)
	s.stop()
	s = startServer(t, dir, args)
	c = s.connect(ctx)
	defer c.Close(ctx)
	var n, sum int64
	if err := c.QueryRow(ctx, "SELECT count(*), sum(v) FROM m").Scan(&n, &sum); err != nil || n != 12 || sum != 66 {
		t.Fatalf("after cleaning the log and restarting: %d rows, sum %d, %v", n, sum, err)
	}
}

// A crash in the middle of a compaction (merged file written but not
// committed, or committed but not yet published) leaves a valid table
// with every row exactly once, also the rows only the WAL held; the next
// VACUUM finishes the job. chDB reads the table after the restart.
func TestCrashDuringCompaction(t *testing.T) {
	for _, point := range []string{"compact.after-write", "compact.after-commit"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--compact-interval", "-1s"}
			s := startServer(t, dir, args, "TSDB_FAULTS="+point+"=crash")
			ctx := context.Background()
			c := s.connect(ctx)
			execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, id BIGINT)")
			for b := range 6 {
				execAll(t, c, fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL '%d minutes' + g * INTERVAL '1 second', %d + g
					FROM generate_series(0, 499) AS t(g)`, b*10, b*1000), "CHECKPOINT")
			}
			execAll(t, c, `INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 02:00:00+00' + g * INTERVAL '1 second', 100000 + g FROM generate_series(0, 99) AS t(g)`)
			if _, err := c.Exec(ctx, "VACUUM m"); err == nil {
				t.Fatalf("VACUUM returned although %s crashes the server", point)
			}
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the fault at %s did not fire", point)
			}

			s = startServer(t, dir, append(args, "--orphan-file-age", "1s", "--deleted-file-retention", "-1s"))
			c = s.connect(ctx)
			defer c.Close(ctx)
			const check = "SELECT count(*) * 1000000 + count(DISTINCT id) FROM m"
			const want = 3100*1000000 + 3100
			if got := queryInt(t, c, check); got != want {
				t.Fatalf("after the crash: %d rows / distinct ids (as n*1e6+d), want %d", got, want)
			}
			execAll(t, c, "CHECKPOINT")
			table, _ := filepath.Abs(filepath.Join(dir, "tables", "m"))
			got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT count(*) AS n, uniqExact(id) AS d FROM deltaLakeLocal('%s')", table)), []string{"n", "d"})
			if len(got) != 1 || got[0] != "3100|3100" {
				t.Fatalf("chDB read %v after the crash, want 3100 distinct rows", got)
			}
			time.Sleep(1100 * time.Millisecond) // the merged file of the crashed VACUUM turns orphan-old
			execAll(t, c, "VACUUM m")
			if n := activeFiles(t, dir, "m"); n != 1 {
				t.Fatalf("%d files after the second VACUUM, want 1", n)
			}
			// Removed inputs and the crashed merge's file are gone too.
			if n := parquetOnDisk(t, dir, "m"); n != 1 {
				t.Fatalf("%d Parquet files on disk after the second VACUUM, want 1", n)
			}
			if got := queryInt(t, c, check); got != want {
				t.Fatalf("after the second VACUUM: %d, want %d", got, want)
			}
		})
	}
}
