package tests

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Arrays as clients send them: pgx in binary (int4[], text[]), and the
// text form node-postgres and psycopg send untyped ({"a","b"}), in
// = ANY($1), casts and results.
func TestArrayParameters(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE m (time timestamptz NOT NULL, host text, v int)",
		"INSERT INTO m VALUES (now(), 'a', 1), (now(), 'b', 2), (now(), 'c', 3)")
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m WHERE host = ANY($1)", []string{"a", "c", `x"y\`}).Scan(&n); err != nil || n != 2 {
		t.Errorf("host = ANY(text[] binary): %d %v, want 2", n, err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m WHERE v = ANY($1)", []int32{1, 2}).Scan(&n); err != nil || n != 2 {
		t.Errorf("v = ANY(int4[] binary): %d %v, want 2", n, err)
	}
	var arr []int32
	if err := c.QueryRow(ctx, "SELECT $1::int[]", []int32{5, 6}).Scan(&arr); err != nil || len(arr) != 2 || arr[1] != 6 {
		t.Errorf("$1::int[]: %v %v", arr, err)
	}
	rr := c.PgConn().ExecParams(ctx, "SELECT count(*) FROM m WHERE host = ANY($1)", [][]byte{[]byte(`{"a","b"}`)}, []uint32{0}, nil, nil).Read()
	if rr.Err != nil || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != "2" {
		t.Errorf("host = ANY(untyped text {\"a\",\"b\"}): %v %q", rr.Err, rr.Rows)
	}
	if _, err := c.Exec(ctx, "SELECT count(*) FROM m WHERE v = ANY($1)", pgx.QueryExecModeSimpleProtocol, "{1,"); err == nil {
		t.Error("a malformed array text was accepted")
	}
}
