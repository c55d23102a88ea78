package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// hypotheticalTemplates compute PostgreSQL's hypothetical-set aggregates
// (rank(c) WITHIN GROUP (ORDER BY x): where a row with values c would rank
// among the group's rows) by counting the rows that would precede it.
// %[1]s stands for "the row precedes the hypothetical one", %[2]s for "the
// row is its peer", %[3]s for the row's sort key and %[4]s for the
// aggregate's own FILTER.
var hypotheticalTemplates = map[string]string{
	"rank":         "(count(*) FILTER (WHERE %[4]s AND (%[1]s)) + 1)",
	"dense_rank":   "(count(DISTINCT %[3]s) FILTER (WHERE %[4]s AND (%[1]s)) + 1)",
	"percent_rank": "CASE WHEN count(*) FILTER (WHERE %[4]s) = 0 THEN CAST(0 AS float8) ELSE CAST(count(*) FILTER (WHERE %[4]s AND (%[1]s)) AS float8) / count(*) FILTER (WHERE %[4]s) END",
	"cume_dist":    "CAST(count(*) FILTER (WHERE %[4]s AND ((%[1]s) OR (%[2]s))) + 1 AS float8) / (count(*) FILTER (WHERE %[4]s) + 1)",
}

// hypothetical rewrites a hypothetical-set aggregate, which the engine
// lacks.
func hypothetical(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	name := sqltree.LastName(fc.Funcname)
	tmpl, ok := hypotheticalTemplates[name]
	if !ok || !fc.AggWithinGroup {
		return nil, false
	}
	if fc.Over == nil && len(fc.Args) != len(fc.AggOrder) {
		// PostgreSQL's hypothetical-set aggregates take as many direct
		// arguments as ordering columns: no such function otherwise.
		return Raise(sqlerr.UndefinedFunction, fmt.Sprintf("function %s(%d direct and %d ordering arguments) does not exist", name, len(fc.Args), len(fc.AggOrder))), true
	}
	if fc.Over != nil {
		return Raise(sqlerr.FeatureNotSupported, name+"() WITHIN GROUP is not supported as a window function"), true
	}
	n := len(fc.Args)
	args := make([]*pg_query.Node, 0, 2*n+1)
	var grouped []string // direct arguments that read columns
	for i, a := range fc.Args {
		subquery, reads := false, false
		_ = sqltree.Walk(a.ProtoReflect(), func(m proto.Message) error {
			switch m.(type) {
			case *pg_query.SubLink:
				subquery = true
			case *pg_query.ColumnRef:
				reads = true
			}
			return nil
		})
		if subquery {
			return Raise(sqlerr.FeatureNotSupported, name+"() WITHIN GROUP with a subquery as its argument is not supported"), true
		}
		if reads {
			grouped = append(grouped, fmt.Sprintf("_tsdb_arg%d", n+i+1))
		}
	}
	for _, o := range fc.AggOrder {
		sb := o.GetSortBy()
		if sb == nil || sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return Raise(sqlerr.FeatureNotSupported, name+"() WITHIN GROUP is supported with ASC or DESC"), true
		}
		args = append(args, sb.Node)
	}
	args = append(args, fc.Args...)
	filter := fc.AggFilter
	if filter == nil {
		filter = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: true}}}}}
	}
	args = append(args, filter)

	// A row precedes the hypothetical one when it sorts before it on the
	// first column where the two differ (NULLs equal, placed as the
	// column's NULLS FIRST/LAST says); it is its peer when no column
	// differs.
	var precedes, equal, keys []string
	for i, o := range fc.AggOrder {
		sb := o.GetSortBy()
		x, c := fmt.Sprintf("_tsdb_arg%d", i+1), fmt.Sprintf("_tsdb_arg%d", n+i+1)
		desc := sb.SortbyDir == pg_query.SortByDir_SORTBY_DESC
		nullsFirst := sb.SortbyNulls == pg_query.SortByNulls_SORTBY_NULLS_FIRST || desc && sb.SortbyNulls == pg_query.SortByNulls_SORTBY_NULLS_DEFAULT
		op := "<"
		if desc {
			op = ">"
		}
		before := fmt.Sprintf("%s %s %s OR %s IS NOT NULL AND %s IS NULL", x, op, c, x, c)
		if nullsFirst {
			before = fmt.Sprintf("%s %s %s OR %s IS NULL AND %s IS NOT NULL", x, op, c, x, c)
		}
		precedes = append(precedes, "("+strings.Join(append(append([]string(nil), equal...), "("+before+")"), " AND ")+")")
		equal = append(equal, fmt.Sprintf("%s IS NOT DISTINCT FROM %s", x, c))
		keys = append(keys, x)
	}
	expr := strings.NewReplacer("%[1]s", strings.Join(precedes, " OR "), "%[2]s", strings.Join(equal, " AND "),
		"%[3]s", "row("+strings.Join(keys, ", ")+")", "%[4]s", fmt.Sprintf("_tsdb_arg%d", 2*n+1)).Replace(tmpl)
	if len(grouped) > 0 {
		// PostgreSQL takes grouped columns as direct arguments, and refuses
		// others (42803). Named outside the aggregates, they meet the
		// engine's same check.
		for i := range grouped {
			grouped[i] = "(" + grouped[i] + " IS NULL OR true)"
		}
		expr = "CASE WHEN " + strings.Join(grouped, " AND ") + " THEN " + expr + " END"
	}
	r, err := sqltree.Template(expr, args...)
	if err != nil {
		return nil, false
	}
	return r, true
}
