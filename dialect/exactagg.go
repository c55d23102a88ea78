package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// PostgreSQL computes avg of integers and numerics, and var_pop,
// var_samp, variance, stddev_pop, stddev_samp and stddev of them, in
// numeric: exactly, printed with a scale chosen per value (avg(four) is
// 1.5000000000000000, var_pop 21704.000000000000). The engine computes
// them in double precision (1.5; 21703.999999999996): a different value.
//
// ExactAggregates makes each such call that is a column of the result
// return the engine's own answer together with the exact count, sum and
// sum of squares, in a struct whose first field is named after the
// aggregate (see ExactAggregateField); the planner turns the struct into
// PostgreSQL's numeric, or, where the sum is in floating point (the
// argument was float4 or float8), into the engine's answer. Which one is
// known only once the engine has typed the argument, which is why both
// travel.
//
// Only the query's own select list is rewritten, where the value is
// printed: inside an expression the engine's double stays. An ORDER BY
// naming such a column by position or name sorts by the engine's answer.
// Casts to float4 or float8, and arguments typeOf reports as floating
// point, are left alone: their result is the engine's anyway, and the
// plain call is cheaper.
//
// sum and avg of an argument known to be an interval (typeOf, or a cast
// to interval) are answered from the sums of its months, days and
// microseconds, which the engine's interval has no sum for: sum as
// PostgreSQL adds intervals, avg as its interval division rounds
// (ExactIntervalField).
func ExactAggregates(sel *pg_query.SelectStmt, typeOf func(arg *pg_query.Node) schema.Type) bool {
	if sel == nil || sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.ValuesLists) > 0 {
		return false
	}
	changed := false
	orig := make([]*pg_query.Node, len(sel.TargetList))
	for i, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val.GetFuncCall() == nil {
			continue
		}
		fc := rt.Val.GetFuncCall()
		if r := intervalAggregate(fc, typeOf); r != nil {
			orig[i] = proto.Clone(rt.Val).(*pg_query.Node)
			rt.Val = r
			changed = true
			continue
		}
		name, ok := exactAggregate(fc) // one argument when ok
		if !ok || floatCast(fc.Args[0]) {
			continue
		}
		if ty := typeOf(fc.Args[0]); ty == schema.Float64 || ty == schema.Float32 || ty == schema.Interval {
			continue
		}
		if name != "avg" && fc.AggDistinct {
			// The squares of distinct values are not the distinct squares
			// (-2 and 2).
			continue
		}
		orig[i] = proto.Clone(rt.Val).(*pg_query.Node)
		rt.Val = exactCall(fc, name)
		changed = true
	}
	if !changed {
		return false
	}
	for _, s := range sel.SortClause {
		sb := s.GetSortBy()
		if sb == nil {
			continue
		}
		if i := outputColumn(sb.Node, sel.TargetList, orig); i >= 0 && orig[i] != nil {
			sb.Node = proto.Clone(orig[i]).(*pg_query.Node)
		}
	}
	return true
}

// exactFields names each aggregate's struct field, by the aggregate as
// PostgreSQL resolves it (variance is var_samp).
var exactFields = map[string]string{
	"avg": "_tsdb_avg", "var_pop": "_tsdb_var_pop", "var_samp": "_tsdb_var_samp", "variance": "_tsdb_var_samp",
	"stddev_pop": "_tsdb_stddev_pop", "stddev_samp": "_tsdb_stddev_samp", "stddev": "_tsdb_stddev_samp",
}

// ExactAggregateField is the first field name of the struct that
// ExactAggregates makes of avg, and of the variance and standard deviation
// aggregates: _tsdb_avg, _tsdb_var_pop, _tsdb_var_samp, _tsdb_stddev_pop,
// _tsdb_stddev_samp. The other fields are n (the count), s (the sum) and,
// but for avg, q (the sum of squares).
func ExactAggregateField(field string) bool {
	for _, f := range exactFields {
		if f == field {
			return true
		}
	}
	return false
}

// exactAggregate reports whether fc is one of the aggregates
// ExactAggregates answers exactly, with one argument and no ORDER BY of
// its own.
func exactAggregate(fc *pg_query.FuncCall) (string, bool) {
	name := sqltree.LastName(fc.Funcname)
	if _, ok := exactFields[name]; !ok || len(fc.Args) != 1 || fc.AggStar || fc.AggWithinGroup || len(fc.AggOrder) > 0 {
		return "", false
	}
	if len(fc.Funcname) == 2 && fc.Funcname[0].GetString_().GetSval() != "pg_catalog" || len(fc.Funcname) > 2 {
		return "", false
	}
	return name, true
}

// exactCall is the struct of fc's answer, count, sum and sum of squares,
// each an aggregate with fc's DISTINCT, FILTER and window.
func exactCall(fc *pg_query.FuncCall, name string) *pg_query.Node {
	agg := func(fn string, arg *pg_query.Node) *pg_query.Node {
		c := proto.Clone(fc).(*pg_query.FuncCall)
		c.Funcname = []*pg_query.Node{pg_query.MakeStrNode(fn)}
		c.Args = []*pg_query.Node{arg}
		return &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: c}}
	}
	x := func() *pg_query.Node { return proto.Clone(fc.Args[0]).(*pg_query.Node) }
	field := exactFields[name]
	args := []*pg_query.Node{
		{Node: &pg_query.Node_FuncCall{FuncCall: proto.Clone(fc).(*pg_query.FuncCall)}},
		agg("count", x()),
		agg("sum", x()),
	}
	if name != "avg" {
		// x·(x + 0::hugeint): integers squared in 128 bits, so that no
		// product overflows its own type; a double stays a double and a
		// decimal a decimal.
		wide := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("+")},
			x(), sqltree.Cast(pg_query.MakeAConstIntNode(0, -1), "hugeint"), -1)
		args = append(args, agg("sum", pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("*")}, x(), wide, -1)))
	}
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_exact" + field[len("_tsdb"):])}, args, -1)
}

// outputColumn returns the select list item an ORDER BY key names, by
// position (ORDER BY 2) or by output name (ORDER BY avg, or the item's
// alias), or -1.
func outputColumn(key *pg_query.Node, targets, orig []*pg_query.Node) int {
	if c := key.GetAConst(); c != nil && c.GetIval() != nil {
		if i := int(c.GetIval().Ival) - 1; i >= 0 && i < len(targets) {
			return i
		}
		return -1
	}
	cr := key.GetColumnRef()
	if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
		return -1
	}
	name := cr.Fields[0].GetString_().Sval
	for i, t := range targets {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		val := rt.Val
		if orig[i] != nil {
			val = orig[i] // named by the call as written
		}
		out := rt.Name
		if out == "" && val.GetFuncCall() != nil {
			out = sqltree.LastName(val.GetFuncCall().Funcname)
		}
		if out == name {
			return i
		}
	}
	return -1
}

// floatCast reports whether n is a cast to float4 or float8.
func floatCast(n *pg_query.Node) bool {
	tc := n.GetTypeCast()
	if tc == nil || len(tc.TypeName.GetArrayBounds()) > 0 {
		return false
	}
	switch sqltree.LastName(tc.TypeName.GetNames()) {
	case "float4", "float8":
		return true
	}
	return false
}

// ExactIntervalField names the first field of the struct of sum or avg of
// intervals: _tsdb_ivsum or _tsdb_ivavg, holding the count; m, d and u are
// the sums of the months, days and microseconds.
func ExactIntervalField(field string) bool { return field == "_tsdb_ivsum" || field == "_tsdb_ivavg" }

// ExactIntervalFieldName is the first field of avg's struct or of sum's.
func ExactIntervalFieldName(avg bool) string {
	if avg {
		return "_tsdb_ivavg"
	}
	return "_tsdb_ivsum"
}

// intervalAggregate is the struct call of sum(x) or avg(x) for an interval
// x, or nil.
func intervalAggregate(fc *pg_query.FuncCall, typeOf func(*pg_query.Node) schema.Type) *pg_query.Node {
	name := sqltree.LastName(fc.Funcname)
	// DISTINCT stays the engine's: the distinct parts are not the parts of
	// the distinct intervals.
	if (name != "sum" && name != "avg") || len(fc.Args) != 1 || fc.AggStar || fc.AggWithinGroup || len(fc.AggOrder) > 0 || len(fc.Funcname) > 1 || fc.AggDistinct {
		return nil
	}
	x := fc.Args[0]
	isInterval := typeOf(x) == schema.Interval
	if tc := x.GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "interval" && len(tc.TypeName.GetArrayBounds()) == 0 {
		isInterval = true
	}
	if !isInterval {
		return nil
	}
	agg := func(fn, part string) *pg_query.Node {
		c := proto.Clone(fc).(*pg_query.FuncCall)
		c.Funcname = []*pg_query.Node{pg_query.MakeStrNode(fn)}
		arg := proto.Clone(x).(*pg_query.Node)
		if part != "" {
			arg = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(part)}, []*pg_query.Node{arg}, -1)
		}
		c.Args = []*pg_query.Node{arg}
		return &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: c}}
	}
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_exact_iv" + name)},
		[]*pg_query.Node{agg("count", ""), agg("sum", "_tsdb_iv_months"), agg("sum", "_tsdb_iv_days"), agg("sum", "_tsdb_iv_micros")}, -1)
}
