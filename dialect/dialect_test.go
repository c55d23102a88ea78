package dialect

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// deparsed is an expression node as SQL text.
func deparsed(t *testing.T, n *pg_query.Node) string {
	t.Helper()
	base, err := pg_query.Parse("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	tree := &pg_query.ParseResult{Version: base.Version, Stmts: []*pg_query.RawStmt{{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: n}}}}}}}}}}
	out, err := pg_query.Deparse(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseArrayText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{1,2}`, `SELECT ARRAY['1', '2']`},
		{` { a , "b c" , NULL , "NULL", "x\"y" } `, `SELECT ARRAY['a', 'b c', NULL, 'NULL', 'x"y']`},
		{`{{1,2},{3,4}}`, `SELECT ARRAY[ARRAY['1', '2'], ARRAY['3', '4']]`},
		{`{}`, `SELECT ARRAY[]`},
	} {
		n, err := ParseArrayText(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := deparsed(t, n); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`1,2`, `{1,2`, `{1,,2}`, `{1,2}x`, `{"a}`, `{{{{{{{1}}}}}}}`} {
		if _, err := ParseArrayText(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestRegexGroups(t *testing.T) {
	for p, want := range map[string]int{`(bar)(beque)`: 2, `bar`: 0, `(?:a)(b)`: 1, `\(a\)`: 0, `[(]a`: 0, `[]()]`: 0, `((a)b)`: 2} {
		if got := RegexGroups(p); got != want {
			t.Errorf("%s: %d groups, want %d", p, got, want)
		}
	}
}

func TestFloatInputError(t *testing.T) {
	for in, refused := range map[string]bool{"10e400": true, "-10e400": true, "10e-400": true, "0e-400": false, "1e-300": false, "inf": false, "-Infinity": false, "NaN": false, "1.5": false} {
		if got := FloatInputError(in, 64) != nil; got != refused {
			t.Errorf("%s: refused %v, want %v", in, got, refused)
		}
	}
	if FloatInputError("1e39", 32) == nil {
		t.Error("1e39 as real: accepted")
	}
}

// TestCheckTextInput: text read as a number by PostgreSQL 15's input
// functions (the engine's casts also read 1.5 as an integer, 1e3, 0x1F and
// 1_000, and 1e500 as Infinity).
func TestCheckTextInput(t *testing.T) {
	for _, c := range []struct{ in, typ, code string }{
		{" 12 ", "integer", ""},
		{"+5", "bigint", ""},
		{"-0", "smallint", ""},
		{"1.5", "integer", "22P02"},
		{"1e3", "bigint", "22P02"},
		{"0x1F", "bigint", "22P02"},
		{"1_000", "integer", "22P02"},
		{"", "integer", "22P02"},
		{"+-1", "integer", "22P02"},
		{"32768", "smallint", "22003"},
		{"-9223372036854775808", "bigint", ""},
		{"9223372036854775808", "bigint", "22003"},
		{" 1.5 ", "double precision", ""},
		{"-Infinity", "double precision", ""},
		{"nan", "real", ""},
		{".5e-3", "double precision", ""},
		{"5.", "double precision", ""},
		{"1_000", "double precision", "22P02"},
		{"1.5f", "double precision", "22P02"},
		{"1e", "double precision", "22P02"},
		{"1e500", "double precision", "22003"},
		{"1e-400", "double precision", "22003"},
		{"1e39", "real", "22003"},
		{"0x10", "double precision", ""}, // left to the engine, which refuses it
		{"1e3", "numeric", ""},
		{" -.5 ", "numeric", ""},
		{"NaN", "numeric", ""},
		{"1_000", "numeric", "22P02"},
		{"0x10", "numeric", "22P02"},
	} {
		err := CheckTextInput(c.in, c.typ)
		if got := map[bool]string{true: sqlerr.Code(err), false: ""}[err != nil]; got != c.code {
			t.Errorf("%q as %s: %v, want SQLSTATE %q", c.in, c.typ, err, c.code)
		}
	}
}

func TestParseBytea(t *testing.T) {
	for _, tt := range []struct {
		in, want, code string
	}{
		{`\xDeAdBeEf`, "deadbeef", ""},
		{`\x de ad`, "dead", ""},
		{`\x`, "", ""},
		{`abc`, "616263", ""},
		{`a\\b\001\377`, "615c6201ff", ""},
		{`\xDeAdBeE`, "", "22023"},
		{`\xDeAdBeEx`, "", "22023"},
		{`a\b`, "", "22P02"},
		{`\400`, "", "22P02"},
	} {
		b, err := ParseBytea(tt.in)
		if tt.code != "" {
			if err == nil {
				t.Errorf("%q: accepted as %x", tt.in, b)
			} else if c := sqlerr.Code(err); c != tt.code {
				t.Errorf("%q: code %s, want %s", tt.in, c, tt.code)
			}
			continue
		}
		if err != nil || hex.EncodeToString(b) != tt.want {
			t.Errorf("%q: got %x %v, want %s", tt.in, b, err, tt.want)
		}
	}
}

// TimeZone values as PostgreSQL 15 reads them (recorded with SET TimeZone
// and SELECT '2024-01-01 00:00+00'::timestamptz, current_setting).
func TestTimeZoneValues(t *testing.T) {
	for _, tt := range []struct {
		in, show, engine string
		east             int
	}{
		{"00:00", "00:00", "GMT+00:00", 0},
		{"+02:00", "+02:00", "GMT-02:00", -2 * 3600},
		{"-13:00", "-13:00", "GMT+13:00", 13 * 3600},
		{"-00:30", "-00:30", "GMT+00:30", 30 * 60},
		{"04:15", "04:15", "GMT-04:15", -(4*3600 + 15*60)},
		{"UTC+3", "UTC+3", "GMT-03:00", -3 * 3600},
		{"EST5", "EST5", "GMT-05:00", -5 * 3600},
		{"2", "<+02>-02", "GMT+02:00", 2 * 3600},
		{"-7.5", "<-07:30>+07:30", "GMT-07:30", -(7*3600 + 1800)},
		{"<+03>-03", "<+03>-03", "GMT+03:00", 3 * 3600},
		{"Europe/Berlin", "Europe/Berlin", "Europe/Berlin", 3600},
		{"", "UTC", "UTC", 0},
	} {
		z, ok := zoneOf(tt.in)
		if !ok {
			t.Errorf("%q: refused", tt.in)
			continue
		}
		_, east := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).In(z.loc).Zone()
		if z.show != tt.show || z.engine != tt.engine || east != tt.east {
			t.Errorf("%q: got %q %q %d, want %q %q %d", tt.in, z.show, z.engine, east, tt.show, tt.engine, tt.east)
		}
	}
	for _, in := range []string{"Nowhere/Land", "UTC+25", "Local", "<+03", "+1:2:3:4", "30"} {
		if _, ok := zoneOf(in); ok {
			t.Errorf("%q: accepted", in)
		}
	}
}

// RESET returns to the startup packet's value, as in PostgreSQL.
func TestResetReturnsToStartupValue(t *testing.T) {
	s := NewSettings()
	if _, err := s.StartupSetting("TimeZone", "PST8PDT"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("timezone", "UTC"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.ResetValue("TimeZone"); v != "PST8PDT" {
		t.Fatalf("reset value %q", v)
	}
	if v, _ := s.ResetValue("DateStyle"); v != "ISO, MDY" {
		t.Fatalf("DateStyle reset value %q", v)
	}
	s.ResetAll()
	if got := s.EngineZone(); got != "PST8PDT" {
		t.Fatalf("after RESET ALL: %q", got)
	}
}

// AT TIME ZONE with a constant zone, rewritten for the engine as
// PostgreSQL reads the zone (checked end to end against PostgreSQL by the
// regression referee's timestamptz suite).
func TestAtTimeZoneRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`x AT TIME ZONE 'PST'`, `SELECT x AT TIME ZONE 'GMT-08:00'`},
		{`x AT TIME ZONE 'UTC+3'`, `SELECT x AT TIME ZONE 'GMT-03:00'`},
		{`x AT TIME ZONE interval '+05:30'`, `SELECT x AT TIME ZONE 'GMT+05:30'`},
		{`x AT TIME ZONE 'Europe/Berlin'`, `SELECT x AT TIME ZONE 'Europe/Berlin'`},
		{`'2011-03-27 03:00:00'::timestamp AT TIME ZONE 'MSK'`, `SELECT '2011-03-26 23:00:00+00'::timestamptz`},
		{`'2011-03-26 22:59:59 UTC'::timestamptz AT TIME ZONE 'MSK'`, `SELECT '2011-03-27 01:59:59'::"timestamp"`},
		// A string is a timestamptz, here read in UTC (UTCInput).
		{`'19970210 173201' AT TIME ZONE 'America/New_York'`, `SELECT '1997-02-10 17:32:01+00'::timestamptz AT TIME ZONE 'America/New_York'`},
	} {
		if got := rewritten(t, c.in); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`x AT TIME ZONE 'MSK'`, `x AT TIME ZONE 'Nowhere/Land'`, `x AT TIME ZONE interval '1 day'`} {
		tree, _ := pg_query.Parse("SELECT " + bad)
		RewriteTree(tree.ProtoReflect(), UTCInput())
		got, _ := pg_query.Deparse(tree)
		if !strings.Contains(got, "error(") {
			t.Errorf("%s: not refused: %s", bad, got)
		}
	}
}

func TestRegexpFlags(t *testing.T) {
	for _, c := range []struct{ fn, flags, want, code string }{
		{"regexp_like", "", "(?s)", ""},
		{"regexp_like", "i", "(?si)", ""},
		{"regexp_like", "n", "(?m)", ""},
		{"regexp_like", "ic", "(?s)", ""},
		{"regexp_like", "g", "", "22023"},
		{"regexp_like", "z", "", "22023"},
		{"regexp_like", "x", "", "0A000"},
	} {
		got, err := regexpFlags(c.fn, c.flags)
		switch {
		case c.code != "" && (err == nil || err.Code != c.code):
			t.Errorf("%q: got %q %v, want error %s", c.flags, got, err, c.code)
		case c.code == "" && (err != nil || got != c.want):
			t.Errorf("%q: got %q %v, want %q", c.flags, got, err, c.want)
		}
	}
}

// Interval field restrictions as PostgreSQL 15 applies them (the values
// are PostgreSQL's answers, written as months, days and time).
func TestIntervalFieldRestrictions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`interval '1' year`, `12 months 0 days 0 hours 0 microseconds`},
		{`interval '1 2:03:04' day to minute`, `0 months 1 days 2 hours 180000000 microseconds`},
		{`interval '1 2' day to hour`, `0 months 1 days 2 hours 0 microseconds`},
		{`interval '2:03' minute to second`, `0 months 0 days 0 hours 123000000 microseconds`},
		{`interval '1 -2:03' minute to second`, `0 months 1 days 0 hours -123000000 microseconds`},
		{`interval '12:34.5678' minute to second(2)`, `0 months 0 days 0 hours 754570000 microseconds`},
		{`interval(0) '1 day 01:23:45.6789'`, `0 months 1 days 1 hours 1426000000 microseconds`},
		{`interval '14 months 3 days' year`, `12 months 0 days 0 hours 0 microseconds`},
	} {
		got := strings.ReplaceAll(rewritten(t, c.in), `"interval"`, "interval") // the deparser quotes it at times
		if want := "SELECT '" + c.want + "'::interval"; got != want {
			t.Errorf("%s: %s, want %s", c.in, got, want)
		}
	}
}

func TestCheckOuterAggregates(t *testing.T) {
	for _, c := range []struct {
		q       string
		refused bool
	}{
		{"SELECT (SELECT max((SELECT i.u FROM t i WHERE i.u = o.u))) FROM t o", true},
		{"SELECT (SELECT max((SELECT i.u FROM t i WHERE i.u = o.u)) FILTER (WHERE o.u < 3)) FROM t o", false},
		{"SELECT (SELECT max(o.u)) FROM t o", false},
		{"SELECT (SELECT max((SELECT i.u FROM t i WHERE i.u = 1))) FROM t o", false},
		{"SELECT (SELECT max((SELECT i.u FROM t i WHERE i.u = o.u)) FROM t x) FROM t o", false},
	} {
		tree, err := pg_query.Parse(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckOuterAggregates(tree.Stmts[0].Stmt.GetSelectStmt()); (err != nil) != c.refused {
			t.Errorf("%s: %v, refused %v", c.q, err, c.refused)
		}
	}
}

func TestRegexpSplit(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`regexp_split_to_array(s, '\s+')`, `SELECT _tsdb_regexp_split(s, E'\\s+', '')`},
		{`regexp_split_to_table(s, 'e', 'i')`, `SELECT unnest(_tsdb_regexp_split(s, 'e', 'i'))`},
		{`regexp_split_to_array(s, 'e', 'g')`, `error(`},
		{`regexp_split_to_array(s, 'e', f)`, `error(`},
	} {
		if got := rewritten(t, c.in); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
}

func TestMakeTimestamptzZone(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`make_timestamptz(1973, 7, 15, 8, 15, 55.33, '+2')`, `'GMT+02:00'`},
		{`make_timestamptz(y, 7, 15, 8, 15, 0, '-04:30')`, `'GMT-04:30'`},
		{`make_timestamptz(y, 12, 10, 10, 10, 10, 'EDT')`, `'GMT-04:00'`},
		{`make_timestamptz(2014, 10, 26, 1, 0, 0, 'MSK')`, `'2014-10-25 22:00:00+00'::timestamptz`},
		{`make_timestamptz(y, 10, 26, 1, 0, 0, 'MSK')`, `error(`},
		{`make_timestamptz(y, 10, 26, 1, 0, 0, '+16')`, `error(`},
		{`make_timestamptz(y, 10, 26, 1, 0, 0, 'Europe/Berlin')`, `'Europe/Berlin'`},
	} {
		if got := rewritten(t, c.in); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
}

// rewritten is SELECT expr as RewriteTree leaves it, in UTC.
func rewritten(t *testing.T, expr string) string {
	t.Helper()
	tree, err := pg_query.Parse("SELECT " + expr)
	if err != nil {
		t.Fatal(err)
	}
	RewriteTree(tree.ProtoReflect(), UTCInput())
	got, err := pg_query.Deparse(tree)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Escape strings with Unicode escapes become standard literals of the text
// PostgreSQL reads; the escapes it refuses get its errors.
func TestUnicodeEscapes(t *testing.T) {
	for _, c := range []struct{ in, want, code string }{
		{`SELECT E'd\u0061t\U00000061' AS "data"`, `SELECT 'data' AS "data"`, ""},
		{`SELECT e'\u00e9''x', 'plain \u0061'`, `SELECT 'é''x', 'plain \u0061'`, ""},
		{`SELECT E'\ud83d\ude00 \t\x41\101\\u'`, "SELECT '😀 \tAA\\u'", ""},
		{`SELECT E'a\\u0061'`, `SELECT E'a\\u0061'`, ""}, // an escaped backslash, then "u0061"
		{`SELECT E'no unicode\n', 'U'`, `SELECT E'no unicode\n', 'U'`, ""},
		{`SELECT E'wrong: \u061'`, "", "22025"},
		{`SELECT E'wrong: \U0061'`, "", "22025"},
		{`SELECT E'wrong: \udb99'`, "", "42601"},
		{`SELECT E'wrong: \udb99xy'`, "", "42601"},
		{`SELECT E'wrong: \udb99\u0061'`, "", "42601"},
		{`SELECT E'wrong: \U002FFFFF'`, "", "42601"},
		{`SELECT E'\u0000'`, "", "42601"},
		{`SELECT E'\u00e9\xff'`, "", "22021"},
		{`SELECT E'\xff'`, "", "22021"},
		// U&'…' and U&"…", with and without UESCAPE.
		{`SELECT U&'d\0061t\+000061' AS U&"d\0061t\+000061"`, `SELECT 'data' AS "data"`, ""},
		{`SELECT U&'d!0061t\+000061' UESCAPE '!' AS U&"d*0061t\+000061" UESCAPE '*', 1`, `SELECT 'dat\+000061' AS "dat\+000061", 1`, ""},
		{`SELECT u&'it''s \\' AS U&"a""b"`, `SELECT 'it''s \' AS "a""b"`, ""},
		{`SELECT 1 & 3, 'U&''x'''`, `SELECT 1 & 3, 'U&''x'''`, ""},
		{`SELECT U&'wrong: \061'`, "", "42601"},
		{`SELECT U&'wrong: \db99xy'`, "", "42601"},
		{`SELECT U&'wrong: \+2FFFFF'`, "", "42601"},
		{`SELECT U&'wrong: +0061' UESCAPE '+'`, "", "42601"},
	} {
		got, err := UnicodeEscapes(c.in)
		if c.code != "" {
			if sqlerr.Code(err) != c.code {
				t.Errorf("%s: got %q, %v; want SQLSTATE %s", c.in, got, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// With standard_conforming_strings off, plain literals read backslash
// escapes: those holding a backslash become E'…'; comments, quoted names,
// dollar quotes and bit strings stay as written; U&'…' is refused.
func TestNonstandardStrings(t *testing.T) {
	for _, c := range []struct{ in, want, code string }{
		{`SELECT 'a\\bcd', 'a\\b\'cd', 'a\\b\'''cd', 'plain'`, `SELECT E'a\\bcd', E'a\\b\'cd', E'a\\b\'''cd', 'plain'`, ""},
		{`SELECT E'a\'b', N'x\ty', date'2001\-01-01'`, `SELECT E'a\'b', E'x\ty', date E'2001\-01-01'`, ""},
		{"SELECT $$a\\b$$, $q$'\\'$q$, \"a\\b\", /* 'c\\' */ x'1F' -- 'd\\'\n, $1", "", ""},
		{`SELECT 'tricky' AS U&"\" UESCAPE '!'`, "", ""},
		{`SELECT U&'d\0061'`, "", "0A000"},
	} {
		got, err := NonstandardStrings(c.in)
		if c.code != "" {
			if sqlerr.Code(err) != c.code {
				t.Errorf("%s: got %q, %v; want SQLSTATE %s", c.in, got, err, c.code)
			}
			continue
		}
		want := c.want
		if want == "" {
			want = c.in
		}
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", c.in, got, err, want)
		}
	}
}

func TestWindowOutputOrder(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT lag(ten) OVER (PARTITION BY four ORDER BY ten), ten, four FROM t",
			"SELECT lag(ten) OVER (PARTITION BY four ORDER BY ten), ten, four FROM t ORDER BY four, ten"},
		{"SELECT sum(x) OVER w, rank() OVER w FROM t WINDOW w AS (PARTITION BY d ORDER BY s DESC)",
			"SELECT sum(x) OVER w, rank() OVER w FROM t WINDOW w AS (PARTITION BY d ORDER BY s DESC) ORDER BY d, s DESC"},
		// A prefix of the longest window's keys: sorted once, by the longest.
		{"SELECT count(*) OVER (PARTITION BY a), sum(b) OVER (PARTITION BY a ORDER BY c NULLS FIRST) FROM t",
			"SELECT count(*) OVER (PARTITION BY a), sum(b) OVER (PARTITION BY a ORDER BY c NULLS FIRST) FROM t ORDER BY a, c NULLS FIRST"},
		{"SELECT sum(b) OVER (w ORDER BY c) FROM t WINDOW w AS (PARTITION BY a)",
			"SELECT sum(b) OVER (w ORDER BY c) FROM t WINDOW w AS (PARTITION BY a) ORDER BY a, c"},
		{"SELECT row_number() OVER (ORDER BY d), sum(s) OVER (ORDER BY d DESC) FROM t", ""},
		{"SELECT row_number() OVER (ORDER BY a) FROM t ORDER BY b", ""},
		{"SELECT DISTINCT row_number() OVER (ORDER BY a) FROM t", ""},
		{"SELECT count(*) OVER () FROM t", ""},
		{"SELECT b AS a, row_number() OVER (ORDER BY a) FROM t", ""},
		{"SELECT row_number() OVER (ORDER BY 1) FROM t", ""},
		{"SELECT (SELECT row_number() OVER (ORDER BY a) FROM u LIMIT 1) FROM t", ""},
		{"SELECT sum(b) OVER missing FROM t", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return WindowOutputOrder(n.GetSelectStmt()) })
}

// quote_ident's keywords are the ones PostgreSQL's own grammar (its
// scanner, in pg_query) marks as other than unreserved.
func TestQuotedKeywords(t *testing.T) {
	for _, w := range QuotedKeywords {
		res, err := pg_query.Scan(w)
		if err != nil || len(res.Tokens) != 1 {
			t.Fatalf("%s: %v %v", w, res, err)
		}
		if k := res.Tokens[0].KeywordKind; k == pg_query.KeywordKind_NO_KEYWORD || k == pg_query.KeywordKind_UNRESERVED_KEYWORD {
			t.Errorf("%s is %v, not a keyword quote_ident quotes", w, k)
		}
	}
	for _, w := range []string{"value", "name", "host", "data", "usage_user"} {
		res, err := pg_query.Scan(w)
		if err != nil || len(res.Tokens) != 1 {
			t.Fatalf("%s: %v %v", w, res, err)
		}
		if k := res.Tokens[0].KeywordKind; k != pg_query.KeywordKind_NO_KEYWORD && k != pg_query.KeywordKind_UNRESERVED_KEYWORD {
			t.Errorf("%s is %v but not in QuotedKeywords", w, k)
		}
	}
}

func TestExactAggregates(t *testing.T) {
	// Columns named d are known to be double, iv interval.
	typeOf := func(n *pg_query.Node) schema.Type {
		cr := n.GetColumnRef()
		switch {
		case cr == nil:
		case cr.Fields[len(cr.Fields)-1].GetString_().GetSval() == "d":
			return schema.Float64
		case cr.Fields[len(cr.Fields)-1].GetString_().GetSval() == "iv":
			return schema.Interval
		}
		return schema.Invalid
	}
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT avg(i) FROM t", "SELECT _tsdb_exact_avg(avg(i), count(i), sum(i)) FROM t"},
		{"SELECT g, stddev(i) FILTER (WHERE i > 0) AS s FROM t GROUP BY g ORDER BY s DESC, 1",
			"SELECT g, _tsdb_exact_stddev_samp(stddev(i) FILTER (WHERE i > 0), count(i) FILTER (WHERE i > 0), sum(i) FILTER (WHERE i > 0), " +
				"sum(i * (i + 0::hugeint)) FILTER (WHERE i > 0)) AS s FROM t GROUP BY g ORDER BY stddev(i) FILTER (WHERE i > 0) DESC, 1"},
		{"SELECT var_pop(i) OVER w FROM t WINDOW w AS (ORDER BY x) ORDER BY var_pop",
			"SELECT _tsdb_exact_var_pop(var_pop(i) OVER w, count(i) OVER w, sum(i) OVER w, sum(i * (i + 0::hugeint)) OVER w) FROM t WINDOW w AS (ORDER BY x) ORDER BY var_pop(i) OVER w"},
		{"SELECT avg(DISTINCT i) FROM t", "SELECT _tsdb_exact_avg(avg(DISTINCT i), count(DISTINCT i), sum(DISTINCT i)) FROM t"},
		// The squares of distinct values are not the distinct squares.
		{"SELECT variance(DISTINCT i) FROM t", ""},
		{"SELECT avg(d), avg(x::float8) FROM t", ""},
		{"SELECT avg(i) + 1 FROM t", ""},
		{"SELECT (SELECT avg(i) FROM u) FROM t", ""},
		{"SELECT avg(i) FROM t UNION SELECT 1", ""},
		{"SELECT myschema.avg(i) FROM t", ""},
		{"SELECT sum(iv), avg(x::interval) FILTER (WHERE x > 0) FROM t",
			"SELECT _tsdb_exact_ivsum(count(iv), sum(_tsdb_iv_months(iv)), sum(_tsdb_iv_days(iv)), sum(_tsdb_iv_micros(iv))), " +
				"_tsdb_exact_ivavg(count(x::interval) FILTER (WHERE x > 0), sum(_tsdb_iv_months(x::interval)) FILTER (WHERE x > 0), " +
				"sum(_tsdb_iv_days(x::interval)) FILTER (WHERE x > 0), sum(_tsdb_iv_micros(x::interval)) FILTER (WHERE x > 0)) FROM t"},
		// The distinct parts are not the parts of the distinct intervals.
		{"SELECT avg(DISTINCT iv) FROM t", ""},
		// Calls without an argument are no aggregate of one.
		{"SELECT count(*), now(), sum() FROM t", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return ExactAggregates(n.GetSelectStmt(), typeOf) })
}

func TestNameRowValues(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT ROW(1, 'a'), (2, 3)", "SELECT _tsdb_row2(1, 'a'), _tsdb_row2(2, 3)"},
		{"SELECT ROW(1, ROW(2, 3))", "SELECT _tsdb_row2(1, _tsdb_row2(2, 3))"},
		{"SELECT x FROM (VALUES (ROW(1, 2))) v(x)", "SELECT x FROM (VALUES (_tsdb_row2(1, 2))) v(x)"},
		// Compared rows stay the engine's.
		{"SELECT (1, 2) = (1, 3), (a, b) IN (SELECT 1, 2), ROW(1, NULL) IS NULL FROM t", ""},
		{"SELECT 1 FROM t WHERE (a, b) IN ((1, 2), (3, 4))", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return NameRowValues(n) })
}

func TestWithTies(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT thousand FROM onek WHERE thousand < 5 ORDER BY thousand FETCH FIRST 2 ROWS WITH TIES",
			"SELECT _tsdb_c1 FROM (SELECT thousand AS _tsdb_c1, thousand AS _tsdb_k1, rank() OVER (ORDER BY thousand) AS _tsdb_rank, " +
				"row_number() OVER (ORDER BY thousand) AS _tsdb_rn FROM onek WHERE thousand < 5) _tsdb_ties " +
				"WHERE _tsdb_rank <= 2 AND _tsdb_rn > 0 ORDER BY _tsdb_k1"},
		{"SELECT a AS x, b FROM t ORDER BY 1 DESC, x OFFSET 3 FETCH FIRST ROW WITH TIES",
			"SELECT _tsdb_c1 AS x, _tsdb_c2 FROM (SELECT a AS _tsdb_c1, b AS _tsdb_c2, a AS _tsdb_k1, a AS _tsdb_k2, " +
				"rank() OVER (ORDER BY a DESC, a) AS _tsdb_rank, row_number() OVER (ORDER BY a DESC, a) AS _tsdb_rn FROM t) _tsdb_ties " +
				"WHERE _tsdb_rank <= 4 AND _tsdb_rn > 3 ORDER BY _tsdb_k1 DESC, _tsdb_k2"},
		{"SELECT * FROM t ORDER BY a FETCH FIRST 2 ROWS WITH TIES",
			"SELECT _tsdb_columns('(?s)^(.{0,5}$|[^_]|_[^t]|_t[^s]|_ts[^d]|_tsd[^b]|_tsdb[^_])') FROM (SELECT *, a AS _tsdb_k1, " +
				"rank() OVER (ORDER BY a) AS _tsdb_rank, row_number() OVER (ORDER BY a) AS _tsdb_rn FROM t) _tsdb_ties " +
				"WHERE _tsdb_rank <= 2 AND _tsdb_rn > 0 ORDER BY _tsdb_k1"},
		{"SELECT a FROM t ORDER BY a OFFSET $1 FETCH FIRST (NULL+1) ROWS WITH TIES",
			"SELECT _tsdb_c1 FROM (SELECT a AS _tsdb_c1, a AS _tsdb_k1, rank() OVER (ORDER BY a) AS _tsdb_rank, " +
				"row_number() OVER (ORDER BY a) AS _tsdb_rn FROM t) _tsdb_ties " +
				"WHERE _tsdb_rank <= (COALESCE($1, 0) + (NULL + 1)) IS NOT FALSE AND _tsdb_rn > COALESCE($1, 0) ORDER BY _tsdb_k1"},
		{"SELECT DISTINCT a FROM t ORDER BY a FETCH FIRST 2 ROWS WITH TIES", ""},
		{"SELECT a FROM t ORDER BY a LIMIT 2", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { c, _ := WithTies(n); return c })
	// A NULL count as written is PostgreSQL's error 2201W.
	tree, err := pg_query.Parse("SELECT a FROM t ORDER BY a FETCH FIRST NULL ROWS WITH TIES")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WithTies(tree.Stmts[0].Stmt); sqlerr.Code(err) != "2201W" {
		t.Errorf("FETCH FIRST NULL ROWS WITH TIES: got %v, want 2201W", err)
	}
}

// checkRewrites applies rewrite to the statement of each case and
// compares the deparsed tree with want ("" when the query stays as it
// is), and whether rewrite reported a change.
func checkRewrites(t *testing.T, tests []struct{ in, want string }, rewrite func(*pg_query.Node) bool) {
	t.Helper()
	for _, tt := range tests {
		tree, err := pg_query.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		changed := rewrite(tree.Stmts[0].Stmt)
		want := tt.want
		if want == "" {
			want = tt.in
		}
		got, err := pg_query.Deparse(tree)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || changed != (tt.want != "") {
			t.Errorf("%s\n got %s (changed %v)\nwant %s", tt.in, got, changed, want)
		}
	}
}

func TestNumericLiteralScales(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT 1.1 AS two UNION SELECT 2 ORDER BY 1", "SELECT _tsdb_num(1.1, 1) AS two UNION SELECT _tsdb_num(2, 0) ORDER BY 1"},
		{"VALUES (1, 2), (3, 4 + 4), (7, 77.70)", "VALUES (1, _tsdb_num(2, 0)), (3, _tsdb_num(4 + 4, 0)), (7, _tsdb_num(77.70, 2))"},
		{"SELECT 2.50 UNION ALL SELECT -1", "SELECT _tsdb_num(2.50, 2) UNION ALL SELECT _tsdb_num(-1, 0)"},
		// 2 and 2.0 are one value to a UNION: which scale it keeps is
		// PostgreSQL's choice.
		{"SELECT 2.0 UNION SELECT 2", ""},
		{"SELECT 1 UNION SELECT 2", ""},
		{"SELECT 1.5 UNION SELECT x FROM t", ""},
		{"SELECT 1.5e3 UNION ALL SELECT 2", ""},
		{"SELECT 1.5 UNION ALL SELECT 2 + 0.5", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return NumericLiteralScales(n.GetSelectStmt()) })
	// A statement the planner builds leaves Op unset (not SETOP_NONE) and
	// has no branches: nothing to rewrite, and no crash.
	if NumericLiteralScales(&pg_query.SelectStmt{TargetList: []*pg_query.Node{pg_query.MakeAConstIntNode(1, -1)}}) {
		t.Error("a statement without branches was rewritten")
	}
}

func TestScaledValuesColumns(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT x, asind(x) FROM (VALUES (-1), (-0.5), (0)) AS t(x)",
			"SELECT _tsdb_num(x, t._tsdb_scale_0) AS x, asind(x) FROM (VALUES (-1, 0), (-0.5, 1), (0, 0)) t(x, _tsdb_scale_0)"},
		{"SELECT t.b AS y FROM (VALUES (1, 2.5), (2, 3)) t(a, b) ORDER BY 1",
			"SELECT _tsdb_num(t.b, t._tsdb_scale_1) AS y FROM (VALUES (1, 2.5, 1), (2, 3, 0)) t(a, b, _tsdb_scale_1) ORDER BY 1"},
		// One scale for every value: the engine's decimal prints it.
		{"SELECT x FROM (VALUES (1.5), (2.5)) t(x)", ""},
		{"SELECT x FROM (VALUES (1), (2)) t(x)", ""},
		// Not shown as it is, or a query the added column would change.
		{"SELECT x + 1 FROM (VALUES (1), (2.5)) t(x)", ""},
		{"SELECT * FROM (VALUES (1), (2.5)) t(x)", ""},
		{"SELECT DISTINCT x FROM (VALUES (1), (1.0)) t(x)", ""},
		{"SELECT x FROM (VALUES (1), (2.5)) t(x) GROUP BY x", ""},
		{"SELECT x FROM (VALUES (1), (2.5)) t(x), (VALUES (3)) u(y)", ""},
		{"SELECT x FROM (VALUES (1), (2.5e0)) t(x)", ""},
		{"SELECT x, to_json(t) FROM (VALUES (1), (2.5)) t(x)", ""},
		{"SELECT x, ROW(t.*) FROM (VALUES (1), (2.5)) t(x)", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return ScaledValuesColumns(n.GetSelectStmt()) })
}

func TestExtractNumeric(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT extract(second FROM '2020-01-01 00:00:07'::timestamp)",
			"SELECT microsecond('2020-01-01 00:00:07'::timestamp)::numeric(38, 0) * (0.000001)::numeric(7, 6)"},
		{"SELECT extract ('epoch' FROM 'infinity'::timestamptz)", ""},
		{"SELECT extract ('hour' FROM '2020-01-01 00:00:07'::timestamp)", ""},
		{"SELECT extract ('epoch' FROM \"time\") FROM t", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool { return ExtractNumeric(n, nil) })
}

// A quoted integer in arithmetic is the integer; other quoted values, and
// a quoted integer added to a date or time, stay as written.
func TestUnknownIntegerOperand(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT f1 * '-1' FROM t", "SELECT f1 * -1 FROM t"},
		{"SELECT ' 7 ' / f1, f1 % '3'", "SELECT 7 / f1, f1 % 3"},
		{"SELECT f1 + '9223372036854775807'", "SELECT f1 + '9223372036854775807'::int8"},
		{"SELECT f1 * '1e200', f1 * '0.5', '1' + '2'", ""},
		{"SELECT date '2001-01-05' - '1', interval '1 day' * '2'", "SELECT '2001-01-05'::date - '1', '1 day'::interval * 2"},
		{"SELECT f1 > '0.0', f1 || '1'", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool {
		changed := false
		sqltree.ReplaceNodes(n.ProtoReflect(), func(m *pg_query.Node) *pg_query.Node {
			if e := m.GetAExpr(); e != nil {
				if r, ok := unknownIntegerOperand(e); ok {
					changed = true
					return r
				}
			}
			return nil
		})
		return changed
	})
}

// A quoted constant in a set operation or VALUES column is read as the
// type the column's other values have, as PostgreSQL resolves it.
func TestUnknownSetOpLiterals(t *testing.T) {
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT 3.4::numeric UNION SELECT 'foo'", "SELECT (3.4)::numeric UNION SELECT 'foo'::numeric"},
		{"SELECT 1 UNION ALL SELECT '2' UNION ALL SELECT 2.5", "(SELECT 1 UNION ALL SELECT '2'::numeric) UNION ALL SELECT 2.5"},
		{"VALUES (true), ('f')", "VALUES (true), (false)"},
		{"SELECT x FROM (VALUES (1), ('2')) t(x)", "SELECT x FROM (VALUES (1), ('2'::int)) t(x)"},
		{"SELECT 1, 'a' UNION SELECT 2, date '2001-01-01'", "SELECT 1, 'a'::date UNION SELECT 2, '2001-01-01'::date"},
		// Unknown with unknown is text; a column's type is the engine's.
		{"SELECT 'a' UNION SELECT 'b'", ""},
		{"SELECT q1 FROM t UNION SELECT 'foo'", ""},
		{"SELECT 1::text UNION SELECT 'b'", ""},
	}
	checkRewrites(t, tests, UnknownSetOpLiterals)
}

// ORDER BY of a set operation names the result's columns.
func TestCheckSetOpOrder(t *testing.T) {
	for _, tc := range []struct {
		sql string
		ok  bool
	}{
		{"SELECT q1 FROM a EXCEPT SELECT q2 FROM b ORDER BY q2", false},
		{"SELECT q1 FROM a EXCEPT SELECT q2 FROM b ORDER BY q1", true},
		{"SELECT q1 AS x FROM a UNION SELECT q2 FROM b ORDER BY x", true},
		{"SELECT q1 FROM a UNION SELECT q2 FROM b ORDER BY 1", true},
		{"SELECT * FROM a UNION SELECT * FROM b ORDER BY z", true},
		{"SELECT q1 FROM a ORDER BY q2", true},
	} {
		tree, err := pg_query.Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSetOpOrder(tree.Stmts[0].Stmt.GetSelectStmt())
		if (err == nil) != tc.ok || err != nil && sqlerr.Code(err) != sqlerr.UndefinedColumn {
			t.Errorf("%s: %v", tc.sql, err)
		}
	}
}

// Names the engine reads as keywords are quoted in deparsed text;
// keywords (upper case there) and literals are left alone.
func TestQuoteEngineKeywords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT at, map FROM t ORDER BY by", `SELECT "at", "map" FROM t ORDER BY "by"`},
		{"SELECT ts AT TIME ZONE 'at' FROM t GROUP BY x", ""},
		{`SELECT "at", k.struct AS qualify FROM t k`, `SELECT "at", k."struct" AS "qualify" FROM t k`},
		{"SELECT atom, mapping FROM t", ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := QuoteEngineKeywords(c.in); got != want {
			t.Errorf("%s: got %s, want %s", c.in, got, want)
		}
	}
}

// sum() of an integer or smallint column is bigint, of a bigint column
// numeric, as in PostgreSQL.
func TestIntegerSums(t *testing.T) {
	typeOf := func(n *pg_query.Node) schema.Type {
		switch sqltree.LastName(n.GetColumnRef().GetFields()) {
		case "i":
			return schema.Int32
		case "s":
			return schema.Int16
		case "b":
			return schema.Int64
		}
		return schema.Invalid
	}
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT sum(i), sum(s) + 1, sum(i) OVER () FROM t", "SELECT sum(i)::int8, sum(s)::int8 + 1, sum(i) OVER ()::int8 FROM t"},
		{"SELECT sum(b), sum(x), count(i), (SELECT sum(i) FROM u) FROM t", `SELECT sum(b)::"numeric", sum(x), count(i), (SELECT sum(i) FROM u) FROM t`},
		{"SELECT sum(x), count(i), (SELECT sum(i) FROM u) FROM t", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool {
		changed := false
		for _, rt := range n.GetSelectStmt().GetTargetList() {
			changed = IntegerSums(rt.GetResTarget().Val, typeOf) || changed
		}
		return changed
	})
}

// Variances of values known to be double precision go to the Go function
// over a list of the values.
func TestFloatVariances(t *testing.T) {
	typeOf := func(n *pg_query.Node) schema.Type {
		if sqltree.LastName(n.GetColumnRef().GetFields()) == "d" {
			return schema.Float64
		}
		return schema.Invalid
	}
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT stddev(d), var_pop(sin(i) * 2) FILTER (WHERE i > 0) FROM t",
			"SELECT _tsdb_float_var(list(d::float8), 3), _tsdb_float_var(list((sin(i) * 2)::float8) FILTER (WHERE i > 0), 0) FROM t"},
		{"SELECT stddev(i), var_pop(n::numeric), stddev(d) OVER (), variance(DISTINCT d) FROM t",
			"SELECT stddev(i), var_pop(n::numeric), stddev(d) OVER (), _tsdb_float_var(list(DISTINCT d::float8), 1) FROM t"},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool {
		changed := false
		for _, rt := range n.GetSelectStmt().GetTargetList() {
			changed = FloatVariances(rt.GetResTarget().Val, typeOf) || changed
		}
		return changed
	})
}

// An interval times or divided by a number goes to interval_mul's and
// interval_div's Go function where the interval is known here.
func TestIntervalArithmetic(t *testing.T) {
	typeOf := func(n *pg_query.Node) schema.Type {
		if sqltree.LastName(n.GetColumnRef().GetFields()) == "iv" {
			return schema.Interval
		}
		return schema.Invalid
	}
	tests := []struct {
		in, want string // want "" when the query stays as it is
	}{
		{"SELECT iv / 2, 3 * iv, iv * x FROM t",
			"SELECT _tsdb_interval_scale(iv, 2::float8, true), _tsdb_interval_scale(iv, 3::float8, false), _tsdb_interval_scale(iv, x::float8, false) FROM t"},
		{"SELECT (interval '1 day' * 2) / 3", "SELECT _tsdb_interval_scale(_tsdb_interval_scale('1 day'::interval, 2::float8, false), 3::float8, true)"},
		{"SELECT x / 2, iv + iv, 2 / iv FROM t", ""},
	}
	checkRewrites(t, tests, func(n *pg_query.Node) bool {
		changed := false
		for _, rt := range n.GetSelectStmt().GetTargetList() {
			changed = IntervalArithmetic(rt.GetResTarget().Val, typeOf) || changed
		}
		return changed
	})
}

// The matches PostgreSQL's setup_regexp_matches finds: empty ones after
// another match, at line starts seen with the text before them, and for
// splitting none at the text's ends or right after another match.
func TestPostgresMatches(t *testing.T) {
	c := &RegexpCache{}
	for _, tc := range []struct {
		src, pattern, flags string
		split               bool
		want                string
	}{
		{"ab", "a*", "g", false, `[[a] [] []]`},
		{"foobarbequebazilbarfbonk", "(b[^b]+)(b[^b]+)", "g", false, `[[bar beque] [bazil barf]]`},
		{"abc", "(x)?b", "g", false, `[[<nil>]]`},
		{"1\n2\n", "^.?", "mg", false, `[[1] [2] []]`},
		{"\n1\n", ".?$", "mg", false, `[[] [1] [] []]`},
		{"aaa", "^a", "g", false, `[[a]]`},
		{"héé", "", "g", false, `[[] [] [] []]`},
		{"ab c", `\s*`, "", true, `[a b c]`},
		{"hello", "", "", true, `[h e l l o]`},
		{"", "x", "", true, `[]`},
		{"a,b,,c", ",", "", true, `[a b  c]`},
		{"aXbxc", "x", "i", true, `[a b c]`},
	} {
		var got []any
		var err error
		if tc.split {
			got, err = c.RegexpSplit("regexp_split_to_array", tc.src, tc.pattern, tc.flags)
		} else {
			got, err = c.RegexpMatches(tc.src, tc.pattern, tc.flags)
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%q ~ %q (%s): %v %v, want %s", tc.src, tc.pattern, tc.flags, got, err, tc.want)
		}
	}
}

// A chain of || is made text link by link, never by writing the chain
// again: textOf names its argument several times, and rewriting text
// already made text grew the statement exponentially with the chain.
func TestConcatChainStaysLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("a")
	for i := range 20 {
		fmt.Fprintf(&b, " || '|' || c%d", i)
	}
	got := rewritten(t, b.String())
	if len(got) > 40_000 {
		t.Fatalf("a 20-link chain became %d bytes of SQL", len(got))
	}
	if n := strings.Count(got, "c19"); n < 1 || n > 12 {
		t.Fatalf("the last link is written %d times", n)
	}
}

// A shown ARRAY[…] of numbers of different scales is refused (the engine
// would print them all with the largest); arrays a function takes, or of
// one scale, are not.
func TestCheckArrayScales(t *testing.T) {
	for _, tc := range []struct {
		sql     string
		refused bool
	}{
		{"SELECT ARRAY[1.5, 2]", true},
		{"SELECT ARRAY[1.50, 2.5]", true},
		{"SELECT (ARRAY[1.5, 2])[2]", true},
		{"SELECT ARRAY[[1.5], [2]]", true},
		{"SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT (ARRAY[1, 2.5])[1]", true},
		{"VALUES (ARRAY[1, 2.5])", true},
		{"SELECT ARRAY[1.5, 2.5], ARRAY[1, 2], ARRAY[1.0, -2.0]", false},
		{"SELECT percentile_cont(ARRAY[0, 0.25, 1]) WITHIN GROUP (ORDER BY x) FROM t", false},
		{"SELECT 1 WHERE 2 = ANY(ARRAY[1.5, 2])", false},
		{"SELECT ARRAY[1.5, 2]::float8[]", false},
	} {
		tree, err := pg_query.Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckArrayScales(tree.Stmts[0].Stmt.GetSelectStmt())
		if (err != nil) != tc.refused || err != nil && sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("%s: %v, refused %v", tc.sql, err, tc.refused)
		}
	}
}

// PostgreSQL 15's answers to hashint4(1), hashint4(-7), hashint2(3),
// hashint8(-5), hashint8(5000000000), interval_hash('30 days'),
// interval_hash('1 month 2 hours'), interval_hash('-1 year'), hashint4(0).
func TestHashFunctions(t *testing.T) {
	tests := []struct {
		got, want int32
	}{
		{HashInt4(1), -1905060026}, {HashInt4(-7), -82204417}, {HashInt4(3), -28094569},
		{HashInt8(-5), 1412886042}, {HashInt8(5000000000), -694934712}, {HashInt8(1), -1905060026},
		{IntervalHash(0, 30, 0), 1574789525}, {IntervalHash(1, 0, 2*3_600_000_000), -2132916014},
		{IntervalHash(-12, 0, 0), 607734901}, {HashInt4(0), -272711505},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: %d, want %d", i, tt.got, tt.want)
		}
	}
}

// width_bucket and div as PostgreSQL 15 answered them.
func TestWidthBucketAndDiv(t *testing.T) {
	buckets := []struct {
		x, lo, hi string
		n         int64
		exact     bool
		want      int64
	}{
		{"5.5", "0", "10", 5, true, 3}, {"-1", "0", "10", 5, false, 0}, {"10", "0", "10", 5, false, 6},
		{"0.3", "0", "1", 10, true, 4}, {"0.3", "0", "1", 10, false, 4}, {"5", "10", "0", 5, false, 3},
		{"0", "10", "0", 5, false, 6}, {"3", "0", "10", 5, false, 2},
		{"0.9999999999999999", "0", "1", 10, false, 10}, {"1.0", "0.0", "3.0", 3, true, 2},
		{"2.9999999999999999999999", "0", "3", 3, true, 3}, {"1", "0", "3.000000000000000000000000001", 3, true, 2},
	}
	for _, b := range buckets {
		if got, err := WidthBucket(b.x, b.lo, b.hi, b.n, b.exact); err != nil || got != b.want {
			t.Errorf("width_bucket(%s, %s, %s, %d): %d, %v; want %d", b.x, b.lo, b.hi, b.n, got, err, b.want)
		}
	}
	// PostgreSQL 15 answers -2147483648 where its quotient overflows:
	// refused.
	if _, err := WidthBucket("1e308", "0", "1.5e308", 10, false); sqlerr.Code(err) != sqlerr.NumericOutOfRange {
		t.Errorf("overflowing quotient: %v", err)
	}
	if _, err := WidthBucket("1", "1", "1", 5, false); sqlerr.Code(err) != "2201G" {
		t.Errorf("equal bounds: %v", err)
	}
	if _, err := WidthBucket("1", "0", "1", 0, true); sqlerr.Code(err) != "2201G" {
		t.Errorf("count 0: %v", err)
	}
	for _, d := range [][3]string{{"7", "2", "3"}, {"-7", "2", "-3"}, {"7.5", "2", "3"}, {"-7.5", "2.5", "-3"}} {
		if got, err := Div(d[0], d[1]); err != nil || got != d[2] {
			t.Errorf("div(%s, %s): %s, %v; want %s", d[0], d[1], got, err, d[2])
		}
	}
	if _, err := Div("1", "0"); sqlerr.Code(err) != sqlerr.DivisionByZero {
		t.Errorf("div by zero: %v", err)
	}
}

// PostgreSQL 15's answers for numeric constants: sqrt, exp, ln, log.
func TestNumericMath(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"sqrt(2.0)", "1.414213562373095"}, {"exp(1.0)", "2.7182818284590452"}, {"ln(10.0)", "2.3025850929940457"},
		{"log(10.0, 1000.0)", "3.0000000000000000"}, {"log(3.0, 10.0)", "2.0959032742893846"}, {"log(0.001)", "-3.0000000000000000"},
		{"log(1.5, 100.0)", "11.3577471745351456"}, {"sqrt(0.0002)", "0.01414213562373095"}, {"ln(1.0000001)", "0.00000009999999500000033"},
		{"exp(-2.5)", "0.08208499862389880"}, {"sqrt(12345678.9)", "3513.6418286444622"}, {"ln(0.5)", "-0.6931471805599453"},
		{"sqrt('16'::numeric)", "4.000000000000000"}, {"sqrt(0.0)", "0.000000000000000"}, {"log(10, 1000)", "3.0000000000000000"}, {"log(3, 10)", "2.0959032742893846"}, {"log10(2.00)", "0.3010299956639812"}, {"exp(0.0)", "1.0000000000000000"},
	}
	call := func(sql string) (string, bool, error) {
		tree, err := pg_query.Parse("SELECT " + sql)
		if err != nil {
			t.Fatal(err)
		}
		fc := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetFuncCall()
		return NumericMath(sqltree.LastName(fc.Funcname), fc.Args)
	}
	for _, tt := range tests {
		if got, ok, err := call(tt.sql); !ok || err != nil || got != tt.want {
			t.Errorf("%s: %q, %v, %v; want %s", tt.sql, got, ok, err, tt.want)
		}
	}
	// Results wider than the engine's 38 digits, and arguments far out of
	// a double's range, are 22003 at once (not a crash, not a hang).
	for _, sql := range []string{"sqrt(1e400)", "exp(1e10)", "exp(1e9)", "exp(100.0)", "exp(-7000.0)", "ln(1.00000000000000000000000000001)"} {
		if _, ok, err := call(sql); !ok || sqlerr.Code(err) != sqlerr.NumericOutOfRange {
			t.Errorf("%s: %v, %v; want 22003", sql, ok, err)
		}
	}
	// ln of a number beyond a double's range is still computed.
	if got, _, err := call("ln(1e400)"); err != nil || got != "921.03403719761827" {
		t.Errorf("ln(1e400): %q, %v", got, err)
	}
}

// The text check before the tree walk passes over the BY of GROUP BY and
// ORDER BY only; any other keyword-like word, a column
// named by among them, sends the statement to the walk.
func TestMayNameEngineKeyword(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"SELECT max(v) FROM t GROUP BY 1 ORDER BY 1", false},
		{"SELECT rank() OVER (ORDER\tBY t) FROM t GROUP\n  BY 1", false},
		// PARTITION BY is walked: "partition by" may be a column and its alias.
		{"SELECT partition by FROM t", true},
		{"SELECT x FROM t", false},
		{"SELECT x FROM t ORDER BY by", true},
		{"SELECT by FROM t", true},
		{"SELECT x FROM t GROUP BY x, by", true},
		{"SELECT map FROM t GROUP BY 1", true},
		{"SELECT ts AT TIME ZONE 'UTC' FROM t", true},
		{"SELECT x FROM t ORDER /* c */ BY x", true},
	} {
		if got := mayNameEngineKeyword(c.text); got != c.want {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
}
