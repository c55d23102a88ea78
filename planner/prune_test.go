package planner

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// explainCounts returns "files kept/pruned, buckets kept/pruned" for the
// first table in an EXPLAIN.
func explainCounts(t *testing.T, e *env, q string) string {
	t.Helper()
	res := e.must("EXPLAIN " + q)
	var lines []string
	for _, r := range res[0].rows {
		lines = append(lines, r[0])
	}
	text := strings.Join(lines, "\n")
	f := regexp.MustCompile(`(\d+) files kept, (\d+) pruned`).FindStringSubmatch(text)
	b := regexp.MustCompile(`(\d+) buckets kept, (\d+) pruned`).FindStringSubmatch(text)
	if f == nil || b == nil {
		t.Fatalf("EXPLAIN output lacks the layer summary:\n%s", text)
	}
	return fmt.Sprintf("files %s/%s buckets %s/%s", f[1], f[2], b[1], b[2])
}

func TestTimePruning(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	// Three flushed hours, one file each: 00:00-00:50, 01:00-01:50, 02:00-02:50.
	for h := 0; h < 3; h++ {
		var vals []string
		for m := 0; m < 60; m += 10 {
			vals = append(vals, fmt.Sprintf("('2026-01-01 %02d:%02d:00+00', 'h%d', %d)", h, m, h, m))
		}
		e.must("INSERT INTO cpu VALUES " + strings.Join(vals, ","))
		e.must("CHECKPOINT")
	}
	// Buffered: two recent rows in the current bucket, one late row for 01:xx.
	// Both in the current 10-minute bucket, whatever the clock says.
	start := time.Now().UTC().Truncate(10 * time.Minute)
	e.must(fmt.Sprintf("INSERT INTO cpu VALUES ('%s', 'now', 1), ('%s', 'now', 2)", start.Format(time.RFC3339Nano), start.Add(time.Microsecond).Format(time.RFC3339Nano)))
	e.must("INSERT INTO cpu VALUES ('2026-01-01 01:05:00+00', 'late', 99)")

	tests := []struct {
		where, count, layers string
	}{
		{"time >= '2026-01-01 01:00:00+00' AND time < '2026-01-01 02:00:00+00'", "7", "files 1/2 buckets 1/1"},
		{"time BETWEEN '2026-01-01T01:00:00Z' AND '2026-01-01T01:30:00.5Z'", "5", "files 1/2 buckets 1/1"},
		// PostgreSQL's forms the engine does not read (TSBS's +0000, a
		// zone abbreviation) are typed by the column and still pruned.
		{"time >= '2026-01-01 01:00:00.000000 +0000' AND time < '2026-01-01 02:00:00 +0000'", "7", "files 1/2 buckets 1/1"},
		{"'2025-12-31 17:00:00 PST' <= time AND time < '2025-12-31 18:00:00 PST'", "7", "files 1/2 buckets 1/1"},
		// Rewritten for DuckDB (an OR of two BETWEENs), still pruned alike.
		{"time BETWEEN SYMMETRIC '2026-01-01T01:30:00.5Z' AND '2026-01-01T01:00:00Z'", "5", "files 1/2 buckets 1/1"},
		{"time NOT BETWEEN SYMMETRIC '2026-01-01T03:00:00Z' AND '2026-01-01 00:00:00+00'", "2", "files 3/0 buckets 2/0"},
		{"time = '2026-01-01 02:10:00+00'", "1", "files 1/2 buckets 0/2"},
		{"time IN ('2026-01-01 00:10:00+00', '2026-01-01 00:20:00+00')", "2", "files 1/2 buckets 0/2"},
		{"(time < '2026-01-01 00:15:00+00' OR time > '2026-01-01 02:45:00+00')", "5", "files 3/0 buckets 2/0"},
		{"time > now() - interval '1 hour'", "2", "files 0/3 buckets 1/1"},
		{"to_timestamp(1767232800) <= time AND time < '2026-01-02'", "6", "files 1/2 buckets 0/2"},
		{"time < '2025-01-01'", "0", "files 0/3 buckets 0/2"},
		{"host = 'h1'", "6", "files 3/0 buckets 2/0"},
		{"time >= '2026-01-01 01:00:00+00' OR host = 'h0'", "21", "files 3/0 buckets 2/0"},
		{"NOT (time < '2026-01-01 01:00:00+00')", "15", "files 3/0 buckets 2/0"},
	}
	for _, tt := range tests {
		q := "SELECT count(*) FROM cpu WHERE " + tt.where
		if got := e.rows(q); got != tt.count {
			t.Errorf("%s: count %s, want %s", tt.where, got, tt.count)
		}
		if got := explainCounts(t, e, q); got != tt.layers {
			t.Errorf("%s: %s, want %s", tt.where, got, tt.layers)
		}
	}
	// A table written with its schema is pruned alike (the planner drops
	// public. before it binds the table).
	q := "SELECT count(*) FROM public.cpu WHERE public.cpu.time >= '2026-01-01 01:00:00+00' AND time < '2026-01-01 02:00:00+00'"
	if got := e.rows(q); got != "7" {
		t.Errorf("public.cpu: count %s, want 7", got)
	}
	if got := explainCounts(t, e, q); got != "files 1/2 buckets 1/1" {
		t.Errorf("public.cpu: %s, want files 1/2 buckets 1/1", got)
	}
	// Qualified references through an alias, in a join and a subquery.
	e.must("CREATE TABLE hosts (time TIMESTAMPTZ NOT NULL, host TEXT, dc TEXT)")
	e.must("INSERT INTO hosts VALUES ('2026-01-01', 'h1', 'eu'), ('2026-01-01', 'late', 'us')")
	q = "SELECT h.dc, count(*) FROM cpu c JOIN hosts h USING (host) WHERE c.time >= '2026-01-01 01:00:00+00' AND c.time < '2026-01-01 02:00:00+00' GROUP BY 1 ORDER BY 1"
	if got := e.rows(q); got != "eu|6;us|1" {
		t.Errorf("join: %s", got)
	}
	if got := explainCounts(t, e, q); got != "files 1/2 buckets 1/1" {
		t.Errorf("join pruning: %s", got)
	}
	q = "SELECT count(*) FROM (SELECT * FROM cpu WHERE time < '2026-01-01 01:00:00+00') x"
	if got := e.rows(q); got != "6" {
		t.Errorf("subquery: %s", got)
	}
	if got := explainCounts(t, e, q); got != "files 1/2 buckets 0/2" {
		t.Errorf("subquery pruning: %s", got)
	}
	// A table referenced twice is read for the hull of both references.
	q = "SELECT (SELECT count(*) FROM cpu WHERE time < '2026-01-01 00:30:00+00'), (SELECT count(*) FROM cpu)"
	if got := e.rows(q); got != "3|21" {
		t.Errorf("two references: %s", got)
	}
}

// Time bounds read from literals in Go equal what the engine computes for
// them; whatever Go cannot read exactly is left to the engine.
func TestLiteralTimesMatchEngine(t *testing.T) {
	e := newEnv(t)
	for _, lit := range []string{
		"'2016-01-01 03:00:00+00'", "'2016-01-01 03:00:00'", "'2016-01-01'", "'2026-01-01T10:00:00.5Z'",
		"'2026-01-01 10:00:00-05:30'", "TIMESTAMPTZ '2026-01-01 10:00:00+02'", "'2026-01-01 10:00:00'::timestamp",
		"'2026-01-01 10:00:00+02'::timestamp", "'1969-12-31 23:59:59.999999+00'", "'yesterday'", "now()",
	} {
		tree, err := pg_query.Parse("SELECT " + lit)
		if err != nil {
			t.Fatal(err)
		}
		expr := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
		vals := make([]int64, 1)
		if !literalTimes([]*pg_query.Node{expr}, vals, time.UTC) {
			continue
		}
		want := e.rows("SELECT epoch_us(CAST((" + lit + ") AS TIMESTAMPTZ))")
		if got := fmt.Sprint(vals[0]); got != want {
			t.Errorf("%s: Go read %s, the engine %s", lit, got, want)
		}
	}
	for _, lit := range []string{"'yesterday'", "now()", "'2026-01-01 10:00:00+02'::timestamp"} {
		tree, _ := pg_query.Parse("SELECT " + lit)
		if literalTimes([]*pg_query.Node{tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val}, make([]int64, 1), time.UTC) {
			t.Errorf("%s read in Go; it needs the engine", lit)
		}
	}
}
