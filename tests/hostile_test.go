package tests

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The tests of this file replay what an attacker (any logged-in role)
// tried: statements that crashed the server, took it into the OOM killer
// or ran for minutes beyond statement_timeout.

// TestDeepStatementsGet54001 sends statements nested deeper than any parser
// should recurse: 30,000 terms of 1+1+… killed the server with SIGSEGV in
// pg_query's C code, dropping every connection. Now each gets PostgreSQL's
// 54001, over both protocols, and the server and the session go on.
func TestDeepStatementsGet54001(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	bystander := s.connect(ctx)
	execAll(t, c, "CREATE TABLE d (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)")
	deep := map[string]string{
		"plus":   "SELECT 1" + strings.Repeat("+1", 30_000),
		"concat": "SELECT 'a'" + strings.Repeat("||'a'", 100_000),
		"union":  "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 30_000),
		"parens": "SELECT " + strings.Repeat("(", 30_000) + "1" + strings.Repeat(")", 30_000),
		"not":    "SELECT * FROM d WHERE " + strings.Repeat("NOT ", 20_000) + "v > 1",
		"sum":    "SELECT sum(v" + strings.Repeat("+v", 5_000) + ") FROM d",
	}
	for name, q := range deep {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
			_, err := c.Exec(ctx, q, mode)
			if code := pgCode(err); code != "54001" {
				t.Errorf("%s (%v): %v, want SQLSTATE 54001", name, mode, err)
			}
		}
	}
	if n := queryInt(t, c, "SELECT 1+1+1"); n != 3 {
		t.Fatalf("session after deep statements: %d", n)
	}
	if n := queryInt(t, bystander, "SELECT 2"); n != 2 {
		t.Fatalf("another session after deep statements: %d", n)
	}
	// As deep as PostgreSQL goes comfortably, and the engine too.
	if n := queryInt(t, c, "SELECT 1"+strings.Repeat("+1", 500)); n != 501 {
		t.Fatalf("500 terms: %d", n)
	}
}

// TestHugeStatementsRefused: a million-element IN list (7.9 MB of text)
// took the server from 1.4 to 4.9 GB and 55 s; three 60 MB literals peaked
// at 3.4 GB. Statements the engine would have to plan past
// --max-statement-tokens, or larger than --max-statement-size, are refused
// with 54000 before anything parses them.
func TestHugeStatementsRefused(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--max-statement-size", "4MiB"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE h (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)")
	var in strings.Builder
	in.WriteString("SELECT count(*) FROM h WHERE v IN (0")
	for i := 1; i < 1_000_000; i++ {
		fmt.Fprintf(&in, ",%d", i)
	}
	in.WriteString(")")
	start := time.Now()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		if _, err := c.Exec(ctx, in.String(), mode); pgCode(err) != "54000" {
			t.Errorf("IN list of a million (%v): %v, want SQLSTATE 54000", mode, err)
		}
		big := "SELECT length('" + strings.Repeat("x", 5<<20) + "')"
		if _, err := c.Exec(ctx, big, mode); pgCode(err) != "54000" {
			t.Errorf("5 MiB literal over a 4 MiB --max-statement-size (%v): %v, want SQLSTATE 54000", mode, err)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refusing took %v", d)
	}
	// A large statement within the limits still runs.
	var small strings.Builder
	small.WriteString("SELECT count(*) FROM h WHERE v IN (0")
	for i := 1; i < 20_000; i++ {
		fmt.Fprintf(&small, ",%d", i)
	}
	small.WriteString(")")
	if n := queryInt(t, c, small.String()); n != 0 {
		t.Fatalf("IN list of 20,000: %d rows", n)
	}
}

// TestTimeoutAndCancelCoverPlanning: the engine plans a 20,000-term OR for
// seconds and cannot be interrupted while it does; statement_timeout = 1s
// let it run 8.6 s, and a cancel took 15 s. Now both answer 57014 at once,
// and the session goes on.
func TestTimeoutAndCancelCoverPlanning(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE o (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)",
		"INSERT INTO o VALUES (now(), 1), (now(), 2)")
	terms := make([]string, 20_000)
	for i := range terms {
		terms[i] = fmt.Sprintf("v = %d", i)
	}
	q := "SELECT count(*) FROM o WHERE " + strings.Join(terms, " OR ")

	execAll(t, c, "SET statement_timeout = '1s'")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		start := time.Now()
		_, err := c.Exec(ctx, q, mode)
		if pgCode(err) != "57014" {
			t.Errorf("statement_timeout (%v): %v, want SQLSTATE 57014", mode, err)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("statement_timeout = 1s (%v) answered after %v", mode, d)
		}
	}
	execAll(t, c, "SET statement_timeout = 0")

	// A cancel (pgx sends CancelRequest when the context ends).
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	start := time.Now()
	_, err := c.Exec(cctx, q, pgx.QueryExecModeSimpleProtocol)
	cancel()
	if err == nil {
		t.Fatal("the canceled statement succeeded")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("cancel answered after %v", d)
	}
	// pgx closes a connection whose context ended mid-statement; a new
	// one works, and so does the old session's peer.
	c2 := s.connect(ctx)
	if n := queryInt(t, c2, "SELECT count(*) FROM o WHERE v = 1 OR v = 2"); n != 2 {
		t.Fatalf("after the cancel: %d", n)
	}
	if !strings.Contains(s.logs.String(), "statement canceled while the engine planned it") {
		t.Error("no log line says a planning call was left to finish")
	}
}

// TestPreparedStatementLimit: a client creating named statements without
// closing them grew the server by 750 MB per 200,000.
func TestPreparedStatementLimit(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--max-prepared-statements", "50"})
	ctx := context.Background()
	pc, err := pgconn.Connect(ctx, "postgres://tsdb@"+s.pgAddr+"/tsdb?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	for i := 0; i < 50; i++ {
		if _, err := pc.Prepare(ctx, fmt.Sprintf("s%d", i), fmt.Sprintf("SELECT %d", i), nil); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	if _, err := pc.Prepare(ctx, "one-too-many", "SELECT 1", nil); pgCode(err) != "54000" {
		t.Fatalf("statement 51: %v, want SQLSTATE 54000", err)
	}
	if err := pc.Deallocate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Prepare(ctx, "one-more", "SELECT 1", nil); err != nil {
		t.Fatalf("after closing one: %v", err)
	}
}

// TestUnauthenticatedConnectionsCannotHoldSlots: 100 sockets trickling
// their startup packet a byte a second, or 100 clients failing their
// password (each held up to 8 s), made 0 of 20 real connections succeed.
// Connections in startup now have slots of their own, the longest-starting
// one making room for a new one, and a failed login waits out its delay
// without any slot.
func TestUnauthenticatedConnectionsCannotHoldSlots(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--max-connections", "25", "--max-startup-connections", "16"}, "TSDB_ADMIN_PASSWORD=right")
	ctx := context.Background()
	stop := make(chan struct{})
	defer close(stop)
	// Slowloris: a startup packet one byte a second.
	packet := []byte{0, 0, 0, 40, 0, 3, 0, 0, 'u', 's', 'e', 'r', 0, 't', 's', 'd', 'b', 0, 0}
	for i := 0; i < 100; i++ {
		go func() {
			nc, err := net.Dial("tcp", s.pgAddr)
			if err != nil {
				return
			}
			defer nc.Close()
			for _, b := range packet {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
				if _, err := nc.Write([]byte{b}); err != nil {
					return
				}
			}
		}()
	}
	// Password guessing.
	for i := 0; i < 100; i++ {
		go func() {
			c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb:wrong@%s/tsdb?sslmode=disable", s.pgAddr))
			if err == nil {
				c.Close(ctx)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 20; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := pgx.Connect(cctx, fmt.Sprintf("postgres://tsdb:right@%s/tsdb?sslmode=disable", s.pgAddr))
		cancel()
		if err != nil {
			t.Fatalf("real connection %d while others trickle and fail: %v", i, err)
		}
		defer c.Close(ctx)
	}
	t.Logf("20 real connections in %v", time.Since(start))
	if !strings.Contains(s.logs.String(), "startup slots full") {
		t.Error("no log line says startup slots were full")
	}
}
