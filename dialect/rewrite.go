package dialect

// The statement-level rewrite: PostgreSQL's syntax and functions the
// engine spells otherwise, changed node by node in a parse tree.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
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
	TypedRaises(m)
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
		if r, ok := unknownIntegerOperand(e); ok {
			return r, true
		}
		if r, ok := concatText(e, in); ok {
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
	case n.GetAConst().GetBsval() != nil:
		// B'101' and X'1F' are PostgreSQL's bit strings; the engine reads
		// X'1F' as bytes, and bit strings are not among tsdb's types.
		return Raise(sqlerr.FeatureNotSupported, "bit string constants are not supported"), true
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		if tn := sqltree.LastName(tc.TypeName.GetNames()); tn == "bit" || tn == "varbit" {
			// PostgreSQL's bit is bit(1) and truncates; the engine's BIT
			// keeps every digit.
			return Raise(sqlerr.FeatureNotSupported, "type "+tn+" is not supported"), true
		}
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
					// Typed, so that a function of it raises it
					// (TypedRaises); "blob" is not rewritten again.
					return sqltree.Cast(Raise(code, err.Error()), "blob"), true
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
				// A number literal keeps its own scale, as PostgreSQL's
				// value does (1.50::numeric is 1.50, 0.0::numeric 0.0),
				// where 10 places would print trimmed (1.5, 0).
				scale := int64(10)
				if s, ok := literalOwnScale(tc.Arg); ok {
					scale = int64(s)
				}
				tc.TypeName.Typmods = []*pg_query.Node{pg_query.MakeAConstIntNode(38, -1), pg_query.MakeAConstIntNode(scale, -1)}
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
		if name == "substring" && len(fc.Args) == 3 && (isStringOrNull(fc.Args[1]) && isStringOrNull(fc.Args[2]) &&
			(fc.Args[1].GetAConst().GetSval() != nil || fc.Args[2].GetAConst().GetSval() != nil)) {
			// substring(s SIMILAR pattern ESCAPE e), also written
			// substring(s FROM pattern FOR e): text arguments.
			return call("_tsdb_substring_similar", fc.Args...), true
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
		if (name == "concat" || name == "concat_ws") && fc.Over == nil && concatArgs(fc, in) {
			return nil, true
		}
		if strings.HasPrefix(name, "justify_") && len(fc.Args) == 1 {
			return justify(name, fc.Args[0], in), true
		}
		if (name == "regexp_split_to_array" || name == "regexp_split_to_table") && (len(fc.Args) == 2 || len(fc.Args) == 3) {
			return regexpSplit(name, fc), true
		}
		if name == "regexp_replace" || name == "regexp_instr" {
			if r, ok := goRegexpCall(name, fc); ok {
				return r, true
			}
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
	r, err := sqltree.Template(fmt.Sprintf(`CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN _tsdb_interval_text(_tsdb_arg1, %d)
		WHEN typeof(_tsdb_arg1) IN ('DOUBLE', 'FLOAT') THEN _tsdb_float_text(_tsdb_arg1, %d)
		%s ELSE CAST(_tsdb_arg1 AS STRING) END`, int(in.Intervals), in.FloatDigits, boolean), x)
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
	convertible := textConvertible
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

// unknownIntegerOperand answers arithmetic with a quoted integer (f1 *
// '-1'): PostgreSQL reads the literal as the other operand's type, the
// engine cannot choose an operator for a string. A quoted integer means
// the same as the integer to every type the operators take (an integer
// operand keeps an integer result, a float a float). Other quoted numbers
// are left alone: '1.5' is an error for an integer in PostgreSQL.
func unknownIntegerOperand(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
		return nil, false
	}
	switch sqltree.LastName(e.Name) {
	case "+", "-", "*", "/", "%":
	default:
		return nil, false
	}
	integer := func(n *pg_query.Node) (*pg_query.Node, bool) {
		sv := n.GetAConst().GetSval()
		if sv == nil {
			return nil, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(sv.Sval), 10, 64)
		if err != nil {
			return nil, false
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return pg_query.MakeAConstIntNode(v, -1), true
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(strconv.FormatInt(v, 10), -1), "int8"), true
	}
	l, r := e.Lexpr, e.Rexpr
	if e.Lexpr.GetAConst().GetSval() != nil && e.Rexpr.GetAConst().GetSval() != nil {
		return nil, false // unknown with unknown: PostgreSQL refuses most
	}
	// A date, time or interval operand of + and - reads the literal as
	// its own type, where an integer is no valid input.
	additive := sqltree.LastName(e.Name) == "+" || sqltree.LastName(e.Name) == "-"
	temporal := func(n *pg_query.Node) bool {
		if !additive {
			return false // interval * '2' is interval * float8
		}
		switch sqltree.LastName(n.GetTypeCast().GetTypeName().GetNames()) {
		case "date", "timestamp", "timestamptz", "time", "timetz", "interval":
			return true
		}
		return false
	}
	if v, ok := integer(l); ok && !temporal(r) {
		l = v
	} else if v, ok := integer(r); ok && !temporal(l) {
		r = v
	} else {
		return nil, false
	}
	return pg_query.MakeAExprNode(e.Kind, e.Name, l, r, e.Location), true
}

// literalOwnScale is the scale a number literal is written with (1.50:
// 2, 7: 0), when DECIMAL(38, that scale) holds it: at most 10 places,
// no exponent.
func literalOwnScale(n *pg_query.Node) (int, bool) {
	c := n.GetAConst()
	switch {
	case c == nil:
		return 0, false
	case c.GetIval() != nil:
		return 0, true
	case c.GetFval() != nil:
		text := strings.TrimLeft(c.GetFval().Fval, "+-")
		if strings.ContainsAny(text, "eE") {
			return 0, false
		}
		whole, frac, _ := strings.Cut(text, ".")
		if len(frac) > 10 || len(strings.TrimLeft(whole, "0"))+len(frac) > 38 {
			return 0, false
		}
		return len(frac), true
	}
	return 0, false
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
