package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgx in its default mode: prepared statements cached per connection,
// parameters and results in binary, batches pipelined.
func TestPgxDefaultMode(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT, i INTEGER, s SMALLINT, r REAL, b BOOLEAN)"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 123456000, time.UTC)
	insert := "INSERT INTO m VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
	for i := 0; i < 3; i++ {
		tag, err := c.Exec(ctx, insert, t0.Add(time.Duration(i)*time.Minute), fmt.Sprintf("h%d", i), 1.5*float64(i), int64(1)<<40+int64(i), int32(-i), int16(i), float32(0.25), i%2 == 0)
		if err != nil {
			t.Fatalf("parameterised insert: %v", err)
		}
		if tag.String() != "INSERT 0 1" {
			t.Fatalf("tag %q", tag)
		}
	}
	if _, err := c.Exec(ctx, insert, t0.Add(time.Hour), nil, nil, nil, nil, nil, nil, nil); err != nil {
		t.Fatalf("insert of NULLs: %v", err)
	}
	// A batch is one pipeline of Bind/Execute messages.
	batch := &pgx.Batch{}
	for i := 0; i < 50; i++ {
		batch.Queue(insert, t0.Add(time.Duration(100+i)*time.Second), "batch", float64(i), int64(i), int32(i), int16(i), float32(i), true)
	}
	if err := c.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatalf("batch: %v", err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m WHERE host = $1", "batch").Scan(&n); err != nil || n != 50 {
		t.Fatalf("batch rows: %d %v", n, err)
	}
	// Every type back in binary, parameters of every type in WHERE.
	var (
		ts   time.Time
		host *string
		v    *float64
		big  *int64
		i4   *int32
		i2   *int16
		r    *float32
		b    *bool
	)
	err = c.QueryRow(ctx, "SELECT time, host, v, n, i, s, r, b FROM m WHERE time = $1 AND host = $2 AND v >= $3 AND n > $4 AND b = $5",
		t0.Add(2*time.Minute), "h2", 2.9, int64(1)<<40, true).Scan(&ts, &host, &v, &big, &i4, &i2, &r, &b)
	if err != nil {
		t.Fatalf("select with parameters: %v", err)
	}
	if !ts.Equal(t0.Add(2*time.Minute)) || *host != "h2" || *v != 3 || *big != 1<<40+2 || *i4 != -2 || *i2 != 2 || *r != 0.25 || !*b {
		t.Fatalf("row: %v %v %v %v %v %v %v %v", ts, *host, *v, *big, *i4, *i2, *r, *b)
	}
	if err := c.QueryRow(ctx, "SELECT host, v FROM m WHERE time = $1", t0.Add(time.Hour)).Scan(&host, &v); err != nil || host != nil || v != nil {
		t.Fatalf("NULLs: %v %v %v", host, v, err)
	}
	// Aggregates come back in binary too (numeric, float8, int8).
	var sum, avg float64
	var cnt int64
	if err := c.QueryRow(ctx, "SELECT sum(n), avg(v), count(*) FROM m WHERE host LIKE $1", "h%").Scan(&sum, &avg, &cnt); err != nil {
		t.Fatalf("aggregates: %v", err)
	}
	if cnt != 3 || math.Abs(avg-1.5) > 1e-9 || sum != float64(3*(int64(1)<<40)+3) {
		t.Fatalf("aggregates %v %v %v", sum, avg, cnt)
	}
	// UPDATE and DELETE with parameters.
	tag, err := c.Exec(ctx, "UPDATE m SET v = v + $1 WHERE host = $2", 10.0, "batch")
	if err != nil || tag.String() != "UPDATE 50" {
		t.Fatalf("update: %q %v", tag, err)
	}
	tag, err = c.Exec(ctx, "DELETE FROM m WHERE time < $1 AND host = $2", t0.Add(125*time.Second), "batch")
	if err != nil || tag.String() != "DELETE 25" {
		t.Fatalf("delete: %q %v", tag, err)
	}
	// An error, then the same connection keeps working.
	_, err = c.Exec(ctx, "SELECT * FROM nope WHERE x = $1", 1)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P01" {
		t.Fatalf("error: %v", err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil || n != 29 {
		t.Fatalf("after error: %d %v", n, err)
	}
	// Rows streamed through pgx.Rows with a time-range parameter.
	rows, err := c.Query(ctx, "SELECT time, v FROM m WHERE time BETWEEN $1 AND $2 ORDER BY time", t0, t0.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for rows.Next() {
		got++
	}
	if rows.Err() != nil || got != 28 { // 3 h* rows and the 25 batch rows left
		t.Fatalf("range rows %d %v", got, rows.Err())
	}
}

// Results larger than one write of rows arrive whole and in order over
// both protocols, and the connection stays in step for the next statement.
func TestLargeResults(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	q := "SELECT g, repeat('x', CAST(g % 97 AS INTEGER)) AS pad FROM generate_series(0, 99999) AS t(g) ORDER BY g"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		rows, err := c.Query(ctx, q, mode)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		n := int64(0)
		for rows.Next() {
			var g int64
			var pad string
			if err := rows.Scan(&g, &pad); err != nil {
				t.Fatalf("%v: row %d: %v", mode, n, err)
			}
			if g != n || len(pad) != int(g%97) {
				t.Fatalf("%v: row %d is %d with %d bytes of padding", mode, n, g, len(pad))
			}
			n++
		}
		if err := rows.Err(); err != nil || n != 100000 {
			t.Fatalf("%v: %d rows, %v", mode, n, err)
		}
		var one int
		if err := c.QueryRow(ctx, "SELECT 1", mode).Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: the next statement: %d, %v", mode, one, err)
		}
	}
	// COPY TO STDOUT of as many rows, in CSV with fields that need quotes.
	var out bytes.Buffer
	tag, err := c.PgConn().CopyTo(ctx, &out, `COPY (SELECT g, 'a "b"' || CAST(g AS VARCHAR) AS s FROM generate_series(0, 99999) AS t(g) ORDER BY g) TO STDOUT WITH (FORMAT csv)`)
	if err != nil || tag.String() != "COPY 100000" {
		t.Fatalf("COPY TO STDOUT: %v, %v", tag, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 100000 || lines[0] != `0,"a ""b""0"` || lines[99999] != `99999,"a ""b""99999"` {
		t.Fatalf("COPY TO STDOUT: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if err := c.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatalf("after COPY TO STDOUT: %v", err)
	}
}

// pgx reads time values in binary: they arrive as PostgreSQL sends them.
func TestTimeOfDayInBinary(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tod pgtype.Time
	if err := conn.QueryRow(ctx, "SELECT CAST('12:00:01.5' AS TIME)").Scan(&tod); err != nil {
		t.Fatal(err)
	}
	if !tod.Valid || tod.Microseconds != 43_201_500_000 {
		t.Fatalf("12:00:01.5 read as %+v", tod)
	}
}

// Lists reach drivers as PostgreSQL arrays, which they scan into slices,
// in binary (pgx's default) and in text.
func TestArraysReachDrivers(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	binaryConn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer binaryConn.Close(ctx)
	for name, conn := range map[string]*pgx.Conn{"binary": binaryConn, "text": s.connect(ctx)} {
		var ints []*int64
		var texts []string
		var empty []float64
		var times []time.Time
		err := conn.QueryRow(ctx, `SELECT [1, NULL, 3]::BIGINT[], ['a', 'b c', '{x}']::VARCHAR[], CAST([] AS DOUBLE[]),
			[TIMESTAMPTZ '2026-01-01 00:00:00+00', TIMESTAMPTZ '2026-01-01 00:00:10+00']`).Scan(&ints, &texts, &empty, &times)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ints) != 3 || *ints[0] != 1 || ints[1] != nil || *ints[2] != 3 {
			t.Errorf("%s: bigint[] %v", name, ints)
		}
		if fmt.Sprint(texts) != "[a b c {x}]" || len(empty) != 0 {
			t.Errorf("%s: text[] %q, empty %v", name, texts, empty)
		}
		if len(times) != 2 || !times[1].Equal(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)) {
			t.Errorf("%s: timestamptz[] %v", name, times)
		}
	}
}
