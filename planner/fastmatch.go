package planner

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// What the direct aggregation path (fastagg.go) takes: the exact shape of
// a SELECT it answers, matched on the parse tree, and its result columns.

// fastAgg is a matched query.
type fastAgg struct {
	outs    []fastOut
	unit    int64 // date_trunc's unit in microseconds; 0: no GROUP BY
	filters []textFilter
	times   []timeCmp
	desc    bool
	limit   int64 // -1: none
	offset  int64
	// params are a prepared statement's parameter types (describe).
	params []uint32
	// rows: the select list is columns (fn "column"), and the result
	// the rows; aggs: it is aggregates. nums are comparisons of float
	// columns with constants.
	rows, aggs bool
	nums       []numFilter
}

// numFilter keeps rows whose float column compares with v by op, as
// PostgreSQL compares float8 (NaN above every number; NULL never kept).
type numFilter struct {
	col int
	op  string
	v   float64
}

// keeps reports whether value x passes the filter.
func (f numFilter) keeps(x float64) bool {
	switch f.op {
	case ">":
		return floatAbove(x, f.v)
	case ">=":
		return !floatAbove(f.v, x)
	case "<":
		return floatAbove(f.v, x)
	case "<=":
		return !floatAbove(x, f.v)
	case "=":
		return !floatAbove(x, f.v) && !floatAbove(f.v, x)
	}
	return false
}

// rowColumnKind is the kind of a column the rows mode returns, 0 for a
// type it does not.
func rowColumnKind(c schema.Column) Kind {
	if c.Type == schema.Text {
		if c.MaxLength > 0 || c.Padded {
			return 0 // varchar(n) and char(n) are described otherwise
		}
		return KindString
	}
	k, _ := fastColumnKind(c.Type)
	return k
}

// matchColumns takes a column reference of the select list (a column, or
// *) in rows mode.
func (m *fastAgg) matchColumns(cr *pg_query.ColumnRef, name string, t schema.Table, from string) bool {
	m.rows = true
	if len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
		if name != "" || len(cr.Fields) > 2 || len(cr.Fields) == 2 && cr.Fields[0].GetString_().GetSval() != from {
			return false
		}
		for i, c := range t.Columns {
			k := rowColumnKind(c)
			if k == 0 {
				return false
			}
			m.outs = append(m.outs, fastOut{name: c.Name, fn: "column", col: i, kind: k, float: c.Type == schema.Float64 || c.Type == schema.Float32})
		}
		return true
	}
	col := fastRef(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: cr}}, t, from)
	if col < 0 {
		return false
	}
	k := rowColumnKind(t.Columns[col])
	if k == 0 {
		return false
	}
	if name == "" {
		name = t.Columns[col].Name
	}
	m.outs = append(m.outs, fastOut{name: name, fn: "column", col: col, kind: k, float: t.Columns[col].Type == schema.Float64 || t.Columns[col].Type == schema.Float32})
	return true
}

// fastOut is one result column.
type fastOut struct {
	name string
	fn   string // "date_trunc", "max", "min", "count"
	col  int    // the table column aggregated; -1 for date_trunc and count(*)
	kind Kind   // of the result
	// float: the column's values are floats (else integers or times).
	float bool
}

// textFilter keeps rows whose text column is one of want.
type textFilter struct {
	col  int
	want [][]byte
}

// timeCmp is time op expr (op as applied with the time column on the left).
type timeCmp struct {
	op   string
	expr *pg_query.Node
	// hi is BETWEEN's upper end (op "between").
	hi *pg_query.Node
}

// dateTruncUnits are the units the path truncates to: fixed lengths of
// time, which in UTC need no calendar.
var dateTruncUnits = map[string]int64{
	"second": 1e6, "minute": 60e6, "hour": 3600e6, "day": 86400e6,
}

// fastColumnKind is the result kind of max or min of a column of type t
// and whether its values are floats; 0 for a type the path does not read.
func fastColumnKind(t schema.Type) (Kind, bool) {
	switch t {
	case schema.Float64:
		return KindFloat64, true
	case schema.Float32:
		return KindFloat32, true
	case schema.Int64:
		return KindInt64, false
	case schema.Int32:
		return KindInt32, false
	case schema.Int16:
		return KindInt16, false
	case schema.Timestamptz:
		return KindTimestampTZ, false
	}
	return 0, false
}

// fastRef resolves a column reference of the query to a column index of
// t, or -1. A qualified reference must name the FROM item as the query
// does (its alias if it has one).
func fastRef(n *pg_query.Node, t schema.Table, from string) int {
	cr := n.GetColumnRef()
	if cr == nil {
		return -1
	}
	var name string
	switch len(cr.Fields) {
	case 1:
		name = cr.Fields[0].GetString_().GetSval()
	case 2:
		if cr.Fields[0].GetString_().GetSval() != from {
			return -1
		}
		name = cr.Fields[1].GetString_().GetSval()
	default:
		return -1
	}
	if name == "" {
		return -1
	}
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// stringConst returns the value of a string constant (a literal, or one
// cast to text or varchar); in describe mode a parameter of type text,
// varchar or unknown (params) stands for one.
func stringConst(n *pg_query.Node, describe bool, params []uint32) ([]byte, bool) {
	if tc := n.GetTypeCast(); tc != nil {
		if tc.TypeName == nil || len(tc.TypeName.Typmods) > 0 || len(tc.TypeName.ArrayBounds) > 0 {
			return nil, false
		}
		switch sqltree.TypeName(tc.TypeName) {
		case "text", "varchar", "character varying":
			n = tc.Arg
		default:
			return nil, false
		}
	}
	if describe && n.GetParamRef() != nil {
		return nil, paramTyped(n.GetParamRef(), params, oidUnknown, oidText, oidVarchar)
	}
	c := n.GetAConst()
	if c == nil || c.Isnull || c.GetSval() == nil {
		return nil, false
	}
	return []byte(c.GetSval().GetSval()), true
}

// numConst returns the value of a numeric literal (90, 90.5, 1e3) as the
// float8 PostgreSQL compares a double precision column with.
func numConst(n *pg_query.Node) (float64, bool) {
	c := n.GetAConst()
	switch {
	case c == nil || c.Isnull:
		return 0, false
	case c.GetIval() != nil:
		return float64(c.GetIval().Ival), true
	case c.GetFval() != nil:
		v, err := strconv.ParseFloat(c.GetFval().GetFval(), 64)
		return v, err == nil && !math.IsInf(v, 0)
	}
	return 0, false
}

// paramTyped reports whether parameter p has one of the types oids.
func paramTyped(p *pg_query.ParamRef, params []uint32, oids ...uint32) bool {
	i := int(p.Number) - 1
	return i >= 0 && i < len(params) && slices.Contains(oids, params[i])
}

// timeConst reports whether n is a constant the path reads as an
// instant: a string literal, maybe cast to timestamptz or timestamp (the
// value is read when the query runs, by literalTimes); in describe mode a
// parameter of a timestamp type or unknown (params).
func timeConst(n *pg_query.Node, describe bool, params []uint32) bool {
	if tc := n.GetTypeCast(); tc != nil {
		if tc.TypeName == nil || len(tc.TypeName.Typmods) > 0 || len(tc.TypeName.ArrayBounds) > 0 {
			return false
		}
		t, err := schema.ParseType(sqltree.TypeName(tc.TypeName))
		if err != nil || !t.IsTimestamp() {
			return false
		}
		n = tc.Arg
	}
	if describe && n.GetParamRef() != nil {
		return paramTyped(n.GetParamRef(), params, oidUnknown, oidTimestamptz, oidTimestamp)
	}
	c := n.GetAConst()
	return c != nil && !c.Isnull && c.GetSval() != nil
}

// matchFastAgg matches a SELECT against the path's shape over table t.
// In describe mode parameters of fitting types (params) stand for
// constants.
func matchFastAgg(sel *pg_query.SelectStmt, t schema.Table, describe bool, params []uint32) (*fastAgg, bool) {
	if sel == nil || sel.Op > pg_query.SetOperation_SETOP_NONE ||
		sel.WithClause != nil || len(sel.DistinctClause) > 0 || sel.IntoClause != nil || len(sel.WindowClause) > 0 ||
		sel.HavingClause != nil || len(sel.LockingClause) > 0 || len(sel.ValuesLists) > 0 || len(sel.FromClause) != 1 ||
		sel.GroupDistinct || len(sel.TargetList) == 0 {
		return nil, false
	}
	if t.TimeIndex < 0 || t.Columns[t.TimeIndex].Type != schema.Timestamptz || t.ViewQuery != "" || len(t.Dedup) > 0 {
		return nil, false
	}
	rv := sel.FromClause[0].GetRangeVar()
	if rv == nil || rv.Relname != t.Name || rv.Catalogname != "" || (rv.Schemaname != "" && rv.Schemaname != "public") ||
		rv.Relpersistence == "t" {
		return nil, false
	}
	from := rv.Relname
	if rv.Alias != nil {
		if len(rv.Alias.Colnames) > 0 {
			return nil, false
		}
		from = rv.Alias.Aliasname
	}
	m := &fastAgg{limit: -1, params: params}
	bucket := -1
	for i, n := range sel.TargetList {
		rt := n.GetResTarget()
		if rt == nil || rt.Val == nil || len(rt.Indirection) > 0 {
			return nil, false
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			// Columns, or *: the rows themselves (no aggregate beside).
			if !m.matchColumns(cr, rt.Name, t, from) {
				return nil, false
			}
			continue
		}
		if m.rows {
			return nil, false
		}
		fc := rt.Val.GetFuncCall()
		if fc == nil || fc.AggDistinct || fc.AggFilter != nil || fc.Over != nil || len(fc.AggOrder) > 0 || fc.AggWithinGroup ||
			fc.FuncVariadic || len(fc.Funcname) > 2 || len(fc.Funcname) == 2 && fc.Funcname[0].GetString_().GetSval() != "pg_catalog" {
			return nil, false
		}
		out := fastOut{fn: sqltree.LastName(fc.Funcname), col: -1}
		switch out.fn {
		case "date_trunc":
			if bucket >= 0 || fc.AggStar || len(fc.Args) != 2 || fastRef(fc.Args[1], t, from) != t.TimeIndex {
				return nil, false
			}
			c := fc.Args[0].GetAConst()
			if c == nil || c.GetSval() == nil {
				return nil, false
			}
			unit, ok := dateTruncUnits[strings.ToLower(c.GetSval().GetSval())]
			if !ok {
				return nil, false
			}
			m.unit, bucket, out.kind = unit, i, KindTimestampTZ
		case "max", "min":
			if fc.AggStar || len(fc.Args) != 1 {
				return nil, false
			}
			if out.col = fastRef(fc.Args[0], t, from); out.col < 0 {
				return nil, false
			}
			if out.kind, out.float = fastColumnKind(t.Columns[out.col].Type); out.kind == 0 {
				return nil, false
			}
		case "count":
			out.kind = KindInt64
			if !fc.AggStar {
				if len(fc.Args) != 1 {
					return nil, false
				}
				if out.col = fastRef(fc.Args[0], t, from); out.col < 0 {
					return nil, false
				}
				var k Kind
				if k, out.float = fastColumnKind(t.Columns[out.col].Type); k == 0 {
					return nil, false
				}
			} else if len(fc.Args) != 0 {
				return nil, false
			}
		default:
			return nil, false
		}
		out.name = rt.Name
		if out.name == "" {
			out.name = out.fn
		}
		m.outs = append(m.outs, out)
		m.aggs = true
	}
	// GROUP BY: the bucket, by position or by its output name (when no
	// column of the table has that name: GROUP BY prefers those), or
	// nothing when every column is an aggregate.
	refersBucket := func(n *pg_query.Node, preferInput bool) bool {
		if c := n.GetAConst(); c != nil && c.GetIval() != nil {
			return int(c.GetIval().Ival) == bucket+1
		}
		cr := n.GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 {
			return false
		}
		name := cr.Fields[0].GetString_().GetSval()
		if name == "" || name != m.outs[bucket].name {
			return false
		}
		for i, o := range m.outs {
			if i != bucket && o.name == name {
				return false // ambiguous
			}
		}
		if preferInput {
			// GROUP BY takes an input column first, system columns too.
			if slices.Contains([]string{"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"}, name) {
				return false
			}
			for _, c := range t.Columns {
				if c.Name == name {
					return false
				}
			}
		}
		return true
	}
	if m.rows && (m.aggs || sel.LimitCount != nil || sel.LimitOffset != nil) {
		// Rows without ORDER BY: which of them LIMIT keeps is open, and
		// the engine's choice is kept.
		return nil, false
	}
	if bucket < 0 {
		if len(sel.GroupClause) > 0 || len(sel.SortClause) > 0 {
			return nil, false
		}
	} else {
		if len(sel.GroupClause) != 1 || !refersBucket(sel.GroupClause[0], true) {
			return nil, false
		}
		switch len(sel.SortClause) {
		case 0:
		case 1:
			sb := sel.SortClause[0].GetSortBy()
			if sb == nil || len(sb.UseOp) > 0 || !refersBucket(sb.Node, false) {
				return nil, false
			}
			switch sb.SortbyDir {
			case pg_query.SortByDir_SORTBY_DEFAULT, pg_query.SortByDir_SORTBY_ASC:
			case pg_query.SortByDir_SORTBY_DESC:
				m.desc = true
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	// LIMIT and OFFSET: non-negative integer literals or NULL (in
	// describe mode a parameter is left to the engine's path).
	if sel.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, false
	}
	var ok bool
	if m.limit, ok = constantCount(sel.LimitCount); !ok {
		return nil, false
	}
	if m.offset, ok = constantCount(sel.LimitOffset); !ok {
		return nil, false
	}
	m.offset = max(m.offset, 0)
	if sel.WhereClause != nil && !m.matchWhere(sel.WhereClause, t, from, describe) {
		return nil, false
	}
	return m, true
}

// constantCount is the value of a LIMIT or OFFSET that is absent (-1),
// NULL (-1) or a non-negative integer literal; false for anything else,
// which the engine's path evaluates (or refuses, as a negative count).
func constantCount(n *pg_query.Node) (int64, bool) {
	if n == nil {
		return -1, true
	}
	c := n.GetAConst()
	switch {
	case c == nil:
		return 0, false
	case c.Isnull:
		return -1, true
	case c.GetIval() != nil && c.GetIval().Ival >= 0:
		return int64(c.GetIval().Ival), true
	}
	return 0, false
}

// matchWhere takes a WHERE that is an AND of comparisons of the time
// column with constants and of text columns with string constants (=,
// IN).
func (m *fastAgg) matchWhere(n *pg_query.Node, t schema.Table, from string, describe bool) bool {
	if b := n.GetBoolExpr(); b != nil {
		if b.Boolop != pg_query.BoolExprType_AND_EXPR {
			return false
		}
		for _, a := range b.Args {
			if !m.matchWhere(a, t, from, describe) {
				return false
			}
		}
		return true
	}
	e := n.GetAExpr()
	if e == nil || len(e.Name) != 1 || e.Lexpr == nil || e.Rexpr == nil {
		return false
	}
	op := e.Name[0].GetString_().GetSval()
	textCol := func(col int) bool {
		return col >= 0 && t.Columns[col].Type == schema.Text && !t.Columns[col].Padded
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		if _, ok := flipOp[op]; !ok {
			return false
		}
		left, right := fastRef(e.Lexpr, t, from), fastRef(e.Rexpr, t, from)
		switch {
		case left == t.TimeIndex && right < 0 && timeConst(e.Rexpr, describe, m.params):
			m.times = append(m.times, timeCmp{op: op, expr: e.Rexpr})
			return true
		case right == t.TimeIndex && left < 0 && timeConst(e.Lexpr, describe, m.params):
			m.times = append(m.times, timeCmp{op: flipOp[op], expr: e.Lexpr})
			return true
		case left >= 0 && right < 0 && t.Columns[left].Type == schema.Float64:
			v, ok := numConst(e.Rexpr)
			if ok {
				m.nums = append(m.nums, numFilter{col: left, op: op, v: v})
			}
			return ok
		case right >= 0 && left < 0 && t.Columns[right].Type == schema.Float64:
			v, ok := numConst(e.Lexpr)
			if ok {
				m.nums = append(m.nums, numFilter{col: right, op: flipOp[op], v: v})
			}
			return ok
		}
		if op != "=" {
			return false
		}
		col, other := left, e.Rexpr
		if col < 0 {
			col, other = right, e.Lexpr
		}
		if !textCol(col) || fastRef(other, t, from) >= 0 {
			return false
		}
		v, ok := stringConst(other, describe, m.params)
		if !ok {
			return false
		}
		m.filters = append(m.filters, textFilter{col: col, want: [][]byte{v}})
		return true
	case pg_query.A_Expr_Kind_AEXPR_IN:
		col := fastRef(e.Lexpr, t, from)
		items := e.Rexpr.GetList().GetItems()
		if op != "=" || !textCol(col) || len(items) == 0 {
			return false
		}
		f := textFilter{col: col}
		for _, it := range items {
			v, ok := stringConst(it, describe, m.params)
			if !ok {
				return false
			}
			if !slices.ContainsFunc(f.want, func(w []byte) bool { return bytes.Equal(w, v) }) || describe {
				f.want = append(f.want, v) // a value once: each row counts once
			}
		}
		m.filters = append(m.filters, f)
		return true
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN:
		items := e.Rexpr.GetList().GetItems()
		if fastRef(e.Lexpr, t, from) != t.TimeIndex || len(items) != 2 || !timeConst(items[0], describe, m.params) || !timeConst(items[1], describe, m.params) {
			return false
		}
		m.times = append(m.times, timeCmp{op: "between", expr: items[0], hi: items[1]})
		return true
	}
	return false
}

// columns are the result columns, as the engine's path describes them.
func (m *fastAgg) columns() []Column {
	cols := make([]Column, len(m.outs))
	for i, o := range m.outs {
		cols[i] = columnFor(o.name, o.kind.typeName())
	}
	return cols
}

// fastTable returns the table a SELECT of the path's shape reads: one of
// the store's, not shadowed by a temporary table of the session.
func (s *Session) fastTable(sel *pg_query.SelectStmt) (schema.Table, bool) {
	if sel == nil || len(sel.FromClause) != 1 {
		return schema.Table{}, false
	}
	rv := sel.FromClause[0].GetRangeVar()
	if rv == nil {
		return schema.Table{}, false
	}
	if _, temp := s.temps[rv.Relname]; temp {
		return schema.Table{}, false
	}
	return s.p.store.Table(rv.Relname)
}

// fastAggColumns describes a prepared SELECT the path may answer, with
// its parameters' types.
func (s *Session) fastAggColumns(sel *pg_query.SelectStmt, params []uint32) ([]Column, bool) {
	if s.noFastAgg {
		return nil, false
	}
	t, ok := s.fastTable(sel)
	if !ok {
		return nil, false
	}
	m, ok := matchFastAgg(sel, t, true, params)
	if !ok {
		return nil, false
	}
	return m.columns(), true
}
