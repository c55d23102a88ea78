package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// maxRowFields is the widest ROW(…) NameRowValues names (one macro per
// width, RowMacros).
const maxRowFields = 32

// NameRowValues gives the fields of each ROW(…) and (a, b, …) value that
// is not compared PostgreSQL's names f1, f2, …: the engine's row
// constructor makes a struct without field names, which its driver
// cannot read, so that a row value in a result failed. Rows compared
// ((a, b) = (c, d), (a, b) IN (…), IN (SELECT …)) keep the engine's
// constructor, which compares field by field.
func NameRowValues(root *pg_query.Node) bool {
	compared := map[*pg_query.RowExpr]bool{}
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		mark := func(n *pg_query.Node) {
			if r := n.GetRowExpr(); r != nil {
				compared[r] = true
			}
			for _, it := range n.GetList().GetItems() {
				if r := it.GetRowExpr(); r != nil {
					compared[r] = true
				}
			}
		}
		switch x := m.(type) {
		case *pg_query.A_Expr:
			mark(x.Lexpr)
			mark(x.Rexpr)
		case *pg_query.SubLink:
			mark(x.Testexpr)
		case *pg_query.NullTest:
			mark(x.Arg)
		case *pg_query.BooleanTest:
			mark(x.Arg)
		}
		return nil
	})
	changed := false
	sqltree.SubstituteNodes(root.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		r := n.GetRowExpr()
		if r == nil || compared[r] || len(r.Args) == 0 || len(r.Args) > maxRowFields || len(r.Colnames) > 0 {
			return nil
		}
		changed = true
		args := make([]*pg_query.Node, len(r.Args))
		for i, a := range r.Args {
			// Held in a list, so that a row that is itself the field is
			// named too (the walk looks below its root).
			holder := &pg_query.Node{Node: &pg_query.Node_List{List: &pg_query.List{Items: []*pg_query.Node{proto.Clone(a).(*pg_query.Node)}}}}
			NameRowValues(holder)
			args[i] = holder.GetList().Items[0]
		}
		return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(fmt.Sprintf("_tsdb_row%d", len(args)))}, args, -1)
	})
	return changed
}

// rowMacros build the structs NameRowValues calls for.
func rowMacros() []string {
	out := make([]string, 0, maxRowFields)
	for n := 1; n <= maxRowFields; n++ {
		params, fields := make([]string, n), make([]string, n)
		for i := range n {
			params[i] = fmt.Sprintf("a%d", i+1)
			fields[i] = fmt.Sprintf("f%d := a%d", i+1, i+1)
		}
		out = append(out, fmt.Sprintf("CREATE MACRO _tsdb_row%d(%s) AS struct_pack(%s)", n, strings.Join(params, ", "), strings.Join(fields, ", ")))
	}
	return out
}
