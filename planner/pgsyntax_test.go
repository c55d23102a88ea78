package planner

import "testing"

// PostgreSQL syntax DuckDB lacks is rewritten to what it means, with
// PostgreSQL's NULL semantics.
func TestPostgresSyntax(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []struct{ q, want string }{
		{"SELECT 3 BETWEEN SYMMETRIC 5 AND 1, 3 BETWEEN SYMMETRIC 1 AND 5, 6 BETWEEN SYMMETRIC 5 AND 1", "true|true|false"},
		{"SELECT 3 NOT BETWEEN SYMMETRIC 5 AND 1, 6 NOT BETWEEN SYMMETRIC 5 AND 1", "false|true"},
		{"SELECT 3 BETWEEN SYMMETRIC NULL AND 1, 3 BETWEEN SYMMETRIC NULL AND 5, 3 NOT BETWEEN SYMMETRIC NULL AND 5", "NULL|NULL|NULL"},
		{"SELECT host FROM cpu WHERE n BETWEEN SYMMETRIC 2 AND 1 ORDER BY host", "a;b"},
		{"SELECT host FROM cpu WHERE time NOT BETWEEN SYMMETRIC '2026-01-01 00:10:00+00' AND '2026-01-01 00:00:00+00' ORDER BY host", "c;d"},
		{"SELECT host FROM cpu WHERE time BETWEEN SYMMETRIC '2026-01-01 00:10:00+00' AND '2026-01-01 00:00:00+00' ORDER BY host", "a;b"},
	}
	// Over buffered rows, then over flushed files (pruned by the range).
	for _, layer := range []string{"buffered", "flushed"} {
		if layer == "flushed" {
			e.must("CHECKPOINT")
		}
		for _, tt := range tests {
			if got := e.rows(tt.q); got != tt.want {
				t.Errorf("%s: %s: got %q, want %q", layer, tt.q, got, tt.want)
			}
		}
	}
}
