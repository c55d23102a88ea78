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

// time and timetz columns: every way a value arrives (PostgreSQL's time
// input in literals and parameters, COPY text and binary, INSERT …
// SELECT, UPDATE) keeps the time of day and timetz's offset; values are
// compared and sorted as times in both layers, survive a flush, a restart
// and a kill, and another Delta reader (chDB) reads them as text.
func TestTimeOfDayColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE shifts (time timestamptz NOT NULL, name text, starts time, zone timetz)",
		"INSERT INTO shifts VALUES ('2026-12-01 00:00:01+00', 'words', '9:30 pm', '11:00 BST'), ('2026-12-01 00:00:02+00', 'iso', '08:15:00.25', '08:15:00.25-05:30'), "+
			"('2026-12-01 00:00:03+00', 'typed', time '0700', timetz '04:05:06 PST'), ('2026-12-01 00:00:04+00', 'none', NULL, NULL)")
	if _, err := c.Exec(ctx, "INSERT INTO shifts VALUES ($1, $2, $3, $4)", time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "param-text", "12:00 am", "2024-07-01 10:00 America/New_York"); err != nil {
		t.Fatal(err)
	}
	bin := pgtype.Time{Microseconds: 13*3_600_000_000 + 1, Valid: true}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"shifts"}, []string{"time", "name", "starts"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 6, 0, time.UTC), "copy-binary", bin},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:07+00\tcopy-text\t23:59:59.999999\t23:00 +0530\n"), "COPY shifts FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO shifts SELECT time + interval '1 hour', 'later', starts + interval '90 minutes', zone + interval '1 hour' FROM shifts WHERE name = 'iso'",
		"UPDATE shifts SET starts = starts - interval '1 minute', zone = '06:00+01' WHERE name = 'typed'")
	want := []string{
		"words|21:30:00|11:00:00+01", "iso|08:15:00.25|08:15:00.25-05:30", "typed|06:59:00|06:00:00+01", "none|NULL|NULL",
		"param-text|00:00:00|10:00:00-04", "copy-binary|13:00:00.000001|NULL", "copy-text|23:59:59.999999|23:00:00+05:30",
		"later|09:45:00.25|09:15:00.25-05:30",
	}
	check := func(stage string) {
		t.Helper()
		got := strings.Split(strings.TrimSpace(s.psql("SELECT name, starts, zone FROM shifts ORDER BY time", "-A", "-t", "-P", "null=NULL")), "\n")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", stage, got, want)
		}
		// Compared and sorted as times of day, whichever layer holds them;
		// a bare string beside the column is read as a time.
		if got := queryStrings(t, c, "SELECT name FROM shifts WHERE starts > '8:00 am' ORDER BY starts DESC"); fmt.Sprint(got) != "[copy-text words copy-binary later iso]" {
			t.Errorf("%s: times after 8 am, latest first: %q", stage, got)
		}
		// timetz by its instant: 11:00+01 is 10:00 UTC, 06:00+01 05:00.
		if got := queryStrings(t, c, "SELECT name FROM shifts WHERE zone < '10:30+00' ORDER BY zone"); fmt.Sprint(got) != "[typed words]" {
			t.Errorf("%s: timetz before 10:30 UTC: %q", stage, got)
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
	var got pgtype.Time
	if err := c.QueryRow(ctx, "SELECT starts FROM shifts WHERE name = 'copy-binary'", pgx.QueryExecModeDescribeExec).Scan(&got); err != nil || got != bin {
		t.Errorf("binary time result: %+v %v, want %+v", got, err, bin)
	}
	if got := queryStrings(t, c, "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'shifts' AND column_name IN ('starts', 'zone') ORDER BY 1"); fmt.Sprint(got) != "[starts time without time zone zone time with time zone]" {
		t.Errorf("information_schema: %q", got)
	}
	for _, tc := range []struct{ stmt, code string }{
		{"INSERT INTO shifts VALUES (now(), 'late', '25:00', NULL)", "22008"},
		{"INSERT INTO shifts VALUES (now(), 'bad', 'soon', NULL)", "22007"},
		{"INSERT INTO shifts VALUES (now(), 'zone', NULL, '11:00 America/New_York')", "22007"},
		{"INSERT INTO shifts VALUES (now(), 'midnight', '24:00', NULL)", "0A000"},
		{"CREATE TABLE shifts2 (time timestamptz NOT NULL, t time(3))", "0A000"},
	} {
		if _, err := c.Exec(ctx, tc.stmt); pgCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.stmt, err, tc.code)
		}
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-02 00:00:00+00\tlate\t25:00\t\\N\n"), "COPY shifts FROM STDIN"); err == nil {
		t.Error("COPY of 25:00 as a time: accepted")
	}

	// Another Delta reader sees the text tsdb stores.
	table := filepath.Join(dir, "tables", "shifts")
	rows := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT name, starts, zone FROM deltaLakeLocal('%s') WHERE name IN ('words', 'iso') ORDER BY name", table)), []string{"name", "starts", "zone"})
	if fmt.Sprint(rows) != "[iso|08:15:00.250000|08:15:00.250000-05:30:00 words|21:30:00.000000|11:00:00.000000+01:00:00]" {
		t.Errorf("chDB read %q", rows)
	}

	// A time only in the write-ahead log survives a kill: replayed, not
	// flushed.
	execAll(t, c, "INSERT INTO shifts VALUES ('2026-12-03 00:00:00+00', 'logged', '17:45', '17:45-03')")
	s.kill9()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	if got := s.psql("SELECT starts, zone FROM shifts WHERE name = 'logged'", "-A", "-t"); got != "17:45:00|17:45:00-03\n" {
		t.Errorf("a time replayed from the log: %q", got)
	}
}
