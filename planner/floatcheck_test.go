package planner

import (
	"testing"

	"tsdb/internal/sqlerr"
)

// Float arithmetic that overflows or underflows fails as PostgreSQL's
// does (22003), where the engine answered Infinity or 0; infinities
// written as such, and arithmetic of other types, stay as they were.
func TestFloatOverflow(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE f (time TIMESTAMPTZ NOT NULL, x DOUBLE PRECISION, r REAL, n INTEGER, d NUMERIC(10,2))")
	e.must("INSERT INTO f VALUES ('2026-01-01 00:00:00+00', 1e200, 1e30, 5, 1.5), ('2026-01-01 00:00:10+00', -3, 2, 0, 0)")
	for _, q := range []string{
		"SELECT x * 1e200 FROM f",
		"SELECT x * '1e200' FROM f",
		"SELECT x * n + 1e308 * x FROM f",
		"SELECT r * r FROM f",
		"SELECT time FROM f WHERE x * x > 0",
		"SELECT 1e308::float8 + 1e308::float8",
		"SELECT 1e-200::float8 * 1e-200::float8",
		"SELECT -1e308::float8 - 1e308::float8",
	} {
		if _, err := e.run(q); sqlerr.Code(err) != sqlerr.NumericOutOfRange {
			t.Errorf("%s: %v, want 22003", q, err)
		}
	}
	e.expectRows("", []queryRows{
		{"SELECT x * 1e-300 FROM f WHERE x > 0", "1e-100"},
		{"SELECT x * d, x - x, n * 2 FROM f ORDER BY n", "-0|0|0;1.5e+200|0|10"},
		{"SELECT x * 'Infinity'::float8 FROM f ORDER BY 1", "-Inf;+Inf"},
		{"SELECT r * 1e10 FROM f ORDER BY 1", "2e+10;1.0000000150474662e+40"},
		{"SELECT n * 400000000 FROM f ORDER BY 1", "0;2000000000"},
		{"SELECT time - interval '1 hour' FROM f ORDER BY 1 LIMIT 1", "2025-12-31 23:00:00"},
		// The checked expression in GROUP BY, ORDER BY and DISTINCT is the
		// select list's.
		{"SELECT x * 2, count(*) FROM f GROUP BY x * 2 ORDER BY x * 2", "-6|1;2e+200|1"},
		{"SELECT DISTINCT x * 2 FROM f ORDER BY x * 2", "-6;2e+200"},
		// A long sum stays a sum (checks are not nested in checks), added
		// from the left as PostgreSQL adds.
		{"SELECT x + n + x + n + x + n + x + n + x + n + x + n + x + n + x + n FROM f ORDER BY n", "-24;7.999999999999998e+200"},
	})
}
