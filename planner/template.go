package planner

// Rewrites that turn a PostgreSQL call into an expression of several
// engine calls write the expression as SQL text around placeholders and
// put the call's arguments in.

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// exprTemplate parses expr, an expression whose _tsdb_arg1, _tsdb_arg2, …
// stand for args, and puts a copy of each arg in its place.
func exprTemplate(expr string, args ...*pg_query.Node) (*pg_query.Node, error) {
	tree, err := pg_query.Parse("SELECT " + expr)
	if err != nil {
		return nil, fmt.Errorf("planner: expression template %q: %w", expr, err)
	}
	out := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	if f := out.GetColumnRef().GetFields(); len(f) == 1 && f[0].GetString_().GetSval() == "_tsdb_arg1" && len(args) > 0 {
		return proto.Clone(args[0]).(*pg_query.Node), nil
	}
	substituteNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		f := n.GetColumnRef().GetFields()
		if len(f) != 1 {
			return nil
		}
		var i int
		if _, err := fmt.Sscanf(f[0].GetString_().GetSval(), "_tsdb_arg%d", &i); err != nil || i < 1 || i > len(args) {
			return nil
		}
		return proto.Clone(args[i-1]).(*pg_query.Node)
	})
	return out, nil
}
