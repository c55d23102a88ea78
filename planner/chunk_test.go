package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bindings "github.com/duckdb/duckdb-go-bindings"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
)

// collect runs q in the session and returns its rows as Go values, and
// whether they came as chunks.
func (e *env) collect(ctx context.Context, q string) (rows [][]any, chunked bool, err error) {
	err = e.s.Execute(ctx, q, func(r *Result) error {
		defer r.Rows.Close()
		_, chunked = r.Rows.(ChunkRows)
		for r.Rows.Next() {
			rows = append(rows, append([]any(nil), r.Rows.Values()...))
		}
		return r.Rows.Err()
	})
	return rows, chunked, err
}

// streamChunks runs q in the session, reads its result chunk by chunk
// (failing the test if it does not come as chunks) and calls each with
// every chunk; it returns the rows read and the statement's error.
func (e *env) streamChunks(ctx context.Context, q string, each func(*Chunk)) (n int, err error) {
	err = e.s.Execute(ctx, q, func(r *Result) error {
		defer r.Rows.Close()
		cr, ok := r.Rows.(ChunkRows)
		if !ok {
			e.t.Fatalf("rows %T are not read as chunks", r.Rows)
		}
		for {
			ch, ok := cr.NextChunk()
			if !ok {
				return cr.Err()
			}
			n += ch.Len()
			each(ch)
		}
	})
	return n, err
}

// driverRows runs q through database/sql on the session's connection: the
// values duckdb-go's driver makes.
func (e *env) driverRows(q string) [][]any {
	e.t.Helper()
	rows, err := e.s.conn.QueryContext(context.Background(), q)
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// Rows read as chunks hold the values the driver returns, for every kind,
// NULLs, edge values and results of many chunks; other types take the
// driver's path.
func TestChunkRowsMatchTheDriver(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []struct {
		name    string
		q       string
		chunked bool
	}{
		{"booleans", `SELECT * FROM (VALUES (true), (false), (NULL::BOOLEAN)) v(b)`, true},
		{"integers", `SELECT * FROM (VALUES ((-128)::TINYINT, (-32768)::SMALLINT, (-2147483648)::INTEGER, (-9223372036854775808)::BIGINT),
			(127::TINYINT, 32767::SMALLINT, 2147483647::INTEGER, 9223372036854775807::BIGINT),
			(NULL, NULL, NULL, NULL), (0, -1, 1, 42)) v(a, b, c, d)`, true},
		{"floats", `SELECT * FROM (VALUES (1.5::REAL, 0.1::DOUBLE), ('NaN'::REAL, 'NaN'::DOUBLE), ('-Infinity'::REAL, 'Infinity'::DOUBLE),
			(-0.0::REAL, -0.0::DOUBLE), (NULL, 1e308), (3.4e38::REAL, 5e-324::DOUBLE)) v(f, d)`, true},
		{"strings", `SELECT * FROM (VALUES (''), ('short'), ('twelve chars'), ('thirteen char'), ('ünïcödé ✓ longer than twelve bytes'), (NULL)) v(s)`, true},
		{"timestamps", `SELECT * FROM (VALUES ('2026-01-01 00:00:00.123456'::TIMESTAMP, '2026-01-01 00:00:00+05:30'::TIMESTAMPTZ),
			('1900-02-28 23:59:59.999999'::TIMESTAMP, '1969-12-31 23:59:59.5+00'::TIMESTAMPTZ), (NULL, NULL),
			('infinity'::TIMESTAMP, '-infinity'::TIMESTAMPTZ)) v(a, b)`, true},
		{"many chunks", `SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i::VARCHAR || repeat('x', (i % 20)::INTEGER) END AS s,
			i % 3 = 0 AS b FROM range(5000) t(i)`, true},
		{"hugeints", `SELECT h FROM (VALUES ((-170141183460469231731687303715884105727)::HUGEINT), (18446744073709551616::HUGEINT),
			((-9223372036854775808)::HUGEINT), (-1::HUGEINT), (NULL)) v(h)
			UNION ALL SELECT sum(i) FROM range(1000) t(i) ORDER BY h NULLS LAST`, true},
		{"a table over both layers", `SELECT * FROM cpu ORDER BY time`, true},
		{"decimal", `SELECT 1.50::DECIMAL(10,2) AS d, 2 AS i`, false},
		{"interval", `SELECT INTERVAL 1 DAY AS iv`, false},
		{"list", `SELECT [1, 2, NULL] AS l`, false},
		{"dates", `SELECT * FROM (VALUES (DATE '2026-01-02'), (DATE '1969-12-31'), (DATE '0001-01-01'), (DATE '2500-06-30'),
			('infinity'::DATE), ('-infinity'::DATE), (NULL)) v(d)`, true},
		{"time", `SELECT TIME '12:34:56' AS t`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, chunked, err := e.collect(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if chunked != tc.chunked {
				t.Errorf("read as chunks: %v, want %v", chunked, tc.chunked)
			}
			want := e.driverRows(tc.q)
			if len(got) != len(want) {
				t.Fatalf("%d rows, the driver %d", len(got), len(want))
			}
			for i := range want {
				// %#v tells int32 from int64 and shows NaN, -0 and
				// time zones; DeepEqual would fail on NaN.
				if g, w := fmt.Sprintf("%#v", got[i]), fmt.Sprintf("%#v", want[i]); g != w {
					t.Fatalf("row %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
}

// A statement canceled while its rows stream stops with 57014, and the
// session runs the next statement normally.
func TestChunkRowsCancelWhileStreaming(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	read := 0
	n, err := e.streamChunks(ctx, `SELECT i, i::VARCHAR AS s FROM range(1000000000) t(i)`, func(ch *Chunk) {
		if read += ch.Len(); read > 10_000 {
			cancel()
		}
	})
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != sqlerr.QueryCanceled {
		t.Fatalf("canceled stream after %d rows: %v, want 57014", n, err)
	}
	if got := e.rows(`SELECT count(*) FROM range(100000)`); got != "100000" {
		t.Fatalf("next statement: %q", got)
	}
}

// An interrupt that reaches DuckDB after a statement ended (a cancel just
// as it finishes) must not stop the session's next statement.
func TestLateInterruptDoesNotReachTheNextStatement(t *testing.T) {
	e := newEnv(t)
	e.rows(`SELECT 1`)
	bindings.Interrupt(e.s.raw)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, _, err := e.collect(ctx, `SELECT count(*) FROM range(1000)`)
	if err != nil || len(got) != 1 || got[0][0] != int64(1000) {
		t.Fatalf("statement after a late interrupt: %v, %v", got, err)
	}
}

// An error on a row after the first chunks ends the stream with that
// error, as in PostgreSQL: the rows before it were read.
func TestChunkRowsErrorAfterFirstRows(t *testing.T) {
	e := newEnv(t)
	n, err := e.streamChunks(context.Background(), `SELECT CASE WHEN i = 3000000 THEN error('row 3000000 is bad') ELSE i::VARCHAR END AS v FROM range(4000000) t(i)`, func(*Chunk) {})
	var se *sqlerr.Error
	if !errors.As(err, &se) || !strings.Contains(se.Message, "row 3000000 is bad") {
		t.Fatalf("stream with a bad row: %v", err)
	}
	if n == 0 || n >= 4000000 {
		t.Errorf("%d rows before the error, want some", n)
	}
	if got := e.rows(`SELECT 2`); got != "2" {
		t.Fatalf("next statement: %q", got)
	}
}

// DuckDB rebinds a prepared statement when the catalog changes under it.
// A plan whose result columns changed kind is prepared again, not read
// with the old kinds.
func TestStalePlanIsPreparedAgain(t *testing.T) {
	e := newEnv(t)
	e.s.noFastAgg = true // the engine's plan is what is tested
	e.must(setup)
	const q = `SELECT n FROM cpu WHERE host = 'a'`
	if got := e.rows(q); got != "1" {
		t.Fatalf("first run: %q", got)
	}
	// Behind the session's back, so that it keeps its view and plan.
	if _, err := e.s.conn.ExecContext(context.Background(), `CREATE OR REPLACE TEMP VIEW cpu AS SELECT 'a string longer than twelve bytes' AS n, 'a' AS host`); err != nil {
		t.Fatal(err)
	}
	if got := e.rows(q); got != "a string longer than twelve bytes" {
		t.Fatalf("after the column changed type: %q", got)
	}
}

// Errors the C API gives as a message only get their type, and so their
// SQLSTATE, from the message.
func TestErrorTypeOfMessage(t *testing.T) {
	for _, tc := range []struct {
		msg, code string
	}{
		{`Catalog Error: Table with name nope does not exist!`, sqlerr.UndefinedTable},
		{`Binder Error: Referenced column "x" not found in FROM clause!`, sqlerr.UndefinedColumn},
		{`Parser Error: syntax error at or near "FORM"`, sqlerr.SyntaxError},
		{`Conversion Error: Could not convert string 'x' to INT32`, sqlerr.InvalidTextRep},
		{`Out of Range Error: Overflow in multiplication of INT64`, sqlerr.NumericOutOfRange},
		{`INTERRUPT Error: Interrupted!`, sqlerr.QueryCanceled},
		{`Out of Memory Error: could not allocate block`, sqlerr.OutOfMemory},
		{`Something unheard of`, sqlerr.InternalError},
		// Known by their form: PostgreSQL's codes.
		{`Conversion Error: extract specifier "microsec" not recognized`, sqlerr.InvalidParameterValue},
		{`Conversion Error: extract specifier "timezone_m" not recognized`, sqlerr.FeatureNotSupported},
		{`Invalid Input Error: missing ): (?s)(barbeque`, sqlerr.InvalidRegularExpression},
		{`Invalid Input Error: invalid repetition size: {2,1}`, sqlerr.InvalidRegularExpression},
		{`Parser Error: Unknown ordered aggregate "sum".`, "42809"},
		{`Parser Error: Unknown ordered aggregate "test_rank".`, sqlerr.UndefinedFunction},
		{`Catalog Error: Scalar Function with name percentile_cont does not exist!`, "42809"},
		{`Invalid Input Error: Argument for ntile must be greater than zero`, "22014"},
		{`Out of Range Error: Overflow in multiplication of INTERVAL.`, sqlerr.DatetimeOverflow},
	} {
		var se *sqlerr.Error
		if err := dialect.EngineError(duckError(tc.msg, dialect.ErrorTypeOf(tc.msg))); !errors.As(err, &se) || se.Code != tc.code {
			t.Errorf("%q: %v, want %s", tc.msg, err, tc.code)
		}
	}
	// What the engine's catalog lacks, in PostgreSQL's words.
	for _, tc := range []struct{ msg, code, want string }{
		{"Catalog Error: Scalar Function with name tattle does not exist!\nDid you mean \"tan\"?", sqlerr.UndefinedFunction, "function tattle does not exist"},
		{"Catalog Error: Aggregate Function with name my_avg does not exist!", sqlerr.UndefinedFunction, "function my_avg does not exist"},
		{"Catalog Error: Sequence with name testseq does not exist!", sqlerr.UndefinedTable, `relation "testseq" does not exist`},
		{"Catalog Error: Type with name xfloat8 does not exist!", sqlerr.UndefinedObject, `type "xfloat8" does not exist`},
		{"Catalog Error: Type with name money does not exist!", sqlerr.FeatureNotSupported, `type "money" is not supported`},
		{"Parser Error: Table must have at least one column!", sqlerr.FeatureNotSupported, "tables without columns are not supported"},
	} {
		var se *sqlerr.Error
		if err := dialect.EngineError(duckError(tc.msg, dialect.ErrorTypeOf(tc.msg))); !errors.As(err, &se) || se.Code != tc.code || se.Message != tc.want || se.Detail != "" {
			t.Errorf("%q: %#v, want %s %q", tc.msg, se, tc.code, tc.want)
		}
	}
}
