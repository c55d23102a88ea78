package tests

import (
	"slices"
	"testing"
)

// The referee's reasons for a different result are decided from the
// statement and both answers, and only where they hold: a window's peers,
// tables a refused statement changed, a question about storage.
func TestRegressRefine(t *testing.T) {
	out := func(cols []string, rows ...string) outcome {
		return outcome{Cols: cols, Rows: rows, Tag: "SELECT " + string(rune('0'+len(rows)))}
	}
	cols := []string{"last_value", "ten", "four"}
	tests := []struct {
		name    string
		sql     string
		pg, ts  outcome
		refused map[string]int
		want    string
	}{
		{"peers: only the window's values differ", "SELECT last_value(four) OVER (ORDER BY ten), ten, four FROM tenk1",
			out(cols, "0|0|0", "0|0|2"), out(cols, "2|0|2", "2|0|0"), nil, classPeers},
		{"a plain column differs beside a window", "SELECT last_value(four) OVER (ORDER BY ten), ten, four FROM tenk1",
			out(cols, "0|0|0", "0|0|2"), out(cols, "2|0|2", "2|1|0"), nil, classDifferent},
		{"a window over a unique order, no peer function", "SELECT sum(four) OVER (ORDER BY unique1), ten, four FROM tenk1",
			out(cols, "0|0|0", "2|0|2"), out(cols, "1|0|0", "2|0|2"), nil, classDifferent},
		{"overlay is no window", "SELECT overlay(f1 placing 'x' from 2), lag(1), 3 FROM t",
			out(cols, "a|1|3"), out(cols, "b|1|3"), nil, classDifferent},
		{"other row counts", "SELECT row_number() OVER (), ten, four FROM tenk1",
			out(cols, "1|0|0"), out(cols, "1|0|0", "2|0|0"), nil, classDifferent},
		{"after a refused change", "SELECT * FROM t1 UNION ALL SELECT * FROM t2",
			out(cols, "1|2|3"), out(cols, "1|2|4"), map[string]int{"t2": 7}, classDiverged},
		{"a table the refused statement only read", "SELECT * FROM parts",
			out(cols, "1|2|3"), out(cols, "1|2|4"), map[string]int{"shipped": 7}, classDifferent},
		{"physical storage", "SELECT pg_relation_size(reltoastrelid) = 0 AS is_empty FROM pg_class WHERE relname = 't'",
			out([]string{"is_empty"}, "f"), out([]string{"is_empty"}, `\N`), nil, classStorage},
	}
	for _, tc := range tests {
		if got, _ := refine(regressStmt{SQL: tc.sql}, tc.pg, tc.ts, tc.refused); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestChangedRelations(t *testing.T) {
	tests := []struct {
		sql     string
		want    []string
		created bool
	}{
		{"INSERT INTO t2c VALUES ('vw')", []string{"t2c"}, false},
		{"UPDATE shipped_view SET value = 11 FROM int4_tbl a JOIN int4_tbl b ON true", []string{"shipped_view"}, false},
		{"DELETE FROM road WHERE EXISTS (SELECT 1 FROM int4_tbl)", []string{"road"}, false},
		{"ALTER TABLE t1c INHERIT t1", []string{"t1c", "t1"}, false},
		{"CREATE TEMP TABLE t2c (PRIMARY KEY (ab)) INHERITS (t2)", []string{"t2c", "t2"}, false},
		{"CREATE TABLE x (a int)", []string{"x"}, true},
		{"CREATE TABLE y AS SELECT * FROM x", []string{"y"}, true},
		{"CREATE RULE r AS ON INSERT TO shipped_view DO INSTEAD INSERT INTO shipped VALUES (1)", []string{"shipped_view"}, false},
		{"SELECT * FROM x", nil, false},
		{"CREATE INDEX ON x (a)", nil, false},
		{"CREATE VIEW v AS SELECT * FROM x", nil, false},
	}
	for _, tc := range tests {
		got, created := changedRelations(tc.sql)
		if !slices.Equal(got, tc.want) || created != tc.created {
			t.Errorf("%s: %v %v, want %v %v", tc.sql, got, created, tc.want, tc.created)
		}
	}
}
