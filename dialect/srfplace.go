package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// setReturning are the set-returning functions a select list may call.
var setReturning = map[string]bool{
	"generate_series": true, "generate_subscripts": true, "unnest": true, "regexp_matches": true,
	"regexp_split_to_table": true, "json_array_elements": true, "json_array_elements_text": true,
	"jsonb_array_elements": true, "jsonb_array_elements_text": true, "json_each": true, "jsonb_each": true,
	"json_each_text": true, "jsonb_each_text": true, "json_object_keys": true, "jsonb_object_keys": true,
}

// CheckSetReturning refuses, as PostgreSQL does (0A000), a set-returning
// function in a select list inside CASE or COALESCE (evaluated for some
// rows only) or in the arguments of an aggregate or window function. The
// engine would compute a list there, or an aggregate of it, and answer.
func CheckSetReturning(root proto.Message) error {
	var found error
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || found != nil {
			return nil
		}
		for _, t := range sel.TargetList {
			found = srfPlacement(t.GetResTarget().GetVal(), "")
			if found != nil {
				return found
			}
		}
		return nil
	})
	return found
}

// srfPlacement checks n, an expression of a select list, inside the
// construct where (empty at the top).
func srfPlacement(n *pg_query.Node, where string) error {
	if n == nil {
		return nil
	}
	var found error
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if found != nil {
			return sqltree.SkipChildren
		}
		inner := ""
		var children []*pg_query.Node
		switch x := m.(type) {
		case *pg_query.SubLink:
			return sqltree.SkipChildren // another query's select list
		case *pg_query.FuncCall:
			name := sqltree.LastName(x.Funcname)
			if setReturning[name] && where != "" {
				found = sqlerr.New(sqlerr.FeatureNotSupported, "%s", where)
				return sqltree.SkipChildren
			}
			switch {
			case x.Over != nil:
				inner = "window function calls cannot contain set-returning function calls"
			case aggregateNames[name] || x.AggStar || x.AggWithinGroup || len(x.AggOrder) > 0 || x.AggFilter != nil:
				inner = "aggregate function calls cannot contain set-returning function calls"
			default:
				return nil
			}
			children = x.Args
		case *pg_query.CaseExpr:
			inner = "set-returning functions are not allowed in CASE"
			children = []*pg_query.Node{x.Arg, x.Defresult}
			for _, w := range x.Args {
				children = append(children, w.GetCaseWhen().GetExpr(), w.GetCaseWhen().GetResult())
			}
		case *pg_query.CoalesceExpr:
			inner = "set-returning functions are not allowed in COALESCE"
			children = x.Args
		default:
			return nil
		}
		if where != "" {
			inner = where // the outermost construct names the error
		}
		for _, c := range children {
			if found = srfPlacement(c, inner); found != nil {
				break
			}
		}
		return sqltree.SkipChildren
	})
	return found
}
