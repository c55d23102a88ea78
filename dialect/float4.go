package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"strings"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// float4Expr reports whether n is known to be a float4: a cast to it, or
// a column typeOf says is one.
func float4Expr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if tc := n.GetTypeCast(); tc != nil {
		if len(tc.TypeName.GetArrayBounds()) > 0 {
			return false
		}
		t, _ := schema.ParseType(sqltree.LastName(tc.TypeName.GetNames()))
		return t == schema.Float32
	}
	return n.GetColumnRef() != nil && typeOf != nil && typeOf(n) == schema.Float32
}

// knownNotFloat4 reports whether n is known to be a number of another
// type than float4: a number literal, a cast to another number type, or
// a column typeOf says is one.
func knownNotFloat4(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if c := n.GetAConst(); c != nil {
		return c.GetIval() != nil || c.GetFval() != nil
	}
	if typeOf == nil && n.GetColumnRef() != nil {
		return false
	}
	switch knownNumberType(n, typeOf) {
	case schema.Int16, schema.Int32, schema.Int64, schema.Float64, schema.Decimal:
		return true
	}
	return false
}

// PercentileFloat gives percentile_cont a float8 to interpolate, as
// PostgreSQL's has (it takes float8 or interval): over a numeric the
// engine interpolated in the decimal and answered 10.00 for 10. Only an
// ordering key known to be numeric is cast (typeOf, or the expression).
// It reports whether anything in n changed.
func PercentileFloat(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch fc := m.(type) {
		case *pg_query.SubLink:
			return sqltree.SkipChildren
		case *pg_query.FuncCall:
			if sqltree.LastName(fc.Funcname) != "percentile_cont" || !fc.AggWithinGroup || len(fc.AggOrder) != 1 {
				return nil
			}
			sb := fc.AggOrder[0].GetSortBy()
			if sb == nil {
				return nil
			}
			if numeric, _ := numericOperand(sb.Node, typeOf); numeric {
				sb.Node, changed = sqltree.Cast(sb.Node, "float8"), true
			}
		}
		return nil
	})
	return changed
}

// PercentileFraction computes percentile_cont and percentile_disc whose
// fraction is not a constant (a grouping column, as in PercentileFloat's
// callers' select lists), which the engine's quantiles refuse, from the
// group's values in their ORDER BY (_tsdb_pct_cont, _tsdb_pct_disc). It
// reports whether anything under n (a select list item) changed.
func PercentileFraction(n *pg_query.Node) bool {
	changed := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		fc, ok := m.(*pg_query.FuncCall)
		if _, sub := m.(*pg_query.SubLink); sub {
			// A subquery's aggregate may belong to this level (an ORDER
			// BY of this level's columns), which PostgreSQL refuses.
			return sqltree.SkipChildren
		}
		if !ok || !fc.AggWithinGroup || len(fc.AggOrder) != 1 || len(fc.Args) != 1 || fc.Over != nil || fc.AggDistinct {
			return nil
		}
		name := sqltree.LastName(fc.Funcname)
		if name != "percentile_cont" && name != "percentile_disc" {
			return nil
		}
		f := fc.Args[0]
		for f.GetTypeCast() != nil {
			f = f.GetTypeCast().Arg
		}
		if f.GetAConst() != nil || f.GetAArrayExpr() != nil || f.GetParamRef() != nil {
			return nil
		}
		if ae := f.GetAExpr(); ae != nil && ae.Lexpr == nil && ae.Rexpr.GetAConst() != nil {
			return nil // a negated constant
		}
		sb := fc.AggOrder[0].GetSortBy()
		if sb == nil {
			return nil
		}
		value := sb.Node
		if name == "percentile_cont" {
			value = sqltree.Cast(value, "float8")
		}
		notNull := &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: sb.Node, Nulltesttype: pg_query.NullTestType_IS_NOT_NULL}}}
		filter := notNull
		if fc.AggFilter != nil {
			filter = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{fc.AggFilter, notNull}, -1)
		}
		list := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("list")}, []*pg_query.Node{value}, -1)
		list.GetFuncCall().AggOrder = fc.AggOrder
		list.GetFuncCall().AggFilter = filter
		// In place: fc becomes _tsdb_pct_cont(list, fraction).
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tsdb_pct_" + strings.TrimPrefix(name, "percentile_"))}
		fc.Args = []*pg_query.Node{list, sqltree.Cast(fc.Args[0], "float8")}
		fc.AggWithinGroup, fc.AggOrder, fc.AggFilter = false, nil, nil
		changed = true
		return sqltree.SkipChildren
	})
	return changed
}
