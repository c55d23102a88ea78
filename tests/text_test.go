package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Bytes that are not UTF-8 text (or a NUL) are refused on every way in,
// with PostgreSQL's 22021 and nothing of the statement stored: DuckDB
// cannot read such a value back, so one stored value would make its table
// unreadable for good.
func TestInvalidTextIsRefused(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr})
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE t (time TIMESTAMPTZ NOT NULL, s TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO t VALUES ('2026-01-01 00:00:00+00', 'zoë ☃')"); err != nil {
		t.Fatal(err)
	}
	copyText := func(stmt, data string) error {
		_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), stmt)
		return err
	}
	good := "2026-01-01 00:00:01+00\tok\n"
	tests := []struct {
		name  string
		write func() error
		where string // in the message
	}{
		{"COPY text, raw bytes", func() error { return copyText("COPY t FROM STDIN", good+"2026-01-01 00:00:02+00\tab\xff\xfecd\n") }, "line 2"},
		{"COPY text, escaped bytes", func() error { return copyText("COPY t FROM STDIN", good+"2026-01-01 00:00:02+00\tab\\xffcd\n") }, "line 2"},
		{"COPY text, NUL", func() error { return copyText("COPY t FROM STDIN", good+"2026-01-01 00:00:02+00\tab\x00cd\n") }, "0x00"},
		{"COPY csv", func() error {
			return copyText("COPY t FROM STDIN WITH (FORMAT csv)", "2026-01-01 00:00:01+00,ok\n2026-01-01 00:00:02+00,\"a\xc3\"\n")
		}, "line 2"},
		{"COPY binary (pgx)", func() error {
			_, err := c.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"time", "s"}, pgx.CopyFromRows([][]any{
				{time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), "ok"},
				{time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC), "ab\xfe"},
			}))
			return err
		}, "row 2"},
		{"INSERT literal", func() error {
			return c.PgConn().Exec(ctx, "INSERT INTO t VALUES ('2026-01-01 00:00:02+00', 'x\xff')").Close()
		}, "0xff"},
		{"INSERT parameter", func() error {
			// Over the extended protocol: connect's pgx speaks the simple
			// one, which puts parameters into the query text.
			_, err := c.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", pgx.QueryExecModeExec, time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC), "x\xff")
			return err
		}, "$2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write()
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22021" || !strings.Contains(pe.Message, tt.where) {
				t.Fatalf("got %v, want 22021 naming %s", err, tt.where)
			}
		})
	}
	code, body := post(t, "http://"+httpAddr+"/api/v2/write?bucket=tsdb&precision=s",
		"t s=\"ok\" 1767225601\nt s=\"q\xff\xfe\" 1767225602\n")
	if code != 400 || !strings.Contains(body, "line 2") || !strings.Contains(body, "partial write") {
		t.Fatalf("line protocol: %d %s", code, body)
	}
	// Nothing of the refused writes landed (the good line of the
	// line-protocol request did, as InfluxDB writes it), and the table
	// reads, before and after its rows are flushed to a file.
	for _, stmt := range []string{"SELECT 1", "CHECKPOINT"} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
		var n int
		var v string
		if err := c.QueryRow(ctx, "SELECT count(*), max(s) FROM t").Scan(&n, &v); err != nil || n != 2 || v != "zoë ☃" {
			t.Fatalf("after the refused writes (%s): %d %q %v", stmt, n, v, err)
		}
	}
}
