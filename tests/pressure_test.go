package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"tsdb/internal/proctest"
)

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rssBound is what the server may use when driven far past a 16 MiB
// --memory-limit: the Go and DuckDB runtimes (about 100-150 MiB here), the
// MemBuffer and the engine's copy of it (2 x 16 MiB), WAL and query buffers.
const rssBound = 600 << 20

// Writers push far more than --memory-limit while flushes are slowed down:
// the server stays up and within its memory bound, writers wait and then get
// 53200, /health says so, and no acknowledged row is lost.
func TestMemoryLimitBackpressure(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	s := startServer(t, dir, []string{"--http-addr", httpAddr, "--memory-limit", "16MiB", "--write-timeout", "300ms",
		"--engine-memory-limit", "256MiB", "--bucket-duration", "1s", "--idle-flush", "10ms"},
		"TSDB_FAULTS=flush.write=delay:400ms")
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE big (time TIMESTAMPTZ NOT NULL, batch BIGINT, i BIGINT, pad TEXT)"); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		acked   = map[int64]bool{}
		nextID  atomic.Int64
		refused atomic.Int64
		other   atomic.Value
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				other.Store(err)
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := nextID.Add(1)
				// 2000 rows of ~300 bytes: ~0.6 MiB per statement.
				_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO big SELECT now() - i * interval '1 millisecond', %d, i, repeat('x', 300) FROM range(0, 2000) t(i)", id))
				var pe *pgconn.PgError
				switch {
				case err == nil:
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				case errors.As(err, &pe) && pe.Code == "53200":
					refused.Add(1)
				default:
					other.Store(err)
					return
				}
			}
		}()
	}
	var maxRSS int64
	sawUnhealthy := false
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if rss, err := proctest.RSS(s.cmd.Process.Pid); err == nil && rss > maxRSS {
			maxRSS = rss
		}
		if code, _ := httpGet("http://" + httpAddr + "/health"); code == http.StatusServiceUnavailable {
			sawUnhealthy = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if err, _ := other.Load().(error); err != nil {
		t.Fatalf("a writer failed with something other than 53200: %v", err)
	}
	t.Logf("%d statements acknowledged, %d refused with 53200, max RSS %d MiB", len(acked), refused.Load(), maxRSS>>20)
	if refused.Load() == 0 {
		t.Error("no write was refused although flushes could not keep up")
	}
	if !sawUnhealthy {
		t.Error("/health never reported the write stall")
	}
	if maxRSS > rssBound {
		t.Errorf("RSS reached %d MiB, bound %d MiB", maxRSS>>20, rssBound>>20)
	}
	_, metrics := httpGet("http://" + httpAddr + "/metrics")
	for _, m := range []string{"tsdb_backpressure_rejections_total", "tsdb_backpressure_waits_total", "tsdb_wal_fsyncs_total", "tsdb_membuffer_table_bytes{table=\"big\"}", "tsdb_flush_duration_seconds_count"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	// Nothing acknowledged is lost, nothing refused is visible.
	var batches, rows int64
	if err := c.QueryRow(ctx, "SELECT count(DISTINCT batch), count(*) FROM big").Scan(&batches, &rows); err != nil {
		t.Fatal(err)
	}
	if batches != int64(len(acked)) || rows != 2000*int64(len(acked)) {
		t.Fatalf("%d batches / %d rows visible, %d statements acknowledged", batches, rows, len(acked))
	}
	s.stop()
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	if err := c.QueryRow(ctx, "SELECT count(DISTINCT batch), count(*) FROM big").Scan(&batches, &rows); err != nil {
		t.Fatal(err)
	}
	if batches != int64(len(acked)) || rows != 2000*int64(len(acked)) {
		t.Fatalf("after restart %d batches / %d rows, %d acknowledged", batches, rows, len(acked))
	}
}

// Failing flushes lose nothing: rows stay queryable, CHECKPOINT reports the
// error, the failures are counted, and a later flush succeeds.
func TestFlushFailuresAreRetried(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr}, "TSDB_FAULTS=flush.commit=error:3")
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO m SELECT '2026-01-01'::timestamptz + i * interval '1 second', i FROM range(0, 100) t(i)"); err != nil {
		t.Fatal(err)
	}
	failures := 0
	for i := 0; i < 10; i++ {
		_, err := c.Exec(ctx, "CHECKPOINT")
		if err == nil {
			break
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "58030" || !strings.Contains(pe.Message, "injected fault") {
			t.Fatalf("CHECKPOINT failure: %v", err)
		}
		failures++
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil || n != 100 {
			t.Fatalf("rows during failing flushes: %d %v", n, err)
		}
	}
	if failures != 3 {
		t.Fatalf("CHECKPOINT failed %d times, want 3 (the injected ones)", failures)
	}
	_, metrics := httpGet("http://" + httpAddr + "/metrics")
	if !strings.Contains(metrics, "tsdb_flush_errors_total 3") {
		t.Errorf("flush errors not counted:\n%s", grepLines(metrics, "tsdb_flush"))
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil || n != 100 {
		t.Fatalf("rows after the flush: %d %v", n, err)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
