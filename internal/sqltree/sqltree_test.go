package sqltree

import (
	"errors"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

func parseExpr(t *testing.T, sql string) *pg_query.Node {
	t.Helper()
	tree, err := pg_query.Parse("SELECT " + sql)
	if err != nil {
		t.Fatal(err)
	}
	return tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
}

func deparse(t *testing.T, n *pg_query.Node) string {
	t.Helper()
	base, _ := pg_query.Parse("SELECT 1")
	out, err := pg_query.Deparse(&pg_query.ParseResult{Version: base.Version, Stmts: []*pg_query.RawStmt{{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: n}}}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A template takes copies of its arguments, and an argument that holds a
// placeholder's name is not substituted again.
func TestTemplate(t *testing.T) {
	got, err := Template("coalesce(_tsdb_arg2, _tsdb_arg1 + 1)", parseExpr(t, "x"), parseExpr(t, "_tsdb_arg1"))
	if err != nil {
		t.Fatal(err)
	}
	if s := deparse(t, got); s != "SELECT COALESCE(_tsdb_arg1, x + 1)" {
		t.Errorf("got %s", s)
	}
	if same, _ := Template("_tsdb_arg1", parseExpr(t, "y")); deparse(t, same) != "SELECT y" {
		t.Errorf("a bare placeholder: %s", deparse(t, same))
	}
}

// ReplaceNodes replaces parents before their children and walks into a
// replacement; LastName reads a qualified name.
func TestReplaceNodes(t *testing.T) {
	n := parseExpr(t, "pg_catalog.upper(lower(a))")
	var seen []string
	ReplaceNodes(n.ProtoReflect(), func(x *pg_query.Node) *pg_query.Node {
		if fc := x.GetFuncCall(); fc != nil {
			seen = append(seen, LastName(fc.Funcname))
		}
		return nil
	})
	if len(seen) != 1 || seen[0] != "lower" {
		// the root itself is not offered, its children are
		t.Errorf("offered %v", seen)
	}
	if LastName(n.GetFuncCall().Funcname) != "upper" {
		t.Errorf("LastName: %s", LastName(n.GetFuncCall().Funcname))
	}
}

// A rewrite that replaces its own replacements without end is an error,
// not a stack overflow that would take the server down.
func TestReplaceNodesThatNeverEnd(t *testing.T) {
	tree, err := pg_query.Parse("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	run := func() (err error) {
		defer RecoverTooDeep(&err)
		ReplaceNodes(tree.Stmts[0].Stmt.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
			if c := n.GetAConst(); c != nil && c.GetIval() != nil {
				// Puts in place what it replaces.
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("f")}, []*pg_query.Node{pg_query.MakeAConstIntNode(1, -1)}, -1)
			}
			return nil
		})
		return nil
	}
	if err := run(); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("got %v, want ErrTooDeep", err)
	}
	// Any other panic goes on.
	defer func() {
		if r := recover(); r != "other" {
			t.Errorf("recovered %v, want the other panic", r)
		}
	}()
	func() {
		var err error
		defer RecoverTooDeep(&err)
		panic("other")
	}()
}
