package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

func TestConnectionLimits(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--max-connections", "3", "--startup-timeout", "500ms", "--idle-timeout", "1s"})
	ctx := context.Background()
	url := fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr)

	// A client that sends half a message and stops holds its connection
	// only: others keep working.
	slow, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fe := pgproto3.NewFrontend(slow, slow)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb"}})
	fe.Flush()
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	slow.Write([]byte{'Q', 0, 0, 0, 100, 'S', 'E', 'L'}) // 100 bytes announced, 3 sent

	c1, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close(ctx)
	var one int
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query while a client hangs mid-message: %v", err)
	}
	c2, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	// The fourth connection is over the limit.
	_, err = pgx.Connect(ctx, url)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("connection over the limit: %v", err)
	}

	// A 2 GiB length prefix is refused without allocating it; the server
	// goes on.
	c2.Close(ctx)
	time.Sleep(200 * time.Millisecond) // let the server see c2 go
	big, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	bfe := pgproto3.NewFrontend(big, big)
	bfe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb"}})
	bfe.Flush()
	for {
		m, err := bfe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	hdr := []byte{'Q', 0, 0, 0, 0}
	hdr[1], hdr[2], hdr[3], hdr[4] = 0x7f, 0xff, 0xff, 0xff
	big.Write(hdr)
	big.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(big); err != nil {
		t.Fatalf("oversized message: connection not closed: %v", err)
	}
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after the oversized message: %v", err)
	}

	// A connection that never finishes its startup is closed.
	mute, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	mute.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(mute); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("silent client not dropped after the startup timeout: %v after %v", err, time.Since(start))
	}

	// Idle connections are closed after --idle-timeout.
	time.Sleep(1500 * time.Millisecond)
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err == nil {
		t.Fatal("idle connection survived --idle-timeout")
	}
	c3, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("new connection after the idle ones closed: %v", err)
	}
	c3.Close(ctx)
}

// TestStatementMemoryLimit checks the engine's memory limits: SHOW work_mem
// reports --statement-memory-limit; an aggregation larger than the whole engine
// budget spills into the data directory and completes while another
// session keeps working; a statement that cannot spill gets 53200 and its
// connection stays usable.
func TestStatementMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--engine-memory-limit", "256MiB", "--statement-memory-limit", "8MiB"})
	ctx := context.Background()
	heavy, other := s.connect(ctx), s.connect(ctx)
	defer heavy.Close(ctx)
	defer other.Close(ctx)

	var workMem string
	if err := other.QueryRow(ctx, "SHOW work_mem").Scan(&workMem); err != nil || workMem != "8MB" {
		t.Fatalf("SHOW work_mem = %q, %v; want 8MB", workMem, err)
	}
	// A session may lower its work_mem, not raise it past the server's.
	if _, err := other.Exec(ctx, "SET work_mem = '1GB'"); err == nil || !strings.Contains(err.Error(), "22023") {
		t.Fatalf("SET work_mem above the server's limit: %v, want 22023", err)
	}
	if _, err := other.Exec(ctx, "SET work_mem = '1MB'"); err != nil {
		t.Fatal(err)
	}
	if err := other.QueryRow(ctx, "SHOW work_mem").Scan(&workMem); err != nil || workMem != "1MB" {
		t.Fatalf("SHOW work_mem after SET = %q, %v; want 1MB", workMem, err)
	}
	if _, err := other.Exec(ctx, "RESET work_mem"); err != nil {
		t.Fatal(err)
	}

	// Watch the engine's spill directory while the big aggregation runs.
	tmp := filepath.Join(dir, "engine-tmp")
	stop := make(chan struct{})
	spilled := make(chan bool, 1)
	go func() {
		seen := false
		for {
			if es, _ := os.ReadDir(tmp); len(es) > 0 {
				seen = true
			}
			select {
			case <-stop:
				spilled <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	type result struct {
		sum int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		// 12M groups: a hash table far larger than 256 MiB.
		r.err = heavy.QueryRow(ctx, `SELECT sum(c * (k % 7)) FROM (SELECT g AS k, count(*) AS c
			FROM generate_series(1, 12000000) AS t(g) GROUP BY g) s`).Scan(&r.sum)
		done <- r
	}()
	small := 0
	var r result
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-time.After(50 * time.Millisecond):
			var n int64
			if err := other.QueryRow(ctx, "SELECT count(*) FROM generate_series(1, 1000)").Scan(&n); err != nil || n != 1000 {
				t.Fatalf("small query while the big aggregation runs: %d, %v", n, err)
			}
			small++
		}
	}
	close(stop)
	if r.err != nil {
		t.Fatalf("big aggregation under the statement memory limit: %v", r.err)
	}
	if r.sum <= 0 {
		t.Fatalf("big aggregation returned %d", r.sum)
	}
	if !<-spilled {
		t.Fatalf("no spill files appeared in %s", tmp)
	}
	t.Logf("big aggregation done; %d small queries ran meanwhile", small)

	// Aggregating one 200 MB string cannot spill: out of memory, 53200.
	var n int64
	err := heavy.QueryRow(ctx, "SELECT length(string_agg(g::text || repeat('x', 20), ',')) FROM generate_series(1, 8000000) AS t(g)").Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53200" {
		t.Fatalf("statement over the engine memory: %v (result %d), want 53200", err, n)
	}
	if err := heavy.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("connection after 53200: %v", err)
	}
}

// A large INSERT … SELECT (2.4M rows over a week of buckets, about 65 MB
// in the WAL) is one atomic, durable statement like any other: it used to
// exceed one badger transaction (the WAL before the segment log) and fail
// with 54000.
func TestLargeInsertSelect(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)",
		`INSERT INTO m SELECT TIMESTAMPTZ '2026-11-01 00:00:00+00' + (g // 40) * INTERVAL '10 seconds', 'host-' || (g % 40), g % 1000 / 10.0
			FROM generate_series(0, 2419199) AS t(g)`)
	const check = "SELECT count(*) * 1000 + count(DISTINCT host) FROM m"
	if got := queryInt(t, c, check); got != 2419200*1000+40 {
		t.Fatalf("after the insert: %d", got)
	}
	c.Close(ctx)
	s.kill9() // nothing flushed yet: the WAL alone must hold it
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	defer c.Close(ctx)
	if got := queryInt(t, c, check); got != 2419200*1000+40 {
		t.Fatalf("after kill -9 and replay: %d", got)
	}
}
