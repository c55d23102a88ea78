package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// Aggregates whose result the engine types or computes otherwise than
// PostgreSQL: sum() of integers (bigint there) and the variances of
// floats (float.c's Youngs-Cramer sums there).

// IntegerSums types sum() of a smallint or integer column (typeOf) as
// PostgreSQL does, bigint: the engine's sum of them is a 128-bit integer,
// which tsdb sends as numeric (a driver then returns a Decimal, not an
// int). The cast overflows where PostgreSQL's bigint sum does. The sum of
// a bigint column is numeric, as PostgreSQL's is (the engine's 128-bit
// integer divided as an integer); of a real column a real. Calls in a
// subquery are their own scope and left alone.
func IntegerSums(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if typeOf == nil {
		return false
	}
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if n.GetSubLink() != nil {
			return n // its own scope: left as it is (and not walked)
		}
		fc := n.GetFuncCall()
		if fc == nil || sqltree.LastName(fc.Funcname) != "sum" || len(fc.Args) != 1 || fc.AggStar {
			return nil
		}
		switch knownNumberType(fc.Args[0], typeOf) { // a column's type, or a cast's
		case schema.Int32, schema.Int16:
			changed = true
			return sqltree.Cast(proto.Clone(n).(*pg_query.Node), "int8")
		case schema.Int64:
			// The sum of bigints is a numeric: divided, it is not an
			// integer division (sum(v) / 7 is 1.43 for 10, not 1).
			changed = true
			return sqltree.Cast(proto.Clone(n).(*pg_query.Node), "numeric")
		case schema.Float32:
			// The sum of reals is a real (the engine's, a double, printed
			// 4.241590142250061 for PostgreSQL's 4.24159).
			changed = true
			return sqltree.Cast(proto.Clone(n).(*pg_query.Node), "float4")
		case schema.Interval:
			if r := intervalSum(fc); r != nil {
				changed = true
				return r
			}
		}
		return nil
	}
	substituteScope(root, rewrite)
	return changed
}

// intervalSum is sum() of intervals as PostgreSQL adds them, which the
// engine has no sum for: months, days and microseconds each summed on
// their own (interval_pl normalizes nothing), the call's FILTER and OVER
// kept on each of the three. DISTINCT is left to the engine's error: the
// distinct values are the intervals, not their parts.
func intervalSum(fc *pg_query.FuncCall) *pg_query.Node {
	if fc.AggDistinct || len(fc.AggOrder) > 0 {
		return nil
	}
	part := func(expr string) *pg_query.Node {
		arg, err := sqltree.Template(expr, fc.Args[0])
		if err != nil {
			return nil
		}
		sum := proto.Clone(fc).(*pg_query.FuncCall)
		sum.Args = []*pg_query.Node{arg}
		return &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: sum}}
	}
	months := part("datepart('year', _tsdb_arg1) * 12 + datepart('month', _tsdb_arg1)")
	days := part("datepart('day', _tsdb_arg1)")
	micros := part("datepart('hour', _tsdb_arg1) * 3600000000 + datepart('minute', _tsdb_arg1) * 60000000 + datepart('microseconds', _tsdb_arg1)")
	if months == nil || days == nil || micros == nil {
		return nil
	}
	r, err := sqltree.Template("to_months(CAST(_tsdb_arg1 AS integer)) + to_days(CAST(_tsdb_arg2 AS integer)) + to_microseconds(CAST(_tsdb_arg3 AS bigint))", months, days, micros)
	if err != nil {
		return nil
	}
	return r
}

// floatVarianceKinds are the variance functions FloatVariances answers,
// by the kind number _tsdb_float_var takes.
var floatVarianceKinds = map[string]int{"var_pop": 0, "var_samp": 1, "variance": 1, "stddev_pop": 2, "stddev_samp": 3, "stddev": 3}

// floatFunctions return double precision.
var floatFunctions = map[string]bool{"sin": true, "cos": true, "tan": true, "asin": true, "acos": true, "atan": true, "atan2": true,
	"sqrt": true, "cbrt": true, "exp": true, "ln": true, "log10": true, "power": true, "pow": true, "random": true, "degrees": true,
	"radians": true, "pi": true, "sind": true, "cosd": true, "tand": true, "cotd": true, "asind": true, "acosd": true, "atand": true,
	"atan2d": true, "sinh": true, "cosh": true, "tanh": true, "float8": true,
	// float arithmetic checked for overflow (FloatOverflow)
	"_tsdb_fmul": true, "_tsdb_fadd": true, "_tsdb_fsub": true}

// floatExpr reports whether an expression is double precision or real
// by what is known here: a cast, a column (typeOf), a float function, or
// arithmetic with one of those.
func floatExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	switch {
	case n.GetTypeCast() != nil:
		switch sqltree.LastName(n.GetTypeCast().TypeName.GetNames()) {
		case "float8", "float4", "float", "double", "real":
			return len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0
		}
	case n.GetColumnRef() != nil:
		t := typeOf(n)
		return t == schema.Float64 || t == schema.Float32
	case n.GetFuncCall() != nil:
		return floatFunctions[sqltree.LastName(n.GetFuncCall().Funcname)] && n.GetFuncCall().Over == nil
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		switch sqltree.LastName(e.Name) {
		case "+", "-", "*", "/":
		default:
			return false
		}
		return e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && (e.Lexpr != nil && floatExpr(e.Lexpr, typeOf) || floatExpr(e.Rexpr, typeOf))
	}
	return false
}

// FloatVariances answers var_pop, var_samp, variance, stddev_pop,
// stddev_samp and stddev of double precision values as PostgreSQL
// computes them (the Youngs-Cramer sums of float.c's float8_accum, in the
// order the rows come), where the engine's algorithm differed in the last
// digits (stddev_samp 70.75963553242767 for PostgreSQL's
// 70.75963553242771). The values go to a Go function as a list: aggregate
// calls of the select list only, not window ones. typeOf gives the FROM
// list's column types.
func FloatVariances(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if typeOf == nil {
		return false
	}
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if n.GetSubLink() != nil {
			return n
		}
		fc := n.GetFuncCall()
		if fc == nil || len(fc.Args) != 1 || fc.Over != nil || fc.AggStar || len(fc.AggOrder) > 0 || len(fc.Funcname) > 1 {
			return nil
		}
		kind, ok := floatVarianceKinds[sqltree.LastName(fc.Funcname)]
		if !ok || !floatExpr(fc.Args[0], typeOf) {
			return nil
		}
		list := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("list")},
			Args: []*pg_query.Node{sqltree.Cast(fc.Args[0], "float8")}, AggFilter: fc.AggFilter, AggDistinct: fc.AggDistinct,
			Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL}
		changed = true
		return call("_tsdb_float_var", &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: list}}, pg_query.MakeAConstIntNode(int64(kind), -1))
	}
	substituteScope(root, rewrite)
	return changed
}

// HasVariance reports whether a select list calls one of the variance
// functions FloatVariances answers.
func HasVariance(targets []*pg_query.Node) bool {
	found := false
	for _, t := range targets {
		_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			if fc, ok := m.(*pg_query.FuncCall); ok {
				if _, ok := floatVarianceKinds[sqltree.LastName(fc.Funcname)]; ok {
					found = true
				}
			}
			return nil
		})
	}
	return found
}
