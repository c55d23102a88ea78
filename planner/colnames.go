package planner

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// pgColumnNames returns the names PostgreSQL gives the result columns of a
// SELECT: the alias, the column name, the function name, or ?column?. An
// empty string means "use the engine's name" (star expansions). It returns
// nil when the shape of the result cannot be predicted.
func pgColumnNames(sel *pg_query.SelectStmt, ncols int) []string {
	for sel != nil && sel.Op != pg_query.SetOperation_SETOP_NONE {
		sel = sel.Larg
	}
	if sel == nil || len(sel.ValuesLists) > 0 {
		if sel != nil && len(sel.ValuesLists) > 0 {
			names := make([]string, ncols)
			for i := range names {
				names[i] = fmt.Sprintf("column%d", i+1)
			}
			return names
		}
		return nil
	}
	var before, after []string
	stars := 0
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			return nil
		}
		if sqltree.IsStar(rt.Val) {
			stars++
			continue
		}
		name := rt.Name
		if name == "" {
			name = figureColname(rt.Val)
		}
		if stars == 0 {
			before = append(before, name)
		} else {
			after = append(after, name)
		}
	}
	if stars > 1 {
		return nil
	}
	middle := ncols - len(before) - len(after)
	if middle < 0 || (stars == 0 && middle != 0) {
		return nil
	}
	names := append([]string(nil), before...)
	for i := 0; i < middle; i++ {
		names = append(names, "")
	}
	return append(names, after...)
}

// figureColname follows PostgreSQL's FigureColname.
func figureColname(n *pg_query.Node) string {
	if name, strength := colname(n); strength > 0 {
		return name
	}
	return "?column?"
}

// colname is PostgreSQL's FigureColnameInternal: a name and how strongly
// the expression gives it: 2 for a column, function or keyword, 1 for a
// cast's type or CASE, which an enclosing cast or a stronger name inside
// overrides (SELECT 'nan'::numeric::float8 is float8; SELECT CASE … ELSE b
// END is b).
func colname(n *pg_query.Node) (string, int) {
	switch {
	case n == nil:
	case n.GetColumnRef() != nil:
		f := n.GetColumnRef().Fields
		if s := f[len(f)-1].GetString_(); s != nil {
			return s.Sval, 2
		}
	case n.GetFuncCall() != nil:
		return sqltree.LastName(n.GetFuncCall().Funcname), 2
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		name, strength := colname(tc.Arg)
		if strength <= 1 && tc.TypeName != nil {
			return pgTypeDisplayName(sqltree.LastName(tc.TypeName.Names)), 1
		}
		return name, strength
	case n.GetCollateClause() != nil:
		return colname(n.GetCollateClause().Arg)
	case n.GetCaseExpr() != nil:
		name, strength := colname(n.GetCaseExpr().Defresult)
		if strength <= 1 {
			return "case", 1
		}
		return name, strength
	case n.GetAExpr() != nil && n.GetAExpr().Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF, n.GetNullIfExpr() != nil:
		return "nullif", 2
	case n.GetCoalesceExpr() != nil:
		return "coalesce", 2
	case n.GetMinMaxExpr() != nil:
		if n.GetMinMaxExpr().Op == pg_query.MinMaxOp_IS_GREATEST {
			return "greatest", 2
		}
		return "least", 2
	case n.GetGroupingFunc() != nil:
		return "grouping", 2
	case n.GetSqlvalueFunction() != nil:
		if name := sqlValueFunctionName(n.GetSqlvalueFunction().Op); name != "?column?" {
			return name, 2
		}
	case n.GetSubLink() != nil:
		sl := n.GetSubLink()
		switch sl.SubLinkType {
		case pg_query.SubLinkType_EXISTS_SUBLINK:
			return "exists", 2
		case pg_query.SubLinkType_ARRAY_SUBLINK:
			return "array", 2
		case pg_query.SubLinkType_EXPR_SUBLINK:
			if sub := sl.Subselect.GetSelectStmt(); sub != nil && len(sub.TargetList) == 1 {
				if rt := sub.TargetList[0].GetResTarget(); rt != nil {
					if rt.Name != "" {
						return rt.Name, 2
					}
					return figureColname(rt.Val), 2
				}
			}
		}
	case n.GetAArrayExpr() != nil:
		return "array", 2
	case n.GetRowExpr() != nil:
		return "row", 2
	case n.GetAIndirection() != nil:
		ind := n.GetAIndirection()
		for i := len(ind.Indirection) - 1; i >= 0; i-- {
			if s := ind.Indirection[i].GetString_(); s != nil {
				return s.Sval, 2
			}
		}
		return colname(ind.Arg)
	}
	return "", 0
}

// pgTypeDisplayName maps internal type names to what PostgreSQL shows as the
// column name of a bare cast (SELECT 1::int8 is named int8).
func pgTypeDisplayName(t string) string {
	switch t {
	case "timestamptz":
		return "timestamptz"
	}
	return t
}

func sqlValueFunctionName(op pg_query.SQLValueFunctionOp) string {
	switch op {
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		return "current_date"
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:
		return "current_time"
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		return "current_timestamp"
	case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
		return "localtime"
	case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		return "localtimestamp"
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER:
		return "current_user"
	case pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER:
		return "session_user"
	case pg_query.SQLValueFunctionOp_SVFOP_USER:
		return "user"
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		return "current_catalog"
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		return "current_schema"
	}
	return "?column?"
}

// nameSubqueryColumns gives every unnamed result column of a subquery in
// FROM and of a WITH query the name PostgreSQL gives it (count, not the
// engine's count_star()), so that a SELECT * over it, or a reference to
// the name, sees PostgreSQL's names. It reports whether it named any.
func nameSubqueryColumns(node *pg_query.Node) bool {
	named := false
	nameTargets := func(q *pg_query.Node) {
		sel := q.GetSelectStmt()
		for sel != nil && sel.Op != pg_query.SetOperation_SETOP_NONE {
			sel = sel.Larg // the first arm names a set operation's columns
		}
		if sel == nil {
			return
		}
		for _, t := range sel.TargetList {
			rt := t.GetResTarget()
			if rt == nil || rt.Name != "" || sqltree.IsStar(rt.Val) || rt.Val.GetColumnRef() != nil {
				continue
			}
			rt.Name = figureColname(rt.Val)
			named = true
		}
	}
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.RangeSubselect:
			if x.Alias == nil || len(x.Alias.Colnames) == 0 {
				nameTargets(x.Subquery)
			}
		case *pg_query.CommonTableExpr:
			if len(x.Aliascolnames) == 0 {
				nameTargets(x.Ctequery)
			}
		}
		return nil
	})
	return named
}

// fillEmptySelectLists gives every SELECT with an empty select list a
// NULL placeholder column (which set operations compare as equal, as
// PostgreSQL compares its empty rows). It reports whether it changed any.
func fillEmptySelectLists(n *pg_query.Node) bool {
	changed := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if ok && sel.Op == pg_query.SetOperation_SETOP_NONE && len(sel.TargetList) == 0 && len(sel.ValuesLists) == 0 {
			sel.TargetList = []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
				Name: emptyColumn, Val: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}}}}}
			changed = true
		}
		return nil
	})
	return changed
}

// emptySelectList reports whether a SELECT as written returns no columns:
// its first branch has an empty select list.
func emptySelectList(sel *pg_query.SelectStmt) bool {
	for sel != nil && sel.Op != pg_query.SetOperation_SETOP_NONE {
		sel = sel.Larg
	}
	return sel != nil && len(sel.TargetList) == 0 && len(sel.ValuesLists) == 0
}

// nameColumns gives cols the names PostgreSQL gives the result columns of
// sel, where it can tell them.
func nameColumns(cols []Column, sel *pg_query.SelectStmt) {
	if sel == nil {
		return
	}
	for i, n := range pgColumnNames(sel, len(cols)) {
		if n != "" {
			cols[i].Name = n
		}
	}
}

// orderByOutputNames makes ORDER BY of a bare name mean what PostgreSQL
// means by it: the output column of that name — its alias, or the name
// PostgreSQL gives an expression (n::text is "n", upper(s) "upper") —
// before any input column (SQL92's rule, findTargetlistEntrySQL92). The
// engine took the input column: SELECT n::text FROM t ORDER BY n sorted
// as integers where PostgreSQL sorts the text, and ORDER BY upper found
// no column. Such an item becomes the output column's position. Two
// different output columns of the name are 42702, as in PostgreSQL. A
// select list with * is left as it is (its names are not known here).
// It reports whether anything changed.
func orderByOutputNames(root *pg_query.Node) (bool, error) {
	changed := false
	var failed error
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || failed != nil || len(sel.SortClause) == 0 || sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.ValuesLists) > 0 {
			return nil
		}
		names := make([]string, len(sel.TargetList))
		for i, t := range sel.TargetList {
			rt := t.GetResTarget()
			if rt == nil || sqltree.IsStar(rt.Val) {
				return nil
			}
			names[i] = rt.Name
			if names[i] == "" {
				names[i] = figureColname(rt.Val)
			}
		}
		for _, o := range sel.SortClause {
			sb := o.GetSortBy()
			cr := sb.GetNode().GetColumnRef()
			if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
				continue
			}
			name := cr.Fields[0].GetString_().Sval
			match := -1
			for i, n := range names {
				if n != name {
					continue
				}
				if match < 0 {
					match = i
					continue
				}
				a, b := sel.TargetList[match].GetResTarget().Val, sel.TargetList[i].GetResTarget().Val
				if a.GetColumnRef() != nil && b.GetColumnRef() != nil {
					// a and t.a may be one column (PostgreSQL compares
					// them resolved, which tsdb does not here): left to
					// the engine, which resolves them.
					match = -2
					break
				}
				if !proto.Equal(sqltree.WithoutLocations(a), sqltree.WithoutLocations(b)) {
					failed = sqlerr.New(sqlerr.AmbiguousColumn, "ORDER BY %q is ambiguous", name)
					return failed
				}
			}
			if match < 0 {
				continue // no output column of the name, or two columns
			}
			if c := sel.TargetList[match].GetResTarget().Val.GetColumnRef(); c != nil && len(c.Fields) == 1 && c.Fields[0].GetString_().GetSval() == name {
				continue // the input column itself: the same either way
			}
			sb.Node = pg_query.MakeAConstIntNode(int64(match+1), sb.Node.GetColumnRef().Location)
			changed = true
		}
		return nil
	})
	return changed, failed
}
