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
// (rank(c) WITHIN GROUP (ORDER BY x): where a row with value c would rank
// among the group's rows) by counting the rows that would precede it,
// %s standing for that test. _tsdb_arg1 is x, _tsdb_arg2 is c and
// _tsdb_arg3 the aggregate's own FILTER.
var hypotheticalTemplates = map[string]string{
	"rank":         "(count(*) FILTER (WHERE _tsdb_arg3 AND (%[1]s)) + 1)",
	"dense_rank":   "(count(DISTINCT _tsdb_arg1) FILTER (WHERE _tsdb_arg3 AND (%[1]s)) + %[2]s + 1)",
	"percent_rank": "CASE WHEN count(*) FILTER (WHERE _tsdb_arg3) = 0 THEN CAST(0 AS float8) ELSE CAST(count(*) FILTER (WHERE _tsdb_arg3 AND (%[1]s)) AS float8) / count(*) FILTER (WHERE _tsdb_arg3) END",
	"cume_dist":    "CAST(count(*) FILTER (WHERE _tsdb_arg3 AND ((%[1]s) OR _tsdb_arg1 IS NOT DISTINCT FROM _tsdb_arg2)) + 1 AS float8) / (count(*) FILTER (WHERE _tsdb_arg3) + 1)",
}

// hypothetical rewrites a hypothetical-set aggregate, which the engine
// lacks, of one ordering column.
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
	if len(fc.Args) != 1 || len(fc.AggOrder) != 1 || fc.Over != nil {
		return Raise(sqlerr.FeatureNotSupported, name+"() WITHIN GROUP is supported with one ordering column"), true
	}
	varying := false
	_ = sqltree.Walk(fc.Args[0].ProtoReflect(), func(m proto.Message) error {
		switch m.(type) {
		case *pg_query.ColumnRef, *pg_query.FuncCall, *pg_query.SubLink:
			varying = true
		}
		return nil
	})
	if varying {
		// PostgreSQL takes grouped columns too; tsdb only constants.
		return Raise("42803", name+"() WITHIN GROUP takes a constant as its argument"), true
	}
	sb := fc.AggOrder[0].GetSortBy()
	if sb == nil || sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
		return Raise(sqlerr.FeatureNotSupported, name+"() WITHIN GROUP is supported with ASC or DESC"), true
	}
	desc := sb.SortbyDir == pg_query.SortByDir_SORTBY_DESC
	nullsFirst := sb.SortbyNulls == pg_query.SortByNulls_SORTBY_NULLS_FIRST || desc && sb.SortbyNulls == pg_query.SortByNulls_SORTBY_NULLS_DEFAULT
	precedes := "_tsdb_arg1 < _tsdb_arg2"
	if desc {
		precedes = "_tsdb_arg1 > _tsdb_arg2"
	}
	nullGroup := "0"
	if nullsFirst {
		// NULLs sort before the hypothetical row: they precede it.
		precedes += " OR _tsdb_arg1 IS NULL"
		nullGroup = "CASE WHEN bool_or(_tsdb_arg1 IS NULL) FILTER (WHERE _tsdb_arg3) THEN 1 ELSE 0 END"
	}
	filter := fc.AggFilter
	if filter == nil {
		filter = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: true}}}}}
	}
	expr := strings.NewReplacer("%[1]s", precedes, "%[2]s", nullGroup).Replace(tmpl)
	r, err := sqltree.Template(expr, sb.Node, fc.Args[0], filter)
	if err != nil {
		return nil, false
	}
	return r, true
}
