package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// rawResult renders a result exactly: each column's name, OID and size,
// and each value with its Go type (the wire layer formats by both).
func (e *env) rawResult(q string) (string, error) {
	var out strings.Builder
	err := e.s.Execute(context.Background(), q, func(r *Result) error {
		for _, c := range r.Columns {
			fmt.Fprintf(&out, "%s:%d:%d ", c.Name, c.OID, c.Size)
		}
		out.WriteString("\n")
		if r.Rows == nil {
			return nil
		}
		defer r.Rows.Close()
		var rows []string
		for r.Rows.Next() {
			var b strings.Builder
			for _, v := range r.Rows.Values() {
				fmt.Fprintf(&b, "%T(%v) ", v, v)
			}
			rows = append(rows, b.String())
		}
		if !strings.Contains(strings.ToUpper(q), "ORDER BY") {
			slices.Sort(rows) // an unordered result's order is open
		}
		out.WriteString(strings.Join(rows, "\n"))
		return r.Rows.Err()
	})
	return out.String(), err
}

// compareDirect runs each of the direct and general queries with the
// direct paths off, then on: the answers (errors included) must be the
// same. With used, the direct path (counted by counter) must answer
// exactly the direct ones; with answered, the engine must answer each
// without an error (two equal errors compare nothing).
func (e *env) compareDirect(t *testing.T, stage string, direct, general []string, counter prometheus.Counter, used, answered bool) {
	t.Helper()
	for _, q := range append(slices.Clone(direct), general...) {
		e.s.noFastAgg = true
		want, werr := e.rawResult(q)
		e.s.noFastAgg = false
		before := testutil.ToFloat64(counter)
		got, gerr := e.rawResult(q)
		usedNow := testutil.ToFloat64(counter) > before
		if answered && werr != nil {
			t.Errorf("%s: %s: the engine's path: %v", stage, q, werr)
		}
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || got != want {
			t.Errorf("%s: %s\n got %v\n%s\nwant %v\n%s", stage, q, gerr, got, werr, want)
		}
		if wantUsed := slices.Contains(direct, q); used && usedNow != wantUsed {
			t.Errorf("%s: %s: direct path used %v, want %v", stage, q, usedNow, wantUsed)
		}
	}
}

// The direct aggregation path answers exactly as the engine does — the
// same columns (names, types), values and Go types — over buffered rows,
// flushed files, both, compacted files and files rewritten by DELETE, and
// it does answer the queries of its shape (so that the comparison is not
// of the engine with itself).
func TestFastAggregateMatchesEngine(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION, f4 REAL, n BIGINT, i INTEGER, s SMALLINT, note VARCHAR(10), label TEXT)`)
	insert := func(minuteFrom, minuteTo int) {
		t.Helper()
		e.must(fmt.Sprintf(`INSERT INTO m SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + x * INTERVAL '20 seconds',
			'h' || (x %% 5), CASE WHEN x %% 17 = 0 THEN NULL ELSE (x * 7919 %% 1000) / 10.0 - 30 END,
			(x %% 13) * 1.5, x * 3 - 2000, CASE WHEN x %% 11 = 0 THEN NULL ELSE x %% 97 END, (x %% 7)::smallint, 'n' || (x %% 3),
			CASE x %% 9 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN 'twelve bytes' ELSE 'a label longer than twelve bytes ' || x END
			FROM generate_series(%d, %d) x`, minuteFrom*3, minuteTo*3-1))
	}
	insert(0, 180)
	e.must(`INSERT INTO m VALUES ('2026-01-01 00:07:00+00', 'h1', 'NaN', 'NaN', 0, 0, 0, 'nan'),
		('2026-01-01 00:07:30+00', 'h1', '-Infinity', '-Infinity', NULL, NULL, NULL, NULL),
		('1969-12-31 23:59:30.5+00', 'h2', -1, 2, 3, 4, 5, 'old'),
		('2026-01-01 00:10:00.000001+00', 'H1', 1e300, 1, 1, 1, 1, 'upper')`)
	const window = `time >= '2026-01-01 00:05:00+00' AND time < '2026-01-01 01:05:00+00'`
	fast := []string{
		"SELECT date_trunc('minute', time) AS minute, max(usage) AS max_usage FROM m WHERE host IN ('h1') AND " + window + " GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage), min(usage), max(f4), min(f4), count(*), count(usage), count(i), min(n), max(i), max(s), max(time), min(time) FROM m WHERE host IN ('h1', 'h3') AND " + window + " GROUP BY 1 ORDER BY 1 DESC LIMIT 7 OFFSET 2",
		"SELECT date_trunc('hour', m.time) h, count(n), max(n) FROM m AS m WHERE m.host = 'h2' AND time BETWEEN '2026-01-01 00:10:00' AND '2026-01-01 02:00:00+00' GROUP BY h",
		"SELECT date_trunc('MINUTE', time) AS minute, max(usage) FROM m WHERE host = 'h1' AND time > '2026-01-01 00:06:00Z' AND time <= '2026-01-01 00:10:00.000001+00' GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('second', time) AS s1, min(usage) FROM m WHERE 'h4' = host AND '2026-01-01 00:30:00+00' <= time AND time < timestamptz '2026-01-01 00:40:00+00' GROUP BY s1 ORDER BY s1 ASC",
		"SELECT date_trunc('day', time) AS d, max(usage), count(*) FROM public.m WHERE host IN ('h2', 'nobody') GROUP BY d ORDER BY d",
		"SELECT max(usage), min(usage), count(*), max(time) FROM m",
		"SELECT date_trunc('hour', time) AS h, max(usage), count(*) FROM m WHERE host IN ('h1', 'h2') AND note = 'n1' AND time < '2026-01-01 02:30:00+00' GROUP BY h ORDER BY h",
		"SELECT max(usage) AS top FROM m WHERE host = 'h1' AND " + window,
		"SELECT count(*), max(usage) FROM m WHERE host = 'nobody'",
		"SELECT count(*), max(usage) FROM m WHERE host IN ('h1', 'h1', 'h2')",
		// Rows, and comparisons of a float column with numbers.
		"SELECT time, host, usage, f4, n, i, s FROM m WHERE usage > 50.5 AND host IN ('h1', 'h3') AND " + window,
		"SELECT m.time AS t, usage u FROM m AS m WHERE host = 'h1' AND 10 >= usage AND time < '2026-01-01 00:20:00+00'",
		"SELECT host, time FROM m WHERE usage = 19.6",
		// Text of every length (inline in the engine's layout up to 12
		// bytes, by pointer beyond), empty and NULL, beside NULL numbers.
		"SELECT time, label, host, i, f4 FROM m WHERE host IN ('h1', 'h2') AND " + window,
		"SELECT label, n, s FROM m WHERE usage > 20",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE usage > 10 AND " + window + " GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage), count(*) FROM m WHERE usage >= -10 AND usage < 40 AND host = 'h2' GROUP BY minute ORDER BY minute",
		"SELECT count(*), min(usage) FROM m WHERE usage > 1e2",
		"SELECT count(*) FROM m WHERE time > '2030-01-01'",
		"SELECT count(*) FROM m LIMIT 0",
		"SELECT count(*) FROM m OFFSET 1",
		"SELECT count(*) FROM m LIMIT NULL OFFSET NULL",
		"SELECT date_trunc('minute', time) AS minute, count(*) FROM m WHERE host = 'H1' GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE time = '2026-01-01 00:07:00+00' GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE time >= '2026-01-01 00:05:00+00'::timestamptz AND host = 'h1'::text GROUP BY minute ORDER BY minute LIMIT 3",
	}
	general := []string{
		// GROUP BY time names the input column, not the output's.
		"SELECT date_trunc('minute', time) AS time, max(usage) FROM m WHERE " + window + " GROUP BY time ORDER BY 1, 2",
		"SELECT host, time FROM m WHERE usage = 19.6 OR false",
		"SELECT date_trunc('week', time) AS w, max(usage) FROM m GROUP BY w ORDER BY w",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE host IN ('h1') OR " + window + " GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE time >= now() - interval '100 years' AND host = 'h1' GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(note) FROM m GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, sum(usage) FROM m GROUP BY minute ORDER BY minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE host = 'h1' GROUP BY minute ORDER BY max(usage) DESC, minute",
		"SELECT date_trunc('minute', time) AS minute, max(usage) FROM m WHERE note = 'n1' AND host = 'h1' GROUP BY minute HAVING count(*) > 1 ORDER BY minute",
		// char/varchar(n) columns, LIMIT without ORDER BY, columns beside aggregates.
		"SELECT * FROM m WHERE host = 'h1' AND " + window,
		"SELECT time, usage FROM m WHERE host = 'h1' LIMIT 3",
		"SELECT host, count(*) FROM m GROUP BY host",
		"SELECT time, usage FROM m WHERE f4 > 3",
		"SELECT time, usage FROM m WHERE usage <> 3",
	}
	check := func(stage string) {
		t.Helper()
		// After ADD COLUMN the path may leave any query to the engine:
		// only the answers are compared.
		e.compareDirect(t, stage, fast, general, e.p.metrics.fastAggregates, !strings.Contains(stage, "ADD COLUMN"), false)
	}
	check("buffered")
	// Past its bounds the path leaves a query to the engine.
	pastBound := func(q string, limit func(bool)) {
		t.Helper()
		limit(true)
		defer limit(false)
		before := testutil.ToFloat64(e.p.metrics.fastAggregates)
		e.s.noFastAgg = true
		want, _ := e.rawResult(q)
		e.s.noFastAgg = false
		if got, err := e.rawResult(q); err != nil || got != want || testutil.ToFloat64(e.p.metrics.fastAggregates) != before {
			t.Errorf("%s: past the bound: %v, answered directly: %v", q, err, testutil.ToFloat64(e.p.metrics.fastAggregates) != before)
		}
	}
	pastBound("SELECT max(usage) FROM m WHERE host = 'h1'", func(on bool) {
		e.p.fastMaxBuffered = map[bool]int64{true: 100, false: fastMaxBuffered}[on]
	})
	rowsPastBound := func(on bool) { e.p.fastMaxOutRows = map[bool]int{true: 20, false: fastMaxOutRows}[on] }
	pastBound("SELECT time, usage FROM m WHERE host = 'h1'", rowsPastBound)
	e.must("CHECKPOINT")
	check("flushed")
	pastBound("SELECT time, usage FROM m WHERE host = 'h1'", rowsPastBound)
	pastBound("SELECT max(usage) FROM m", func(on bool) { e.p.fastMaxRows = map[bool]int64{true: 100, false: fastMaxRows}[on] })
	pastBound("SELECT date_trunc('second', time) AS s1, count(*) FROM m GROUP BY s1 ORDER BY s1", func(on bool) {
		e.p.fastMaxGroups = map[bool]int{true: 100, false: fastMaxGroups}[on]
	})
	insert(180, 240)
	e.must(`INSERT INTO m VALUES ('2026-01-01 00:07:10+00', 'h1', 99.5, 1, 2, 3, 4, 'late')`)
	check("files and buffered")
	e.must("CHECKPOINT")
	if _, err := e.store.Compact(t.Context(), "m"); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	e.must("DELETE FROM m WHERE host = 'h3' AND time < '2026-01-01 00:30:00+00'")
	check("buffered after DELETE")
	e.must("CHECKPOINT")
	check("flushed after DELETE")
	// Batches and files from before a column was added lack it: the
	// engine answers (NULLs for them).
	fast = append(fast, "SELECT date_trunc('minute', time) AS minute, max(extra), count(extra), count(*) FROM m WHERE host = 'h1' GROUP BY minute ORDER BY minute",
		"SELECT count(*), max(usage) FROM m WHERE tag = 'after'")
	e.must("INSERT INTO m (time, host, usage) VALUES ('2026-01-01 00:07:15+00', 'h1', 4)") // a batch without the column
	e.must("ALTER TABLE m ADD COLUMN extra DOUBLE PRECISION")
	e.must("ALTER TABLE m ADD COLUMN tag TEXT")
	e.must("INSERT INTO m (time, host, usage, extra, tag) VALUES ('2026-01-01 00:07:20+00', 'h1', 5, 7.5, 'after')")
	check("buffered after ADD COLUMN")
	e.must("CHECKPOINT")
	check("flushed after ADD COLUMN")
}

// The path's shape is matched exactly: a prepared statement's parameters
// stand for constants when it is described.
func TestFastAggregateShape(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION, c CHAR(3))`)
	tbl, ok := e.store.Table("m")
	if !ok {
		t.Fatal("no table m")
	}
	tests := []struct {
		q              string
		run, described bool
		params         []uint32 // the parameters' types, else unknown
	}{
		{"SELECT date_trunc('minute', time) AS m1, max(usage) FROM m WHERE host IN ('a', 'b') AND time >= '2026-01-01' GROUP BY m1 ORDER BY m1", true, true, nil},
		{"SELECT date_trunc('minute', time) AS m1, max(usage) FROM m WHERE host IN ($1, $2) AND time >= $3 AND time < $4 GROUP BY m1 ORDER BY m1", false, true, nil},
		{"SELECT max(usage) FROM m WHERE host = $1::text", false, true, nil},
		{"SELECT date_trunc('minute', time) AS m1, max(usage) FROM m WHERE host = $1 AND time >= $2 GROUP BY m1", false, true, []uint32{oidVarchar, oidTimestamptz}},
		{"SELECT max(usage) FROM m WHERE host = $1", false, false, []uint32{oidInt4}},
		{"SELECT max(usage) FROM m WHERE time > $1", false, false, []uint32{oidInt8}},
		// GROUP BY prefers input columns, system columns among them.
		{"SELECT date_trunc('hour', time) AS xmin, count(*) FROM m GROUP BY xmin", false, false, nil},
		{"SELECT max(usage) FROM m WHERE host IN ('a', 'a')", true, true, nil},
		{"SELECT max(usage) FROM m WHERE host = 1", false, false, nil},
		{"SELECT max(usage) FROM m WHERE c = 'a'", false, false, nil},
		{"SELECT max(usage) FROM m WHERE host <> 'a'", false, false, nil},
		{"SELECT max(usage) FROM m WHERE host NOT IN ('a')", false, false, nil},
		{"SELECT max(usage) FROM m WHERE host = NULL", false, false, nil},
		{"SELECT max(usage) FROM m WHERE time BETWEEN SYMMETRIC '2026-01-02' AND '2026-01-01'", false, false, nil},
		{"SELECT max(usage) FROM m LIMIT $1", false, false, nil},
		{"SELECT max(usage) FROM m LIMIT NULL", true, true, nil},
		{"SELECT max(usage) FROM m OFFSET -1", false, false, nil},
		{"SELECT max(usage) FROM m, m AS n", false, false, nil},
		{"SELECT max(DISTINCT usage) FROM m", false, false, nil},
		{"SELECT max(usage) FILTER (WHERE host = 'a') FROM m", false, false, nil},
		{"SELECT max(usage) OVER () FROM m", false, false, nil},
		{"SELECT max(usage) FROM m GROUP BY host", false, false, nil},
		{"SELECT date_trunc('minute', time), max(usage) FROM m GROUP BY date_trunc('minute', time)", false, false, nil},
		{"SELECT date_trunc('minute', time) AS a, max(usage) AS a FROM m GROUP BY a", false, false, nil},
		{"SELECT date_trunc('minute', time) AS a, max(usage) FROM m GROUP BY 1 ORDER BY 2", false, false, nil},
		{"SELECT date_trunc('minute', time) AS a, max(usage) FROM m GROUP BY 1 ORDER BY 1 FETCH FIRST 1 ROWS WITH TIES", false, false, nil},
		{"SELECT date_trunc('minute', time) AS a, max(usage) FROM m AS x GROUP BY 1", true, true, nil},
		{"SELECT date_trunc('minute', m.time) AS a, max(usage) FROM m AS x GROUP BY 1", false, false, nil},
		{"SELECT max(usage) FROM m WHERE time >= '2026-01-01' UNION SELECT 1", false, false, nil},
		{"SELECT max(usage) FROM other.m", false, false, nil},
		{"SELECT max(c) FROM m", false, false, nil},
	}
	for _, tc := range tests {
		tree, err := pg_query.Parse(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		sel := tree.Stmts[0].Stmt.GetSelectStmt()
		if _, ok := matchFastAgg(sel, tbl, false, nil); ok != tc.run {
			t.Errorf("%s: matched to run: %v, want %v", tc.q, ok, tc.run)
		}
		params := tc.params
		if params == nil {
			params = make([]uint32, 4)
		}
		if _, ok := matchFastAgg(sel, tbl, true, params); ok != tc.described {
			t.Errorf("%s: matched to describe: %v, want %v", tc.q, ok, tc.described)
		}
	}
}

// Buffered batches written before ADD COLUMN lack the column: a query
// that filters or aggregates by it gets the engine's answer (the new
// column NULL in the old rows), never a read past the batch's columns.
func TestFastAggregateAfterAddColumn(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE pg3 (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)")
	e.must("INSERT INTO pg3 SELECT TIMESTAMPTZ '2026-01-01' + x * INTERVAL '1 second', 'h' || (x % 2), x FROM generate_series(0, 7) x")
	e.must("ALTER TABLE pg3 ADD COLUMN note TEXT")
	e.must("ALTER TABLE pg3 ADD COLUMN w DOUBLE PRECISION")
	e.must("INSERT INTO pg3 SELECT TIMESTAMPTZ '2026-01-01' + x * INTERVAL '1 second', 'h' || (x % 2), x, 'after', x / 2.0 FROM generate_series(8, 11) x")
	// ±infinity: date_trunc keeps it, and so does max.
	e.must("INSERT INTO pg3 VALUES ('infinity', 'h0', 1, 'inf', 1), ('-infinity', 'h1', 2, 'inf', 2)")
	for _, q := range []string{
		"SELECT count(*) FROM pg3 WHERE note = 'after'",
		"SELECT count(*), max(w), count(w) FROM pg3 WHERE host = 'h1'",
		"SELECT max(v) FROM pg3 WHERE host IN ('h0', 'h1')",
		"SELECT * FROM pg3 WHERE host = 'h1' AND w > 4",
		"SELECT * FROM pg3 WHERE time > '2026-01-01'",
		"SELECT date_trunc('hour', time) AS h, count(*), max(time) FROM pg3 GROUP BY h ORDER BY h",
	} {
		e.s.noFastAgg = true
		want, werr := e.rawResult(q)
		e.s.noFastAgg = false
		got, gerr := e.rawResult(q)
		if werr != nil || gerr != nil || got != want {
			t.Errorf("%s\n got %v %s\nwant %v %s", q, gerr, got, werr, want)
		}
	}
}
