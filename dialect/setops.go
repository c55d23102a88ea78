package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// Set operations and VALUES lists as PostgreSQL resolves their columns,
// and the rules it applies to their ORDER BY.

// UnknownSetOpLiterals reads, in every set operation and VALUES list under
// root, a quoted constant as the type the other rows of its column have
// (a cast, a number, a boolean), as PostgreSQL resolves an unknown literal:
// SELECT 3.4::numeric UNION SELECT 'foo' fails there ('foo' is no
// numeric), where the engine made the column text and answered.
func UnknownSetOpLiterals(root *pg_query.Node) bool {
	changed := false
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || (!IsSetOp(sel) && len(sel.ValuesLists) < 2) {
			return nil
		}
		rows, ok := branchRows(sel)
		if !ok || len(rows) < 2 {
			return nil
		}
		for j := range rows[0] {
			var known *pg_query.TypeName
			resolvable := true
			for _, r := range rows {
				if j >= len(r) {
					return nil
				}
				if r[j].GetAConst().GetSval() != nil || r[j].GetAConst().GetIsnull() {
					continue
				}
				t := staticType(r[j])
				if t == nil {
					resolvable = false
					break
				}
				if known == nil {
					known = t
				} else if typeKey(known) != typeKey(t) {
					known = widerNumber(known, t)
					if known == nil {
						resolvable = false
						break
					}
				}
			}
			if !resolvable || known == nil || typeKey(known) == "text" {
				continue
			}
			for _, r := range rows {
				if r[j].GetAConst().GetSval() != nil {
					tc := &pg_query.TypeCast{Arg: proto.Clone(r[j]).(*pg_query.Node), TypeName: proto.Clone(known).(*pg_query.TypeName)}
					r[j].Node = &pg_query.Node_TypeCast{TypeCast: tc}
					changed = true
				}
			}
		}
		return nil
	})
	return changed
}

// branchRows are the rows of a set operation's branches (each branch's
// select list, or its VALUES rows) or of a VALUES list: the nodes in
// place, to be changed there. false when a branch's width is not known
// here (SELECT *).
func branchRows(sel *pg_query.SelectStmt) ([][]*pg_query.Node, bool) {
	if IsSetOp(sel) {
		l, ok := branchRows(sel.Larg)
		if !ok {
			return nil, false
		}
		r, ok := branchRows(sel.Rarg)
		return append(l, r...), ok
	}
	if len(sel.ValuesLists) > 0 {
		return valuesRows(sel), true
	}
	var row []*pg_query.Node
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil || rt.Val.GetColumnRef().GetFields() != nil && rt.Val.GetColumnRef().GetFields()[len(rt.Val.GetColumnRef().GetFields())-1].GetAStar() != nil {
			return nil, false
		}
		row = append(row, rt.Val)
	}
	return [][]*pg_query.Node{row}, true
}

// staticType is the type of an expression known without the engine: a
// cast's, a number literal's, a boolean's; nil for anything else.
func staticType(n *pg_query.Node) *pg_query.TypeName {
	named := catalogType
	switch {
	case n.GetTypeCast() != nil:
		return n.GetTypeCast().TypeName
	case n.GetAConst().GetIval() != nil:
		return named("int4")
	case n.GetAConst().GetFval() != nil:
		return named("numeric")
	case n.GetAConst().GetBoolval() != nil:
		return named("bool")
	}
	return nil
}

// typeKey names a type for comparison.
func typeKey(t *pg_query.TypeName) string {
	name := sqltree.LastName(t.GetNames())
	switch name {
	case "varchar", "bpchar", "char":
		return "text"
	case "integer", "int":
		return "int4"
	case "decimal":
		return "numeric"
	}
	if len(t.GetArrayBounds()) > 0 {
		return name + "[]"
	}
	return name
}

// widerNumber is the type PostgreSQL resolves two number types to (int4
// and numeric to numeric, anything and float8 to float8), nil when they
// are not both numbers.
func widerNumber(a, b *pg_query.TypeName) *pg_query.TypeName {
	rank := map[string]int{"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}
	ra, rb := rank[typeKey(a)], rank[typeKey(b)]
	if ra == 0 || rb == 0 {
		return nil
	}
	if ra >= rb {
		return catalogType(typeKey(a))
	}
	return catalogType(typeKey(b))
}

// catalogType is pg_catalog's type name, as the parser writes a
// built-in type.
func catalogType(name string) *pg_query.TypeName {
	return &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("pg_catalog"), pg_query.MakeStrNode(name)}, Typemod: -1}
}

// CheckSetOpOrder refuses, as PostgreSQL does, an ORDER BY of a set
// operation's result that names a column the result does not have (the
// engine looked it up in a branch). Positions and expressions are left to
// the engine.
func CheckSetOpOrder(sel *pg_query.SelectStmt) error {
	if sel == nil || !IsSetOp(sel) || len(sel.SortClause) == 0 {
		return nil
	}
	leaf := sel
	for IsSetOp(leaf) {
		leaf = leaf.Larg
	}
	if len(leaf.ValuesLists) > 0 {
		return nil
	}
	names := map[string]bool{}
	for _, t := range leaf.TargetList {
		rt := t.GetResTarget()
		switch {
		case rt == nil:
			return nil
		case rt.Name != "":
			names[rt.Name] = true
		case rt.Val.GetColumnRef() != nil:
			f := rt.Val.GetColumnRef().Fields
			if f[len(f)-1].GetAStar() != nil {
				return nil // the names are the engine's to know
			}
			names[f[len(f)-1].GetString_().GetSval()] = true
		}
	}
	for _, s := range sel.SortClause {
		cr := s.GetSortBy().GetNode().GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
			continue
		}
		if name := cr.Fields[0].GetString_().Sval; !names[name] {
			return sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist", name)
		}
	}
	return nil
}

// IsSetOp reports whether sel is a set operation. (Its branches, not Op,
// decide: a statement built in code may leave Op unset.)
func IsSetOp(sel *pg_query.SelectStmt) bool {
	return sel != nil && sel.Larg != nil && sel.Rarg != nil
}
