package planner

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The direct newest-row path answers exactly as the engine does — the
// same columns, values and Go types, in the same order — over buffered
// rows, flushed files, both, compacted files, after late rows, DELETE,
// UPDATE and ADD COLUMN; and it does answer the statements of its shape
// (so that the comparison is not of the engine with itself).
func TestNewestAnswerMatchesEngine(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE n (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION, f4 REAL, big BIGINT, i INTEGER, s SMALLINT, b BOOLEAN, note VARCHAR(10))`)
	// Each host's rows have distinct times: with two rows at a host's
	// newest time, either may be the answer.
	insert := func(from, to int) {
		t.Helper()
		e.must(fmt.Sprintf(`INSERT INTO n SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + x * INTERVAL '10 seconds',
			CASE x %% 7 WHEN 0 THEN NULL WHEN 1 THEN 'H1' WHEN 2 THEN 'été' ELSE 'h' || (x %% 7) END,
			CASE WHEN x %% 5 = 0 THEN NULL ELSE (x * 7919 %% 1000) / 10.0 - 30 END,
			(x %% 13) * 1.5, x * 3 - 2000, CASE WHEN x %% 11 = 0 THEN NULL ELSE x %% 97 END, (x %% 7)::smallint,
			x %% 2 = 0, 'n' || (x %% 3)
			FROM generate_series(%d, %d) x`, from, to))
	}
	insert(0, 2000)
	e.must(`INSERT INTO n VALUES ('2026-01-01 00:00:00.5+00', 'old', 'NaN', '-Infinity', NULL, NULL, NULL, NULL, NULL),
		('infinity', 'inf', 1, 1, 1, 1, 1, true, 'inf'), ('-infinity', 'neginf', 2, 2, 2, 2, 2, false, 'neginf')`)
	fast := []string{
		"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, usage AS u, time FROM n ORDER BY host DESC, time DESC LIMIT 3 OFFSET 1",
		"SELECT DISTINCT ON (x.host) x.time, x.note, x.b FROM n AS x ORDER BY x.host ASC, x.time DESC",
		"SELECT DISTINCT ON (host) * FROM public.n ORDER BY host, time DESC LIMIT 0",
		"SELECT DISTINCT ON (host) big, i, s, f4 FROM n ORDER BY host, time DESC LIMIT NULL OFFSET 2",
		"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC OFFSET 100",
		"SELECT DISTINCT ON (note) time, note, host FROM n ORDER BY note DESC, time DESC",
		"SELECT DISTINCT ON (host) * FROM n WHERE time > '2026-01-01 00:05:00+00' ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, time FROM n WHERE time >= '2026-01-01T05:00:00Z' AND '2026-01-01' <= n.time ORDER BY host, time DESC",
	}
	general := []string{
		// Past the range's end lie newest rows (and +infinity's).
		"SELECT DISTINCT ON (host) host, time FROM n WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-01T05:00:00Z' ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, time FROM n WHERE time > now() - interval '100 years' ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, time FROM n WHERE time > '2026-01-01' AND usage > 1 ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) * FROM n ORDER BY host NULLS FIRST, time DESC",
		"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC, usage",
		"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC LIMIT 1 + 1",
		"SELECT DISTINCT ON (host) host, usage * 2 FROM n ORDER BY host, time DESC",
		"SELECT DISTINCT host FROM n ORDER BY host",
	}
	check := func(stage string) {
		t.Helper()
		// Files written before ADD COLUMN are read by name (layout.go),
		// which the kept newest rows do not stand for: only the answers
		// are compared until compaction.
		e.compareDirect(t, stage, fast, general, e.p.metrics.newestAnswers, !strings.HasSuffix(stage, "ADD COLUMN"), true)
	}
	check("buffered")
	// Described without the engine, as the engine describes them.
	for _, q := range fast {
		e.s.noFastAgg = true
		want, werr := e.s.Prepare(t.Context(), q, nil)
		e.s.noFastAgg = false
		got, gerr := e.s.Prepare(t.Context(), q, nil)
		if werr != nil || gerr != nil || fmt.Sprint(got.Columns) != fmt.Sprint(want.Columns) {
			t.Errorf("%s: described %v %v, want %v %v", q, got, gerr, want, werr)
		}
	}
	e.must("CHECKPOINT")
	check("flushed")
	// A late row (older than its host's newest) must not win; a newer
	// one in the buffer must; a host only in the buffer appears.
	e.must(`INSERT INTO n VALUES ('2026-01-01 00:01:00+00', 'h3', 1, 1, 1, 1, 1, true, 'late'),
		('2026-01-01 06:00:00+00', 'h4', 4, 4, 4, 4, 4, true, 'newer'),
		('2026-01-01 00:02:00+00', 'fresh', 5, 5, 5, 5, 5, false, 'fresh')`)
	check("files and buffered")
	e.must("CHECKPOINT")
	if _, err := e.store.Compact(t.Context(), "n"); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	// The newest row of h5 and of h4 deleted: each one's row before it
	// is the answer.
	e.must("DELETE FROM n WHERE host = 'h5' AND time > '2026-01-01 05:00:00+00'")
	e.must("DELETE FROM n WHERE note = 'newer'")
	check("after DELETE")
	e.must("UPDATE n SET usage = -1, note = 'updated' WHERE host = 'h6' AND time > '2026-01-01 05:30:00+00'")
	check("after UPDATE")
	insert(2001, 2100)
	e.must("DELETE FROM n WHERE host = 'H1' AND time > '2026-01-01 05:40:00+00'")
	e.must("UPDATE n SET b = NULL WHERE host IS NULL AND time > '2026-01-01 05:40:00+00'")
	check("buffered after DELETE and UPDATE")
	// Batches and files from before a column was added lack it.
	e.must("ALTER TABLE n ADD COLUMN extra DOUBLE PRECISION")
	e.must("INSERT INTO n (time, host, usage, extra) VALUES ('2026-01-01 07:00:00+00', 'h2', 5, 7.5)")
	fast = append(fast, "SELECT DISTINCT ON (host) host, extra, time FROM n ORDER BY host, time DESC")
	check("buffered after ADD COLUMN")
	e.must("CHECKPOINT")
	check("flushed after ADD COLUMN")
	if _, err := e.store.Compact(t.Context(), "n"); err != nil {
		t.Fatal(err)
	}
	e.must(`INSERT INTO n VALUES ('2026-01-01 00:03:00+00', 'h2', 1, 1, 1, 1, 1, true, 'late', 1)`)
	check("compacted after ADD COLUMN, with a late row")
}

// The path's shape is matched exactly; everything else is the engine's.
func TestNewestAnswerShape(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE n (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)`)
	e.must(`CREATE TABLE c (time TIMESTAMPTZ NOT NULL, host TEXT, v CHAR(3))`)
	e.must(`CREATE TABLE d (time TIMESTAMPTZ NOT NULL, host TEXT, v NUMERIC(10, 2))`)
	e.must(`CREATE TABLE w (time TIMESTAMP NOT NULL, host TEXT, v DOUBLE PRECISION)`)
	for _, tc := range []struct {
		q  string
		ok bool
	}{
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC", true},
		{"SELECT DISTINCT ON (host) v AS value, host FROM n ORDER BY host DESC, time DESC LIMIT 5 OFFSET 1", true},
		{"SELECT DISTINCT ON (host) * FROM n WHERE time > '2026-01-01' ORDER BY host, time DESC", true},
		{"SELECT DISTINCT ON (host) * FROM n WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-02T00:00:00Z' ORDER BY host, time DESC", true},
		{"SELECT DISTINCT ON (host) * FROM n WHERE time > '2026-01-01' OR time < '2025-01-01' ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) * FROM n WHERE host = 'a' ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) * FROM n WHERE time > $1 ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host NULLS LAST, time DESC", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC NULLS LAST", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC LIMIT $1", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC LIMIT -1", false},
		{"SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC FETCH FIRST 1 ROWS WITH TIES", false},
		{"SELECT DISTINCT ON (host) v AS time FROM n ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) n.* FROM n ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) host, v + 1 FROM n ORDER BY host, time DESC", false},
		{"SELECT DISTINCT host FROM n", false},
		// A column alias list renames the columns: host may be another
		// column of the table.
		{"SELECT DISTINCT ON (host) * FROM n AS x(host, time) ORDER BY host, time DESC", false},
		{"SELECT DISTINCT ON (host) * FROM c ORDER BY host, time DESC", true}, // matched; the table is refused at run
	} {
		tree, err := pg_query.Parse(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.s.matchNewest(tree.Stmts[0].Stmt.GetSelectStmt()); ok != tc.ok {
			t.Errorf("%s: matched %v, want %v", tc.q, ok, tc.ok)
		}
	}
	// Renamed by an alias list, the statement's host is the table's time
	// and its time the table's host: one row per timestamp, with the new
	// names, as in PostgreSQL (neither path may cut the read by the
	// table's host).
	e.must("INSERT INTO n VALUES ('2026-01-01', 'a', 1), ('2026-01-02', 'a', 2), ('2026-01-02', 'b', 3)")
	if got := e.rows("SELECT DISTINCT ON (host) host, time AS h FROM n AS x(host, time) ORDER BY host, time DESC"); got != "2026-01-01 00:00:00|a;2026-01-02 00:00:00|b" {
		t.Errorf("renamed columns: %q", got)
	}
	e.must("DELETE FROM n")
	// Tables of types the path does not read: character(n), shown padded;
	// numeric; timestamp without time zone.
	for _, name := range []string{"c", "d", "w"} {
		tbl, _ := e.store.Table(name)
		if newestTableOK(tbl) {
			t.Errorf("table %s: read by the path", name)
		}
		e.must(fmt.Sprintf("INSERT INTO %s VALUES ('2026-01-01', 'a', '1'), ('2026-01-02', 'a', '2')", name))
		before := testutil.ToFloat64(e.p.metrics.newestAnswers)
		got, err := e.rawResult(fmt.Sprintf("SELECT DISTINCT ON (host) host, v FROM %s ORDER BY host, time DESC", name))
		if err != nil || !strings.Contains(got, "2") || testutil.ToFloat64(e.p.metrics.newestAnswers) != before {
			t.Errorf("table %s: %v %q, answered directly: %v", name, err, got, testutil.ToFloat64(e.p.metrics.newestAnswers) != before)
		}
	}
	// In a transaction block the engine answers (it sees the block's
	// own writes).
	e.must("BEGIN")
	e.must("INSERT INTO n VALUES ('2026-01-03', 'a', 3)")
	before := testutil.ToFloat64(e.p.metrics.newestAnswers)
	if got, err := e.rawResult("SELECT DISTINCT ON (host) host, v FROM n ORDER BY host, time DESC"); err != nil || !strings.Contains(got, "float64(3)") {
		t.Errorf("in a block: %v %q", err, got)
	}
	if testutil.ToFloat64(e.p.metrics.newestAnswers) != before {
		t.Error("answered directly in a transaction block")
	}
	e.must("ROLLBACK")
}

// The rows read into Go count against one budget for every kept table,
// which each gives back when it is replaced.
func TestNewestRowsInGoBudget(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE n (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)`)
	const q = "SELECT DISTINCT ON (host) * FROM n ORDER BY host, time DESC"
	counted := func() int {
		e.p.newest.mu.Lock()
		defer e.p.newest.mu.Unlock()
		return e.p.newest.goValues
	}
	for i, want := range []int{3 * 3, 4 * 3} {
		e.must(fmt.Sprintf("INSERT INTO n SELECT TIMESTAMPTZ '2026-01-01' + (x + %d) * INTERVAL '1 minute', 'h' || (x %% %d), x FROM generate_series(0, 99) x", 100*i, 3+i))
		e.must("CHECKPOINT")
		before := testutil.ToFloat64(e.p.metrics.newestAnswers)
		e.rows(q)
		if testutil.ToFloat64(e.p.metrics.newestAnswers) == before {
			t.Fatalf("version %d: not answered directly", i)
		}
		if got := counted(); got != want {
			t.Fatalf("version %d: %d values counted, want %d (the last version's only)", i, got, want)
		}
	}
}

// Grafana's "last value" panel bounds the time column by its range
// ($__timeFilter): each value's newest row answers when it is in the
// range, and none when it is before it; a newest row past the range's
// end, or a session zone other than UTC (the literals' zone), leaves the
// statement to the engine. Both give the same answer.
func TestNewestAnswerTimeFilter(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE g (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)`)
	e.must(`INSERT INTO g SELECT TIMESTAMPTZ '2026-01-01' + x * INTERVAL '1 minute', 'h' || (x % 4), x FROM generate_series(0, 999) x`)
	e.must(`INSERT INTO g VALUES ('2025-06-01', 'stale', 1)`)
	e.must("CHECKPOINT")
	e.must(`INSERT INTO g VALUES ('2026-01-01 20:00:00+00', 'h1', -1), ('2025-12-31 23:00:00+00', 'late', 2)`)
	const q = "SELECT DISTINCT ON (host) host, time, v FROM g WHERE time BETWEEN '%s' AND '%s' ORDER BY host, time DESC"
	direct := []string{
		fmt.Sprintf(q, "2025-12-01T00:00:00Z", "2026-01-02T00:00:00Z"),
		fmt.Sprintf(q, "2026-01-01T16:00:00Z", "2026-01-01T20:00:00Z"),
		fmt.Sprintf(q, "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
	}
	general := []string{
		fmt.Sprintf(q, "2025-12-01T00:00:00Z", "2026-01-01T12:00:00Z"),
		fmt.Sprintf(q, "2026-01-01T20:00:00Z", "2025-12-01T00:00:00Z"),
	}
	e.compareDirect(t, "UTC", direct, general, e.p.metrics.newestAnswers, true, true)
	if got := e.rows(direct[1]); got != "h0|2026-01-01 16:36:00|996;h1|2026-01-01 20:00:00|-1;h2|2026-01-01 16:38:00|998;h3|2026-01-01 16:39:00|999" {
		t.Errorf("%s: %s", direct[1], got)
	}
	e.must("SET TIME ZONE 'Europe/Berlin'")
	e.compareDirect(t, "Berlin", nil, direct, e.p.metrics.newestAnswers, true, true)
}

// One snapshot, each row once (DESIGN's invariant 3) while late rows,
// flushes and compactions run beside the direct path: the kept rows of a
// new Delta version are made while statements read the batches the flush
// removes, and every answer is the table's, never a value twice or
// missing.
func TestNewestAnswerDuringFlushAndCompaction(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE n (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)`)
	const q = "SELECT DISTINCT ON (host) host, time, v FROM n ORDER BY host, time DESC"
	for part := range 6 {
		e.must(fmt.Sprintf(`INSERT INTO n SELECT TIMESTAMPTZ '2026-01-01' + (x * 7 %% 600) * INTERVAL '1 minute', 'h' || (x %% 50), x
			FROM generate_series(%d, %d) x`, part*1000, part*1000+999))
	}
	e.s.noFastAgg = true
	want := e.rows(q)
	e.s.noFastAgg = false
	if strings.Count(want, ";") != 49 {
		t.Fatalf("want 50 hosts: %s", want)
	}
	done := make(chan error, 1)
	// Each step waits for a few statements to read the state it made
	// (late rows buffered beside files, then flushed, then compacted).
	var asked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop) // a failed statement ends the loop below early
	readBy := func() bool {
		for n := asked.Load() + 3; asked.Load() < n; {
			select {
			case <-stop:
				return false
			case <-time.After(time.Millisecond):
			}
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Late rows (older than each host's newest) from another session
		// change no answer, but each makes batches the next flush moves.
		other, err := e.p.NewSession(t.Context(), "tsdb")
		if err != nil {
			done <- err
			return
		}
		defer other.Close()
		for i := range 3 {
			late := fmt.Sprintf("INSERT INTO n VALUES ('2025-12-31 0%d:00:00+00', 'h%d', -1)", i, i)
			if err = other.Execute(t.Context(), late, func(*Result) error { return nil }); err != nil {
				break
			}
			if !readBy() {
				break
			}
			if err = e.store.Checkpoint(t.Context()); err != nil {
				break
			}
			if !readBy() {
				break
			}
			if _, err = e.store.Compact(t.Context(), "n"); err != nil {
				break
			}
			if !readBy() {
				break
			}
		}
		done <- err
	}()
	before := testutil.ToFloat64(e.p.metrics.newestAnswers)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		if got := e.rows(q); got != want {
			t.Fatalf("during flushes and compactions:\n got %s\nwant %s", got, want)
		}
		asked.Add(1)
	}
	answered := testutil.ToFloat64(e.p.metrics.newestAnswers) - before
	if answered == 0 {
		t.Fatal("no statement was answered directly")
	}
	t.Logf("%v statements answered directly", answered)
}
