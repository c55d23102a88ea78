package pgdatetime

import (
	"testing"

	"tsdb/internal/sqlerr"
)

// Answers PostgreSQL 15 gives to to_timestamp(text, template) and
// to_date, read back as the wall clock and the zone TZH/TZM gave.
func TestToTimestamp(t *testing.T) {
	for _, tc := range []struct {
		text, template, want string // want: wall clock, or "err:SQLSTATE"
		offset               int
	}{
		{"05 Dec 2026", "DD Mon YYYY", "2026-12-05 00:00:00", 0},
		{"2026-12-05 14:30", "YYYY-MM-DD HH24:MI", "2026-12-05 14:30:00", 0},
		{"20261205143005", "YYYYMMDDHH24MISS", "2026-12-05 14:30:05", 0},
		{"2026-1-2", "YYYY-MM-DD", "2026-01-02 00:00:00", 0},
		{"05/12/2026 02:30:00 PM", "DD/MM/YYYY HH:MI:SS AM", "2026-12-05 14:30:00", 0},
		{"12:00 am", "HH12:MI am", "0000-01-01 00:00:00", 0},
		{"2026-12-05T14:30:05.123456Z", `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`, "2026-12-05 14:30:05.123456", 0},
		{"2026-12-05 14:30:05.5", "YYYY-MM-DD HH24:MI:SS.MS", "2026-12-05 14:30:05.5", 0},
		{"2026-12-05 14:30 +05:30", "YYYY-MM-DD HH24:MI TZH:TZM", "2026-12-05 14:30:00", 5*3600 + 30*60},
		{"2026-12-05 14:30 -03", "YYYY-MM-DD HH24:MI TZH", "2026-12-05 14:30:00", -3 * 3600},
		{"December 5, 2026", "Month DD, YYYY", "2026-12-05 00:00:00", 0},
		{"Sat, 05 Dec 26", "Dy, DD Mon YY", "2026-12-05 00:00:00", 0},
		{"99-01-08", "YY-MM-DD", "1999-01-08 00:00:00", 0},
		{"2026 339", "YYYY DDD", "2026-12-05 00:00:00", 0},
		{"2026", "YYYY-MM-DD", "2026-01-01 00:00:00", 0},
		{"  2026  -  03 - 04", "YYYY-MM-DD", "2026-03-04 00:00:00", 0},
		{"2026/12/05", "YYYY MM DD", "2026-12-05 00:00:00", 0},
		{"2026-02-30", "YYYY-MM-DD", "err:22008", 0},
		{"126-12-5", "YYY-MM-DD", "2126-12-05 00:00:00", 0},
		{"6-12-5", "Y-MM-DD", "2006-12-05 00:00:00", 0},
		{"2026-12-5", "YY-MM-DD", "2026-12-05 00:00:00", 0},
		{"2026-12-05 10:00 PM", "YYYY-MM-DD HH24:MI PM", "2026-12-05 22:00:00", 0},
		{"2026-12-05 13:00 PM", "YYYY-MM-DD HH24:MI PM", "err:22007", 0},
		{"2026-12-05 24:00", "YYYY-MM-DD HH24:MI", "err:22008", 0},
		{"xx", "YYYY", "err:22007", 0},
		{"2026-01-01", "IYYY-MM-DD", "err:0A000", 0},
	} {
		wall, off, _, err := ToTimestamp(tc.text, tc.template)
		got := wall.Format("2006-01-02 15:04:05.999999")
		if err != nil {
			got = "err:" + sqlerr.Code(err)
		}
		if got != tc.want || err == nil && off != tc.offset {
			t.Errorf("to_timestamp(%q, %q) = %s %d, want %s %d", tc.text, tc.template, got, off, tc.want, tc.offset)
		}
	}
}
