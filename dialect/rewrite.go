package dialect

// The statement-level rewrite: PostgreSQL's syntax and functions the
// engine spells otherwise, changed node by node in a parse tree.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"tsdb/internal/pgdatetime"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// IsOIDAlias reports whether a type is one of PostgreSQL's OID alias
// types (regclass, oid, …): a cast to one keeps the value (an OID) as it
// is.
func IsOIDAlias(name string) bool { return oidAliasTypes[name] }

var oidAliasTypes = map[string]bool{
	"regclass": true, "regtype": true, "regproc": true, "regnamespace": true,
	"oid": true, "regrole": true, "name": true, "regconfig": true,
}

// extractTemplates compute the fields of extract and date_part whose
// meaning differs from DuckDB's, with DuckDB's own functions (a template
// must not hold what RewritePG rewrites again).
var extractTemplates = map[string]string{
	// PostgreSQL's seconds have their fraction (7.25); DuckDB's second is
	// a whole number. Its microsecond counts from the minute, as
	// PostgreSQL's microseconds do.
	"second": "microsecond(_tsdb_arg1) / 1000000.0",
	// PostgreSQL has no year 0: 1 BC is year -1. DuckDB counts
	// astronomically (1 BC is 0). An interval's years are a count.
	// (typeof is constant; both branches bind for dates, timestamps and
	// intervals alike.)
	"year":    "(CASE WHEN typeof(_tsdb_arg1) <> 'INTERVAL' AND year(_tsdb_arg1) <= 0 THEN year(_tsdb_arg1) - 1 ELSE year(_tsdb_arg1) END)",
	"isoyear": "(CASE WHEN isoyear(_tsdb_arg1) <= 0 THEN isoyear(_tsdb_arg1) - 1 ELSE isoyear(_tsdb_arg1) END)",
	// A BC decade counts down from the year before 1 BC as PostgreSQL's
	// timestamp_part does (2 BC is decade -1, 12 BC is -2).
	"decade": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' OR year(_tsdb_arg1) > 0 THEN decade(_tsdb_arg1) ELSE -((8 - (year(_tsdb_arg1) - 1)) // 10) END)",
	// The rest only for infinite values (infiniteFields).
	"epoch":      "epoch(_tsdb_arg1)",
	"julian":     "julian(_tsdb_arg1)",
	"century":    "century(_tsdb_arg1)",
	"millennium": "millennium(_tsdb_arg1)",
}

// fieldAliases are the other names PostgreSQL takes for a field.
var fieldAliases = map[string]string{
	"seconds": "second", "sec": "second", "secs": "second", "s": "second",
	"years": "year", "y": "year", "yr": "year", "yrs": "year",
	"decades": "decade", "dec": "decade", "decs": "decade",
	"centuries": "century", "c": "century", "cent": "century",
	"millenniums": "millennium", "millennia": "millennium", "mil": "millennium", "mils": "millennium",
	"j": "julian",
}

// infiniteFields are the fields PostgreSQL gives ±Infinity for an infinite
// date or timestamp (the others are NULL there, as in DuckDB, which gives
// NULL for all).
var infiniteFields = map[string]bool{"epoch": true, "julian": true, "year": true, "isoyear": true, "decade": true, "century": true, "millennium": true}

// extractField rewrites extract(field FROM x) or date_part(field, x) when
// DuckDB's answer would differ from PostgreSQL's.
func extractField(field string, x *pg_query.Node) (*pg_query.Node, bool) {
	if a, ok := fieldAliases[field]; ok {
		field = a
	}
	t, ok := extractTemplates[field]
	if !ok {
		return nil, false
	}
	if infiniteFields[field] {
		// DuckDB's NULL for a value that is not NULL means the value is
		// infinite; its text says which way.
		t = "coalesce(" + t + ", CASE WHEN _tsdb_arg1 IS NOT NULL THEN CASE WHEN starts_with(CAST(_tsdb_arg1 AS VARCHAR), '-') THEN CAST('-Infinity' AS DOUBLE) ELSE CAST('Infinity' AS DOUBLE) END END)"
	}
	r, err := sqltree.Template(t, x)
	return r, err == nil
}

// truncTemplates are date_trunc's fields whose meaning differs from
// DuckDB's.
var truncTemplates = map[string]string{
	// PostgreSQL's centuries and millennia begin with year 1 (1901-01-01,
	// 1001-01-01); DuckDB's with year 0. An interval's are counts, as
	// DuckDB's (datetrunc is date_trunc by a name not rewritten again).
	"century":    "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN datetrunc('century', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(((year(_tsdb_arg1) - 1) % 100 + 100) % 100 AS INTEGER)) END)",
	"millennium": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN datetrunc('millennium', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(((year(_tsdb_arg1) - 1) % 1000 + 1000) % 1000 AS INTEGER)) END)",
	// A BC decade as PostgreSQL's timestamp_trunc counts it (2 BC is in
	// the decade beginning 11 BC).
	"decade": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' OR year(_tsdb_arg1) > 0 THEN datetrunc('decade', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(year(_tsdb_arg1) + ((8 - (year(_tsdb_arg1) - 1)) // 10) * 10 AS INTEGER)) END)",
}

// RewriteTree applies RewritePG to every node under m, reading date and
// time constants as in describes (the session's TimeZone, DateStyle and
// IntervalStyle). Statements that do not go through the planner's
// rewriteSession (DELETE, UPDATE, INSERT … SELECT, EXPLAIN, RETURNING) get
// it too, so that a WHERE clause means in them what it means in a SELECT,
// and a logged DML statement replays with that meaning.
func RewriteTree(m protoreflect.Message, in Input) {
	sqltree.ReplaceNodes(m, func(n *pg_query.Node) *pg_query.Node {
		r, _ := RewritePG(n, in)
		return r
	})
}

// RewritePG adapts PostgreSQL-only syntax in a tree for the engine:
// OPERATOR(pg_catalog.~) becomes ~, COLLATE clauses go, ::regclass and
// similar OID-alias casts become plain values, and pg_catalog functions
// map to tsdb's macros, date and time constants are read by PostgreSQL's
// rules as in describes. It reports whether anything changed.
func RewritePG(n *pg_query.Node, in Input) (*pg_query.Node, bool) {
	switch {
	case n.GetResTarget() != nil:
		rt := n.GetResTarget()
		if fc := rt.Val.GetFuncCall(); fc != nil && sqltree.LastName(fc.Funcname) == "regexp_matches" && (len(fc.Args) == 2 || len(fc.Args) == 3) {
			var flags *pg_query.Node
			if len(fc.Args) == 3 {
				flags = fc.Args[2]
			}
			if r, ok := RegexpMatches(fc.Args[0], fc.Args[1], flags); ok {
				return &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
					Name: rt.Name, Location: rt.Location, Val: r}}}, true
			}
		}
		if sqltree.LastName(rt.Val.GetFuncCall().GetFuncname()) == "generate_series" {
			// In a select list PostgreSQL's generate_series gives a row
			// per value; DuckDB's gives one list. Unnested, it gives the
			// rows. (In UPDATE … SET both refuse it.)
			return &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
				Name: rt.Name, Location: rt.Location,
				Val: pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unnest")}, []*pg_query.Node{rt.Val}, rt.Location),
			}}}, true
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if r, ok := AnyOfArrayText(e); ok {
			return r, true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && sqltree.LastName(e.Name) == "#" {
			// # is PostgreSQL's bitwise exclusive or.
			return call("xor", e.Lexpr, e.Rexpr), true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && sqltree.LastName(e.Name) == "^" {
			// ^ is power, with power's errors.
			return call("_tsdb_power", e.Lexpr, e.Rexpr), true
		}
		if e.Lexpr == nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && len(e.Name) >= 1 {
			// PostgreSQL's prefix square and cube root operators.
			fn := map[string]string{"|/": "_tsdb_sqrt", "||/": "cbrt"}[sqltree.LastName(e.Name)]
			if fn != "" {
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(fn)}, []*pg_query.Node{e.Rexpr}, e.Location), true
			}
			if tc := e.Rexpr.GetTypeCast(); tc != nil && sqltree.LastName(e.Name) == "-" {
				// The engine folds the negation of a constant integer
				// into a wider type when it overflows (-(-2^63::int8) was
				// 2^63, a numeric); PostgreSQL says "bigint out of range".
				// 0 - x keeps the type and overflows as PostgreSQL does.
				switch t := sqltree.LastName(tc.TypeName.GetNames()); t {
				case "int2", "int4", "int8", "smallint", "integer", "bigint":
					return &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
						Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: e.Name,
						Lexpr: sqltree.Cast(pg_query.MakeAConstIntNode(0, e.Location), t), Rexpr: e.Rexpr, Location: e.Location,
					}}}, true
				}
			}
		}
		if len(e.Name) == 2 && strings.EqualFold(e.Name[0].GetString_().GetSval(), "pg_catalog") {
			e.Name = e.Name[1:]
			return nil, true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_SIMILAR {
			if r, ok := similarTo(e); ok {
				return r, true
			}
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_LIKE || e.Kind == pg_query.A_Expr_Kind_AEXPR_ILIKE {
			if r, ok := likeEscape(e); ok {
				return r, true
			}
		}
		if sym := e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM; sym || e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM {
			// a BETWEEN SYMMETRIC x AND y is (a BETWEEN x AND y) OR
			// (a BETWEEN y AND x), as PostgreSQL expands it; DuckDB
			// has no SYMMETRIC.
			bounds := e.Rexpr.GetList().GetItems()
			if len(bounds) != 2 {
				return nil, false
			}
			between := func(lo, hi *pg_query.Node) *pg_query.Node {
				return &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
					Kind: pg_query.A_Expr_Kind_AEXPR_BETWEEN, Name: []*pg_query.Node{pg_query.MakeStrNode("BETWEEN")},
					Lexpr: proto.Clone(e.Lexpr).(*pg_query.Node), Rexpr: pg_query.MakeListNode([]*pg_query.Node{lo, hi}), Location: e.Location,
				}}}
			}
			either := pg_query.MakeBoolExprNode(pg_query.BoolExprType_OR_EXPR, []*pg_query.Node{
				between(bounds[0], bounds[1]),
				between(proto.Clone(bounds[1]).(*pg_query.Node), proto.Clone(bounds[0]).(*pg_query.Node)),
			}, e.Location)
			if sym {
				return either, true
			}
			return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{either}, e.Location), true
		}
	case n.GetCollateClause() != nil:
		return n.GetCollateClause().Arg, true
	case n.GetSortBy() != nil && n.GetSortBy().SortbyDir == pg_query.SortByDir_SORTBY_USING:
		// ORDER BY x USING < is ascending and USING > descending with
		// the types' default orderings, which are the engine's.
		sb := n.GetSortBy()
		switch sqltree.LastName(sb.UseOp) {
		case "<", "<=":
			sb.SortbyDir = pg_query.SortByDir_SORTBY_ASC
		case ">", ">=":
			sb.SortbyDir = pg_query.SortByDir_SORTBY_DESC
		default:
			sb.SortbyDir = pg_query.SortByDir_SORTBY_DEFAULT
			sb.Node = Raise(sqlerr.FeatureNotSupported, "ORDER BY … USING supports the operators < and > only")
		}
		sb.UseOp = nil
		return nil, true
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		if r, ok := CharacterCast(tc, false); ok {
			return r, true
		}
		if r, ok := intervalTextCast(tc, in); ok {
			return r, true
		}
		if tn := sqltree.LastName(tc.TypeName.GetNames()); (tn == "timestamptz" || tn == "timestamp") && len(tc.TypeName.GetTypmods()) == 1 {
			// timestamp(p): PostgreSQL rounds to p fractional digits;
			// DuckDB's types take no precision.
			p := tc.TypeName.Typmods[0].GetAConst().GetIval()
			if p == nil || p.Ival < 0 {
				return Raise(sqlerr.InvalidParameterValue, "TIMESTAMP precision must not be negative"), true
			}
			tc.TypeName.Typmods = nil
			if p.Ival >= 6 {
				return nil, true
			}
			scale := int64(1)
			for range 6 - p.Ival {
				scale *= 10
			}
			r, err := sqltree.Template(fmt.Sprintf("_tsdb_round_ts(_tsdb_arg1, %d)", scale), n)
			if err == nil {
				return r, true
			}
		}
		if sqltree.LastName(tc.TypeName.GetNames()) == "interval" && len(tc.TypeName.GetTypmods()) > 0 && tc.Arg.GetAConst().GetSval() == nil {
			return intervalTruncation(tc), true
		}
		if !IsISOLiteral(tc) {
			// Refused input fails the statement when it runs.
			r, ok, err := DateTimeLiteral(tc, in)
			if err != nil {
				var se *sqlerr.Error
				if errors.As(err, &se) {
					return Raise(se.Code, se.Message), true
				}
				return Raise(sqlerr.InvalidDatetimeFormat, err.Error()), true
			}
			if ok {
				return r, true
			}
		}
		if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
			bits := map[string]int{"float8": 64, "float4": 32}[sqltree.LastName(tc.TypeName.GetNames())]
			if bits > 0 {
				if err := FloatInputError(sv.Sval, bits); err != nil {
					return Raise(sqlerr.NumericOutOfRange, err.(*sqlerr.Error).Message), true
				}
			}
		}
		if sv := tc.Arg.GetAConst().GetSval(); sv != nil && len(tc.TypeName.GetArrayBounds()) > 0 {
			// '{1,2}'::int[]: PostgreSQL's array text; the engine reads
			// only its own list text.
			elems, err := ParseArrayText(sv.Sval)
			if err != nil {
				return Raise(sqlerr.InvalidTextRep, fmt.Sprintf("malformed array literal: %q", sv.Sval)), true
			}
			tc.Arg = elems
			return nil, true
		}
		switch name := sqltree.LastName(tc.TypeName.GetNames()); {
		case oidAliasTypes[name]:
			arg := tc.Arg
			for arg.GetTypeCast() != nil && oidAliasTypes[sqltree.LastName(arg.GetTypeCast().TypeName.GetNames())] {
				arg = arg.GetTypeCast().Arg
			}
			return arg, true
		case name == "bytea":
			// '\x00ff'::bytea is PostgreSQL's hex format; DuckDB reads only
			// \x00 as a byte escape and "ff" as two letters.
			if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
				b, err := ParseBytea(sv.Sval)
				if err != nil {
					code := sqlerr.InvalidTextRep
					if c := sqlerr.Code(err); c != sqlerr.InternalError {
						code = c
					}
					return Raise(code, err.Error()), true
				}
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unhex")},
					[]*pg_query.Node{pg_query.MakeAConstStrNode(hex.EncodeToString(b), -1)}, -1), true
			}
			if tc.Arg.GetAConst() == nil {
				// Text converted at run time, by the same rules.
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_bytea")}, []*pg_query.Node{tc.Arg}, -1), true
			}
		case (name == "numeric" || name == "decimal") && tc.Arg.GetAConst().GetSval() != nil && specialNumeric(tc.Arg.GetAConst().GetSval().Sval):
			// PostgreSQL's numeric has NaN and ±Infinity; the engine's
			// decimal has neither. The double that has them stands in.
			tc.TypeName = &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("float8")}, Typemod: -1}
			return nil, true
		case name == "numeric" || name == "decimal":
			if len(tc.TypeName.Typmods) == 0 {
				// PostgreSQL's numeric without precision keeps any value;
				// DuckDB's is DECIMAL(18,3) and silently rounds to 3 places
				// (1.23456::numeric was 1.235). 38 digits, 10 after the
				// point, keep what metrics and round(x::numeric, n) need.
				tc.TypeName.Typmods = []*pg_query.Node{pg_query.MakeAConstIntNode(38, -1), pg_query.MakeAConstIntNode(10, -1)}
				return nil, true
			}
		}
		if names := tc.TypeName.GetNames(); len(names) == 2 && strings.EqualFold(names[0].GetString_().GetSval(), "pg_catalog") {
			tc.TypeName.Names = names[1:]
			return nil, true
		}
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		name := sqltree.LastName(fc.Funcname)
		if name == "extract" && len(fc.Args) == 2 && fc.Funcformat == pg_query.CoercionForm_COERCE_SQL_SYNTAX {
			// EXTRACT(field FROM date) has no time-of-day fields in
			// PostgreSQL; the engine answers 0.
			if tc := fc.Args[1].GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "date" {
				if f := fc.Args[0].GetAConst().GetSval(); f != nil {
					switch field := strings.ToLower(f.Sval); field {
					case "microseconds", "milliseconds", "second", "minute", "hour", "timezone", "timezone_hour", "timezone_minute":
						return Raise(sqlerr.FeatureNotSupported, fmt.Sprintf("unit %q not supported for type date", field)), true
					}
				}
			}
		}
		if (name == "extract" || name == "date_part") && len(fc.Args) == 2 {
			if f := fc.Args[0].GetAConst().GetSval(); f != nil {
				if r, ok := extractField(strings.ToLower(f.Sval), fc.Args[1]); ok {
					return r, true
				}
			}
		}
		if name == "string_agg" && len(fc.Args) == 2 && sqltree.LastName(fc.Args[0].GetFuncCall().GetFuncname()) != "_tsdb_not_bytea" && fc.Args[1].GetCoalesceExpr() == nil {
			// PostgreSQL's string_agg of bytea returns bytea; the engine
			// casts the bytes to text and returns that (\xFF for 0xff):
			// refused. A NULL delimiter is no delimiter.
			if !fc.AggDistinct {
				// (DISTINCT needs its ORDER BY among the arguments as
				// written.)
				fc.Args[0] = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_not_bytea")}, []*pg_query.Node{fc.Args[0]}, -1)
			}
			if fc.Args[1].GetAConst() == nil || fc.Args[1].GetAConst().Isnull {
				fc.Args[1] = &pg_query.Node{Node: &pg_query.Node_CoalesceExpr{CoalesceExpr: &pg_query.CoalesceExpr{Args: []*pg_query.Node{fc.Args[1], pg_query.MakeAConstStrNode("", -1)}}}}
			}
			return n, true
		}
		if name == "encode" && len(fc.Args) == 2 && fc.Args[0].GetAConst().GetSval() != nil {
			// A string given for encode's bytea is bytea input.
			fc.Args[0] = sqltree.Cast(fc.Args[0], "bytea")
		}
		if name == "regexp_matches" {
			// DuckDB's function of that name tests for a match; PostgreSQL's
			// returns the groups, a row per match. Only its select-list
			// form without flags is translated (above).
			return Raise(sqlerr.FeatureNotSupported, "regexp_matches is supported only in a select list and without flags; use regexp_extract or ~"), true
		}
		if name == "substring" && len(fc.Args) == 2 && fc.Args[1].GetAConst().GetSval() != nil {
			// substring(s FROM 'pattern') is PostgreSQL's regular
			// expression form: the first parenthesized group's match, or
			// the whole match.
			group := 0
			if RegexGroups(fc.Args[1].GetAConst().GetSval().Sval) > 0 {
				group = 1
			}
			// The engine gives '' for a group that took no part in the
			// match, where PostgreSQL gives NULL: an empty group is NULL.
			r, err := sqltree.Template(fmt.Sprintf("CASE WHEN _tsdb_re_match(_tsdb_arg1, _tsdb_arg2) THEN nullif(regexp_extract(_tsdb_arg1, _tsdb_arg2, %d), '') END", group), fc.Args...)
			if err == nil {
				return r, true
			}
		}
		if (name == "lpad" || name == "rpad") && len(fc.Args) == 2 {
			// PostgreSQL pads with spaces when no fill is given.
			fc.Args = append(fc.Args, pg_query.MakeAConstStrNode(" ", -1))
			return nil, true
		}
		if (name == "substring" || name == "substr") && (len(fc.Args) == 2 || len(fc.Args) == 3) && fc.Args[1].GetAConst().GetSval() == nil {
			// PostgreSQL counts a start before the first character as
			// positions that hold nothing (substring('hello' from -1 for 3)
			// is h); DuckDB counts a negative start from the end.
			fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode(fmt.Sprintf("_tsdb_substr%d", len(fc.Args)))}
			fc.Funcformat = pg_query.CoercionForm_COERCE_EXPLICIT_CALL
			return nil, true
		}
		if name == "date_trunc" && len(fc.Args) == 2 {
			if tc := fc.Args[1].GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "date" {
				// PostgreSQL truncates a date as the timestamptz it
				// converts to (midnight in the session's zone), which is
				// the date's truncation as a wall clock there; DuckDB
				// returns a timestamp without zone. (Truncated as a
				// timestamptz, a BC year would meet ICU's era years.)
				fc.Args[1] = sqltree.Cast(fc.Args[1], "timestamp")
				return sqltree.Cast(n, "timestamptz"), true
			}
			if f := fc.Args[0].GetAConst().GetSval(); f != nil {
				if t, ok := truncTemplates[strings.ToLower(f.Sval)]; ok {
					if r, err := sqltree.Template(t, fc.Args[1]); err == nil {
						return r, true
					}
				}
			}
		}
		if name == "date_bin" && len(fc.Args) >= 2 {
			// PostgreSQL refuses to bin into months or years; DuckDB bins.
			arg := fc.Args[0]
			if tc := arg.GetTypeCast(); tc != nil {
				arg = tc.Arg
			}
			if sv := arg.GetAConst().GetSval(); sv != nil {
				iv := strings.ToLower(sv.Sval)
				for _, u := range []string{"mon", "year", "decade", "centur", "millen", "y"} {
					if strings.Contains(iv, u) && (u != "y" || strings.HasPrefix(iv, "p")) {
						return Raise(sqlerr.FeatureNotSupported, "timestamps cannot be binned into intervals containing months or years"), true
					}
				}
			}
		}
		if name == "date_trunc" && len(fc.Args) == 3 {
			// date_trunc(field, t, zone) truncates t as a wall clock
			// in zone shows it: (date_trunc(field, t AT TIME ZONE zone))
			// AT TIME ZONE zone, which is how PostgreSQL defines it.
			zone := fc.Args[2]
			timezone := func(arg *pg_query.Node) *pg_query.Node {
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("timezone")},
					[]*pg_query.Node{proto.Clone(zone).(*pg_query.Node), arg}, fc.Location)
			}
			// The value is a timestamptz, as PostgreSQL's signature casts
			// it: a timestamp given to timezone() would be read as the
			// zone's wall clock instead.
			value := &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
				Arg: fc.Args[1], TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("timestamptz")}, Typemod: -1},
			}}}
			trunc := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("date_trunc")},
				[]*pg_query.Node{fc.Args[0], timezone(value)}, fc.Location)
			return timezone(trunc), true
		}
		if fc.AggWithinGroup {
			if r, ok := hypothetical(fc); ok {
				return r, true
			}
		}
		if strings.HasPrefix(name, "justify_") && len(fc.Args) == 1 {
			return justify(name, fc.Args[0], in), true
		}
		if (name == "regexp_split_to_array" || name == "regexp_split_to_table") && (len(fc.Args) == 2 || len(fc.Args) == 3) {
			return regexpSplit(name, fc), true
		}
		if _, ok := regexpArgs[name]; ok {
			if r, ok := regexpFunction(fc); ok {
				return r, true
			}
		}
		if name == "count" && len(fc.Args) == 0 && !fc.AggStar && len(fc.Funcname) == 1 {
			// The engine reads count() as count(*); PostgreSQL refuses it.
			return Raise("42809", "count(*) must be used to call a parameterless aggregate function"), true
		}
		if name == "nth_value" && len(fc.Args) == 2 && fc.Over != nil {
			if c := fc.Args[1].GetAConst(); c != nil && c.GetIval() != nil && c.GetIval().Ival <= 0 {
				// The engine answers NULL.
				return Raise("22016", "argument of nth_value must be greater than zero"), true
			}
		}
		if (name == "lead" || name == "lag") && len(fc.Args) == 3 && fc.Over != nil && len(fc.Funcname) == 1 {
			// PostgreSQL's lead/lag(value, n, default) return the common
			// type of value and default (lead(int, 1, -1.4) is numeric,
			// -1.4); DuckDB casts the default to value's type (-1). A
			// CASE that never takes its first branch has that common type
			// and value's value.
			if r, err := sqltree.Template("CASE WHEN false THEN _tsdb_arg1 ELSE _tsdb_arg2 END", fc.Args[2], fc.Args[0]); err == nil {
				fc.Args[0] = r
				return nil, true
			}
		}
		if (name == "var_pop" || name == "stddev_pop") && len(fc.Args) == 1 && len(fc.Funcname) == 1 {
			return popVariance(fc), true
		}
		if name == "make_timestamptz" && len(fc.Args) == 7 {
			if r, changed := makeTimestamptzZone(fc); changed {
				return r, true
			}
		}
		if name == "timezone" && len(fc.Args) == 2 {
			if r, changed := atTimeZone(fc); changed {
				return r, true
			}
		}
		if name == "log" && len(fc.Args) == 1 {
			fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tsdb_log10")}
			return nil, true
		}
		if to, ok := pgFunctions[name]; ok {
			fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode(to)}
			return nil, true
		}
		// Functions written in SQL syntax (TRIM(…), EXTRACT(…), …) are
		// pg_catalog functions the deparser prints back as syntax.
		if len(fc.Funcname) == 2 && strings.EqualFold(fc.Funcname[0].GetString_().GetSval(), "pg_catalog") && fc.Funcformat != pg_query.CoercionForm_COERCE_SQL_SYNTAX {
			fc.Funcname = fc.Funcname[1:]
			return nil, true
		}
	}
	return nil, false
}

// likeEscape rewrites a LIKE for PostgreSQL's escape character: a
// backslash escapes the next character unless ESCAPE names another, while
// DuckDB's LIKE has no escape character unless told. Only a constant
// pattern without a backslash (and without ESCAPE) means the same to both;
// it is left alone, so DuckDB keeps its LIKE optimizations for it.
func likeEscape(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	op := sqltree.LastName(e.Name)
	var fn string
	switch op {
	case "~~", "!~~":
		fn = "like_escape"
	case "~~*", "!~~*":
		fn = "ilike_escape"
	default:
		return nil, false
	}
	pattern, escape := e.Rexpr, pg_query.MakeAConstStrNode(`\`, -1)
	if f := e.Rexpr.GetFuncCall(); f != nil && sqltree.LastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
		pattern, escape = f.Args[0], f.Args[1]
	} else if sv := e.Rexpr.GetAConst().GetSval(); sv != nil && !strings.Contains(sv.Sval, `\`) {
		return nil, false
	}
	call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(fn)}, []*pg_query.Node{e.Lexpr, pattern, escape}, e.Location)
	if strings.HasPrefix(op, "!") {
		return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{call}, e.Location), true
	}
	return call, true
}

// similarTo rewrites a SIMILAR TO with a constant pattern into the
// regular expression it means: DuckDB reads the pattern as a regular
// expression as it stands, where % and _ are no wildcards and . is one.
// Other patterns are left to DuckDB.
func similarTo(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	op := sqltree.LastName(e.Name)
	f := e.Rexpr.GetFuncCall()
	if (op != "~" && op != "!~") || f == nil || len(f.Args) == 0 {
		return nil, false
	}
	pattern := f.Args[0].GetAConst().GetSval()
	escape := `\`
	if len(f.Args) == 2 {
		sv := f.Args[1].GetAConst().GetSval()
		if sv == nil || len(sv.Sval) > 1 {
			return nil, false
		}
		escape = sv.Sval // ESCAPE '': no escape character at all
	}
	if pattern == nil {
		return nil, false
	}
	var re strings.Builder
	re.WriteString("^(?:")
	for i := 0; i < len(pattern.Sval); i++ {
		c := pattern.Sval[i]
		switch {
		case string(c) == escape && i+1 < len(pattern.Sval):
			i++
			re.WriteString(regexp.QuoteMeta(pattern.Sval[i : i+1]))
		case c == '%':
			re.WriteString("(?s:.*)")
		case c == '_':
			re.WriteString("(?s:.)")
		case c == '.' || c == '^' || c == '$' || c == '\\':
			re.WriteByte('\\')
			re.WriteByte(c)
		default:
			re.WriteByte(c)
		}
	}
	re.WriteString(")$")
	call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("regexp_full_match")},
		[]*pg_query.Node{e.Lexpr, pg_query.MakeAConstStrNode(re.String(), -1)}, e.Location)
	if op == "!~" {
		return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{call}, e.Location), true
	}
	return call, true
}

// ParseBytea reads PostgreSQL's bytea input: the hex format (\x and pairs
// of hex digits, with whitespace between pairs) or the escape format
// (\\ for a backslash, \ and three octal digits for a byte).
func ParseBytea(s string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(s, `\x`); ok {
		var out []byte
		for i := 0; i < len(rest); {
			c := rest[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			b, err := hex.DecodeString(rest[i:min(i+2, len(rest))])
			switch {
			case err != nil && !errors.Is(err, hex.ErrLength):
				bad := rest[i : i+1]
				if _, err := hex.DecodeString(bad + "0"); err == nil {
					bad = rest[i+1 : i+2]
				}
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %q", bad)
			case err != nil:
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			out = append(out, b[0])
			i += 2
		}
		return out, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return out, nil
}

// UTCInput reads date and time text as a session with PostgreSQL's
// defaults and TimeZone UTC does, now meaning now.
func UTCInput() Input { return Input{Loc: time.UTC, Order: pgdatetime.MDY, Now: time.Now()} }

// popVariance answers var_pop(x) and stddev_pop(x) of a single infinite
// or NaN value with NaN, as PostgreSQL's does; the engine answers 0. The
// engine's own function is called as main.var_pop, which this rewrite
// leaves alone. The count and max share the call's FILTER, DISTINCT and
// window.
func popVariance(fc *pg_query.FuncCall) *pg_query.Node {
	name := sqltree.LastName(fc.Funcname)
	agg := func(fn string, arg *pg_query.Node) *pg_query.Node {
		c := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode(fn)}, Args: []*pg_query.Node{arg},
			AggFilter: fc.AggFilter, AggDistinct: fc.AggDistinct, Over: fc.Over, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL, Location: fc.Location}
		return proto.Clone(&pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: c}}).(*pg_query.Node)
	}
	x := fc.Args[0]
	engine := proto.Clone(fc).(*pg_query.FuncCall)
	engine.Funcname = []*pg_query.Node{pg_query.MakeStrNode("main"), pg_query.MakeStrNode(name)}
	cond := pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{
		pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")}, agg("count", proto.Clone(x).(*pg_query.Node)), pg_query.MakeAConstIntNode(1, -1), -1),
		pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{
			pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("isfinite")}, []*pg_query.Node{agg("max", sqltree.Cast(proto.Clone(x).(*pg_query.Node), "float8"))}, -1),
		}, -1),
	}, -1)
	return &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{
		Args: []*pg_query.Node{{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{
			Expr: cond, Result: sqltree.Cast(pg_query.MakeAConstStrNode("NaN", -1), "float8")}}}},
		Defresult: &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: engine}},
	}}}
}

// specialNumeric reports whether s is numeric input for NaN or an
// infinity.
func specialNumeric(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf":
		return true
	}
	return false
}

// intervalTextCast writes an interval cast to text as PostgreSQL does, in
// the session's IntervalStyle ('3 mons 2 days'); the engine's cast writes
// its own words ('3 months 2 days'). Whether the value is an interval is
// the engine's to say (typeof is constant for a query), so every cast to
// text or varchar becomes a CASE on it; the engine's own cast, for every
// other type, is written as STRING, which this rewrite does not match.
func intervalTextCast(tc *pg_query.TypeCast, in Input) (*pg_query.Node, bool) {
	tn := sqltree.LastName(tc.TypeName.GetNames())
	if (tn != "text" && tn != "varchar") || len(tc.TypeName.GetTypmods()) > 0 || len(tc.TypeName.GetArrayBounds()) > 0 {
		return nil, false
	}
	if c := tc.Arg.GetAConst(); c != nil {
		return nil, false // a constant is no interval
	}
	r, err := sqltree.Template(fmt.Sprintf("CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN _tsdb_interval_text(_tsdb_arg1, %d) ELSE CAST(_tsdb_arg1 AS STRING) END", int(in.Intervals)), tc.Arg)
	return r, err == nil
}
