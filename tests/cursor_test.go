package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQL cursors, as psql's FETCH_COUNT uses them: DECLARE streams its query
// and FETCH reads it a batch at a time, so an endless result can be read
// in part; statements in between read the rest into memory first.
func TestCursors(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx) // simple protocol
	ints := func(q string) string {
		t.Helper()
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return fmt.Sprint(vals)
	}
	exec := func(q string) string {
		t.Helper()
		tag, err := c.Exec(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return tag.String()
	}
	code := func(q string) string {
		t.Helper()
		_, err := c.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %v, want an error", q, err)
		}
		return pe.Code
	}

	exec("BEGIN")
	if tag := exec("DECLARE c CURSOR FOR SELECT i FROM range(0, 10) t(i)"); tag != "DECLARE CURSOR" {
		t.Fatalf("DECLARE: %s", tag)
	}
	if got := ints("FETCH 3 FROM c"); got != "[0 1 2]" {
		t.Fatalf("FETCH 3: %s", got)
	}
	if got := ints("FETCH NEXT FROM c"); got != "[3]" {
		t.Fatalf("FETCH NEXT: %s", got)
	}
	if tag := exec("MOVE 2 IN c"); tag != "MOVE 2" {
		t.Fatalf("MOVE: %s", tag)
	}
	// Another statement in between: c's rest is read into memory first.
	if got := ints("SELECT 42"); got != "[42]" {
		t.Fatalf("SELECT between FETCHes: %s", got)
	}
	if got := ints("FETCH ALL FROM c"); got != "[6 7 8 9]" {
		t.Fatalf("FETCH ALL: %s", got)
	}
	if got := ints("FETCH 5 FROM c"); got != "[]" {
		t.Fatalf("FETCH past the end: %s", got)
	}
	exec("CLOSE c")
	if c := code("FETCH 1 FROM c"); c != "34000" {
		t.Fatalf("FETCH from a closed cursor: %s", c)
	}
	// As in PostgreSQL, the error ends what the block may do.
	if c := code("FETCH 1 FROM c"); c != "25P02" {
		t.Fatalf("a statement after an error in the block: %s", c)
	}
	if tag := exec("COMMIT"); tag != "ROLLBACK" {
		t.Fatalf("COMMIT of a failed block: %s", tag)
	}
	// Each refused statement in a block of its own: it fails the block.
	// A NO SCROLL cursor (psql's FETCH_COUNT) cannot go back.
	for _, tt := range []struct{ query, code string }{
		{"DECLARE d CURSOR FOR SELECT 1", "42P03"},
		{"FETCH BACKWARD 1 FROM d", "55000"},
		{"FETCH -1 FROM d", "55000"},
		{"FETCH 0 FROM d", "55000"},
		{"MOVE ABSOLUTE 1 IN d", "55000"},
		{"FETCH LAST FROM d", "55000"},
		{"FETCH 1 FROM nope", "34000"},
	} {
		exec("BEGIN")
		exec("DECLARE d NO SCROLL CURSOR FOR SELECT i FROM range(0, 10) t(i)")
		if got := ints("FETCH 2 FROM d"); got != "[0 1]" {
			t.Fatalf("NO SCROLL: %s", got)
		}
		if got := code(tt.query); got != tt.code {
			t.Errorf("%s: %s, want %s", tt.query, got, tt.code)
		}
		exec("ROLLBACK")
	}
	exec("BEGIN")
	exec("DECLARE d CURSOR FOR SELECT i FROM range(0, 10) t(i)")
	if got := ints("FETCH ALL FROM d"); got != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("after the refused statements: %s", got)
	}
	// Closing a cursor ends nothing else the same Query runs.
	results, err := c.PgConn().Exec(ctx, "DECLARE m CURSOR FOR SELECT 1; CLOSE m; SELECT 2").ReadAll()
	if err != nil || len(results) != 3 || results[2].Err != nil || len(results[2].Rows) != 1 || string(results[2].Rows[0][0]) != "2" {
		t.Fatalf("DECLARE, CLOSE and SELECT in one Query: %v %+v", err, results)
	}
	// A SCROLL cursor goes anywhere, as PostgreSQL 15 answers (each
	// answer checked there over generate_series(1, 5)).
	exec("DECLARE sc SCROLL CURSOR FOR SELECT i FROM range(1, 6) t(i)")
	for _, tt := range []struct{ query, want string }{
		{"FETCH 2 FROM sc", "[1 2]"},
		{"FETCH BACKWARD 1 FROM sc", "[1]"},
		{"FETCH 0 FROM sc", "[1]"},
		{"FETCH PRIOR FROM sc", "[]"},
		{"FETCH PRIOR FROM sc", "[]"},
		{"FETCH LAST FROM sc", "[5]"},
		{"FETCH NEXT FROM sc", "[]"},
		{"FETCH BACKWARD 2 FROM sc", "[5 4]"},
		{"FETCH ABSOLUTE 2 FROM sc", "[2]"},
		{"FETCH ABSOLUTE -2 FROM sc", "[4]"},
		{"FETCH RELATIVE 1 FROM sc", "[5]"},
		{"FETCH RELATIVE -3 FROM sc", "[2]"},
		{"FETCH RELATIVE 0 FROM sc", "[2]"},
		{"FETCH ABSOLUTE 9 FROM sc", "[]"},
		{"FETCH BACKWARD ALL FROM sc", "[5 4 3 2 1]"},
		{"MOVE FORWARD ALL IN sc", "MOVE 5"},
		{"MOVE ABSOLUTE 3 IN sc", "MOVE 1"},
		{"FETCH -1 FROM sc", "[2]"},
		{"FETCH FIRST FROM sc", "[1]"},
		{"FETCH ABSOLUTE 0 FROM sc", "[]"},
		{"MOVE RELATIVE -9 IN sc", "MOVE 0"},
		{"FETCH FORWARD ALL FROM sc", "[1 2 3 4 5]"},
		{"FETCH RELATIVE -9 FROM sc", "[]"},
		{"FETCH RELATIVE 2 FROM sc", "[2]"},
	} {
		var got string
		if strings.HasPrefix(tt.query, "MOVE") {
			got = exec(tt.query)
		} else {
			got = ints(tt.query)
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.query, got, tt.want)
		}
	}
	// A cursor without SCROLL goes back over what it read, as
	// PostgreSQL's does over a plan that can.
	exec("DECLARE plain CURSOR FOR SELECT i FROM range(0, 10) t(i)")
	if got := ints("FETCH 3 FROM plain"); got != "[0 1 2]" {
		t.Fatalf("plain: %s", got)
	}
	if got := ints("FETCH BACKWARD 2 FROM plain"); got != "[1 0]" {
		t.Fatalf("plain, backward: %s", got)
	}
	// Past 16 MiB of rows read it stops keeping them (a client streaming
	// a large result reads forward): going back is then refused, never
	// answered from rows it no longer has.
	exec("DECLARE big CURSOR FOR SELECT i FROM range(0, 2000000) t(i)")
	if tag := exec("MOVE 1500000 IN big"); tag != "MOVE 1500000" {
		t.Fatalf("MOVE over the big cursor: %s", tag)
	}
	if got := ints("FETCH 1 FROM big"); got != "[1500000]" {
		t.Fatalf("after the MOVE: %s", got)
	}
	if c := code("FETCH BACKWARD 1 FROM big"); c != "55000" {
		t.Fatalf("going back past what a cursor without SCROLL keeps: %s", c)
	}
	exec("ROLLBACK")
	exec("BEGIN")
	// An endless result is streamed, not collected, and statement_timeout
	// bounds each FETCH.
	exec("SET statement_timeout = '300ms'")
	exec("DECLARE endless NO SCROLL CURSOR FOR SELECT i FROM range(0, 1000000000000) t(i)")
	if got := ints("FETCH 3 FROM endless"); got != "[0 1 2]" {
		t.Fatalf("endless: %s", got)
	}
	if got := ints("FETCH 2 FROM endless"); got != "[3 4]" {
		t.Fatalf("endless again: %s", got)
	}
	if got := code("FETCH ALL FROM endless"); got != "57014" {
		t.Fatalf("statement_timeout of a FETCH: %s", got)
	}
	exec("ROLLBACK")
	exec("SET statement_timeout = 0")
	exec("BEGIN")
	exec("DECLARE kept CURSOR WITH HOLD FOR SELECT i FROM range(0, 3) t(i)")
	exec("DECLARE gone CURSOR FOR SELECT 1")
	exec("COMMIT")
	if c := code("FETCH 1 FROM gone"); c != "34000" {
		t.Fatalf("a cursor without HOLD after COMMIT: %s", c)
	}
	if got := ints("FETCH ALL FROM kept"); got != "[0 1 2]" {
		t.Fatalf("WITH HOLD after COMMIT: %s", got)
	}
	// A rollback takes the HOLD cursors its transaction declared with it.
	exec("BEGIN")
	exec("DECLARE undone CURSOR WITH HOLD FOR SELECT 1")
	exec("ROLLBACK")
	if c := code("FETCH 1 FROM undone"); c != "34000" {
		t.Fatalf("a HOLD cursor after ROLLBACK: %s", c)
	}
	if got := ints("FETCH ALL FROM kept"); got != "[]" {
		t.Fatalf("a committed HOLD cursor after a later ROLLBACK: %s", got)
	}
	if c := code("DECLARE outside CURSOR FOR SELECT 1"); c != "25P01" {
		t.Fatalf("DECLARE outside a transaction: %s", c)
	}
	// What a statement in between reads into memory is bounded: an
	// endless cursor of 10 kB rows ends with 54000 after 256 MiB, and the
	// server goes on.
	exec("BEGIN")
	exec("DECLARE huge CURSOR FOR SELECT repeat('x', 10000) FROM range(0, 1000000000000) t(i)")
	exec("FETCH 1 FROM huge")
	if got := ints("SELECT 7"); got != "[7]" {
		t.Fatalf("SELECT beside an endless cursor: %s", got)
	}
	if c := code("FETCH ALL FROM huge"); c != "54000" {
		t.Fatalf("FETCH of a cursor held past the limit: %s", c)
	}
	exec("COMMIT")
	// The statement that has a cursor read into memory can cancel that
	// reading: its timeout ends the statement and the cursor, long before
	// the 256 MiB (about 18 million rows of one bigint, seconds of work).
	exec("SET statement_timeout = '200ms'")
	exec("BEGIN")
	exec("DECLARE slow CURSOR FOR SELECT i FROM range(0, 1000000000000) t(i)")
	exec("FETCH 1 FROM slow")
	if c := code("SELECT 8"); c != "57014" {
		t.Fatalf("a statement timing out while a cursor is read into memory: %s", c)
	}
	// The timeout failed the block: the cursor goes with it.
	if c := code("FETCH ALL FROM slow"); c != "25P02" {
		t.Fatalf("the cursor whose reading was canceled: %s", c)
	}
	exec("ROLLBACK")
	exec("SET statement_timeout = 0")

	// psql's FETCH_COUNT: BEGIN, DECLARE, FETCH FORWARD n until a short
	// batch, CLOSE, COMMIT.
	out := s.psql("SELECT i FROM range(0, 10) t(i);\n", "-v", "FETCH_COUNT=3", "-A", "-t")
	if got := strings.Fields(out); fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("psql FETCH_COUNT:\n%s", out)
	}
}
