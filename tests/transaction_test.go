package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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

// A connection that drops inside a block discards the block and releases
// its locks: another session changes the same rows at once.
func TestDroppedConnectionDiscardsItsBlock(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	s.psql("CREATE TABLE t (time TIMESTAMPTZ NOT NULL, v BIGINT); INSERT INTO t VALUES ('2026-01-01 00:00:00+00', 1), ('2026-01-01 00:00:10+00', 2)")
	gone := s.connect(ctx)
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES ('2026-01-01 00:00:20+00', 3)", "DELETE FROM t WHERE v = 1"} {
		if _, err := gone.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	gone.PgConn().Conn().Close() // no Terminate: the socket just ends
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tag, err := c.Exec(wctx, "UPDATE t SET v = v * 10")
	if err != nil || tag.String() != "UPDATE 2" {
		t.Fatalf("UPDATE after the other block's connection dropped: %v %v (its lock or its rows stayed)", tag, err)
	}
	var sum int64
	if err := c.QueryRow(ctx, "SELECT sum(v) FROM t").Scan(&sum); err != nil || sum != 30 {
		t.Fatalf("sum: %d, %v, want 30", sum, err)
	}
}

// A block that holds more than --memory-limit gets 53200; what was
// committed before stays, and the connection goes on after ROLLBACK.
func TestTransactionLargerThanMemoryLimit(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--memory-limit", "16MiB"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE big (time TIMESTAMPTZ NOT NULL, pad TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO big SELECT now(), 'committed' FROM range(100)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = c.Exec(ctx, "INSERT INTO big SELECT now(), repeat('x', 1000) FROM range(2000)")
	}
	if pgCode(err) != "53200" {
		t.Fatalf("a block past the memory limit: %v, want 53200", err)
	}
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil || n != 100 {
		t.Fatalf("rows after the refused block: %d, %v, want the 100 committed before", n, err)
	}
}

// RETURNING over the extended protocol: Describe gives the columns the
// rows come with, names and types as PostgreSQL's.
func TestReturningDescribed(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE r (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q     string
		args  []any
		names string
		oids  []uint32
		row   string
	}{
		{"INSERT INTO r VALUES ($1, $2, $3) RETURNING *", []any{"2026-01-01 00:00:00+00", "a", 1}, "time,host,v", []uint32{1184, 25, 20}, "2026-01-01 00:00:00 +0000 UTC|a|1"},
		{"INSERT INTO r AS x VALUES ($1, 'b', 2) RETURNING x.v * 2 AS twice, upper(host)", []any{"2026-01-01 00:00:10+00"}, "twice,upper", []uint32{20, 25}, "4|B"},
		{"UPDATE r SET v = v + $1 WHERE host = 'a' RETURNING v, host", []any{10}, "v,host", []uint32{20, 25}, "11|a"},
		{"DELETE FROM r WHERE host = $1 RETURNING v", []any{"b"}, "v", []uint32{20}, "2"},
	}
	for _, tc := range tests {
		rows, err := c.Query(ctx, tc.q, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		var names []string
		var oids []uint32
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
			oids = append(oids, f.DataTypeOID)
		}
		var got []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				if tm, ok := v.(time.Time); ok {
					v = tm.UTC()
				}
				parts = append(parts, fmt.Sprint(v))
			}
			got = append(got, strings.Join(parts, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if strings.Join(names, ",") != tc.names || fmt.Sprint(oids) != fmt.Sprint(tc.oids) || strings.Join(got, ";") != tc.row {
			t.Errorf("%s: columns %v %v rows %q, want %s %v %q", tc.q, names, oids, got, tc.names, tc.oids, tc.row)
		}
	}
}
