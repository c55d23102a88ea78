package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// intervalExpr reports whether an expression is an interval by what is
// known here: a cast, a column (typeOf, when given), the difference of
// two intervals or their sum, an interval scaled.
func intervalExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	switch {
	case n.GetTypeCast() != nil:
		return sqltree.LastName(n.GetTypeCast().TypeName.GetNames()) == "interval" && len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0
	case n.GetColumnRef() != nil:
		return typeOf != nil && typeOf(n) == schema.Interval
	case n.GetFuncCall() != nil:
		switch sqltree.LastName(n.GetFuncCall().Funcname) {
		case "make_interval", "justify_days", "justify_hours", "justify_interval", "_tsdb_interval_scale", "_tsdb_timestamptz_mi":
			return true
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil {
			return false
		}
		switch sqltree.LastName(e.Name) {
		case "-":
			// Of two intervals, or of two timestamptz values
			// (max(time) - min(time)).
			return intervalExpr(e.Lexpr, typeOf) && intervalExpr(e.Rexpr, typeOf) ||
				timestamptzExpr(e.Lexpr, typeOf) && timestamptzExpr(e.Rexpr, typeOf)
		case "+":
			return intervalExpr(e.Lexpr, typeOf) && intervalExpr(e.Rexpr, typeOf)
		case "*", "/":
			return intervalExpr(e.Lexpr, typeOf)
		}
	}
	return false
}

// IntervalArithmetic answers an interval multiplied or divided by a
// number as PostgreSQL's interval_mul and interval_div do (a Go function
// the engine calls): the engine's / of an interval does not bind (tsdb
// runs it with PostgreSQL's integer division, which has no interval
// form), and its * rounds differently. Where the interval is only known
// by the engine (an expression of columns) it is left alone.
func IntervalArithmetic(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if typeOf != nil && n.GetSubLink() != nil {
			return n
		}
		e := n.GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
			return nil
		}
		op := sqltree.LastName(e.Name)
		if op != "*" && op != "/" {
			return nil
		}
		iv, factor := e.Lexpr, e.Rexpr
		if !intervalExpr(iv, typeOf) {
			if op == "/" || !intervalExpr(e.Rexpr, typeOf) {
				return nil
			}
			iv, factor = e.Rexpr, e.Lexpr // number * interval
		}
		if intervalExpr(factor, typeOf) {
			return nil // interval * interval: no such operator
		}
		changed = true
		// Its operands walked too: (interval '1 day' * 2) / 3.
		IntervalArithmetic(iv, typeOf)
		return call("_tsdb_interval_scale", iv, sqltree.Cast(factor, "float8"), boolConst(op == "/"))
	}
	substituteScope(root, rewrite)
	return changed
}
