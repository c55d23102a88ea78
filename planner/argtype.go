package planner

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
)

// Types of select list expressions known before the engine binds a query,
// from the catalog: what the dialect's rewrites that depend on a type
// (exact aggregates, extract, sum and avg of intervals) may rely on.

// argumentType returns the type of an expression of sel's select list
// where it is known without the engine: a column that every table of the
// FROM list having it holds as the same type. Anything else (subqueries
// in FROM, expressions) is schema.Invalid.
func (s *Session) argumentType(sel *pg_query.SelectStmt) func(*pg_query.Node) schema.Type {
	var tables []schema.Table
	known := true
	var from func(n *pg_query.Node)
	from = func(n *pg_query.Node) {
		switch {
		case n.GetRangeVar() != nil:
			if name, ok := isTempRelation(n.GetRangeVar()); ok && s.isTemp(name) {
				tables = append(tables, schema.Table{Name: name, TimeIndex: -1, Columns: s.temps[name]})
				return
			}
			name, err := relationName(n.GetRangeVar())
			if err != nil {
				known = false
				return
			}
			t, ok := s.p.store.Table(name)
			if !ok {
				known = false
				return
			}
			tables = append(tables, t)
		case n.GetJoinExpr() != nil:
			from(n.GetJoinExpr().Larg)
			from(n.GetJoinExpr().Rarg)
		default:
			known = false
		}
	}
	for _, n := range sel.FromClause {
		from(n)
	}
	return func(arg *pg_query.Node) schema.Type {
		cr := arg.GetColumnRef()
		if !known || cr == nil || len(cr.Fields) == 0 || cr.Fields[len(cr.Fields)-1].GetString_() == nil {
			return schema.Invalid
		}
		col := cr.Fields[len(cr.Fields)-1].GetString_().Sval
		found := schema.Invalid
		for _, t := range tables {
			i := t.ColumnIndex(col)
			if i < 0 {
				continue
			}
			if ty := t.Columns[i].Type; found != schema.Invalid && ty != found {
				return schema.Invalid
			} else {
				found = ty
			}
		}
		return found
	}
}
