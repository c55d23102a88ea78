package planner

import (
	"fmt"
	"testing"
	"time"

	"tsdb/internal/pgtext"
	"tsdb/internal/sqlerr"
)

// JSON functions over values whose JSON the engine writes otherwise than
// PostgreSQL (timestamps, numerics with their scale, bytea) are refused,
// never answered differently; values it writes as PostgreSQL does pass,
// with PostgreSQL's answer.
func TestJSONValueTypes(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE j (time TIMESTAMPTZ NOT NULL, n NUMERIC(6,2), b BYTEA, ts TIMESTAMP, f DOUBLE PRECISION, s TEXT, d DATE, i INTERVAL)`)
	e.must(`INSERT INTO j VALUES ('2026-01-01 00:00:00.5+00', 1.50, 'x', '2026-01-01 00:00:00', 1.5, 'a"b', '2026-01-02', '1 day 2 hours')`)
	for _, q := range []string{
		`SELECT to_json(n) FROM j`,
		`SELECT to_json(time) FROM j`,
		`SELECT to_jsonb(j.ts) FROM j`,
		`SELECT to_json(b) FROM j`,
		`SELECT row_to_json(j) FROM j`,
		`SELECT to_json(t) FROM j t`,
		`SELECT to_json(t.*) FROM j AS t`,
		`SELECT json_agg(time) FROM j`,
		`SELECT to_json(now())`,
		`SELECT to_json(current_timestamp)`,
		`SELECT to_json('2026-01-01'::timestamptz)`,
		`SELECT to_json(CAST(1.5 AS numeric(4,2)))`,
		`SELECT to_json(1.50)`,
		`SELECT to_json(0.1234567890123456789)`,
		`SELECT s FROM j WHERE to_json(time)::text <> ''`,
		`SELECT json_object('{a,b}', '{1,2}')`,
		`SELECT * FROM (SELECT json_object('{a,b}', '{1,2}')) s`,
		`SELECT to_json(i) FROM j`,
		`SELECT to_json(0.1::real)`,
	} {
		if _, err := e.run(q); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("%s: %v, want %s", q, err, sqlerr.FeatureNotSupported)
		}
	}
	// What PostgreSQL 15 answers for these (as text: the test's driver
	// decodes JSON).
	e.expectRows("", []queryRows{
		{`SELECT to_json(f)::text, to_json(s)::text, to_json(d)::text FROM j`, `1.5|"a\"b"|"2026-01-02"`},
		// A subquery's columns are its own FROM list's: not refused by
		// the outer one's (j.n is numeric, x.n a double).
		{`SELECT (SELECT to_json(x.n)::text FROM (SELECT 2.5::float8 AS n) x) FROM j`, `2.5`},
		{`SELECT row_to_json(x)::text FROM (SELECT 1 AS a, 'x' AS b) x`, `{"a":1,"b":"x"}`},
		{`SELECT to_json(1.5)::text, to_json(0.25)::text`, `1.5|0.25`},
		// A column named like the table is the column, not the row.
		{`SELECT to_json(j)::text FROM (SELECT 'v' AS j) AS j`, `"v"`},
	})
}

// JSON results are the engine's text, as PostgreSQL keeps json's text
// (keys in their order, their spaces, duplicates, integers of any size),
// with doubles written by float8out; a value the engine's lenient input
// took but PostgreSQL's refuses is 22P02, and so is a bare NaN. The
// answers are PostgreSQL 15's.
func TestJSONResultsAsWritten(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ q, want string }{
		{`SELECT '{"b": 1, "a": [1, 2]}'::json`, `{"b": 1, "a": [1, 2]}`},
		{`SELECT '{"a":1,"a":2}'::json`, `{"a":1,"a":2}`},
		{`SELECT to_json(9007199254740993::bigint)`, `9007199254740993`},
		{`SELECT to_json(2::float8)`, `2`},
		{`SELECT to_json(1e20::float8)`, `1e+20`},
		{`SELECT to_json(1.5e-7::float8)`, `1.5e-07`},
		{`SELECT row_to_json(x) FROM (SELECT 2.0::float8 AS b, 'x' AS a) x`, `{"b":2,"a":"x"}`},
		{`SELECT to_json(ARRAY[1.5::float8, 2])`, `[1.5,2]`},
	} {
		var got string
		err := e.s.Execute(t.Context(), c.q, func(r *Result) error {
			defer r.Rows.Close()
			if len(r.Columns) != 1 || r.Columns[0].OID != pgtext.OIDJSON {
				return fmt.Errorf("columns %v", r.Columns)
			}
			for r.Rows.Next() {
				got = string(pgtext.Encode(r.Rows.Values()[0], pgtext.OIDJSON, pgtext.Style{Loc: time.UTC, ExtraDigits: 1}))
			}
			return r.Rows.Err()
		})
		if err != nil || got != c.want {
			t.Errorf("%s: %s %v, want %s", c.q, got, err, c.want)
		}
	}
	// A bare NaN is refused whether the engine's input took it (which
	// PostgreSQL refuses) or its to_json wrote it (PostgreSQL: "NaN").
	for _, q := range []string{`SELECT '[1,2,]'::json`, `SELECT 1 AS n, '{"a":1,}'::json`, `SELECT '[NaN]'::json`, `SELECT to_json('NaN'::float8)`} {
		if _, err := e.run(q); sqlerr.Code(err) != sqlerr.InvalidTextRep {
			t.Errorf("%s: %v, want %s", q, err, sqlerr.InvalidTextRep)
		}
	}
	if _, err := e.run(`SELECT 1`); err != nil {
		t.Fatalf("the session after the error: %v", err)
	}
}
