package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// timestamptzExpr reports whether an expression is a timestamptz by what
// is known here: a cast, a column (typeOf, when given), the current
// time, the extreme or neighbouring value of one.
func timestamptzExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	switch {
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		return sqltree.LastName(tc.TypeName.GetNames()) == "timestamptz" && len(tc.TypeName.GetArrayBounds()) == 0
	case n.GetColumnRef() != nil:
		return typeOf != nil && typeOf(n) == schema.Timestamptz
	case n.GetSqlvalueFunction() != nil:
		switch n.GetSqlvalueFunction().Op {
		case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
			return true
		}
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		switch sqltree.LastName(fc.Funcname) {
		case "now", "transaction_timestamp", "statement_timestamp", "clock_timestamp":
			return len(fc.Args) == 0
		case "min", "max", "first_value", "last_value", "lag", "lead", "nth_value":
			return len(fc.Args) >= 1 && timestamptzExpr(fc.Args[0], typeOf)
		}
	}
	return false
}

// TimestamptzDifference answers a - b of two timestamptz values as
// PostgreSQL's timestamp_mi does: the microseconds between them as days
// of 24 hours and a time. The engine subtracts them as calendar dates in
// the session's zone, so a difference across a daylight saving change
// was an hour off (159 days 17:32:01 for 159 days 16:32:01). Where a
// side is only known by the engine (an expression of columns) it is left
// alone; typeOf nil knows casts and the current time only.
func TimestamptzDifference(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if typeOf != nil && n.GetSubLink() != nil {
			return n
		}
		e := n.GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil || sqltree.LastName(e.Name) != "-" {
			return nil
		}
		if !timestamptzExpr(e.Lexpr, typeOf) || !timestamptzExpr(e.Rexpr, typeOf) {
			return nil
		}
		changed = true
		TimestamptzDifference(e.Lexpr, typeOf)
		TimestamptzDifference(e.Rexpr, typeOf)
		return call("_tsdb_timestamptz_mi", e.Lexpr, e.Rexpr)
	}
	substituteScope(root, rewrite)
	return changed
}
