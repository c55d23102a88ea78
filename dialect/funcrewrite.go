package dialect

import (
	"fmt"
	"math"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// numericMathNames are the functions NumericMath answers.
var numericMathNames = map[string]bool{"sqrt": true, "exp": true, "ln": true, "log": true, "log10": true}

// rewriteFuncCall is RewritePG of a function call: PostgreSQL's
// functions where the engine lacks them, names them otherwise or answers
// differently.
func rewriteFuncCall(n *pg_query.Node, in Input) (*pg_query.Node, bool) {
	fc := n.GetFuncCall()
	name := sqltree.LastName(fc.Funcname)
	if (name == "num_nulls" || name == "num_nonnulls") && len(fc.Args) > 0 && fc.Over == nil && len(fc.Funcname) == 1 && ExpandVariadic(fc) {
		// PostgreSQL's counts of NULL and non-NULL arguments (the
		// elements of a VARIADIC array written out), which the engine
		// lacks: a sum of one CASE per argument.
		if r := countNulls(fc.Args, name == "num_nulls"); r != nil {
			return r, true
		}
	}
	if fc.FuncVariadic {
		if !ExpandVariadic(fc) {
			return Raise(sqlerr.FeatureNotSupported, "VARIADIC of an array that is not written out (ARRAY[…]) is not supported"), true
		}
		return nil, true
	}
	if name == "set_bit" && len(fc.Args) == 3 && len(fc.Funcname) == 1 && isBitExpr(fc.Args[0]) {
		// The engine's set_bit of a BIT; set_bit of anything else is
		// bytea's (pgFunctions).
		return call("_tsdb_set_bit_bits", fc.Args...), true
	}
	if castFunctions[name] && len(fc.Args) == 1 && fc.Over == nil && !fc.AggStar && !fc.AggDistinct && fc.AggFilter == nil &&
		len(fc.AggOrder) == 0 && !fc.FuncVariadic && (len(fc.Funcname) == 1 || strings.EqualFold(fc.Funcname[0].GetString_().GetSval(), "pg_catalog")) {
		// PostgreSQL's cast functions carry their type's name
		// (float8(x), int4(x), text(x)); the engine has none of them.
		return sqltree.Cast(fc.Args[0], name), true
	}
	if numericMathNames[name] && fc.Over == nil && !fc.AggStar && !fc.AggDistinct && fc.AggFilter == nil && len(fc.AggOrder) == 0 &&
		(len(fc.Funcname) == 1 || strings.EqualFold(fc.Funcname[0].GetString_().GetSval(), "pg_catalog")) {
		// Of numeric constants: the numeric PostgreSQL computes.
		if text, ok, err := NumericMath(name, fc.Args); ok {
			if err != nil {
				return raiseError(err), true
			}
			return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: text}}}}}, true
		}
	}
	if (name == "to_timestamp" || name == "to_date") && len(fc.Args) == 2 && len(fc.Funcname) == 1 {
		// Text read by a template, in Go (pgdatetime.ToTimestamp).
		if name == "to_date" {
			return call("_tsdb_to_date", fc.Args[0], fc.Args[1]), true
		}
		zone := "UTC"
		if in.Loc != nil {
			zone = in.Loc.String()
		}
		return call("_tsdb_to_timestamp", fc.Args[0], fc.Args[1], pg_query.MakeAConstStrNode(zone, -1)), true
	}
	if name == "to_timestamp" && len(fc.Args) == 1 && len(fc.Funcname) == 1 {
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tsdb_to_timestamp1")}
		return nil, true
	}
	if name == "generate_series" && len(fc.Args) == 3 && isDateCast(fc.Args[0]) && isDateCast(fc.Args[1]) {
		// A series of dates by an interval is PostgreSQL's series of
		// timestamptz (its dates cast so); the engine's is of timestamps.
		fc.Args[0], fc.Args[1] = sqltree.Cast(fc.Args[0], "timestamptz"), sqltree.Cast(fc.Args[1], "timestamptz")
		return n, true
	}
	if name == "array_to_string" && (len(fc.Args) == 2 || len(fc.Args) == 3) && len(fc.Funcname) == 1 && fc.Over == nil {
		// The elements as the session writes them: the engine's join
		// wrote a float 2 as 2.0. A NULL null text leaves NULLs out, as
		// no null text does.
		nullText, hasNull := pg_query.MakeAConstStrNode("", -1), boolConst(false)
		if len(fc.Args) == 3 {
			n := fc.Args[2]
			nullText = &pg_query.Node{Node: &pg_query.Node_CoalesceExpr{CoalesceExpr: &pg_query.CoalesceExpr{Args: []*pg_query.Node{n, pg_query.MakeAConstStrNode("", -1)}}}}
			hasNull = &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: proto.Clone(n).(*pg_query.Node), Nulltesttype: pg_query.NullTestType_IS_NOT_NULL}}}
		}
		zone := "UTC"
		if in.Loc != nil {
			zone = in.Loc.String()
		}
		return call("_tsdb_array_join", fc.Args[0], call("typeof", proto.Clone(fc.Args[0]).(*pg_query.Node)), fc.Args[1], nullText, hasNull,
			pg_query.MakeAConstIntNode(int64(in.Dates), -1), pg_query.MakeAConstIntNode(int64(in.Order), -1), pg_query.MakeAConstStrNode(zone, -1),
			pg_query.MakeAConstIntNode(int64(in.Intervals), -1), pg_query.MakeAConstIntNode(int64(in.FloatDigits), -1)), true
	}
	if fc.AggFilter != nil && !fc.AggWithinGroup && guardFiltered(fc) {
		return nil, true
	}
	if (name == "string_agg" || name == "array_agg") && fc.AggDistinct && len(fc.AggOrder) == 0 && len(fc.Args) >= 1 && fc.Over == nil {
		// PostgreSQL sorts a DISTINCT aggregate's input to drop the
		// repeats, so its values come in their order
		// (string_agg(DISTINCT host, ',') is a,b,c); the engine's come in
		// the order of its hash table.
		fc.AggOrder = []*pg_query.Node{{Node: &pg_query.Node_SortBy{SortBy: &pg_query.SortBy{
			Node: proto.Clone(fc.Args[0]).(*pg_query.Node), SortbyDir: pg_query.SortByDir_SORTBY_DEFAULT, SortbyNulls: pg_query.SortByNulls_SORTBY_NULLS_DEFAULT}}}}
		return nil, true
	}
	if name == "every" && len(fc.Funcname) == 1 {
		// every is the SQL standard's name of bool_and.
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("bool_and")}
		return nil, true
	}
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
	if (name == "lpad" || name == "rpad") && len(fc.Args) == 3 && fc.Args[2].GetAConst().GetSval() != nil && fc.Args[2].GetAConst().GetSval().Sval == "" {
		// With an empty fill PostgreSQL only truncates (to the left
		// part, both ways); the engine refuses to pad with nothing.
		if r, err := sqltree.Template("left(_tsdb_arg1, greatest(_tsdb_arg2, 0))", fc.Args[0], fc.Args[1]); err == nil {
			return r, true
		}
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
	if name == "date_bin" && len(fc.Args) == 3 && fc.Args[2].GetAConst().GetSval() != nil {
		// An origin written as a bare string is of the source's type in
		// PostgreSQL; the engine's time_bucket took it for a time zone
		// name ("Unknown TimeZone '2024-01-01'").
		ty := "timestamptz"
		if tc := fc.Args[1].GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "timestamp" {
			ty = "timestamp"
		}
		fc.Args[2] = sqltree.Cast(fc.Args[2], ty)
		return n, true
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
			// PostgreSQL counts the stride in microseconds: one past
			// 64 bits is out of range (the engine binned with it).
			if v, err := pgdatetime.ParseInterval(sv.Sval); err == nil && v.Months == 0 && strideOverflows(int64(v.Days), v.Micros) {
				return Raise(sqlerr.DatetimeOverflow, "interval out of range"), true
			}
		}
	}
	if name == "date_trunc" && len(fc.Args) == 3 {
		// date_trunc(field, t, zone) truncates t as a wall clock
		// in zone shows it: (date_trunc(field, t AT TIME ZONE zone))
		// AT TIME ZONE zone, which is how PostgreSQL defines it.
		zone := fc.Args[2]
		if sv := zone.GetAConst().GetSval(); sv != nil {
			if _, dyn, ok := pgdatetime.Abbreviation(strings.TrimSpace(sv.Sval)); ok && dyn != "" {
				// A dynamic abbreviation (VET, MSK) stands for its zone
				// here: PostgreSQL's date_trunc truncates in the zone it
				// refers to.
				zone = pg_query.MakeAConstStrNode(dyn, -1)
			}
		}
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
		if fc.Args[6].GetAConst() == nil && len(fc.Funcname) == 1 {
			// A zone only the rows know: read by a Go function, as
			// PostgreSQL reads it (the engine knows no '+1' or EST).
			fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tsdb_make_timestamptz")}
			return nil, true
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
	return nil, false
}

// distinctOrderInArgs reports whether every ORDER BY expression of an
// aggregate with DISTINCT is one of its arguments, as PostgreSQL requires
// (string_agg(DISTINCT f1, ',' ORDER BY f1::text) is 42P10: the engine
// answered it).
func distinctOrderInArgs(fc *pg_query.FuncCall) bool {
	var args []string
	for _, a := range fc.Args {
		args = append(args, exprSQL(a))
	}
	for _, o := range fc.AggOrder {
		e := exprSQL(o.GetSortBy().GetNode())
		if e == "" || slices.Contains(args, "") {
			return true // not known: the engine decides
		}
		if !slices.Contains(args, e) {
			return false
		}
	}
	return true
}

// exprSQL is an expression as SQL text, "" if it does not deparse.
func exprSQL(n *pg_query.Node) string {
	if n == nil {
		return ""
	}
	sel := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: n}}}},
		Op:         pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}}}
	// The deparser wants the parser's version, which a parse gives.
	v, err := pg_query.Parse("SELECT")
	if err != nil {
		return ""
	}
	out, err := pg_query.Deparse(&pg_query.ParseResult{Version: v.Version, Stmts: []*pg_query.RawStmt{{Stmt: sel}}})
	if err != nil {
		return ""
	}
	return out
}

// guardFiltered makes the arguments of an aggregate with FILTER
// evaluated only for the rows the filter keeps, as PostgreSQL evaluates
// them: the engine computes an argument for every row first, so
// sum(1/ten) FILTER (WHERE ten > 0) failed with division by zero. Each
// argument that is more than a column or a constant becomes CASE WHEN
// filter THEN argument END (the engine evaluates a CASE branch only for
// the rows that take it); the FILTER stays. It reports whether fc
// changed.
func guardFiltered(fc *pg_query.FuncCall) bool {
	changed := false
	for i, a := range fc.Args {
		if a.GetColumnRef() != nil || a.GetAConst() != nil || a.GetTypeCast().GetArg().GetAConst() != nil || a.GetCaseExpr() != nil {
			continue
		}
		fc.Args[i] = &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{
			Args: []*pg_query.Node{{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{
				Expr: proto.Clone(fc.AggFilter).(*pg_query.Node), Result: a}}}}, Location: -1}}}
		changed = true
	}
	return changed
}

// rewrittenFunctions are PostgreSQL functions the dialect answers itself
// under their own names (the others are in pgFunctions, castFunctions and
// regexpArgs, or the engine has them).
var rewrittenFunctions = map[string]bool{
	"extract": true, "date_part": true, "string_agg": true, "encode": true, "regexp_matches": true, "substring": true,
	"substr": true, "lpad": true, "rpad": true, "date_trunc": true, "date_bin": true, "concat": true, "concat_ws": true,
	"justify_days": true, "justify_hours": true, "justify_interval": true, "regexp_split_to_array": true,
	"regexp_split_to_table": true, "regexp_replace": true, "regexp_instr": true, "count": true, "nth_value": true,
	"lead": true, "lag": true, "var_pop": true, "stddev_pop": true, "make_timestamptz": true, "timezone": true, "log": true,
	"to_timestamp": true, "every": true, "to_char": true, "format": true, "generate_series": true, "now": true,
	"array_to_string": true, "to_date": true,
}

// IsPostgresFunction reports whether name is a function the dialect
// answers as PostgreSQL's (a user's function of that name would never be
// called unqualified in PostgreSQL, whose pg_catalog comes first).
func IsPostgresFunction(name string) bool {
	_, mapped := pgFunctions[name]
	_, regexp := regexpArgs[name]
	return mapped || regexp || castFunctions[name] || rewrittenFunctions[name]
}

// castFunctions are the types whose names PostgreSQL also calls as
// functions of one argument, a cast to the type.
var castFunctions = map[string]bool{
	"int2": true, "int4": true, "int8": true, "float4": true, "float8": true, "numeric": true, "text": true,
	"bool": true, "date": true, "timestamp": true, "timestamptz": true, "interval": true, "varchar": true,
}

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

// strideOverflows reports whether days and micros, as microseconds, are
// past 64 bits, where PostgreSQL's date_bin says interval out of range.
func strideOverflows(days, micros int64) bool {
	const usPerDay = 86_400_000_000
	if days > math.MaxInt64/usPerDay || days < math.MinInt64/usPerDay {
		return true
	}
	total := days * usPerDay
	sum := total + micros
	return micros > 0 && sum < total || micros < 0 && sum > total
}

// ExpandVariadic turns f(a, VARIADIC ARRAY[b, c]) into f(a, b, c), which
// is what it means: the engine has no VARIADIC (it answered a syntax
// error, where PostgreSQL calls the function or says it does not exist).
// It reports false, changing nothing, for a VARIADIC array that is not
// written out; true for a call without VARIADIC.
func ExpandVariadic(fc *pg_query.FuncCall) bool {
	if !fc.FuncVariadic {
		return true
	}
	if len(fc.Args) == 0 {
		return false
	}
	arr := fc.Args[len(fc.Args)-1].GetAArrayExpr()
	if arr == nil {
		return false
	}
	fc.Args = append(fc.Args[:len(fc.Args)-1], arr.Elements...)
	fc.FuncVariadic = false
	return true
}

// isDateCast reports whether n is a cast to date (date '…', x::date).
func isDateCast(n *pg_query.Node) bool {
	tc := n.GetTypeCast()
	return tc != nil && len(tc.TypeName.GetArrayBounds()) == 0 && sqltree.LastName(tc.TypeName.GetNames()) == "date"
}

// countNulls is the number of args that are NULL (nulls) or not, as an
// integer.
func countNulls(args []*pg_query.Node, nulls bool) *pg_query.Node {
	one, other := "1", "0"
	if !nulls {
		one, other = other, one
	}
	var sum *pg_query.Node
	for _, a := range args {
		term, err := sqltree.Template("CASE WHEN _tsdb_arg1 IS NULL THEN "+one+" ELSE "+other+" END", a)
		if err != nil {
			return nil
		}
		if sum == nil {
			sum = term
			continue
		}
		sum = &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
			Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: []*pg_query.Node{pg_query.MakeStrNode("+")}, Lexpr: sum, Rexpr: term, Location: -1}}}
	}
	return sqltree.Cast(sum, "int4")
}
