package dialect

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// WithTies rewrites every SELECT … ORDER BY … FETCH FIRST n ROWS WITH TIES
// under root, which the engine does not have, into the same rows by rank:
//
//	SELECT c1 AS name1, … FROM (
//	    SELECT <targets> AS c1, …, <keys> AS k1, …,
//	           rank() OVER (ORDER BY <keys>) AS r, row_number() OVER (ORDER BY <keys>) AS n
//	    FROM …) t
//	WHERE r <= offset + count AND n > offset ORDER BY k1, …
//
// The rows ranked at most offset + count are the first offset + count and
// those tied with the last of them; of these the first offset rows are
// skipped, as PostgreSQL skips them. A query it cannot rewrite so (a set
// operation, DISTINCT, SELECT *, a count that is not a constant) keeps
// WITH TIES, which the engine refuses.
func WithTies(root *pg_query.Node) bool {
	changed := false
	sqltree.ReplaceNodes(root.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if r := tiesQuery(n.GetSelectStmt()); r != nil {
			changed = true
			return r
		}
		return nil
	})
	if r := tiesQuery(root.GetSelectStmt()); r != nil {
		root.Node = r.Node
		changed = true
	}
	return changed
}

func tiesQuery(sel *pg_query.SelectStmt) *pg_query.Node {
	if sel == nil || sel.LimitOption != pg_query.LimitOption_LIMIT_OPTION_WITH_TIES || sel.Op != pg_query.SetOperation_SETOP_NONE ||
		len(sel.DistinctClause) > 0 || len(sel.SortClause) == 0 || len(sel.ValuesLists) > 0 || sel.LockingClause != nil || sel.IntoClause != nil {
		return nil
	}
	count := sel.LimitCount.GetAConst().GetIval()
	if count == nil && sel.LimitCount != nil {
		return nil
	}
	offset := int64(0)
	if sel.LimitOffset != nil {
		o := sel.LimitOffset.GetAConst().GetIval()
		if o == nil {
			return nil
		}
		offset = int64(o.Ival)
	}
	n := int64(1) // FETCH FIRST ROW WITH TIES
	if count != nil {
		n = int64(count.Ival)
	}
	for _, t := range sel.TargetList {
		if rt := t.GetResTarget(); rt == nil || rt.Val.GetColumnRef() != nil && isStar(rt.Val.GetColumnRef()) {
			return nil
		}
	}
	inner := proto.Clone(sel).(*pg_query.SelectStmt)
	inner.SortClause, inner.LimitCount, inner.LimitOffset = nil, nil, nil
	inner.LimitOption = pg_query.LimitOption_LIMIT_OPTION_DEFAULT
	inner.WithClause = nil
	var outerTargets []*pg_query.Node
	for i, t := range inner.TargetList {
		rt := t.GetResTarget()
		col := fmt.Sprintf("_tsdb_c%d", i+1)
		out := &pg_query.ResTarget{Val: columnRef(col), Name: rt.Name}
		outerTargets = append(outerTargets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: out}})
		rt.Name = col
	}
	// The keys, as expressions over the FROM list: a position or an output
	// name stands for its select list item.
	var windowKeys, outerSort []*pg_query.Node
	for i, s := range sel.SortClause {
		sb := proto.Clone(s.GetSortBy()).(*pg_query.SortBy)
		if j := outputColumn(sb.Node, sel.TargetList, make([]*pg_query.Node, len(sel.TargetList))); j >= 0 {
			sb.Node = proto.Clone(sel.TargetList[j].GetResTarget().Val).(*pg_query.Node)
		}
		windowKeys = append(windowKeys, &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: sb}})
		key := fmt.Sprintf("_tsdb_k%d", i+1)
		inner.TargetList = append(inner.TargetList, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
			Val: proto.Clone(sb.Node).(*pg_query.Node), Name: key}}})
		ob := proto.Clone(sb).(*pg_query.SortBy)
		ob.Node = columnRef(key)
		outerSort = append(outerSort, &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: ob}})
	}
	window := func(fn, name string) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name,
			Val: &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: &pg_query.FuncCall{
				Funcname: []*pg_query.Node{pg_query.MakeStrNode(fn)}, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL,
				Over: &pg_query.WindowDef{OrderClause: windowKeys, FrameOptions: 1058}}}}}}}
	}
	inner.TargetList = append(inner.TargetList, window("rank", "_tsdb_rank"), window("row_number", "_tsdb_rn"))
	op := func(name, col string, v int64) *pg_query.Node {
		return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode(name)}, columnRef(col), pg_query.MakeAConstIntNode(v, -1), -1)
	}
	outer := &pg_query.SelectStmt{
		TargetList: outerTargets,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}, Alias: &pg_query.Alias{Aliasname: "_tsdb_ties"}}}}},
		WhereClause: pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{
			op("<=", "_tsdb_rank", offset+n), op(">", "_tsdb_rn", offset)}, -1),
		SortClause:  outerSort,
		WithClause:  sel.WithClause,
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	return &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: outer}}
}

func columnRef(name string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(name)}}}}
}

func isStar(cr *pg_query.ColumnRef) bool {
	for _, f := range cr.Fields {
		if f.GetAStar() != nil {
			return true
		}
	}
	return false
}
