package planner

import (
	"testing"
	"time"
)

// PostgreSQL syntax DuckDB lacks is rewritten to what it means, with
// PostgreSQL's NULL semantics.
func TestPostgresSyntax(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []queryRows{
		{"SELECT 3 BETWEEN SYMMETRIC 5 AND 1, 3 BETWEEN SYMMETRIC 1 AND 5, 6 BETWEEN SYMMETRIC 5 AND 1", "true|true|false"},
		{"SELECT 3 NOT BETWEEN SYMMETRIC 5 AND 1, 6 NOT BETWEEN SYMMETRIC 5 AND 1", "false|true"},
		{"SELECT 3 BETWEEN SYMMETRIC NULL AND 1, 3 BETWEEN SYMMETRIC NULL AND 5, 3 NOT BETWEEN SYMMETRIC NULL AND 5", "NULL|NULL|NULL"},
		{"SELECT host FROM cpu WHERE n BETWEEN SYMMETRIC 2 AND 1 ORDER BY host", "a;b"},
		{"SELECT host FROM cpu WHERE time NOT BETWEEN SYMMETRIC '2026-01-01 00:10:00+00' AND '2026-01-01 00:00:00+00' ORDER BY host", "c;d"},
		// The wall clock of a zone, as PostgreSQL 15 printed it, across
		// a daylight saving change and a half-hour offset.
		{"SELECT date_trunc('day', timestamptz '2026-03-01 23:30:00+00', 'America/New_York')", "2026-03-01 05:00:00"},
		{"SELECT date_trunc('day', timestamptz '2026-03-08 12:00:00+00', 'America/New_York')", "2026-03-08 05:00:00"},
		{"SELECT date_trunc('hour', timestamptz '2026-03-01 23:50:00+00', 'Asia/Kolkata')", "2026-03-01 23:30:00"},
		{"SELECT date_trunc('month', timestamptz '2026-02-28 23:30:00+00', 'Europe/Berlin')", "2026-02-28 23:00:00"},
		{"SELECT date_trunc('week', timestamptz '2026-03-02 03:00:00+00', 'America/Los_Angeles')", "2026-02-23 08:00:00"},
		{"SELECT date_trunc('day', time, 'Asia/Tokyo') AS d, count(*) FROM cpu GROUP BY d ORDER BY d", "2025-12-31 15:00:00|4"},
		// A timestamp is read as a timestamptz (in UTC), as PostgreSQL casts it.
		{"SELECT date_trunc('day', timestamp '2026-03-01 23:30', 'America/New_York')", "2026-03-01 05:00:00"},
		// generate_series over integer constants is integer, as in
		// PostgreSQL: date + i works, and the column keeps its name.
		{"SELECT (DATE '2026-01-30' + i)::text, pg_typeof(i) FROM generate_series(0, 2) i ORDER BY 1", "2026-01-30|integer;2026-01-31|integer;2026-02-01|integer"},
		{"SELECT x, pg_typeof(x) FROM generate_series(5, 1, -2) AS t(x)", "5|integer;3|integer;1|integer"},
		{"SELECT generate_series FROM generate_series(1, 2)", "1;2"},
		{"SELECT pg_typeof(g) FROM generate_series(1::bigint, 2) g LIMIT 1", "bigint"},
		// LIKE's escape character is a backslash unless ESCAPE says.
		{`SELECT 'a_c' LIKE 'a\_c', 'abc' LIKE 'a\_c', 'a%c' LIKE 'a#%c' ESCAPE '#', 'A_C' ILIKE 'a\_c', 'abc' NOT LIKE 'a\_c', 'abc' LIKE 'a_c'`, "true|false|true|true|true|true"},
		{`SELECT host FROM cpu WHERE host LIKE 'a%' OR host NOT LIKE '\_%' ESCAPE '#' ORDER BY host`, "a;b;c;d"},
		// A pattern computed by the query escapes with a backslash too.
		{`SELECT 'a_c' LIKE concat('a\_', '%'), 'abc' LIKE concat('a\_', '%')`, "true|false"},
		// SIMILAR TO's wildcards, literal dot and escapes, as in PostgreSQL 15.
		{"SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO 'a.c', 'a.c' SIMILAR TO 'a.c', 'abc' SIMILAR TO '(a|x)b_', 'abc' NOT SIMILAR TO 'a%', 'ab' SIMILAR TO 'a[bc]', 'a%' SIMILAR TO 'a#%' ESCAPE '#', 'a$' SIMILAR TO 'a$', 'aaa' SIMILAR TO 'a{2,3}', 'abc' SIMILAR TO 'b%'", "true|false|true|true|false|true|true|true|true|false"},
		{"SELECT host FROM cpu WHERE host SIMILAR TO '(a|c)' ORDER BY host", "a;c"},
		// As PostgreSQL 15 printed them.
		{"SELECT to_hex(255), to_hex(48879), substring('hello' from -1 for 3), substring('hello' from 0), substring('hello' from 2 for 2), substring('hello', -5, 3), substr('hello', 2)", "ff|beef|h|hello|el||ello"},
		{"SELECT substring(host from 1 for 1) FROM cpu WHERE host = 'a'", "a"},
		// Seconds with their fraction.
		{"SELECT extract(second from timestamp '2026-03-01 12:00:07.25'), date_part('second', timestamp '2026-03-01 12:00:07.25'), extract(seconds from interval '1 minute 7.5 seconds')", "7.25|7.25|7.5"},
		// generate_series in a select list gives a row per value.
		{"SELECT generate_series(1, 3)", "1;2;3"},
		{"SELECT generate_series(timestamptz '2026-01-01 00:00+00', '2026-01-01 02:00+00', interval '1 hour') AS t, 1 AS one", "2026-01-01 00:00:00|1;2026-01-01 01:00:00|1;2026-01-01 02:00:00|1"},
		{"SELECT count(*) FROM generate_series(1, 5)", "5"},
		{"SELECT host FROM cpu WHERE time BETWEEN SYMMETRIC '2026-01-01 00:10:00+00' AND '2026-01-01 00:00:00+00' ORDER BY host", "a;b"},
	}
	// Over buffered rows, then over flushed files (pruned by the range).
	for _, layer := range []string{"buffered", "flushed"} {
		if layer == "flushed" {
			e.must("CHECKPOINT")
		}
		e.expectRows(layer+": ", tests)
	}
}

// NULL sorts as PostgreSQL sorts it: after every value going up, before
// every value going down, in ORDER BY, windows and aggregates alike.
func TestNullOrder(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []queryRows{
		{"SELECT n FROM cpu ORDER BY n", "1;2;NULL;NULL"},
		{"SELECT n FROM cpu ORDER BY n DESC LIMIT 2", "NULL;NULL"},
		{"SELECT n FROM cpu ORDER BY n DESC NULLS LAST LIMIT 1", "2"},
		{"SELECT host FROM cpu ORDER BY usage DESC, host LIMIT 1", "d"},
		{"SELECT host, row_number() OVER (ORDER BY n DESC, host) FROM cpu ORDER BY host", "a|4;b|3;c|1;d|2"},
		{"SELECT string_agg(host, ',' ORDER BY usage DESC, host) FROM cpu", "d,c,b,a"},
	}
	e.expectRows("", tests)
}

// A list of a scalar type, or of lists of one, is that type's PostgreSQL
// array (PostgreSQL types int4[][] as int4[]); other lists stay text.
func TestColumnForLists(t *testing.T) {
	for _, tt := range []struct {
		duck string
		oid  uint32
	}{
		{"INTEGER[]", 1007}, {"BIGINT[]", 1016}, {"VARCHAR[]", 1009}, {"DOUBLE[]", 1022},
		{"DECIMAL(38,10)[]", 1231}, {"TIMESTAMP WITH TIME ZONE[]", 1185}, {"BOOLEAN[]", 1000},
		{"INTEGER[][]", 1007}, {"DATE[][][]", 1182}, {"STRUCT(a INTEGER)[]", 25}, {"STRUCT(a INTEGER)[][]", 25}, {"JSON[]", 25}, {"MAP(VARCHAR, INTEGER)[]", 25},
	} {
		if got := columnFor("x", tt.duck).OID; got != tt.oid {
			t.Errorf("%s: OID %d, want %d", tt.duck, got, tt.oid)
		}
		if tt.oid != 25 && ArrayElement(tt.oid) == 0 {
			t.Errorf("%s: no element type for %d", tt.duck, tt.oid)
		}
	}
	// pg_type lists the arrays with their elements, as drivers look them up.
	e := newEnv(t)
	if got := e.rows("SELECT a.typname, a.typelem, e.typarray FROM pg_type a JOIN pg_type e ON e.oid = a.typelem WHERE a.oid = 1016"); got != "_int8|20|1016" {
		t.Fatalf("pg_type of int8[]: %s", got)
	}
}

// DELETE, UPDATE and INSERT … SELECT read their expressions as SELECT
// does, and a prepared DML statement takes the time of each execution.
func TestDMLMeansWhatSelectMeans(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	e.must(`INSERT INTO cpu (time, host) VALUES ('2026-01-01 00:01:00+00', 'a_x'), ('2026-01-01 00:02:00+00', 'abx')`)
	if got := e.rows(`SELECT host FROM cpu WHERE host LIKE 'a\_%' ORDER BY host`); got != "a_x" {
		t.Fatalf("SELECT with an escaped _: %s", got)
	}
	e.must(`DELETE FROM cpu WHERE host LIKE 'a\_%'`)
	if got := e.rows(`SELECT host FROM cpu WHERE host LIKE 'a%' ORDER BY host`); got != "a;abx" {
		t.Fatalf("after DELETE with an escaped _: %s", got)
	}
	e.must(`INSERT INTO cpu (time, host, n) SELECT generate_series(timestamptz '2026-01-02 00:00+00', timestamptz '2026-01-02 00:02+00', interval '1 minute'), 'gen', 9`)
	if got := e.rows("SELECT count(*) FROM cpu WHERE host = 'gen'"); got != "3" {
		t.Fatalf("rows from generate_series: %s", got)
	}
	e.must("UPDATE cpu SET usage = extract(second from time + interval '1.5 seconds') WHERE host = 'gen'")
	if got := e.rows("SELECT DISTINCT usage FROM cpu WHERE host = 'gen'"); got != "1.5" {
		t.Fatalf("UPDATE with fractional seconds: %s", got)
	}

	p, err := e.s.Prepare(t.Context(), "UPDATE cpu SET host = CAST(now() AS VARCHAR) WHERE n = 9", nil)
	if err != nil {
		t.Fatal(err)
	}
	var stamps []string
	for range 2 {
		if err := e.s.ExecutePrepared(t.Context(), p, nil, func(*Result) error { return nil }); err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, e.rows("SELECT DISTINCT host FROM cpu WHERE n = 9"))
		time.Sleep(5 * time.Millisecond)
	}
	if stamps[0] == stamps[1] {
		t.Fatalf("a prepared UPDATE kept the time of its first execution: %q", stamps)
	}
}
