package dialect

import (
	"fmt"
	"regexp"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
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
func WithTies(root *pg_query.Node) (bool, error) {
	changed := false
	var err error
	sqltree.ReplaceNodes(root.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		r, e := tiesQuery(n.GetSelectStmt())
		if e != nil && err == nil {
			err = e
		}
		if r != nil {
			changed = true
			return r
		}
		return nil
	})
	if r, e := tiesQuery(root.GetSelectStmt()); r != nil {
		root.Node = r.Node
		changed = true
	} else if e != nil && err == nil {
		err = e
	}
	return changed, err
}

func tiesQuery(sel *pg_query.SelectStmt) (*pg_query.Node, error) {
	if sel == nil || sel.LimitOption != pg_query.LimitOption_LIMIT_OPTION_WITH_TIES || sel.Op != pg_query.SetOperation_SETOP_NONE ||
		len(sel.DistinctClause) > 0 || len(sel.SortClause) == 0 || len(sel.ValuesLists) > 0 || sel.LockingClause != nil || sel.IntoClause != nil {
		return nil, nil
	}
	// The count: a constant, or an expression (which PostgreSQL
	// evaluates once: a NULL is no limit; only NULL as written is an
	// error).
	var limit *pg_query.Node
	switch c := sel.LimitCount.GetAConst(); {
	case sel.LimitCount == nil:
		limit = pg_query.MakeAConstIntNode(1, -1) // FETCH FIRST ROW WITH TIES
	case c != nil && c.Isnull:
		return nil, sqlerr.New("2201W", "row count cannot be null in FETCH FIRST ... WITH TIES clause")
	case c != nil && c.GetIval() == nil:
		return nil, nil
	default:
		limit = sel.LimitCount
	}
	offset := pg_query.MakeAConstIntNode(0, -1)
	if sel.LimitOffset != nil {
		if c := sel.LimitOffset.GetAConst(); c != nil && c.GetIval() == nil {
			return nil, nil
		}
		offset = sel.LimitOffset
		if c := sel.LimitOffset.GetAConst(); c == nil {
			// A NULL offset is none.
			r, err := sqltree.Template("coalesce(_tsdb_arg1, 0)", offset)
			if err != nil {
				return nil, nil
			}
			offset = r
		}
	}
	star := false
	for _, t := range sel.TargetList {
		if rt := t.GetResTarget(); rt == nil {
			return nil, nil
		} else if sqltree.IsStar(rt.Val) {
			star = true
		}
	}
	inner := proto.Clone(sel).(*pg_query.SelectStmt)
	inner.SortClause, inner.LimitCount, inner.LimitOffset = nil, nil, nil
	inner.LimitOption = pg_query.LimitOption_LIMIT_OPTION_DEFAULT
	inner.WithClause = nil
	var outerTargets []*pg_query.Node
	if star {
		// The select list's columns are not known here: the outer
		// query takes every column but the ones this rewrite adds, by
		// the engine's COLUMNS(regular expression).
		outerTargets = []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
			Val: call(EngineColumns, pg_query.MakeAConstStrNode(notPrefixPattern("_tsdb_"), -1))}}}}
	}
	for i, t := range inner.TargetList {
		if star {
			break
		}
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
	op := func(name, col string, v *pg_query.Node) *pg_query.Node {
		return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode(name)}, columnRef(col), v, -1)
	}
	ranked := isNotFalse(op("<=", "_tsdb_rank", pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("+")},
		proto.Clone(offset).(*pg_query.Node), limit, -1)))
	if o, l := offset.GetAConst().GetIval(), limit.GetAConst().GetIval(); o != nil && l != nil {
		ranked = op("<=", "_tsdb_rank", pg_query.MakeAConstIntNode(int64(o.Ival)+int64(l.Ival), -1))
	}
	outer := &pg_query.SelectStmt{
		TargetList: outerTargets,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}, Alias: &pg_query.Alias{Aliasname: "_tsdb_ties"}}}}},
		WhereClause: pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{
			ranked, op(">", "_tsdb_rn", offset)}, -1),
		SortClause:  outerSort,
		WithClause:  sel.WithClause,
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	return &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: outer}}, nil
}

// isNotFalse is `e IS NOT FALSE`.
func isNotFalse(e *pg_query.Node) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_BooleanTest{BooleanTest: &pg_query.BooleanTest{
		Arg: e, Booltesttype: pg_query.BoolTestType_IS_NOT_FALSE, Location: -1}}}
}

// notPrefixPattern is a regular expression (RE2, which has no
// lookahead) matching the names that do not start with prefix.
func notPrefixPattern(prefix string) string {
	alts := []string{fmt.Sprintf(".{0,%d}$", len(prefix)-1)}
	for i := range prefix {
		alts = append(alts, regexp.QuoteMeta(prefix[:i])+"[^"+regexp.QuoteMeta(prefix[i:i+1])+"]")
	}
	return "(?s)^(" + strings.Join(alts, "|") + ")"
}

func columnRef(name string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(name)}}}}
}
