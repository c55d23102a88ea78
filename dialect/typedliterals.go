package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// TypedOperands gives the operands of comparisons and arithmetic in
// root (a WHERE, HAVING, select list item or join condition; not the
// subqueries in it, whose columns are their own) the types PostgreSQL
// gives them, where typeOf (the columns' types) or the expression says
// what they are:
//
//   - A bare string compared with a column of a date or time type (also
//     by BETWEEN or IN) is of that type, as PostgreSQL's unknown literal
//     is: WHERE time >= '2026-01-01 20:16:22.646325 +0000' (TimescaleDB's
//     and TSBS's form), '… PST', 'today' are then read by PostgreSQL's
//     input rules (DateTimeLiteral). The engine read the bare string
//     itself, and took +0000 for a zone name it does not know.
//   - A bare string in arithmetic with a column of a number type, or
//     compared with one, is of that type (f1 * '1e200' is float8
//     arithmetic, the engine found no operator for a number and a
//     string; n = 'x' fails as PostgreSQL's integer input does, the
//     engine compared the two as text).
//   - A real (float4) meeting a number of another type is float8:
//     PostgreSQL's operators between float4 and integers, numeric or
//     float8 take the float4 as float8 (0.1::float4 > 0.1 is true,
//     1::float4 / 3 is 0.3333333333333333); the engine's take the other
//     side as float4 (false, 0.33333334). In a comparison whatever the
//     other side (widening both is exact), in arithmetic where the other
//     side is known not to be float4.
//
// It reports whether anything changed.
func TypedOperands(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
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
				compare := false
				switch sqltree.LastName(e.Name) {
				case "<", "<=", ">", ">=", "=", "<>", "!=":
					compare = true
				case "+", "-", "*", "/":
				default:
					return nil
				}
				if compare {
					if ty := typedColumn(e.Lexpr, typeOf); ty != schema.Invalid {
						retype(&e.Rexpr, ty)
					} else if ty := typedColumn(e.Rexpr, typeOf); ty != schema.Invalid {
						retype(&e.Lexpr, ty)
					}
				} else if ty := numberColumn(e.Lexpr, typeOf); ty != schema.Invalid {
					retype(&e.Rexpr, ty)
				} else if ty := numberColumn(e.Rexpr, typeOf); ty != schema.Invalid {
					retype(&e.Lexpr, ty)
				}
				lf, rf := float4Expr(e.Lexpr, typeOf), float4Expr(e.Rexpr, typeOf)
				switch {
				case lf && !rf && (compare || knownNotFloat4(e.Rexpr, typeOf)):
					e.Lexpr, changed = sqltree.Cast(e.Lexpr, "float8"), true
				case rf && !lf && (compare || knownNotFloat4(e.Lexpr, typeOf)):
					e.Rexpr, changed = sqltree.Cast(e.Rexpr, "float8"), true
				}
			case pg_query.A_Expr_Kind_AEXPR_IN, pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN,
				pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
				ty := typedColumn(e.Lexpr, typeOf)
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

// columnOf is the type of n when n is a column, else schema.Invalid.
func columnOf(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	if n.GetColumnRef() == nil {
		return schema.Invalid
	}
	return typeOf(n)
}

// temporalColumn is the type of n when n is a column of a date or time
// type, else schema.Invalid.
func temporalColumn(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	if t := columnOf(n, typeOf); t.IsDateTime() {
		return t
	}
	return schema.Invalid
}

// typedColumn is the type of n when n is a column of a date, time,
// number or bit string type, whose bare strings compared with it are of its type: the
// engine compared 'x' with an integer column as text (no row, where
// PostgreSQL fails: invalid input syntax for type integer).
func typedColumn(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	if t := temporalColumn(n, typeOf); t != schema.Invalid {
		return t
	}
	if t := columnOf(n, typeOf); t == schema.Bit || t == schema.VarBit {
		return t // 'X5' is 0101; the engine read '' as 0
	}
	return numberColumn(n, typeOf)
}

// numberColumn is the type of n when n is a column of a number type, else
// schema.Invalid.
func numberColumn(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	switch t := columnOf(n, typeOf); t {
	case schema.Int16, schema.Int32, schema.Int64, schema.Float32, schema.Float64, schema.Decimal:
		return t
	}
	return schema.Invalid
}
