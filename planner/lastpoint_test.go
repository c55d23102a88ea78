package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Statements that need each value's newest row read only from the oldest
// of those rows on; they answer as the same statement reading every row
// (made so by a WHERE true), through late rows, rows of a new value
// older than every other, flushes, DELETE, UPDATE, a column added, NULLs,
// and a transaction's own rows.
func TestLastRowPerValue(t *testing.T) {
	e := newEnv(t)
	queries := []string{
		"SELECT DISTINCT ON (host) * FROM lp %s ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, v, time FROM lp %s ORDER BY host, time DESC LIMIT 3",
		"SELECT DISTINCT ON (lp.host) time, v FROM lp %s ORDER BY lp.host DESC, time DESC, v",
		"SELECT DISTINCT host FROM lp %s ORDER BY 1",
		"SELECT host FROM lp %s GROUP BY host ORDER BY host",
		"SELECT DISTINCT zone FROM lp %s ORDER BY zone",
		// ORDER BY time names the output column here, v: not bounded.
		"SELECT DISTINCT ON (host) host, -v AS time FROM lp %s ORDER BY host, time DESC",
		// Lower bounds on the time column keep the bound (a value with
		// no row after them has none the statement reads).
		"SELECT DISTINCT ON (host) * FROM lp WHERE time >= '2026-01-02 12:00' %s ORDER BY host, time DESC",
		"SELECT DISTINCT host FROM lp WHERE time > '2026-01-01' AND '2025-12-01' < lp.time %s ORDER BY 1",
		"SELECT DISTINCT host FROM lp WHERE time >= now() - interval '100 years' %s ORDER BY 1",
		// Upper bounds too: past every row (a dashboard's now) the
		// bound holds; within the rows it gives up.
		"SELECT DISTINCT ON (host) * FROM lp WHERE time BETWEEN '2025-01-01' AND now() + interval '10 years' %s ORDER BY host, time DESC",
		"SELECT DISTINCT ON (host) host, time FROM lp WHERE time BETWEEN '2026-01-01 06:00' AND '2026-01-02 12:00' %s ORDER BY host, time DESC",
		"SELECT DISTINCT host FROM lp WHERE time >= '2026-01-01' AND time < '2026-01-01 00:02' %s ORDER BY 1",
		"SELECT DISTINCT host FROM lp WHERE lp.time <= '2027-01-01' %s ORDER BY 1",
		// An upper bound the planner's time range leaves out (it does
		// not compute transaction_timestamp() outside a block), within
		// the rows: nothing is cut.
		fmt.Sprintf("SELECT DISTINCT ON (host) host, time FROM lp WHERE time < transaction_timestamp() - interval '%d hours' %%s ORDER BY host, time DESC",
			int(time.Since(time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)).Hours())),
	}
	check := func(stage string) {
		t.Helper()
		// The statements are bounded at every stage: the table's files
		// are tsdb's own, with or without the column added later.
		snap, err := e.store.Snapshot(t.Context(), "lp")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"host", "zone"} {
			if c == "zone" && !strings.Contains(stage, "zone") {
				continue
			}
			if _, ok, err := e.s.lastKeyBound(t.Context(), snap, c, fullRange); err != nil || !ok {
				t.Fatalf("%s: no bound for %s: %v", stage, c, err)
			}
		}
		for _, q := range queries {
			if strings.Contains(q, "zone") && !strings.Contains(stage, "zone") {
				continue
			}
			all := "WHERE true"
			if strings.Contains(q, "WHERE") {
				all = "AND true"
			}
			fast := e.rows(strings.Replace(q, "%s", "", 1))
			full := e.rows(strings.Replace(q, "%s", all, 1))
			if fast != full {
				t.Errorf("%s: %s\n got %s\nwant %s", stage, q, fast, full)
			}
		}
	}
	e.must("CREATE TABLE lp (time TIMESTAMPTZ, host TEXT, v BIGINT)")
	e.must("INSERT INTO lp SELECT TIMESTAMPTZ '2026-01-01' + i * INTERVAL '1 minute', 'h' || (i % 4), i FROM generate_series(0, 2999) i")
	check("buffered")
	// The bound is the oldest value's newest row: h0's, minute 2996.
	bound := func() int64 {
		t.Helper()
		snap, err := e.store.Snapshot(t.Context(), "lp")
		if err != nil {
			t.Fatal(err)
		}
		b, ok, err := e.s.lastKeyBound(t.Context(), snap, "host", fullRange)
		if err != nil || !ok {
			t.Fatalf("bound: %v %v", ok, err)
		}
		return b
	}
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(2996 * time.Minute).UnixMicro()
	if got := bound(); got != want {
		t.Fatalf("bound over batches %d, want %d", got, want)
	}
	if testutil.ToFloat64(e.p.metrics.lastKeyBounds) == 0 {
		t.Fatal("no statement was bounded")
	}
	// An upper bound past every row keeps the bound; one within the
	// rows drops it.
	for q, bounded := range map[string]bool{
		"SELECT DISTINCT ON (host) * FROM lp WHERE time BETWEEN '2025-01-01' AND now() + interval '10 years' ORDER BY host, time DESC": true,
		"SELECT DISTINCT host FROM lp WHERE time < '2026-01-01 00:02'":                                                                 false,
	} {
		before := testutil.ToFloat64(e.p.metrics.lastKeyBounds)
		e.rows(q)
		if got := testutil.ToFloat64(e.p.metrics.lastKeyBounds) > before; got != bounded {
			t.Errorf("%s: bounded %v, want %v", q, got, bounded)
		}
	}
	e.must("CHECKPOINT")
	check("flushed")
	if got := bound(); got != want {
		t.Fatalf("bound over files %d, want %d", got, want)
	}
	// The files' newest rows are kept in the engine, one table per
	// column asked, and read in their place.
	newestTables := func() (kept, retired int) {
		e.p.newest.mu.Lock()
		defer e.p.newest.mu.Unlock()
		return len(e.p.newest.tables), len(e.p.newest.retired)
	}
	if kept, _ := newestTables(); kept != 1 {
		t.Fatalf("%d tables of newest rows, want 1 (host's)", kept)
	}
	e.must("INSERT INTO lp VALUES ('2025-06-01', 'late', 1), ('2026-01-01 00:30', NULL, 2), ('2026-03-01', 'h1', 3)")
	check("late rows")
	e.must("CHECKPOINT")
	e.must("DELETE FROM lp WHERE host = 'h1' AND time >= '2026-01-02'")
	check("delete")
	e.must("UPDATE lp SET host = 'moved' WHERE host = 'h2' AND v = 2998")
	check("update")
	// Buffered rows deleted and updated: their batches are replaced.
	e.must("INSERT INTO lp VALUES ('2026-05-01', 'h3', 8), ('2026-05-02', 'h0', 9), ('2026-05-03', 'fresh', 10)")
	check("buffered rows")
	e.must("DELETE FROM lp WHERE time >= '2026-05-02'")
	check("buffered rows deleted")
	e.must("UPDATE lp SET time = '2026-01-03' WHERE time = '2026-05-01'")
	check("buffered rows updated")
	e.must("ALTER TABLE lp ADD COLUMN zone TEXT")
	e.must("CHECKPOINT")
	// Every file older than the column: its NULLs' newest row is known
	// only from the files' statistics, to the millisecond.
	check("zone added, only in files")
	e.must("INSERT INTO lp VALUES ('2026-04-01', 'h0', 5, 'eu'), ('2026-04-02', 'h9', 6, NULL)")
	check("zone")
	e.must("VACUUM lp")
	check("zone, compacted")
	// Each new version of the files replaced the tables of the last;
	// those no statement reads any more are dropped.
	e.rows("SELECT DISTINCT host FROM lp")
	if kept, retired := newestTables(); kept != 2 || retired != 0 {
		t.Fatalf("%d tables of newest rows kept, %d retired; want 2 (host's and zone's) and 0", kept, retired)
	}
	runScript(t, e, []txStep{
		{0, "BEGIN", "tag:BEGIN"},
		{0, "INSERT INTO lp VALUES ('2020-01-01', 'own', 7, NULL)", "tag:INSERT 0 1"},
		{0, "SELECT host, v FROM (SELECT DISTINCT ON (host) * FROM lp ORDER BY host, time DESC) s WHERE host = 'own'", "own|7"},
		{0, "SELECT count(*) FROM (SELECT DISTINCT host FROM lp) s WHERE host = 'own'", "1"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
	})
	if got := e.rows("SELECT DISTINCT ON (host) host FROM lp ORDER BY host, time DESC"); !strings.Contains(got, "late") || strings.Contains(got, "own") {
		t.Fatalf("hosts: %s", got)
	}
	// A dropped table's newest rows go with it.
	e.must("DROP TABLE lp")
	if kept, retired := newestTables(); kept != 0 || retired != 2 {
		t.Fatalf("after DROP TABLE: %d tables of newest rows kept, %d retired; want 0 and 2", kept, retired)
	}
}

// Only bounds on the time column, joined by AND, of one value for the
// statement, keep a statement's rows of each value within one range.
func TestTimeBoundsOnly(t *testing.T) {
	for _, tc := range []struct {
		where string
		want  bool
	}{
		{"time >= '2026-01-01'", true},
		{"time > now() - interval '1 hour' AND '2026-01-01' <= lp.time", true},
		{"time >= CURRENT_TIMESTAMP - interval '1 day'", true},
		{"time < '2026-01-01'", true},
		{"time BETWEEN '2026-01-01' AND '2026-02-01'", true},
		{"time BETWEEN '2026-01-01' AND now() AND time < now()", true},
		{"time NOT BETWEEN '2026-01-01' AND '2026-02-01'", false},
		{"time BETWEEN v::timestamptz AND now()", false},
		{"time >= '2026-01-01' OR time >= '2025-01-01'", false},
		{"time >= '2026-01-01' AND v > 1", false},
		{"time > v::timestamptz", false},
		{"time <> '2026-01-01'", false},
		{"time > now() - random() * interval '1 day'", false},
		{"time > clock_timestamp()", false},
		{"time > (SELECT max(time) FROM lp)", false},
		{"other.time > '2026-01-01'", false},
	} {
		tree, err := pg_query.Parse("SELECT * FROM lp WHERE " + tc.where)
		if err != nil {
			t.Fatal(err)
		}
		if got := timeBoundsOnly(tree.Stmts[0].Stmt.GetSelectStmt().WhereClause, "lp", "time"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.where, got, tc.want)
		}
	}
}

// A table under Delta column mapping (names Spark refuses) takes the same
// paths: the files' newest rows are kept, read from a time on by the
// physical names, and answer as the statement reading every row.
func TestLastRowPerValueMappedNames(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE "l p" ("the time" TIMESTAMPTZ, "h o" TEXT, "v=v" BIGINT)`)
	e.must(`INSERT INTO "l p" SELECT TIMESTAMPTZ '2026-01-01' + i * INTERVAL '1 minute', 'h' || (i % 4), i FROM generate_series(0, 2999) i`)
	e.must("CHECKPOINT")
	snap, err := e.store.Snapshot(t.Context(), "l p")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Table.ColumnMapping() || snap.Table.Columns[1].FileName() == "h o" {
		t.Fatalf("the table has no column mapping: %+v", snap.Table)
	}
	e.must(`INSERT INTO "l p" VALUES ('2026-03-01', 'h1', -1), ('2025-01-01', 'h2', -2)`)
	const q = `SELECT DISTINCT ON ("h o") * FROM "l p" %s ORDER BY "h o", "the time" DESC`
	before := testutil.ToFloat64(e.p.metrics.lastKeyBounds)
	e.s.noFastAgg = true // the engine's bounded read, first
	fast, full := e.rows(fmt.Sprintf(q, "")), e.rows(fmt.Sprintf(q, "WHERE true"))
	if fast != full || !strings.Contains(fast, "-1") {
		t.Fatalf("got %s\nwant %s", fast, full)
	}
	if testutil.ToFloat64(e.p.metrics.lastKeyBounds) == before {
		t.Fatal("the statement was not bounded")
	}
	// The direct path (newestanswer.go) reads the same rows.
	e.s.noFastAgg = false
	before = testutil.ToFloat64(e.p.metrics.newestAnswers)
	if direct := e.rows(fmt.Sprintf(q, "")); direct != full || testutil.ToFloat64(e.p.metrics.newestAnswers) == before {
		t.Fatalf("direct path: %s\nwant %s", direct, full)
	}
	// EXPLAIN says the direct path answers.
	var plan []string
	for _, r := range e.must("EXPLAIN " + fmt.Sprintf(q, ""))[0].rows {
		plan = append(plan, r[0])
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "answered without the engine, from the newest row of each h o") ||
		!strings.Contains(text, "files' newest rows kept, 3 values newest there") || !strings.Contains(text, "batches, 1 values newest there") {
		t.Fatalf("EXPLAIN:\n%s", text)
	}
	e.s.noFastAgg = true
	e.p.newest.mu.Lock()
	kept := len(e.p.newest.tables)
	e.p.newest.mu.Unlock()
	if kept != 1 {
		t.Fatalf("%d tables of newest rows, want 1", kept)
	}
	// EXPLAIN binds the statement as it runs, and says so.
	plan = nil
	for _, r := range e.must("EXPLAIN " + fmt.Sprintf(q, ""))[0].rows {
		plan = append(plan, r[0])
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, `reads the newest rows of each h o in the Delta files + MemBuffer`) || !strings.Contains(text, "rows from 2026-01-03 01:56:00+00 on") {
		t.Fatalf("EXPLAIN:\n%s", text)
	}
}

// A NULL value whose newest row is at +infinity in the files: the bound
// allows for the millisecond of the files' statistics without passing
// the largest time (it wrapped, and the statement lost the NULL's row
// before the WHERE's upper bound).
func TestLastRowInfiniteNull(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE li (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)")
	e.must("INSERT INTO li VALUES ('infinity', NULL, 1), ('2020-01-01', NULL, 2), ('2024-01-01', 'a', 3)")
	e.must("CHECKPOINT")
	const q = "SELECT DISTINCT ON (host) host, v FROM li WHERE time < '2025-01-01' %s ORDER BY host, time DESC"
	got, want := e.rows(fmt.Sprintf(q, "")), e.rows(fmt.Sprintf(q, "AND v > 0"))
	if got != want || want != "a|3;NULL|2" {
		t.Fatalf("got %q, want %q (a|3;NULL|2)", got, want)
	}
}
