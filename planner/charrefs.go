package planner

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// The rewrites that make a statement compute with character(n) values as
// PostgreSQL does where the value's trailing spaces matter (the analysis
// of what a result shows is charcols.go).

// padCharacterRefs replaces, in every SELECT of the statement, a
// reference to a character(n) column where PostgreSQL computes with the
// padded value by rpad(column, n): the left side of LIKE, ILIKE, SIMILAR
// TO and regular expression operators, the arguments of octet_length,
// concat, concat_ws, format and the JSON builders, elements of ARRAY[]
// and ROW(), and array_agg. A string constant or a parameter compared
// with such a column loses its trailing spaces, which the comparison
// ignores in PostgreSQL. With results (a query whose rows go to the client), it
// also pads what padMixedResults pads. It reports whether it changed
// anything.
func (s *Session) padCharacterRefs(root *pg_query.Node, results bool) bool {
	if !s.readsPadded(root) {
		return false
	}
	a := &charAnalysis{s: s, width: -1}
	changed := false
	var visit func(sel *pg_query.SelectStmt)
	var visitClauses func(from, clauses []*pg_query.Node)
	visit = func(sel *pg_query.SelectStmt) {
		if sel == nil {
			return
		}
		if sel.WithClause != nil {
			for _, n := range sel.WithClause.Ctes {
				visit(n.GetCommonTableExpr().GetCtequery().GetSelectStmt())
			}
		}
		if isSetOp(sel) {
			visit(sel.Larg)
			visit(sel.Rarg)
			return
		}
		clauses := append(append([]*pg_query.Node(nil), sel.TargetList...), sel.GroupClause...)
		visitClauses(sel.FromClause, append(clauses, sel.WhereClause, sel.HavingClause))
	}
	visitClauses = func(from, clauses []*pg_query.Node) {
		for _, f := range from {
			sqltree.Walk(f.ProtoReflect(), func(m proto.Message) error {
				switch x := m.(type) {
				case *pg_query.RangeSubselect:
					visit(x.Subquery.GetSelectStmt())
					return sqltree.SkipChildren
				case *pg_query.JoinExpr:
					// ON sees the FROM list's columns.
					clauses = append(clauses, x.Quals)
				case *pg_query.SelectStmt:
					return sqltree.SkipChildren // a subquery of ON: visited with it
				}
				return nil
			})
		}
		sc := a.scope(from)
		pad := func(n *pg_query.Node) {
			cr := n.GetColumnRef()
			if cr == nil {
				return
			}
			if w, ok := sc.column(cr); ok && w > 0 {
				padRef(n, w)
				changed = true
			}
		}
		rewrite := func(m proto.Message) error {
			switch e := m.(type) {
			case *pg_query.SelectStmt:
				visit(e) // a subquery: its own scope
				return sqltree.SkipChildren
			case *pg_query.A_Expr:
				op := sqltree.LastName(e.Name)
				switch {
				case e.Kind == pg_query.A_Expr_Kind_AEXPR_LIKE || e.Kind == pg_query.A_Expr_Kind_AEXPR_ILIKE ||
					e.Kind == pg_query.A_Expr_Kind_AEXPR_SIMILAR || op == "~" || op == "~*" || op == "!~" || op == "!~*":
					pad(e.Lexpr)
				case e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && isComparison(op):
					l := trimAgainst(sc, e.Lexpr, e.Rexpr)
					changed = trimAgainst(sc, e.Rexpr, e.Lexpr) || l || changed
				case e.Kind == pg_query.A_Expr_Kind_AEXPR_IN || e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN ||
					e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
					for _, item := range e.Rexpr.GetList().GetItems() {
						changed = trimAgainst(sc, e.Lexpr, item) || changed
					}
				case e.Kind == pg_query.A_Expr_Kind_AEXPR_DISTINCT || e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT ||
					e.Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF:
					l := trimAgainst(sc, e.Lexpr, e.Rexpr)
					changed = trimAgainst(sc, e.Rexpr, e.Lexpr) || l || changed
				}
			case *pg_query.CaseExpr:
				// CASE c WHEN 'ab ' …: each WHEN compares with c.
				if e.Arg != nil {
					for _, w := range e.Args {
						changed = trimAgainst(sc, e.Arg, w.GetCaseWhen().GetExpr()) || changed
					}
				}
			case *pg_query.FuncCall:
				switch sqltree.LastName(e.Funcname) {
				case "octet_length":
					// The engine's octet_length takes bytes; strlen counts
					// a string's.
					if len(e.Args) == 1 {
						if w, ok := sc.column(e.Args[0].GetColumnRef()); ok && w > 0 {
							e.Funcname = []*pg_query.Node{pg_query.MakeStrNode("strlen")}
							padRef(e.Args[0], w)
							changed = true
						}
					}
				case "concat", "concat_ws", "format", "to_json", "to_jsonb", "array_agg",
					"json_agg", "jsonb_agg", "json_build_array", "jsonb_build_array", "json_build_object", "jsonb_build_object":
					for _, arg := range e.Args {
						pad(arg)
					}
				}
			case *pg_query.A_ArrayExpr:
				for _, el := range e.Elements {
					pad(el)
				}
			case *pg_query.RowExpr:
				for _, el := range e.Args {
					pad(el)
				}
			}
			return nil
		}
		for _, c := range clauses {
			if c != nil {
				sqltree.Walk(c.ProtoReflect(), rewrite)
			}
		}
	}
	switch n := root.Node.(type) {
	case *pg_query.Node_SelectStmt:
		visit(n.SelectStmt)
		if results {
			changed = a.padMixedResults(n.SelectStmt) || changed
		}
	case *pg_query.Node_InsertStmt:
		visit(n.InsertStmt.SelectStmt.GetSelectStmt())
	case *pg_query.Node_UpdateStmt:
		u := n.UpdateStmt
		from := append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: u.Relation}}}, u.FromClause...)
		visitClauses(from, append(append(append([]*pg_query.Node(nil), u.TargetList...), u.ReturningList...), u.WhereClause))
	case *pg_query.Node_DeleteStmt:
		d := n.DeleteStmt
		from := append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: d.Relation}}}, d.UsingClause...)
		visitClauses(from, append(append([]*pg_query.Node(nil), d.ReturningList...), d.WhereClause))
	}
	return changed
}

// padMixedResults pads, in the statement's own select list (of each
// branch of a set operation), the character(n) columns among the results
// of a CASE, COALESCE, GREATEST or LEAST that mixes them with other text:
// PostgreSQL shows each value as it is, the column's padded. (Deeper in
// the statement such a value is compared as character(n), without its
// spaces, and left as it is.)
func (a *charAnalysis) padMixedResults(sel *pg_query.SelectStmt) bool {
	if sel == nil {
		return false
	}
	if isSetOp(sel) {
		l := a.padMixedResults(sel.Larg)
		return a.padMixedResults(sel.Rarg) || l
	}
	sc := a.scope(sel.FromClause)
	changed := false
	for _, t := range sel.TargetList {
		e := t.GetResTarget().GetVal()
		if e == nil {
			continue
		}
		results := mixedResults(e)
		if results == nil || !a.mixedPaddable(sc, e) {
			continue
		}
		if w, ok := a.exprWidth(sc, e); !ok || w != mixedWidth {
			continue
		}
		for _, r := range results {
			if r == nil {
				continue
			}
			if w, ok := sc.column(r.GetColumnRef()); ok && w > 0 {
				padRef(r, w)
				changed = true
			}
		}
	}
	return changed
}

// mixedResults are the results of a CASE, COALESCE, GREATEST or LEAST, or
// the value and default of lag and lead; nil for anything else.
func mixedResults(e *pg_query.Node) []*pg_query.Node {
	var results []*pg_query.Node
	switch {
	case e.GetCaseExpr() != nil:
		for _, w := range e.GetCaseExpr().Args {
			results = append(results, w.GetCaseWhen().GetResult())
		}
		results = append(results, e.GetCaseExpr().Defresult)
	case e.GetCoalesceExpr() != nil:
		results = e.GetCoalesceExpr().Args
	case e.GetMinMaxExpr() != nil:
		results = e.GetMinMaxExpr().Args
	case e.GetFuncCall() != nil && len(e.GetFuncCall().Args) == 3:
		// lag and lead with a default.
		if name := sqltree.LastName(e.GetFuncCall().Funcname); name == "lag" || name == "lead" {
			results = []*pg_query.Node{e.GetFuncCall().Args[0], e.GetFuncCall().Args[2]}
		}
	}
	return results
}

// mixedPaddable reports whether padMixedResults pads e's character(n)
// values: a CASE, COALESCE, GREATEST or LEAST whose character(n) results
// are column references.
func (a *charAnalysis) mixedPaddable(sc *charScope, e *pg_query.Node) bool {
	results := mixedResults(e)
	if results == nil {
		return false
	}
	for _, r := range results {
		if r == nil {
			continue
		}
		if w, ok := a.exprWidth(sc, r); !ok || w == mixedWidth || w > 0 && r.GetColumnRef() == nil {
			return false
		}
	}
	return true
}

// padRef replaces a column reference by rpad(column, n).
func padRef(n *pg_query.Node, width int) {
	n.Node = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("rpad")}, []*pg_query.Node{
		{Node: n.Node}, pg_query.MakeAConstIntNode(int64(width), -1), pg_query.MakeAConstStrNode(" ", -1)}, -1).Node
}

// isComparison reports a comparison operator.
func isComparison(op string) bool {
	switch op {
	case "=", "<>", "!=", "<", ">", "<=", ">=":
		return true
	}
	return false
}

// trimAgainst takes the trailing spaces off a string constant compared
// with a character(n) column.
func trimAgainst(sc *charScope, col, other *pg_query.Node) bool {
	cr := col.GetColumnRef()
	c := other.GetAConst()
	param := other.GetParamRef() != nil
	if cr == nil || !param && (c == nil || c.GetSval() == nil || !strings.HasSuffix(c.GetSval().Sval, " ")) {
		return false
	}
	if w, ok := sc.column(cr); !ok || w <= 0 {
		return false
	}
	if param {
		// A parameter compared with the column is of its type.
		other.Node = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("rtrim")},
			[]*pg_query.Node{{Node: other.Node}, pg_query.MakeAConstStrNode(" ", -1)}, -1).Node
		return true
	}
	c.GetSval().Sval = strings.TrimRight(c.GetSval().Sval, " ")
	return true
}
