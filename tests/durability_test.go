package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tsdb/internal/proctest"
)

func count(t *testing.T, s *server) (total, distinct int64) {
	t.Helper()
	ctx := context.Background()
	c := s.connect(ctx)
	if err := c.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM ev").Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	return total, distinct
}

// SIGTERM flushes everything to Delta; the restart replays nothing twice and
// late rows for flushed time ranges are visible.
func TestRestartAfterSIGTERM(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil, "TSDB_BUCKET_DURATION=1h")
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE ev (time TIMESTAMPTZ NOT NULL, id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO ev SELECT '2026-01-01'::timestamptz + i * interval '1 minute', i FROM range(0, 500) t(i)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	// Late rows for the flushed range, buffered at shutdown.
	if _, err := c.Exec(ctx, "INSERT INTO ev SELECT '2026-01-01'::timestamptz + i * interval '1 minute' + interval '1 second', i FROM range(500, 600) t(i)"); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if !strings.Contains(s.logs.String(), "tsdb stopped") {
		t.Fatalf("no clean stop in log:\n%s", s.logs.String())
	}
	s = startServer(t, dir, nil)
	if total, distinct := count(t, s); total != 600 || distinct != 600 {
		t.Fatalf("after restart: %d rows, %d distinct, want 600", total, distinct)
	}
	if !strings.Contains(s.logs.String(), "entries=0") {
		t.Errorf("shutdown flushed everything, yet the WAL had entries to replay:\n%s", s.logs.String())
	}
	s.stop()
}

// kill -9 at any moment loses no acknowledged row and duplicates none, while
// writers, idle flushes and CHECKPOINTs run concurrently.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--bucket-duration", "1s", "--idle-flush", "50ms", "--flush-interval", "20ms"}
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE ev (time TIMESTAMPTZ NOT NULL, id BIGINT, w INTEGER)"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn := s.connect(ctx)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var sb strings.Builder
				var ids []int64
				for j := 0; j < 20; j++ {
					id := int64(w)*1_000_000 + int64(i)*20 + int64(j)
					ids = append(ids, id)
					if j > 0 {
						sb.WriteString(",")
					}
					// Spread over past buckets so that idle flushes run.
					fmt.Fprintf(&sb, "(now() - interval '%d milliseconds', %d, %d)", (i*37+j*101)%5000, id, w)
				}
				if _, err := conn.Exec(ctx, "INSERT INTO ev VALUES "+sb.String()); err != nil {
					return // the server was killed
				}
				mu.Lock()
				for _, id := range ids {
					acked[id] = true
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn := s.connect(ctx)
		for {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
				return
			}
		}
	}()
	time.Sleep(2500 * time.Millisecond)
	s.kill9()
	close(stop)
	wg.Wait()
	if len(acked) < 100 {
		t.Fatalf("only %d rows acknowledged before the kill; the test did not exercise anything", len(acked))
	}

	s = startServer(t, dir, args)
	c = s.connect(ctx)
	rows, err := c.Query(ctx, "SELECT id, count(*) FROM ev GROUP BY id")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("row %d is there %d times", id, n)
		}
		seen[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for id := range acked {
		if !seen[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged rows lost after kill -9", lost, len(acked))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tables", "ev", "*.parquet"))
	t.Logf("%d acknowledged rows, %d rows after restart, %d parquet files", len(acked), len(seen), len(files))
	if len(files) == 0 {
		t.Error("no flush happened before the kill; the test did not exercise the flush path")
	}
	s.stop()
}

// A second process on the same data directory refuses to start.
func TestSecondProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	startServer(t, dir, nil)
	cmd := exec.Command(binary, "serve", "--data-dir", dir, "--pg-addr", freeAddr(t), "--http-addr", "")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("second process on the same data dir started")
	}
	if !strings.Contains(string(out), "in use by another tsdb process") {
		t.Fatalf("unclear message:\n%s", out)
	}
}

// Flags come from TSDB_* environment variables too.
func TestConfigFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	var addr string
	var logs *proctest.LockedBuffer
	// A free port can be taken between freeAddr and tsdb's bind: start
	// again on new ports then, at most three times.
	for attempt := 0; ; attempt++ {
		addr = freeAddr(t)
		cmd := exec.Command(binary, "serve")
		cmd.Env = append(os.Environ(), "TSDB_DATA_DIR="+dir, "TSDB_PG_ADDR="+addr, "TSDB_HTTP_ADDR="+freeAddr(t), "TSDB_BUCKET_DURATION=7m", "TSDB_LOG_FORMAT=json")
		logs = &proctest.LockedBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(logs.String(), `"msg":"tsdb ready"`) && !strings.Contains(logs.String(), "address already in use") {
			if time.Now().After(deadline) {
				t.Fatalf("not ready:\n%s", logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), "address already in use") {
			break
		}
		if attempt == 2 {
			t.Fatalf("not ready:\n%s", logs.String())
		}
	}
	for _, want := range []string{`"pg_addr":"` + addr + `"`, `"bucket_duration":"7m0s"`, `"data_dir":"` + dir + `"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// Rows a COPY acknowledged survive kill -9 exactly, text columns too: a
// COPY's WAL entries hold text as lengths and bytes (ingest/textsplit.go),
// which replay turns back into the column — NULLs, empty strings,
// multi-byte text and values longer than 12 bytes alike.
func TestKill9KeepsCopiedText(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--idle-flush", "1h"} // nothing flushed: replay rebuilds it all
	s := startServer(t, dir, args)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE tags (time TIMESTAMPTZ NOT NULL, id BIGINT, host TEXT, note TEXT, v DOUBLE PRECISION)"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	var rows [][]any
	for i := range 30_000 {
		var host, note any
		switch i % 5 {
		case 0: // NULL host
		case 1:
			host = ""
		default:
			host = fmt.Sprintf("host_%d", i%97)
		}
		if i%7 != 0 {
			note = fmt.Sprintf("ünïcödé note %d, longer than twelve bytes", i)
		}
		rows = append(rows, []any{base.Add(time.Duration(i) * time.Second), int64(i), host, note, float64(i) / 7})
		want = append(want, fmt.Sprintf("%d|%v|%v|%v", i, host, note, float64(i)/7))
	}
	if n, err := c.CopyFrom(ctx, pgx.Identifier{"tags"}, []string{"time", "id", "host", "note", "v"}, pgx.CopyFromRows(rows)); err != nil || n != int64(len(rows)) {
		t.Fatalf("COPY: %d rows, %v", n, err)
	}
	s.kill9()

	s = startServer(t, dir, args)
	defer s.stop()
	c = s.connect(ctx)
	res, err := c.Query(ctx, "SELECT id, host, note, v FROM tags ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for res.Next() {
		var id int64
		var host, note *string
		var v float64
		if err := res.Scan(&id, &host, &note, &v); err != nil {
			t.Fatal(err)
		}
		str := func(p *string) any {
			if p == nil {
				return nil
			}
			return *p
		}
		got = append(got, fmt.Sprintf("%d|%v|%v|%v", id, str(host), str(note), v))
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows after kill -9, %d copied", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d after kill -9: %s, want %s", i, got[i], want[i])
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tables", "tags", "*.parquet"))
	if len(files) != 0 {
		t.Errorf("%d files flushed before the kill: replay was not what answered", len(files))
	}
}
