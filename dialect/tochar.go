package dialect

// to_char(timestamp, format) is PostgreSQL's way to print a time; DuckDB
// has strftime instead. A constant format is translated here, pattern by
// pattern, into strftime calls and the few expressions strftime has no
// directive for. A pattern tsdb cannot print as PostgreSQL does is refused
// by name rather than printed differently.

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// toCharArg stands for to_char's first argument in the expressions below.
const toCharArg = "_tsdb_arg1"

// charPattern is one of to_char's template patterns. Numeric patterns
// match in any case; text patterns (Month, MONTH, month) only as written,
// since their case is the case of the output.
type charPattern struct {
	name     string
	anyCase  bool
	strftime string // with FM: fm; "" when expr prints it
	fm       string
	expr     string // an expression over toCharArg, %s for the FM variant's
	fmExpr   string
}

// charPatterns are tried longest first (they are listed so: a pattern comes
// before every pattern that is its prefix).
var charPatterns = []charPattern{
	{name: "HH24", anyCase: true, strftime: "%H", fm: "%-H"},
	{name: "HH12", anyCase: true, strftime: "%I", fm: "%-I"},
	{name: "HH", anyCase: true, strftime: "%I", fm: "%-I"},
	{name: "MI", anyCase: true, strftime: "%M", fm: "%-M"},
	{name: "MS", anyCase: true, strftime: "%g", fm: "%g"},
	{name: "US", anyCase: true, strftime: "%f", fm: "%f"},
	// Seconds past midnight.
	{name: "SSSSS", anyCase: true, expr: "CAST(hour(%[1]s) * 3600 + minute(%[1]s) * 60 + second(%[1]s) AS VARCHAR)"},
	{name: "SSSS", anyCase: true, expr: "CAST(hour(%[1]s) * 3600 + minute(%[1]s) * 60 + second(%[1]s) AS VARCHAR)"},
	{name: "SS", anyCase: true, strftime: "%S", fm: "%-S"},
	// Fractions of a second, 1 to 6 digits.
	{name: "FF1", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 1)"},
	{name: "FF2", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 2)"},
	{name: "FF3", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 3)"},
	{name: "FF4", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 4)"},
	{name: "FF5", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 5)"},
	{name: "FF6", anyCase: true, expr: "substr(lpad(CAST(microsecond(%[1]s) %% 1000000 AS VARCHAR), 6, '0'), 1, 6)"},
	{name: "A.M.", expr: "CASE WHEN hour(%[1]s) < 12 THEN 'A.M.' ELSE 'P.M.' END"},
	{name: "P.M.", expr: "CASE WHEN hour(%[1]s) < 12 THEN 'A.M.' ELSE 'P.M.' END"},
	{name: "a.m.", expr: "CASE WHEN hour(%[1]s) < 12 THEN 'a.m.' ELSE 'p.m.' END"},
	{name: "p.m.", expr: "CASE WHEN hour(%[1]s) < 12 THEN 'a.m.' ELSE 'p.m.' END"},
	{name: "AM", strftime: "%p", fm: "%p"},
	{name: "PM", strftime: "%p", fm: "%p"},
	{name: "am", expr: "lower(strftime(%[1]s, '%%p'))"},
	{name: "pm", expr: "lower(strftime(%[1]s, '%%p'))"},
	// Eras by the wall clock's astronomical year (0 is 1 BC).
	{name: "A.D.", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'B.C.' ELSE 'A.D.' END"},
	{name: "B.C.", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'B.C.' ELSE 'A.D.' END"},
	{name: "a.d.", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'b.c.' ELSE 'a.d.' END"},
	{name: "b.c.", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'b.c.' ELSE 'a.d.' END"},
	{name: "AD", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'BC' ELSE 'AD' END"},
	{name: "BC", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'BC' ELSE 'AD' END"},
	{name: "ad", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'bc' ELSE 'ad' END"},
	{name: "bc", expr: "CASE WHEN _tsdb_ayear(%[1]s) <= 0 THEN 'bc' ELSE 'ad' END"},
	// Years count as the era does (97 BC is 0097, with BC to say so).
	{name: "Y,YYY", anyCase: true, expr: "CAST(_tsdb_eyear(%[1]s) / 1000 AS VARCHAR) || ',' || lpad(CAST(_tsdb_eyear(%[1]s) %% 1000 AS VARCHAR), 3, '0')"},
	{name: "YYYY", anyCase: true, expr: "_tsdb_zeropad(_tsdb_eyear(%[1]s), 4)", fmExpr: "CAST(_tsdb_eyear(%[1]s) AS VARCHAR)"},
	{name: "YYY", anyCase: true, expr: "lpad(CAST(_tsdb_eyear(%[1]s) %% 1000 AS VARCHAR), 3, '0')", fmExpr: "CAST(_tsdb_eyear(%[1]s) %% 1000 AS VARCHAR)"},
	{name: "YY", anyCase: true, expr: "lpad(CAST(_tsdb_eyear(%[1]s) %% 100 AS VARCHAR), 2, '0')", fmExpr: "CAST(_tsdb_eyear(%[1]s) %% 100 AS VARCHAR)"},
	{name: "Y", anyCase: true, expr: "CAST(_tsdb_eyear(%[1]s) %% 10 AS VARCHAR)"},
	{name: "IYYY", anyCase: true, expr: "_tsdb_zeropad(_tsdb_eisoyear(%[1]s), 4)", fmExpr: "CAST(_tsdb_eisoyear(%[1]s) AS VARCHAR)"},
	{name: "IYY", anyCase: true, expr: "lpad(CAST(_tsdb_eisoyear(%[1]s) %% 1000 AS VARCHAR), 3, '0')", fmExpr: "CAST(_tsdb_eisoyear(%[1]s) %% 1000 AS VARCHAR)"},
	{name: "IY", anyCase: true, expr: "lpad(CAST(_tsdb_eisoyear(%[1]s) %% 100 AS VARCHAR), 2, '0')", fmExpr: "CAST(_tsdb_eisoyear(%[1]s) %% 100 AS VARCHAR)"},
	{name: "IW", anyCase: true, strftime: "%V", fmExpr: "CAST(week(%[1]s) AS VARCHAR)"},
	// The day of the ISO year.
	{name: "IDDD", anyCase: true, expr: "lpad(CAST((week(%[1]s) - 1) * 7 + isodow(%[1]s) AS VARCHAR), 3, '0')", fmExpr: "CAST((week(%[1]s) - 1) * 7 + isodow(%[1]s) AS VARCHAR)"},
	{name: "ID", anyCase: true, expr: "CAST(isodow(%[1]s) AS VARCHAR)"},
	{name: "I", anyCase: true, expr: "CAST(_tsdb_eisoyear(%[1]s) %% 10 AS VARCHAR)"},
	{name: "CC", anyCase: true, expr: "_tsdb_century_text(%[1]s, 2)", fmExpr: "_tsdb_century_text(%[1]s, 0)"},
	// The Julian day of the wall clock's date.
	{name: "J", anyCase: true, expr: "CAST(CAST(julian(CAST(%[1]s AS DATE)) AS BIGINT) AS VARCHAR)"},
	// The month in Roman numerals, padded to 4.
	{name: "RM", expr: "rpad((ARRAY['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X', 'XI', 'XII'])[month(%[1]s)], 4, ' ')", fmExpr: "(ARRAY['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X', 'XI', 'XII'])[month(%[1]s)]"},
	{name: "rm", expr: "rpad((ARRAY['i', 'ii', 'iii', 'iv', 'v', 'vi', 'vii', 'viii', 'ix', 'x', 'xi', 'xii'])[month(%[1]s)], 4, ' ')", fmExpr: "(ARRAY['i', 'ii', 'iii', 'iv', 'v', 'vi', 'vii', 'viii', 'ix', 'x', 'xi', 'xii'])[month(%[1]s)]"},
	// The session zone's offset: +05:30, -08, and its parts.
	{name: "OF", anyCase: true, expr: "_tsdb_tz_offset(%[1]s)"},
	{name: "TZH", anyCase: true, expr: "CASE WHEN date_part('timezone', %[1]s) < 0 THEN '-' ELSE '+' END || lpad(CAST(abs(date_part('timezone', %[1]s)) / 3600 AS VARCHAR), 2, '0')"},
	{name: "TZM", anyCase: true, expr: "lpad(CAST(abs(date_part('timezone', %[1]s)) %% 3600 / 60 AS VARCHAR), 2, '0')"},
	{name: "MONTH", expr: "upper(rpad(strftime(%[1]s, '%%B'), 9, ' '))", fmExpr: "upper(strftime(%[1]s, '%%B'))"},
	{name: "Month", expr: "rpad(strftime(%[1]s, '%%B'), 9, ' ')", fm: "%B"},
	{name: "month", expr: "lower(rpad(strftime(%[1]s, '%%B'), 9, ' '))", fmExpr: "lower(strftime(%[1]s, '%%B'))"},
	{name: "MON", expr: "upper(strftime(%[1]s, '%%b'))"},
	{name: "Mon", strftime: "%b", fm: "%b"},
	{name: "mon", expr: "lower(strftime(%[1]s, '%%b'))"},
	{name: "MM", anyCase: true, strftime: "%m", fm: "%-m"},
	{name: "DAY", expr: "upper(rpad(strftime(%[1]s, '%%A'), 9, ' '))", fmExpr: "upper(strftime(%[1]s, '%%A'))"},
	{name: "Day", expr: "rpad(strftime(%[1]s, '%%A'), 9, ' ')", fm: "%A"},
	{name: "day", expr: "lower(rpad(strftime(%[1]s, '%%A'), 9, ' '))", fmExpr: "lower(strftime(%[1]s, '%%A'))"},
	{name: "DY", expr: "upper(strftime(%[1]s, '%%a'))"},
	{name: "Dy", strftime: "%a", fm: "%a"},
	{name: "dy", expr: "lower(strftime(%[1]s, '%%a'))"},
	{name: "DDD", anyCase: true, strftime: "%j", fm: "%-j"},
	{name: "DD", anyCase: true, strftime: "%d", fm: "%-d"},
	{name: "D", anyCase: true, expr: "CAST(isodow(%[1]s) %% 7 + 1 AS VARCHAR)"},
	{name: "Q", anyCase: true, expr: "CAST(quarter(%[1]s) AS VARCHAR)"},
	// The parser gives // the precedence of any operator PostgreSQL does
	// not know, below +; a session divides integers as PostgreSQL does.
	{name: "WW", anyCase: true, expr: "lpad(CAST((dayofyear(%[1]s) - 1) / 7 + 1 AS VARCHAR), 2, '0')", fmExpr: "CAST((dayofyear(%[1]s) - 1) / 7 + 1 AS VARCHAR)"},
	{name: "W", anyCase: true, expr: "CAST((day(%[1]s) - 1) / 7 + 1 AS VARCHAR)"},
	// The session zone's abbreviation at the value's time; nothing for a
	// timestamp without time zone.
	{name: "TZ", expr: "_tsdb_zone_abbrev(%[1]s, CASE typeof(%[1]s) WHEN 'TIMESTAMP' THEN 1 ELSE 2 END, " + zonePlaceholder + ")"},
	{name: "tz", expr: "lower(_tsdb_zone_abbrev(%[1]s, CASE typeof(%[1]s) WHEN 'TIMESTAMP' THEN 1 ELSE 2 END, " + zonePlaceholder + "))"},
}

// zonePlaceholder stands for the session's TimeZone, as a string constant, in
// the expressions above.
const zonePlaceholder = "_tsdb_session_zone"

// unsupportedCharPatterns are PostgreSQL patterns tsdb does not print;
// outside double quotes they are refused, not copied as text.
var unsupportedCharPatterns = []string{
	"SP", "TM", "FX",
}

// toCharExpr is the expression that prints arg as to_char(arg, format)
// does. A format with the digit placeholder 9 outside quotes, or with 0
// and no time pattern, is a number format, which tsdb does not print.
func toCharExpr(arg *pg_query.Node, format, zone string) (*pg_query.Node, error) {
	if numberTemplate(format) {
		return toCharNumberExpr(arg, format)
	}
	var parts []string
	var run strings.Builder // strftime directives not yet in parts
	patterns := 0
	flush := func() {
		if run.Len() > 0 {
			parts = append(parts, fmt.Sprintf("strftime(%s, %s)", toCharArg, schema.QuoteString(run.String())))
			run.Reset()
		}
	}
	number := false
	for i := 0; i < len(format); {
		rest := format[i:]
		if rest[0] == '9' {
			number = true
		}
		if rest[0] == '"' {
			// Quoted text is printed as it is; a backslash takes the
			// next character as text (\" is a quote).
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				run.WriteString(strings.ReplaceAll(rest[j:j+1], "%", "%%"))
			}
			i += min(j+1, len(rest))
			continue
		}
		if rest[0] == '\\' && len(rest) > 1 && rest[1] == '"' {
			run.WriteByte('"')
			i += 2
			continue
		}
		fm := len(rest) > 2 && strings.EqualFold(rest[:2], "FM")
		if fm {
			rest = rest[2:]
		}
		p, ok := matchCharPattern(rest)
		for _, u := range unsupportedCharPatterns {
			if len(u) > len(p.name) && len(rest) >= len(u) && strings.EqualFold(rest[:len(u)], u) {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "to_char pattern %q is not supported", rest[:len(u)])
			}
		}
		if fm {
			i += 2
			if !ok {
				continue // before text, FM is PostgreSQL's no-op
			}
		}
		if !ok {
			run.WriteString(strings.ReplaceAll(rest[:1], "%", "%%"))
			i++
			continue
		}
		patterns++
		i += len(p.name)
		direct, expr := p.strftime, p.expr
		if fm && (p.fm != "" || p.fmExpr != "") {
			direct, expr = p.fm, p.fmExpr
		}
		// The session's zone goes into the pattern's own expression, never
		// into the template's text (which holds the user's quoted text).
		patternExpr := func() string {
			return strings.ReplaceAll(fmt.Sprintf(expr, toCharArg), zonePlaceholder, schema.QuoteString(zone))
		}
		if suffix := format[i:min(i+2, len(format))]; p.anyCase && (suffix == "TH" || suffix == "th") {
			// The ordinal suffix of the number just printed: 1st, 12TH.
			text := patternExpr()
			if direct != "" {
				text = fmt.Sprintf("strftime(%s, %s)", toCharArg, schema.QuoteString(direct))
			}
			ordinal := fmt.Sprintf("_tsdb_ordinal(%s)", text)
			if suffix == "TH" {
				ordinal = "upper(" + ordinal + ")"
			}
			flush()
			parts = append(parts, text, ordinal)
			i += 2
			continue
		}
		if direct != "" {
			run.WriteString(direct)
			continue
		}
		flush()
		parts = append(parts, patternExpr())
	}
	// No time pattern has a 9, and 0 alone is not a time format.
	if number || patterns == 0 && strings.Contains(format, "0") {
		return toCharNumberExpr(arg, format)
	}
	flush()
	if len(parts) == 0 {
		// An empty format prints nothing (NULL for a NULL value).
		parts = append(parts, fmt.Sprintf("strftime(%s, '')", toCharArg))
	}
	// An infinite time prints as NULL (strftime would print its text).
	return sqltree.Template("CASE WHEN CAST("+toCharArg+" AS VARCHAR) IN ('infinity', '-infinity') THEN NULL ELSE "+strings.Join(parts, " || ")+" END", arg)
}

// ToCharCall is to_char(arg, format) in the engine's terms, zone the
// session's TimeZone. The format must be a constant (or NULL, which
// prints NULL).
func ToCharCall(arg, format *pg_query.Node, zone string) (*pg_query.Node, error) {
	c := format.GetAConst()
	switch {
	case c != nil && c.Isnull:
		return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
			Arg: format, TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("varchar")}, Typemod: -1},
		}}}, nil
	case c != nil && c.GetSval() != nil:
		return toCharExpr(arg, c.GetSval().Sval, zone)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "to_char needs a constant format")
}

// matchCharPattern returns the pattern rest starts with.
func matchCharPattern(rest string) (charPattern, bool) {
	for _, p := range charPatterns {
		if len(rest) < len(p.name) {
			continue
		}
		head := rest[:len(p.name)]
		if head == p.name || p.anyCase && strings.EqualFold(head, p.name) {
			return p, true
		}
	}
	return charPattern{}, false
}

// numberTemplate reports whether a to_char format is for numbers: a 9 or
// RN outside quoted text (no date pattern has either).
func numberTemplate(format string) bool {
	for i := 0; i < len(format); i++ {
		switch c := format[i]; {
		case c == '"':
			for i++; i < len(format) && format[i] != '"'; i++ {
				if format[i] == '\\' {
					i++
				}
			}
		case c == '\\':
			i++
		case c == '9':
			return true
		case (c == 'R' || c == 'r') && i+1 < len(format) && (format[i+1] == 'N' || format[i+1] == 'n'):
			return true
		}
	}
	return false
}

// toCharNumberExpr is to_char(number, format) by the engine function the
// planner registers (ToCharNumber), the format checked now.
func toCharNumberExpr(arg *pg_query.Node, format string) (*pg_query.Node, error) {
	if _, err := parseNumTemplate(format); err != nil {
		return nil, err
	}
	return sqltree.Template("_tsdb_to_char_num(CAST(_tsdb_arg1 AS VARCHAR), typeof(_tsdb_arg1), "+schema.QuoteString(format)+")", arg)
}
