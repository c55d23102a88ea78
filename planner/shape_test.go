package planner

import (
	"strings"
	"testing"
)

func TestMeasureSQL(t *testing.T) {
	for _, tc := range []struct {
		q                  string
		minDepth, maxDepth int
		minTokens          int
	}{
		{"SELECT 1", 0, 0, 2},
		{"SELECT 1" + strings.Repeat("+1", 3000), 3000, 3000, 6002},
		{"SELECT " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500), 500, 500, 1002},
		{"SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 2000), 2000, 2000, 0},
		{"SELECT " + strings.Repeat("NOT ", 700) + "true", 700, 700, 0},
		{"SELECT x::int::text::int", 3, 3, 0},
		// AND and OR lists are flat; so are IN lists and VALUES rows.
		{"SELECT * FROM t WHERE " + strings.Repeat("v = 1 OR ", 5000) + "v = 2", 1, 2, 20000},
		{"SELECT * FROM t WHERE v IN (" + strings.Repeat("1,", 10000) + "2)", 1, 3, 20000},
		{"INSERT INTO t VALUES " + strings.Repeat("(1, -2, 'a'),", 1000) + "(1, -2, 'a')", 1, 3, 0},
		// Nothing in strings, quoted names or comments counts.
		{"SELECT '((((((+++', \"a+b+c\", E'\\'((((', $x$ ((((+ $x$ -- ((((+\n /* (((( /* +++ */ */ 1", 0, 1, 0},
		{"SELECT CASE WHEN a THEN CASE WHEN b THEN 1 END END", 2, 4, 0},
		{"SELECT $1 + $2", 1, 1, 4},
		// Runs of signs are an operator each.
		{"SELECT " + strings.Repeat("+", 3000) + "1", 3000, 3000, 0},
		{"SELECT a <= b", 1, 2, 0},
	} {
		sh := measureSQL(tc.q)
		if sh.depth < tc.minDepth || sh.depth > tc.maxDepth || sh.tokens < tc.minTokens {
			t.Errorf("%.60q: depth %d tokens %d; want depth %d–%d, at least %d tokens", tc.q, sh.depth, sh.tokens, tc.minDepth, tc.maxDepth, tc.minTokens)
		}
	}
}

func BenchmarkMeasureSQL(b *testing.B) {
	q := "SELECT time_bucket('1 minute', time) AS minute, max(usage_user) FROM cpu WHERE host IN ('host_1', 'host_2') AND time >= '2026-01-01T00:00:00Z' AND time < '2026-01-01T12:00:00Z' GROUP BY 1 ORDER BY 1"
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		measureSQL(q)
	}
}
