package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// interval columns: every way a value arrives (PostgreSQL's interval
// input in literals, text and binary parameters, COPY text and binary,
// INSERT … SELECT, UPDATE) keeps months, days and microseconds apart; the
// values survive a flush and a restart, and another Delta reader (chDB)
// reads them as text it can parse.
func TestIntervalColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE ev (time timestamptz NOT NULL, name text, took interval)",
		"INSERT INTO ev VALUES ('2026-12-01 00:00:01+00', 'words', '1 day 02:03:04.5'), ('2026-12-01 00:00:02+00', 'ago', '@ 14 seconds ago'), "+
			"('2026-12-01 00:00:03+00', 'typed', interval '3 months'), ('2026-12-01 00:00:04+00', 'none', NULL)")
	if _, err := c.Exec(ctx, "INSERT INTO ev VALUES ($1, $2, $3)", time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "param-text", "P1Y2M3DT4H5M6S"); err != nil {
		t.Fatal(err)
	}
	bin := pgtype.Interval{Months: -1, Days: 2, Microseconds: -3_000_001, Valid: true}
	if _, err := c.Exec(ctx, "INSERT INTO ev VALUES ($1, $2, $3::interval)", pgx.QueryExecModeDescribeExec, time.Date(2026, 12, 1, 0, 0, 6, 0, time.UTC), "param-binary", bin); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"ev"}, []string{"time", "name", "took"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 7, 0, time.UTC), "copy-binary", bin},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:08+00\tcopy-text\t-1 days +02:03\n"), "COPY ev FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO ev SELECT time + interval '1 hour', 'doubled', took * 2 FROM ev WHERE name = 'words'",
		"UPDATE ev SET took = took + interval '1 minute' WHERE name = 'typed'")
	want := []string{
		"words|1 day 02:03:04.5", "ago|-00:00:14", "typed|3 mons 00:01:00", "none|NULL", "param-text|1 year 2 mons 3 days 04:05:06",
		"param-binary|-1 mons +2 days -00:00:03.000001", "copy-binary|-1 mons +2 days -00:00:03.000001", "copy-text|-1 days +02:03:00",
		"doubled|2 days 04:06:09",
	}
	check := func(stage string) {
		t.Helper()
		// As psql shows them (tsdb's text of intervals is PostgreSQL's).
		got := strings.Split(strings.TrimSpace(s.psql("SELECT name, coalesce(took, NULL) FROM ev ORDER BY time", "-A", "-t", "-P", "null=NULL")), "\n")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", stage, got, want)
		}
		// Compared and sorted as intervals, whichever layer holds them.
		if got := queryStrings(t, c, "SELECT name FROM ev WHERE took > interval '1 day' ORDER BY took DESC"); fmt.Sprint(got) != "[param-text typed doubled words]" {
			t.Errorf("%s: intervals over a day, longest first: %q", stage, got)
		}
	}
	check("buffered")
	execAll(t, c, "CHECKPOINT")
	check("flushed")
	s.stop()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	c = s.connect(ctx)
	check("after a restart")

	// Binary results, after a Describe.
	var got pgtype.Interval
	if err := c.QueryRow(ctx, "SELECT took FROM ev WHERE name = 'param-binary'", pgx.QueryExecModeDescribeExec).Scan(&got); err != nil || got != bin {
		t.Errorf("binary interval result: %+v %v, want %+v", got, err, bin)
	}
	// A cast to text writes PostgreSQL's text in the session's
	// IntervalStyle (the engine's own cast wrote "3 months").
	if got := queryStrings(t, c, "SELECT took::text, CAST(took AS varchar) FROM ev WHERE name = 'typed'"); fmt.Sprint(got) != "[3 mons 00:01:00|3 mons 00:01:00]" {
		t.Errorf("interval as text: %q", got)
	}
	execAll(t, c, "SET intervalstyle = 'iso_8601'")
	if got := queryStrings(t, c, "SELECT took::text FROM ev WHERE name = 'param-binary'"); fmt.Sprint(got) != "[P-1M2DT-3.000001S]" {
		t.Errorf("interval as text in iso_8601: %q", got)
	}
	execAll(t, c, "RESET intervalstyle")
	// sum and avg as PostgreSQL 15 adds and divides intervals (its answers).
	if got := s.psql("SELECT sum(took), avg(took) FROM ev WHERE name IN ('words', 'ago', 'typed', 'param-text')", "-A", "-t"); got != "1 year 5 mons 4 days 06:08:56.5|4 mons 8 days 13:32:14.125\n" {
		t.Errorf("sum and avg of intervals: %q", got)
	}
	if got := queryStrings(t, c, "SELECT data_type FROM information_schema.columns WHERE table_name = 'ev' AND column_name = 'took'"); fmt.Sprint(got) != "[interval]" {
		t.Errorf("information_schema: %q", got)
	}
	for _, tc := range []struct{ stmt, code string }{
		{"INSERT INTO ev VALUES (now(), 'long', interval '3000000 hours')", "22008"},
		{"INSERT INTO ev VALUES (now(), 'bad', 'soon')", "22007"},
		{"CREATE TABLE ev2 (time timestamptz NOT NULL, d interval day to second)", "0A000"},
	} {
		if _, err := c.Exec(ctx, tc.stmt); pgCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.stmt, err, tc.code)
		}
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-02 00:00:00+00\tlong\t3000000 hours\n"), "COPY ev FROM STDIN"); pgCode(err) != "22008" {
		t.Errorf("COPY of an interval too long: %v, want 22008", err)
	}

	// Another Delta reader sees the text tsdb stores.
	table := filepath.Join(dir, "tables", "ev")
	rows := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT name, took FROM deltaLakeLocal('%s') WHERE name IN ('words', 'param-binary') ORDER BY name", table)), []string{"name", "took"})
	if fmt.Sprint(rows) != "[param-binary|-1 months 2 days -3000001 microseconds words|0 months 1 days 7384500000 microseconds]" {
		t.Errorf("chDB read %q", rows)
	}

	// An interval only in the write-ahead log survives a kill: replayed,
	// not flushed.
	execAll(t, c, "INSERT INTO ev VALUES ('2026-12-03 00:00:00+00', 'logged', '-2 mons 3 days 00:00:00.000007')")
	s.kill9()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	if got := s.psql("SELECT took FROM ev WHERE name = 'logged'", "-A", "-t"); got != "-2 mons +3 days 00:00:00.000007\n" {
		t.Errorf("an interval replayed from the log: %q", got)
	}
}
