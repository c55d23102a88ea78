package dialect

import (
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// IsAggregate reports a call of an aggregate (outside a window).
func IsAggregate(fc *pg_query.FuncCall) bool {
	return fc.Over == nil && (aggregateNames[sqltree.LastName(fc.Funcname)] || fc.AggStar || fc.AggWithinGroup)
}

// aggregateNames are the aggregates the checks of this package recognise
// (CheckOuterAggregates, CheckSetReturning): the common ones.
var aggregateNames = map[string]bool{
	"max": true, "min": true, "sum": true, "avg": true, "count": true, "bool_and": true, "bool_or": true,
	"every": true, "string_agg": true, "array_agg": true, "stddev": true, "stddev_pop": true,
	"stddev_samp": true, "variance": true, "var_pop": true, "var_samp": true, "json_agg": true,
	"jsonb_agg": true, "bit_and": true, "bit_or": true,
}

// CheckOuterAggregates refuses an aggregate that PostgreSQL assigns to an
// outer query and the engine to its own: in a SELECT without FROM, an
// aggregate whose argument names no column itself but holds a subquery
// correlated to an outer query ((SELECT max((SELECT i.x FROM t i WHERE
// i.k = o.k))) FROM t o). PostgreSQL aggregates over the outer query's
// rows (one row); the engine once per outer row. An outer column named in
// the argument itself is placed alike by both.
func CheckOuterAggregates(root proto.Message) error {
	var found error
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || found != nil || len(sel.FromClause) > 0 || sel.Op != pg_query.SetOperation_SETOP_NONE {
			return nil
		}
		for _, t := range sel.TargetList {
			_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
				fc, ok := m.(*pg_query.FuncCall)
				if !ok || found != nil || !aggregateNames[sqltree.LastName(fc.Funcname)] || fc.Over != nil {
					return nil
				}
				direct, correlated := false, false
				args := fc.Args
				if fc.AggFilter != nil {
					// A column in FILTER places the aggregate alike too.
					args = append(slices.Clone(args), fc.AggFilter)
				}
				for _, a := range args {
					walkOutsideSublinks(a, func(n proto.Message) {
						switch x := n.(type) {
						case *pg_query.ColumnRef:
							direct = true
						case *pg_query.SubLink:
							correlated = correlated || correlatedSublink(x)
						}
					})
				}
				if !direct && correlated {
					found = sqlerr.New(sqlerr.FeatureNotSupported, "%s() over a subquery that refers to an outer query is not supported; aggregate in the outer query", sqltree.LastName(fc.Funcname))
				}
				return nil
			})
		}
		return nil
	})
	return found
}

// walkOutsideSublinks visits n and its descendants, stopping at (but
// visiting) sublinks.
func walkOutsideSublinks(n *pg_query.Node, fn func(proto.Message)) {
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		fn(m)
		if _, ok := m.(*pg_query.SubLink); ok {
			return sqltree.SkipChildren
		}
		return nil
	})
}

// correlatedSublink reports whether a subquery names a column qualified by
// a relation its own FROM clauses do not define.
func correlatedSublink(sl *pg_query.SubLink) bool {
	defined := map[string]bool{}
	_ = sqltree.Walk(sl.Subselect.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.RangeVar:
			defined[x.Relname] = true
			if x.Alias != nil {
				defined[x.Alias.Aliasname] = true
			}
		case *pg_query.RangeSubselect:
			if x.Alias != nil {
				defined[x.Alias.Aliasname] = true
			}
		case *pg_query.RangeFunction:
			if x.Alias != nil {
				defined[x.Alias.Aliasname] = true
			}
		case *pg_query.CommonTableExpr:
			defined[x.Ctename] = true
		}
		return nil
	})
	outer := false
	_ = sqltree.Walk(sl.Subselect.ProtoReflect(), func(m proto.Message) error {
		if cr, ok := m.(*pg_query.ColumnRef); ok && len(cr.Fields) >= 2 {
			if q := cr.Fields[len(cr.Fields)-2].GetString_(); q != nil && !defined[q.Sval] {
				outer = true
			}
		}
		return nil
	})
	return outer
}
