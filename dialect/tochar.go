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
	{name: "SS", anyCase: true, strftime: "%S", fm: "%-S"},
	{name: "AM", strftime: "%p", fm: "%p"},
	{name: "PM", strftime: "%p", fm: "%p"},
	{name: "am", expr: "lower(strftime(%[1]s, '%%p'))"},
	{name: "pm", expr: "lower(strftime(%[1]s, '%%p'))"},
	{name: "YYYY", anyCase: true, strftime: "%Y", fm: "%Y"},
	{name: "YY", anyCase: true, strftime: "%y", fm: "%-y"},
	{name: "IYYY", anyCase: true, strftime: "%G", fm: "%G"},
	{name: "IW", anyCase: true, strftime: "%V", fmExpr: "CAST(week(%[1]s) AS VARCHAR)"},
	{name: "ID", anyCase: true, expr: "CAST(isodow(%[1]s) AS VARCHAR)"},
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
	{name: "TZ", strftime: "%Z", fm: "%Z"},
}

// unsupportedCharPatterns are PostgreSQL patterns tsdb does not print;
// outside double quotes they are refused, not copied as text.
var unsupportedCharPatterns = []string{
	"SSSSS", "SSSS", "Y,YYY", "YYY", "IYY", "IY", "TZH", "TZM", "OF", "A.M.", "P.M.", "a.m.", "p.m.",
	"B.C.", "A.D.", "b.c.", "a.d.", "BC", "AD", "bc", "ad", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
	"CC", "RM", "rm", "TH", "th", "tz", "SP", "TM", "FX", "J", "W", "Y", "I",
}

// toCharExpr is the expression that prints arg as to_char(arg, format)
// does. A format with the digit placeholder 9 outside quotes, or with 0
// and no time pattern, is a number format, which tsdb does not print.
func toCharExpr(arg *pg_query.Node, format string) (*pg_query.Node, error) {
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
			// Quoted text is printed as it is.
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			run.WriteString(strings.ReplaceAll(rest[1:1+end], "%", "%%"))
			i += min(end+2, len(rest))
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
		if direct != "" {
			run.WriteString(direct)
			continue
		}
		flush()
		parts = append(parts, fmt.Sprintf(expr, toCharArg))
	}
	// No time pattern has a 9, and 0 alone is not a time format.
	if number || patterns == 0 && strings.Contains(format, "0") {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "to_char with a number format is not supported; use format() or printf()")
	}
	flush()
	if len(parts) == 0 {
		// An empty format prints nothing (NULL for a NULL value).
		parts = append(parts, fmt.Sprintf("strftime(%s, '')", toCharArg))
	}
	return sqltree.Template(strings.Join(parts, " || "), arg)
}

// ToCharCall is to_char(arg, format) in the engine's terms. The format
// must be a constant (or NULL, which prints NULL).
func ToCharCall(arg, format *pg_query.Node) (*pg_query.Node, error) {
	c := format.GetAConst()
	switch {
	case c != nil && c.Isnull:
		return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
			Arg: format, TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("varchar")}, Typemod: -1},
		}}}, nil
	case c != nil && c.GetSval() != nil:
		return toCharExpr(arg, c.GetSval().Sval)
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
