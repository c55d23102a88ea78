package planner

import (
	"testing"

	"tsdb/internal/sqlerr"
)

// to_char prints times as PostgreSQL 15 does: the expected strings were
// printed by PostgreSQL from the same values and formats.
func TestToChar(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []struct{ ts, format, want string }{
		{"2026-03-05 07:08:09.123456+00", `YYYY-MM-DD HH24:MI:SS`, `2026-03-05 07:08:09`},
		{"2027-01-01 13:00:00+00", `YYYY-MM-DD HH24:MI:SS`, `2027-01-01 13:00:00`},
		{"2026-03-05 07:08:09.123456+00", `YYYY-MM-DD"T"HH24:MI:SS.US`, `2026-03-05T07:08:09.123456`},
		{"2027-01-01 13:00:00+00", `YYYY-MM-DD"T"HH24:MI:SS.US`, `2027-01-01T13:00:00.000000`},
		{"2026-03-05 07:08:09.123456+00", `YYYY-MM-DD HH24:MI:SS.MS`, `2026-03-05 07:08:09.123`},
		{"2027-01-01 13:00:00+00", `YYYY-MM-DD HH24:MI:SS.MS`, `2027-01-01 13:00:00.000`},
		{"2026-03-05 07:08:09.123456+00", `yyyy-mm-dd hh24:mi:ss`, `2026-03-05 07:08:09`},
		{"2027-01-01 13:00:00+00", `yyyy-mm-dd hh24:mi:ss`, `2027-01-01 13:00:00`},
		{"2026-03-05 07:08:09.123456+00", `HH12:MI AM`, `07:08 AM`},
		{"2027-01-01 13:00:00+00", `HH12:MI AM`, `01:00 PM`},
		{"2026-03-05 07:08:09.123456+00", `hh:mi pm`, `07:08 am`},
		{"2027-01-01 13:00:00+00", `hh:mi pm`, `01:00 pm`},
		{"2026-03-05 07:08:09.123456+00", `Mon DD, YYYY`, `Mar 05, 2026`},
		{"2027-01-01 13:00:00+00", `Mon DD, YYYY`, `Jan 01, 2027`},
		{"2026-03-05 07:08:09.123456+00", `Month DD`, `March     05`},
		{"2027-01-01 13:00:00+00", `Month DD`, `January   01`},
		{"2026-03-05 07:08:09.123456+00", `FMMonth FMDD, YYYY`, `March 5, 2026`},
		{"2027-01-01 13:00:00+00", `FMMonth FMDD, YYYY`, `January 1, 2027`},
		{"2026-03-05 07:08:09.123456+00", `MONTH|month|MON|mon`, `MARCH    |march    |MAR|mar`},
		{"2027-01-01 13:00:00+00", `MONTH|month|MON|mon`, `JANUARY  |january  |JAN|jan`},
		{"2026-03-05 07:08:09.123456+00", `Day|DAY|day|Dy|DY|dy`, `Thursday |THURSDAY |thursday |Thu|THU|thu`},
		{"2027-01-01 13:00:00+00", `Day|DAY|day|Dy|DY|dy`, `Friday   |FRIDAY   |friday   |Fri|FRI|fri`},
		{"2026-03-05 07:08:09.123456+00", `FMDay, FMDD FMMonth`, `Thursday, 5 March`},
		{"2027-01-01 13:00:00+00", `FMDay, FMDD FMMonth`, `Friday, 1 January`},
		{"2026-03-05 07:08:09.123456+00", `D ID Q WW FMWW IW IYYY DDD FMDDD`, `5 4 1 10 10 10 2026 064 64`},
		{"2027-01-01 13:00:00+00", `D ID Q WW FMWW IW IYYY DDD FMDDD`, `6 5 1 01 1 53 2026 001 1`},
		{"2026-03-05 07:08:09.123456+00", `YY FMYY FMMM FMHH24 FMMI FMSS`, `26 26 3 7 8 9`},
		{"2027-01-01 13:00:00+00", `YY FMYY FMMM FMHH24 FMMI FMSS`, `27 27 1 13 0 0`},
		{"2026-03-05 07:08:09.123456+00", `"week" IW "of" IYYY`, `week 10 of 2026`},
		{"2027-01-01 13:00:00+00", `"week" IW "of" IYYY`, `week 53 of 2026`},
		{"2026-03-05 07:08:09.123456+00", `100% YYYY`, `100% 2026`},
		{"2027-01-01 13:00:00+00", `100% YYYY`, `100% 2027`},
		{"2026-03-05 07:08:09.123456+00", `TZ`, `UTC`},
		{"2027-01-01 13:00:00+00", `TZ`, `UTC`},
		{"2026-03-05 07:08:09.123456+00", ` `, ` `},
		{"2027-01-01 13:00:00+00", ` `, ` `},
		{"2026-03-05 07:08:09.123456+00", `FMIW|IYYY|FMDDD|FMYY|FMHH12`, `10|2026|64|26|7`},
		{"2027-01-01 13:00:00+00", `FMIW|IYYY|FMDDD|FMYY|FMHH12`, `53|2026|1|27|1`},
		{"2007-01-05 01:00:00+00", `FMIW|IYYY|FMDDD|FMYY|FMHH12`, `1|2007|5|7|1`},
		{"2026-03-05 07:08:09.123456+00", `SSSS SSSSS FF1 FF3 FF6 A.M. p.m. AD b.c.`, `25689 25689 1 123 123456 A.M. a.m. AD a.d.`},
		{"2026-03-05 07:08:09.123456+00", `Y,YYY YYY Y IYY IY I IDDD FMIDDD CC J`, `2,026 026 6 026 26 6 067 67 21 2461105`},
		{"2026-03-05 07:08:09.123456+00", `RM|FMrm|W|OF|TZH:TZM|of`, `III |iii|1|+00|+00:00|+00`},
		{"2026-03-05 07:08:09.123456+00", `"a\"b" \"c`, `a"b "c`},
		{"2027-01-01 13:00:00+00", `SSSS SSSSS FF1 FF3 FF6 A.M. p.m. AD b.c.`, `46800 46800 0 000 000000 P.M. p.m. AD a.d.`},
		{"2027-01-01 13:00:00+00", `Y,YYY YYY Y IYY IY I IDDD FMIDDD CC J`, `2,027 027 7 026 26 6 369 369 21 2461407`},
		{"2027-01-01 13:00:00+00", `RM|FMrm|W|OF|TZH:TZM|of`, `I   |i|1|+00|+00:00|+00`},
	}
	for _, tt := range tests {
		q := "SELECT to_char(TIMESTAMPTZ '" + tt.ts + "', '" + tt.format + "')"
		if got := e.rows(q); got != tt.want {
			t.Errorf("%s: got %q, want %q", q, got, tt.want)
		}
	}
	others := []queryRows{
		{"SELECT to_char(time, 'HH24:MI') FROM cpu WHERE host = 'b'", "00:00"},
		{"SELECT to_char(DATE '2026-03-05', 'DD.MM.YYYY')", "05.03.2026"},
		{`SELECT to_char(DATE '2026-03-05', 'FM"day "FMDD')`, "day 5"},
		{"SELECT to_char(TIMESTAMP '2026-03-05 07:08:09', 'YYYY-MM-DD HH12 AM')", "2026-03-05 07 AM"},
		{"SELECT to_char(NULL::timestamptz, 'YYYY'), to_char(now(), NULL) IS NULL", "NULL|true"},
		{"SELECT to_char(time, 'YYYY') AS y, count(*) FROM cpu GROUP BY y ORDER BY y", "2025|1;2026|3"},
		// A column named as the translation's placeholder is a column.
		{"SELECT to_char(_tsdb_arg1 + INTERVAL '1 year', 'YYYY') FROM (SELECT TIMESTAMP '2026-01-01' AS _tsdb_arg1) t", "2027"},
		// Numbers, by the engine function (every connection has it).
		{"SELECT to_char(12.5, '999D99'), to_char(-485, '999PR'), to_char(usage, 'FM990.00') FROM cpu WHERE host = 'a'", "  12.50|<485>|0.50"},
	}
	e.expectRows("", others)
	if _, err := e.run("SELECT to_char(1, '9.9.9')"); sqlerr.Code(err) != sqlerr.SyntaxError {
		t.Errorf("a template with two decimal points: %v, want 42601", err)
	}
	// Ordinal suffixes, and the zone's abbreviation in a session zone
	// (the engine's %Z printed the zone's name, Europe/Berlin).
	zoned := []queryRows{
		{"SET TimeZone = 'Europe/Berlin'", ""},
		{"SELECT to_char(TIMESTAMPTZ '2001-07-12 13:00:00+00', 'YYYYTH Jth DDth FMDDth DDDTH|TZ|tz|OF')", "2001ST 2452103rd 12th 12th 193RD|CEST|cest|+02"},
		{"SELECT to_char(TIMESTAMPTZ '2001-01-03 13:00:00+00', 'DDth TZ'), to_char(TIMESTAMP '2001-01-03 13:00:00', 'TZ|OF')", "03rd CET||+00"},
		// Quoted text is text, even the name the zone's placeholder has.
		{`SELECT to_char(TIMESTAMPTZ '2001-07-12 13:00:00+00', '"_tsdb_session_zone" TZ')`, "_tsdb_session_zone CEST"},
		{"RESET TimeZone", ""},
	}
	for _, q := range zoned {
		if q.want == "" {
			e.must(q.q)
			continue
		}
		if got := e.rows(q.q); got != q.want {
			t.Errorf("%s: got %q, want %q", q.q, got, q.want)
		}
	}
	for _, q := range []string{
		"SELECT to_char(now(), 'SP')",
		"SELECT to_char(time, host) FROM cpu",
	} {
		if _, err := e.run(q); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("%s: got %v, want SQLSTATE 0A000", q, err)
		}
	}
}

// extract of a timestamp is numeric, as in PostgreSQL 15 (answers from
// it): of a cast anywhere, of a table's timestamp column in the select
// list; date_part stays double, and an infinite epoch is refused rather
// than answered as a number.
func TestExtractNumeric(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE xe (time timestamptz NOT NULL, t2 timestamp, d date)")
	e.must("INSERT INTO xe VALUES ('2020-01-01 00:00:07.25+00', '2020-01-01 00:00:07', '2020-01-01')")
	e.expectRows("", []queryRows{
		{"SELECT extract(epoch from time)::text, extract(second from time)::text, extract(milliseconds from time)::text, extract(epoch from t2)::text FROM xe",
			"1577836807.250000|7.250000|7250.000|1577836807.000000"},
		{"SELECT extract(epoch FROM TIMESTAMPTZ '2026-01-01 00:00:00+00')::text, date_part('epoch', time) FROM xe", "1767225600.000000|1.57783680725e+09"},
		{"SELECT extract(epoch from timestamptz 'infinity')", "+Inf"},
	})
	if _, err := e.run("SELECT extract(epoch from time + (CASE WHEN time > '2000-01-01' THEN interval '0 s' END)) FROM xe"); err != nil {
		t.Errorf("extract of an expression: %v", err)
	}
}
