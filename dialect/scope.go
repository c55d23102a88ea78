package dialect

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// What the rewrites of a statement share: the scope one rewrites, and
// the one walk that finds what the whole-tree rewrites look for.

// substituteScope applies rewrite to root and, unless rewrite keeps root
// as it is (a subquery, its own scope), to the nodes under it, without
// walking into what it puts in place (sqltree.SubstituteNodes).
func substituteScope(root *pg_query.Node, rewrite func(*pg_query.Node) *pg_query.Node) {
	if r := rewrite(root); r == root {
		return
	} else if r != nil {
		root.Node = r.Node
		return
	}
	sqltree.SubstituteNodes(root.ProtoReflect(), rewrite)
}

// Features are what a statement holds that the whole-tree rewrites look
// for, found in one walk: a statement of 20,000 terms must not be walked
// once per rewrite.
type Features struct {
	SetOps   bool // a set operation or a VALUES list
	Bytea    bool // a bytea cast or a bytea function
	Interval bool // an interval cast or function
	Minus    bool // a binary -
	Windows  bool // a window function or a WINDOW clause
	// Err is an error PostgreSQL's analysis finds in the statement as
	// written (an aggregate with DISTINCT ordered by what it does not
	// aggregate, 42P10).
	Err error
}

// orderedAggregates are PostgreSQL's aggregates whose result an ORDER BY
// changes: an unknown name is 42883 before anything else in PostgreSQL.
var orderedAggregates = map[string]bool{"string_agg": true, "array_agg": true, "json_agg": true, "jsonb_agg": true,
	"json_object_agg": true, "jsonb_object_agg": true, "xmlagg": true}

// FeaturesOf walks n once.
func FeaturesOf(n *pg_query.Node) Features {
	var f Features
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.SelectStmt:
			f.SetOps = f.SetOps || isSetOp(x) || len(x.ValuesLists) > 0
			f.Windows = f.Windows || len(x.WindowClause) > 0
		case *pg_query.TypeName:
			switch sqltree.LastName(x.Names) {
			case "bytea":
				f.Bytea = true
			case "interval":
				f.Interval = true
			}
		case *pg_query.FuncCall:
			name := sqltree.LastName(x.Funcname)
			f.Bytea = f.Bytea || byteaResults[name]
			f.Interval = f.Interval || strings.HasPrefix(name, "justify_") || name == "make_interval"
			f.Windows = f.Windows || x.Over != nil
			if f.Err == nil && x.AggDistinct && len(x.AggOrder) > 0 && !x.AggWithinGroup && orderedAggregates[name] && !distinctOrderInArgs(x) {
				f.Err = sqlerr.New("42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
			}
		case *pg_query.A_Expr:
			f.Minus = f.Minus || x.Kind == pg_query.A_Expr_Kind_AEXPR_OP && x.Lexpr != nil && sqltree.LastName(x.Name) == "-"
		}
		return nil
	})
	return f
}
