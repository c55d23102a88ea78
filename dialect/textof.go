package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// Values made text as PostgreSQL writes them: the engine's cast, ||,
// concat and concat_ws write floats, intervals and booleans in its own
// words (1.0, 3 months, true).

// intervalTextCast writes an interval or a float cast to text as
// PostgreSQL does: an interval in the session's IntervalStyle ('3 mons 2
// days'; the engine's cast writes '3 months 2 days'), a float as its
// output does (1, not the engine's 1.0; 1e+20, not 1e20). Whether the
// value is one is the engine's to say (typeof is constant for a query), so
// every cast to text or varchar becomes a CASE on it; the engine's own
// cast, for every other type, is written as STRING, which this rewrite
// does not match.
func intervalTextCast(tc *pg_query.TypeCast, in Input) (*pg_query.Node, bool) {
	tn := sqltree.LastName(tc.TypeName.GetNames())
	if (tn != "text" && tn != "varchar") || len(tc.TypeName.GetTypmods()) > 0 || len(tc.TypeName.GetArrayBounds()) > 0 {
		return nil, false
	}
	if c := tc.Arg.GetAConst(); c != nil {
		return nil, false // a constant is no interval
	}
	return textOf(tc.Arg, in)
}

// textOf is x as text, written as PostgreSQL writes it (intervalTextCast).
func textOf(x *pg_query.Node, in Input) (*pg_query.Node, bool) {
	return textOfValue(x, in, false)
}

// textOfValue is textOf; output says the text is the type's output
// (concat), where a boolean is t or f, not a cast's true or false.
func textOfValue(x *pg_query.Node, in Input, output bool) (*pg_query.Node, bool) {
	boolean := ""
	if output {
		boolean = `WHEN typeof(_tsdb_arg1) = 'BOOLEAN' THEN CASE CAST(_tsdb_arg1 AS STRING) WHEN 'true' THEN 't' WHEN 'false' THEN 'f' END`
	}
	zone := "UTC"
	if in.Loc != nil {
		zone = in.Loc.String()
	}
	dates := ""
	if in.Dates != pgdatetime.ISODates {
		// The engine writes dates and timestamps in ISO only.
		dates = fmt.Sprintf(`WHEN typeof(_tsdb_arg1) IN ('DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE') THEN
			_tsdb_datetime_text(_tsdb_arg1, CASE typeof(_tsdb_arg1) WHEN 'DATE' THEN %d WHEN 'TIMESTAMP' THEN %d ELSE %d END, %d, %d, %s)`,
			pgdatetime.KindDate, pgdatetime.KindTimestamp, pgdatetime.KindTimestamptz, int(in.Dates), int(in.Order), schema.QuoteString(zone))
	}
	// A list or a struct is written as PostgreSQL writes the array or
	// record ({1,2} and (1,a), not the engine's [1, 2] and {'f1': 1}),
	// its elements as the session writes them.
	arrays := fmt.Sprintf(`WHEN typeof(_tsdb_arg1) LIKE '%%[]' OR typeof(_tsdb_arg1) LIKE 'STRUCT(%%' THEN _tsdb_value_text(_tsdb_arg1, typeof(_tsdb_arg1), %d, %d, %s, %d, %d)`,
		int(in.Dates), int(in.Order), schema.QuoteString(zone), int(in.Intervals), in.FloatDigits)
	// DECIMAL(38,10) is numeric without a typmod, whose value PostgreSQL
	// writes with the digits it has (2, not 2.0000000000), as the wire
	// layer does.
	r, err := sqltree.Template(fmt.Sprintf(`CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN _tsdb_interval_text(_tsdb_arg1, %d)
		WHEN typeof(_tsdb_arg1) IN ('DOUBLE', 'FLOAT') THEN _tsdb_float_text(_tsdb_arg1, %d)
		WHEN typeof(_tsdb_arg1) = 'DECIMAL(38,10)' THEN rtrim(rtrim(CAST(_tsdb_arg1 AS STRING), '0'), '.')
		%s %s %s ELSE CAST(_tsdb_arg1 AS STRING) END`, int(in.Intervals), in.FloatDigits, arrays, boolean, dates), x)
	return r, err == nil
}

// concatText makes the operands of a text || (one side a string
// constant or a text ||) text as PostgreSQL writes them (textOf): the engine's || casts
// a float or an interval to its own text.
func concatText(e *pg_query.A_Expr, in Input) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || sqltree.LastName(e.Name) != "||" || e.Lexpr == nil || e.Rexpr == nil {
		return nil, false
	}
	// Text: a string constant, or a text || (one with a string constant
	// somewhere down its chain).
	var textual func(n *pg_query.Node) bool
	textual = func(n *pg_query.Node) bool {
		if n.GetAConst().GetSval() != nil {
			return true
		}
		if c := n.GetAExpr(); c != nil && c.Kind == pg_query.A_Expr_Kind_AEXPR_OP && sqltree.LastName(c.Name) == "||" && c.Lexpr != nil {
			return textual(c.Lexpr) || textual(c.Rexpr)
		}
		return false
	}
	// An operand that is text already (a string, a text ||) is not made
	// text again: textOf names its argument several times, and a chain of
	// || written over again at each link grew exponentially with its
	// length (a 13-link concatenation took minutes to plan).
	convertible := func(n *pg_query.Node) bool { return textConvertible(n) && !textual(n) }
	l, r := e.Lexpr, e.Rexpr
	switch {
	case textual(l) && convertible(r):
		var ok bool
		if r, ok = textOf(r, in); !ok {
			return nil, false
		}
	case textual(r) && convertible(l):
		var ok bool
		if l, ok = textOf(l, in); !ok {
			return nil, false
		}
	default:
		return nil, false
	}
	return pg_query.MakeAExprNode(e.Kind, e.Name, l, r, e.Location), true
}

// textConvertible reports whether an expression made text should be
// written by textOf: not a constant (text already, or a number the engine
// writes as PostgreSQL does), not an array, not textOf's own CASE.
func textConvertible(n *pg_query.Node) bool {
	switch {
	case n.GetAConst() != nil, n.GetAArrayExpr() != nil, n.GetCaseExpr() != nil:
		return false
	case n.GetTypeCast() != nil:
		tn := n.GetTypeCast().GetTypeName()
		switch sqltree.LastName(tn.GetNames()) {
		case "text", "varchar", "bpchar", "char":
			return false
		}
		return len(tn.GetArrayBounds()) == 0
	case n.GetFuncCall() != nil:
		name := sqltree.LastName(n.GetFuncCall().Funcname)
		return !strings.HasPrefix(name, "array") && !strings.HasPrefix(name, "_tsdb_") && !strings.HasSuffix(name, "_array") && name != "regexp_matches"
	}
	return true
}

// concatArgs writes the arguments of concat and concat_ws as PostgreSQL
// makes them text (textOf): the engine's concat wrote a float 1 as 1.0.
func concatArgs(fc *pg_query.FuncCall, in Input) bool {
	changed := false
	for i, a := range fc.Args {
		if c := a.GetAConst(); c != nil && c.GetBoolval() != nil {
			fc.Args[i] = pg_query.MakeAConstStrNode(map[bool]string{true: "t", false: "f"}[c.GetBoolval().Boolval], -1)
			changed = true
			continue
		}
		if !textConvertible(a) {
			continue
		}
		if r, ok := textOfValue(a, in, true); ok {
			fc.Args[i] = r
			changed = true
		}
	}
	return changed
}
