package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Over the wire, a transaction block fails as PostgreSQL's does: an error,
// also one that comes while rows stream, makes the server refuse the next
// statements (25P02, status 'E') until ROLLBACK; a ROLLBACK discards the
// block's writes, a COMMIT keeps them, without a notice either way.
func TestTransactionBlockOverTheWire(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Severity+" "+n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg) // the extended protocol
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (time TIMESTAMPTZ NOT NULL, v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ('2026-01-01 00:00:00+00', 1), ('2026-01-01 00:00:10+00', 2)"); err != nil {
		t.Fatal(err)
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT CAST('x' || v AS INTEGER) FROM t").Scan(&n); pgCode(err) == "" {
		t.Fatalf("a failing cast: %v", err)
	}
	if got := conn.PgConn().TxStatus(); got != 'E' {
		t.Fatalf("status after the error: %c, want E", got)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); pgCode(err) != "25P02" {
		t.Fatalf("a statement after the error: %v, want 25P02", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if got := conn.PgConn().TxStatus(); got != 'I' {
		t.Fatalf("status after ROLLBACK: %c", got)
	}

	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", "2026-01-01 00:00:20+00", 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after a write: %v", err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after ROLLBACK: %d, %v (the write is discarded)", n, err)
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", "2026-01-01 00:00:20+00", 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("rows after COMMIT: %d, %v", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 0 {
		t.Fatalf("notices: %q", notices)
	}
}

// pgCode is the SQLSTATE of a server error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// A portal suspended before its block failed sends no more rows.
func TestSuspendedPortalInAFailedBlock(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	fe, read := rawSession(t, s)
	fe.Send(&pgproto3.Query{String: "BEGIN"})
	fe.Send(&pgproto3.Parse{Name: "endless", Query: "SELECT i FROM range(0, 1000000000000) t(i)"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "endless"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	read()
	if got, want := kinds(read()), "ParseComplete BindComplete D(0) D(1) PortalSuspended "; got != want {
		t.Fatalf("first rows:\n got  %s\n want %s", got, want)
	}
	fe.Send(&pgproto3.Query{String: "SELECT * FROM nope"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Query{String: "ROLLBACK"})
	fe.Send(&pgproto3.Query{String: "SELECT 1"})
	fe.Flush()
	for _, want := range []string{"E(42P01) ", "E(25P02) ", "C(ROLLBACK) ", "RowDescription D(1) C(SELECT 1) "} {
		if got := kinds(read()); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}
