package planner

// Calls of functions written in SQL are put in the place of every call
// before a statement is planned, as PostgreSQL inlines simple SQL
// functions: a scalar function becomes its expression (or a scalar
// subquery of its body), a set-returning one in FROM a subquery, in a
// select list the rows of an array of its body. The arguments are cast to
// the parameters' types and the result to the declared type. The
// functions themselves are made and found in functions.go.

import (
	"cmp"
	"fmt"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/internal/views"
)

// maxInlined bounds the calls one statement inlines: a function that
// calls itself would never end.
const maxInlined = 1000

// expandFunctions inlines the calls of functions written in SQL in a
// statement (not in CREATE VIEW or CREATE FUNCTION, which keep them as
// written: a view calls the function as it is when the view is read).
func (s *Session) expandFunctions(st statement) (statement, error) {
	// Every statement passes here, a bulk INSERT too: its tree is walked
	// only when its text names a function.
	if st.node == nil || st.node.GetViewStmt() != nil || st.node.GetCreateFunctionStmt() != nil || st.node.GetDropStmt() != nil ||
		!s.mentionsFunction(st.text) {
		return st, nil
	}
	found := false
	_ = sqltree.Walk(st.node.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok && !found {
			if name, err := functionName(fc.Funcname); err == nil {
				_, found = s.function(name)
			}
		}
		return nil
	})
	if !found {
		return st, nil
	}
	node := proto.Clone(st.node).(*pg_query.Node)
	if _, err := s.inlineFunctions(node, s.function); err != nil {
		return st, err
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return st, err
	}
	st.node, st.text = node, text
	return st, nil
}

// inlineFunctions puts each call of a function lookup knows in its place,
// in node; it reports whether it put any.
func (s *Session) inlineFunctions(node *pg_query.Node, lookup func(string) (views.Function, bool)) (bool, error) {
	known := func(fc *pg_query.FuncCall) (views.Function, bool) {
		if fc == nil {
			return views.Function{}, false
		}
		name, err := functionName(fc.Funcname)
		if err != nil {
			return views.Function{}, false
		}
		return lookup(name)
	}
	inlined := 0
	var failed error
	sqltree.ReplaceNodes(node.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if failed != nil {
			return nil
		}
		if rt := n.GetResTarget(); rt != nil && rt.Name == "" {
			// A call's column is named after the function.
			if f, ok := known(rt.Val.GetFuncCall()); ok && len(f.Columns) == 0 {
				rt.Name = f.Name
			}
			return nil
		}
		var r *pg_query.Node
		var err error
		if rf := n.GetRangeFunction(); rf != nil && !rf.Ordinality && !rf.IsRowsfrom && len(rf.Functions) == 1 {
			items := rf.Functions[0].GetList().GetItems()
			f, ok := known(items[0].GetFuncCall())
			if !ok {
				return nil
			}
			r, err = s.inlineFrom(f, items[0].GetFuncCall(), rf)
		} else if f, ok := known(n.GetFuncCall()); ok {
			r, err = s.inlineCall(f, n.GetFuncCall())
		} else {
			return nil
		}
		if err == nil {
			if inlined++; inlined > maxInlined {
				err = sqlerr.New("54001", "stack depth limit exceeded: function calls nest too deep to inline")
			}
		}
		if err != nil {
			failed = err
			return nil
		}
		return r
	})
	return inlined > 0, failed
}

// bodyWith is f's body with the call's arguments in place of its
// parameters, each cast to its parameter's type.
func (s *Session) bodyWith(f views.Function, fc *pg_query.FuncCall) (*pg_query.SelectStmt, []*pg_query.Node, error) {
	if fc.Over != nil || fc.AggStar || fc.AggDistinct || fc.AggFilter != nil || len(fc.AggOrder) > 0 || fc.AggWithinGroup {
		return nil, nil, sqlerr.New(sqlerr.WrongObjectType, "%s is not an aggregate or window function", f.Name)
	}
	args := make([]*pg_query.Node, len(f.Params))
	positional := 0
	for _, a := range fc.Args {
		if na := a.GetNamedArgExpr(); na != nil {
			i := slices.IndexFunc(f.Params, func(p views.Param) bool { return p.Name == na.Name })
			if i < 0 || args[i] != nil {
				return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s(…) with an argument %s does not exist", f.Name, na.Name)
			}
			args[i] = na.Arg
			continue
		}
		if positional >= len(args) {
			return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(fc.Args))
		}
		args[positional] = a
		positional++
	}
	for i, p := range f.Params {
		if args[i] != nil {
			continue
		}
		if p.Default == "" {
			return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(fc.Args))
		}
		tree, err := pg_query.Parse("SELECT " + p.Default)
		if err != nil {
			return nil, nil, sqlerr.New(sqlerr.InternalError, "default of %s does not parse: %v", p.Name, err)
		}
		args[i] = tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	}
	for i, p := range f.Params {
		c, err := castTo(args[i], p.Type)
		if err != nil {
			return nil, nil, err
		}
		args[i] = c
	}
	tree, err := pg_query.Parse(f.Body)
	if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
		return nil, nil, sqlerr.New(sqlerr.InternalError, "function %s: stored body does not parse: %v", f.Name, err)
	}
	body := tree.Stmts[0].Stmt
	// A name that is a column of a table the body reads is the column,
	// as in PostgreSQL; otherwise a parameter's name is the argument.
	columns := map[string]bool{}
	_ = sqltree.Walk(body.ProtoReflect(), func(m proto.Message) error {
		if rv, ok := m.(*pg_query.RangeVar); ok {
			for _, c := range s.relationColumns(rv.Relname) {
				columns[c] = true
			}
		}
		return nil
	})
	param := func(name string) int {
		if columns[name] {
			return -1
		}
		return slices.IndexFunc(f.Params, func(p views.Param) bool { return p.Name != "" && p.Name == name })
	}
	sqltree.SubstituteNodes(body.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if pr := n.GetParamRef(); pr != nil && pr.Number >= 1 && int(pr.Number) <= len(args) {
			return proto.Clone(args[pr.Number-1]).(*pg_query.Node)
		}
		if cr := n.GetColumnRef(); cr != nil {
			fields := cr.Fields
			if len(fields) == 2 && fields[0].GetString_().GetSval() == f.Name {
				fields = fields[1:]
			} else if len(fields) != 1 {
				return nil
			}
			if i := param(fields[0].GetString_().GetSval()); i >= 0 {
				return proto.Clone(args[i]).(*pg_query.Node)
			}
		}
		return nil
	})
	return body.GetSelectStmt(), args, nil
}

// relationColumns are the columns of a table, temporary table or view
// named name (none if there is none).
func (s *Session) relationColumns(name string) []string {
	var out []string
	if t, ok := s.p.store.Table(name); ok {
		for _, c := range t.Columns {
			out = append(out, c.Name)
		}
	}
	for _, t := range s.tempTables() {
		if t.Name == name {
			for _, c := range t.Columns {
				out = append(out, c.Name)
			}
		}
	}
	if v, _, ok := s.view(name); ok {
		for _, c := range v.Columns {
			out = append(out, c.Name)
		}
	}
	return out
}

// simpleExpression is the one expression a body without FROM computes.
func simpleExpression(sel *pg_query.SelectStmt) *pg_query.Node {
	if len(sel.FromClause) > 0 || sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil || len(sel.SortClause) > 0 ||
		sel.LimitCount != nil || sel.LimitOffset != nil || len(sel.DistinctClause) > 0 || len(sel.ValuesLists) > 0 || sel.WithClause != nil ||
		dialect.IsSetOp(sel) || len(sel.TargetList) != 1 || len(sel.WindowClause) > 0 {
		return nil
	}
	v := sel.TargetList[0].GetResTarget().GetVal()
	if v.GetColumnRef() != nil {
		return nil // a star or a name with nothing to name
	}
	return v
}

// strictly is r, or NULL where an argument is NULL for a STRICT function.
func strictly(f views.Function, args []*pg_query.Node, r *pg_query.Node) *pg_query.Node {
	if !f.Strict || len(args) == 0 {
		return r
	}
	cond := nullTests(args, pg_query.NullTestType_IS_NULL, pg_query.BoolExprType_OR_EXPR)
	return &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{
		Args: []*pg_query.Node{{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{
			Expr: cond, Result: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}}}}},
		Defresult: r, Location: -1}}}
}

// nullTests is "a1 IS [NOT] NULL OR/AND a2 …" of args (not empty).
func nullTests(args []*pg_query.Node, test pg_query.NullTestType, join pg_query.BoolExprType) *pg_query.Node {
	var tests []*pg_query.Node
	for _, a := range args {
		tests = append(tests, &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{
			Arg: proto.Clone(a).(*pg_query.Node), Nulltesttype: test, Location: -1}}})
	}
	if len(tests) == 1 {
		return tests[0]
	}
	return pg_query.MakeBoolExprNode(join, tests, -1)
}

// typedRows is a set-returning body with its columns named and cast to
// the declared types: SELECT CAST(c1 AS t1) AS n1, … FROM (body) AS
// _tsdb_fn(c1, …).
func typedRows(f views.Function, body *pg_query.SelectStmt) (*pg_query.SelectStmt, []string, error) {
	cols := f.Columns
	if len(cols) == 0 {
		cols = []views.Param{{Name: f.Name, Type: f.Returns}}
	}
	var targets, inner []*pg_query.Node
	var names []string
	for i, c := range cols {
		in := fmt.Sprintf("c%d", i+1)
		inner = append(inner, pg_query.MakeStrNode(in))
		v, err := castTo(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_fn"), pg_query.MakeStrNode(in)}, -1), c.Type)
		if err != nil {
			return nil, nil, err
		}
		name := cmp.Or(c.Name, fmt.Sprintf("column%d", i+1))
		names = append(names, name)
		targets = append(targets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name, Val: v}}})
	}
	return &pg_query.SelectStmt{
		TargetList: targets,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: body}},
			Alias:    &pg_query.Alias{Aliasname: "_tsdb_fn", Colnames: inner}}}}},
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}, names, nil
}

// inlineCall is a call of f in an expression.
func (s *Session) inlineCall(f views.Function, fc *pg_query.FuncCall) (*pg_query.Node, error) {
	body, args, err := s.bodyWith(f, fc)
	if err != nil {
		return nil, err
	}
	if f.SetOf || len(f.Columns) > 0 {
		if len(f.Columns) > 1 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "function %s returns rows of several columns: call it in FROM", f.Name)
		}
		// In a select list the rows: the elements of an array of them.
		rows, _, err := typedRows(f, body)
		if err != nil {
			return nil, err
		}
		array := &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{SubLinkType: pg_query.SubLinkType_ARRAY_SUBLINK,
			Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: rows}}, Location: -1}}}
		return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unnest")}, []*pg_query.Node{strictly(f, args, array)}, -1), nil
	}
	expr := simpleExpression(body)
	if expr == nil {
		// The first row of the body's result, as PostgreSQL returns it.
		if body.LimitCount == nil {
			body.LimitCount = pg_query.MakeAConstIntNode(1, -1)
			body.LimitOption = pg_query.LimitOption_LIMIT_OPTION_COUNT
		}
		expr = &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{SubLinkType: pg_query.SubLinkType_EXPR_SUBLINK,
			Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: body}}, Location: -1}}}
	}
	typed, err := castTo(expr, f.Returns)
	if err != nil {
		return nil, err
	}
	return strictly(f, args, typed), nil
}

// inlineFrom is a call of f in FROM: a subquery of its rows, under the
// call's alias or the function's name.
func (s *Session) inlineFrom(f views.Function, fc *pg_query.FuncCall, rf *pg_query.RangeFunction) (*pg_query.Node, error) {
	var body *pg_query.SelectStmt
	var args []*pg_query.Node
	var err error
	if !f.SetOf && len(f.Columns) == 0 {
		// A scalar function in FROM is one row of its value.
		one, err := s.inlineCall(f, fc)
		if err != nil {
			return nil, err
		}
		body = &pg_query.SelectStmt{TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: one}}}},
			Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
	} else if body, args, err = s.bodyWith(f, fc); err != nil {
		return nil, err
	} else if f.Strict && len(args) > 0 {
		// No rows when an argument is NULL.
		cond := nullTests(args, pg_query.NullTestType_IS_NOT_NULL, pg_query.BoolExprType_AND_EXPR)
		body = &pg_query.SelectStmt{
			TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: &pg_query.Node{Node: &pg_query.Node_ColumnRef{
				ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}}}}},
			FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
				Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: body}}, Alias: &pg_query.Alias{Aliasname: "_tsdb_strict"}}}}},
			WhereClause: cond, Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
		}
	}
	rows, names, err := typedRows(f, body)
	if err != nil {
		return nil, err
	}
	alias := &pg_query.Alias{Aliasname: f.Name}
	if rf.Alias != nil {
		alias = proto.Clone(rf.Alias).(*pg_query.Alias)
	}
	if len(alias.Colnames) == 0 {
		for _, n := range names {
			alias.Colnames = append(alias.Colnames, pg_query.MakeStrNode(n))
		}
	}
	return &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
		Lateral: rf.Lateral, Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: rows}}, Alias: alias}}}, nil
}
