package planner

// The types of a prepared statement's $n parameters, as PostgreSQL
// infers them from where they stand.

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// inferParams finds $n parameters and their types.
func (s *Session) inferParams(node *pg_query.Node, declared []uint32) []uint32 {
	n := 0
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if pr, ok := m.(*pg_query.ParamRef); ok && int(pr.Number) > n {
			n = int(pr.Number)
		}
		return nil
	})
	n = max(n, len(declared))
	oids := make([]uint32, n)
	for i := range oids {
		if i < len(declared) && declared[i] != oidUnknown {
			oids[i] = declared[i]
		}
	}
	set := func(ref *pg_query.Node, oid uint32) {
		if pr := paramOf(ref); pr > 0 && pr <= n && oids[pr-1] == oidUnknown {
			oids[pr-1] = oid
		}
	}
	// Columns of every table the statement names, by bare and qualified name.
	cols := map[string]schema.Type{}
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if rv, ok := m.(*pg_query.RangeVar); ok {
			if t, ok := s.paramTable(rv); ok {
				alias := rv.Relname
				if rv.Alias != nil && rv.Alias.Aliasname != "" {
					alias = rv.Alias.Aliasname
				}
				for _, c := range t.Columns {
					cols[c.Name] = c.Type
					cols[alias+"."+c.Name] = c.Type
				}
			}
		}
		return nil
	})
	colType := func(e *pg_query.Node) (schema.Type, bool) {
		cr := e.GetColumnRef()
		if cr == nil {
			return schema.Invalid, false
		}
		var parts []string
		for _, f := range cr.Fields {
			if s := f.GetString_(); s != nil {
				parts = append(parts, s.Sval)
			}
		}
		t, ok := cols[strings.Join(parts, ".")]
		return t, ok
	}
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.A_Expr:
			if x.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ANY || x.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL {
				// x = ANY($1): an array of x's type.
				elem, ok := uint32(0), false
				if t, isCol := colType(x.Lexpr); isCol {
					elem, ok = t.OID(), true
				} else if c := x.Lexpr.GetAConst(); c != nil {
					switch {
					case c.GetIval() != nil:
						elem, ok = oidInt4, true
					case c.GetSval() != nil:
						elem, ok = oidText, true
					}
				}
				if arr, has := dialect.ArrayOf(elem); ok && has {
					set(x.Rexpr, arr)
				}
				return nil
			}
			if op := sqltree.LastName(x.Name); op == "<<" || op == ">>" {
				return nil // a shift's count is an integer, whatever it shifts
			}
			if t, ok := colType(x.Lexpr); ok {
				set(x.Rexpr, t.OID())
				for _, it := range x.Rexpr.GetList().GetItems() {
					set(it, t.OID())
				}
			}
			if x.Lexpr != nil {
				if t, ok := colType(x.Rexpr); ok {
					set(x.Lexpr, t.OID())
				}
			}
		case *pg_query.TypeCast:
			if x.TypeName != nil {
				name := sqltree.TypeName(x.TypeName)
				if t, err := schema.ParseType(name); err == nil && len(x.TypeName.ArrayBounds) > 0 {
					if arr, ok := dialect.ArrayOf(t.OID()); ok {
						set(x.Arg, arr)
					}
				} else if err == nil {
					set(x.Arg, t.OID())
				} else if oid, ok := castParamOIDs[strings.ToLower(name)]; ok && len(x.TypeName.ArrayBounds) == 0 {
					set(x.Arg, oid)
				}
			}
		case *pg_query.SelectStmt:
			set(x.LimitCount, oidInt8)
			set(x.LimitOffset, oidInt8)
		case *pg_query.InsertStmt:
			tbl, ok := s.paramTable(x.Relation)
			if !ok {
				return nil
			}
			targets := insertTargets(tbl, x)
			for _, row := range x.SelectStmt.GetSelectStmt().GetValuesLists() {
				for j, it := range row.GetList().GetItems() {
					if j < len(targets) {
						set(it, tbl.Columns[targets[j]].Type.OID())
					}
				}
			}
		case *pg_query.UpdateStmt:
			tbl, ok := s.paramTable(x.Relation)
			if !ok {
				return nil
			}
			for _, t := range x.TargetList {
				rt := t.GetResTarget()
				if i := tbl.ColumnIndex(rt.Name); i >= 0 {
					set(rt.Val, tbl.Columns[i].Type.OID())
				}
			}
		}
		return nil
	})
	for i := range oids {
		if oids[i] == oidUnknown {
			oids[i] = oidText
		}
	}
	return oids
}

func paramOf(n *pg_query.Node) int {
	if n == nil {
		return 0
	}
	if pr := n.GetParamRef(); pr != nil {
		return int(pr.Number)
	}
	return 0
}

// insertTargets lists the table columns an INSERT's values go to (-1 for
// unknown names, reported later by insert).
func insertTargets(tbl schema.Table, st *pg_query.InsertStmt) []int {
	if len(st.Cols) == 0 {
		out := make([]int, len(tbl.Columns))
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for _, c := range st.Cols {
		i := tbl.ColumnIndex(c.GetResTarget().GetName())
		if i < 0 {
			i = 0
		}
		out = append(out, i)
	}
	return out
}
