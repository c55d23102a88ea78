package planner

import (
	"fmt"
	"math"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
)

// Types of select list expressions known before the engine binds a query,
// from the catalog: what the dialect's rewrites that depend on a type
// (exact aggregates, extract, sum and avg of intervals) may rely on.

// argumentType returns the type of an expression of sel's select list
// where it is known without the engine: a column that every table of the
// FROM list having it holds as the same type, or a column qualified by
// the name of a table of the FROM list (whatever else the list holds).
// Anything else (columns of subqueries in FROM, expressions) is
// schema.Invalid.
func (s *Session) argumentType(sel *pg_query.SelectStmt) func(*pg_query.Node) schema.Type {
	tables, aliases, known := s.fromTables(sel)
	return func(arg *pg_query.Node) schema.Type {
		cr := arg.GetColumnRef()
		if cr == nil || len(cr.Fields) == 0 || cr.Fields[len(cr.Fields)-1].GetString_() == nil {
			return schema.Invalid
		}
		col := cr.Fields[len(cr.Fields)-1].GetString_().Sval
		if len(cr.Fields) == 2 {
			if k, ok := aliases[cr.Fields[0].GetString_().GetSval()]; ok {
				if i := tables[k].ColumnIndex(col); i >= 0 {
					return tables[k].Columns[i].Type
				}
				return schema.Invalid
			}
		}
		if !known {
			return schema.Invalid
		}
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

// fromTables returns the tables of sel's FROM list, with the name each
// has in the query (its alias, else its name), and whether every item of
// the list is such a table.
func (s *Session) fromTables(sel *pg_query.SelectStmt) (tables []schema.Table, aliases map[string]int, known bool) {
	aliases = map[string]int{} // a table's name in the query → its index in tables
	named := func(rv *pg_query.RangeVar, name string) {
		if rv.Alias != nil {
			name = rv.Alias.Aliasname
		}
		aliases[name] = len(tables) - 1
	}
	known = true
	var from func(n *pg_query.Node)
	from = func(n *pg_query.Node) {
		switch {
		case n.GetRangeVar() != nil:
			if name, ok := isTempRelation(n.GetRangeVar()); ok && s.isTemp(name) {
				tables = append(tables, schema.Table{Name: name, TimeIndex: -1, Columns: s.temps[name]})
				named(n.GetRangeVar(), name)
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
			named(n.GetRangeVar(), n.GetRangeVar().Relname)
		case n.GetRangeFunction() != nil:
			t, ok := seriesTable(n.GetRangeFunction())
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
	return tables, aliases, known
}

// rowColumns returns the columns of the row a whole-row reference of
// sel's select list names (t, t.*): those of the FROM list's table of
// that name, when it is one; ok is false for anything else.
func (s *Session) rowColumns(sel *pg_query.SelectStmt) func(*pg_query.ColumnRef) ([]schema.Column, bool) {
	tables, aliases, _ := s.fromTables(sel)
	return func(cr *pg_query.ColumnRef) ([]schema.Column, bool) {
		if len(cr.Fields) == 0 || len(cr.Fields) > 2 || cr.Fields[0].GetString_() == nil {
			return nil, false
		}
		if len(cr.Fields) == 2 && cr.Fields[1].GetAStar() == nil {
			return nil, false
		}
		k, ok := aliases[cr.Fields[0].GetString_().GetSval()]
		if !ok {
			return nil, false
		}
		if len(cr.Fields) == 1 {
			// A column of that name is the column, not the row.
			for _, t := range tables {
				if t.ColumnIndex(cr.Fields[0].GetString_().GetSval()) >= 0 {
					return nil, false
				}
			}
		}
		return tables[k].Columns, true
	}
}

// seriesTable is the one-column table of generate_series over integer
// constants in FROM, as PostgreSQL types it: integer when every bound
// fits one, else bigint; its column named as seriesInFrom says.
func seriesTable(rf *pg_query.RangeFunction) (schema.Table, bool) {
	fc, _, col, ok := seriesInFrom(rf)
	if !ok {
		return schema.Table{}, false
	}
	ty := schema.Int32
	for _, a := range fc.Args {
		v, ok := integerConstant(a)
		if !ok {
			return schema.Table{}, false
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			ty = schema.Int64
		}
	}
	return schema.Table{Name: col, TimeIndex: -1, Columns: []schema.Column{{Name: col, Type: ty}}}, true
}

// integerConstant is the value of an integer literal, negated or not.
func integerConstant(n *pg_query.Node) (int64, bool) {
	neg := false
	if ae := n.GetAExpr(); ae != nil && ae.Kind == pg_query.A_Expr_Kind_AEXPR_OP && ae.Lexpr == nil && len(ae.Name) == 1 && ae.Name[0].GetString_().GetSval() == "-" {
		n, neg = ae.Rexpr, true
	}
	c := n.GetAConst()
	if c == nil {
		return 0, false
	}
	var v int64
	switch {
	case c.GetIval() != nil:
		v = int64(c.GetIval().Ival)
	case c.GetFval() != nil:
		// A bigint literal beyond int4 arrives as a float token.
		if _, err := fmt.Sscan(c.GetFval().Fval, &v); err != nil || strings.ContainsAny(c.GetFval().Fval, ".eE") {
			return 0, false
		}
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
