package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// TypedStringLiterals gives a bare string constant compared with a
// column of a date or time type that column's type, as PostgreSQL's
// unknown literal takes it: WHERE time >= '2026-01-01 20:16:22.646325
// +0000' (TimescaleDB's and TSBS's form), '… PST', 'today' are then read
// by PostgreSQL's input rules (DateTimeLiteral). The engine read the bare
// string itself, and took +0000 for a zone name it does not know. It
// covers comparisons, BETWEEN and IN of root (a WHERE, HAVING, select
// list or join condition), not the subqueries in it, whose columns are
// their own; typeOf says the columns' types. It reports whether anything
// changed.
func TypedStringLiterals(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if root == nil || typeOf == nil {
		return false
	}
	changed := false
	retype := func(slot **pg_query.Node, ty schema.Type) {
		if c := (*slot).GetAConst(); c != nil && c.GetSval() != nil {
			*slot, changed = sqltree.Cast(*slot, ty.UDTName()), true
		}
	}
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		switch e := m.(type) {
		case *pg_query.SubLink, *pg_query.SelectStmt:
			return sqltree.SkipChildren
		case *pg_query.A_Expr:
			if e.Lexpr == nil || e.Rexpr == nil {
				return nil
			}
			switch e.Kind {
			case pg_query.A_Expr_Kind_AEXPR_OP:
				switch sqltree.LastName(e.Name) {
				case "<", "<=", ">", ">=", "=", "<>", "!=":
				default:
					return nil
				}
				if ty := temporalColumn(e.Lexpr, typeOf); ty != schema.Invalid {
					retype(&e.Rexpr, ty)
				} else if ty := temporalColumn(e.Rexpr, typeOf); ty != schema.Invalid {
					retype(&e.Lexpr, ty)
				}
			case pg_query.A_Expr_Kind_AEXPR_IN, pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN,
				pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
				ty := temporalColumn(e.Lexpr, typeOf)
				list := e.Rexpr.GetList()
				if ty == schema.Invalid || list == nil {
					return nil
				}
				for i := range list.Items {
					retype(&list.Items[i], ty)
				}
			}
		}
		return nil
	})
	return changed
}

// temporalColumn is the type of n when n is a column of a date or time
// type, else schema.Invalid.
func temporalColumn(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	if n.GetColumnRef() == nil {
		return schema.Invalid
	}
	switch t := typeOf(n); t {
	case schema.Timestamptz, schema.Timestamp, schema.Date, schema.Interval:
		return t
	}
	return schema.Invalid
}
