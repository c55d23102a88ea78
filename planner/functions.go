package planner

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/internal/views"
)

// Functions written in SQL (CREATE FUNCTION … LANGUAGE sql) are kept as
// their body's SQL text and put in the place of every call before a
// statement is planned, as PostgreSQL inlines simple SQL functions: a
// scalar function becomes its expression (or a scalar subquery of its
// body), a set-returning one in FROM a subquery, in a select list the
// rows of an array of its body. The arguments are cast to the
// parameters' types and the result to the declared type. PL/pgSQL has the
// one form that is an expression, BEGIN RETURN expression; END.

// maxInlined bounds the calls one statement inlines: a function that
// calls itself would never end.
const maxInlined = 1000

// plpgsqlReturn is a PL/pgSQL body that only returns an expression.
var plpgsqlReturn = regexp.MustCompile(`(?is)^\s*begin\s+return\s+(.+?)\s*;?\s*end\s*;?\s*$`)

// typeSQL is a type name as SQL text.
func typeSQL(version int32, tn *pg_query.TypeName) (string, error) {
	cast := &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
		Arg: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, TypeName: tn}}}
	text, err := deparseExpr(version, cast)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(text, "NULL::"), nil
}

// polymorphic are PostgreSQL's pseudo-types a parameter or result may
// have: its value is the argument's, as it is.
var polymorphic = map[string]bool{"anyelement": true, "anynonarray": true, "anycompatible": true, "anycompatiblenonarray": true,
	"anyarray": true, "anycompatiblearray": true}

// castTo is arg cast to the type typ names (SQL text); a polymorphic type
// leaves it as it is.
func castTo(arg *pg_query.Node, typ string) (*pg_query.Node, error) {
	if polymorphic[typ] {
		return arg, nil
	}
	tree, err := pg_query.Parse("SELECT NULL::" + typ)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InternalError, "function type %q does not parse: %v", typ, err)
	}
	tc := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast()
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: arg, TypeName: tc.TypeName, Location: -1}}}, nil
}

// functionName is a function's name from its qualified name: in schema
// public or none.
func functionName(parts []*pg_query.Node) (string, error) {
	var names []string
	for _, p := range parts {
		names = append(names, p.GetString_().GetSval())
	}
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 2 && strings.EqualFold(names[0], "public"):
		return names[1], nil
	}
	return "", sqlerr.New(sqlerr.FeatureNotSupported, "functions outside schema public are not supported (%s)", strings.Join(names, "."))
}

// createFunction stores a function written in SQL, after planning a call
// of it (PostgreSQL checks a body when the function is made).
func (s *Session) createFunction(ctx context.Context, st *pg_query.CreateFunctionStmt) (*Result, error) {
	if st.IsProcedure {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "procedures are not supported")
	}
	name, err := functionName(st.Funcname)
	if err != nil {
		return nil, err
	}
	f := views.Function{Name: name}
	var body, language string
	for _, o := range st.Options {
		d := o.GetDefElem()
		switch d.GetDefname() {
		case "as":
			items := d.Arg.GetList().GetItems()
			if len(items) != 1 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "functions in object files are not supported")
			}
			body = items[0].GetString_().GetSval()
		case "language":
			language = strings.ToLower(d.Arg.GetString_().GetSval())
		case "strict":
			f.Strict = d.Arg.GetBoolean().GetBoolval()
		case "security":
			if d.Arg.GetBoolean().GetBoolval() {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SECURITY DEFINER functions are not supported")
			}
		case "window":
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "window functions written by users are not supported")
		case "set":
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "functions with SET are not supported")
		}
	}
	switch {
	case st.SqlBody != nil:
		// RETURN expression, or BEGIN ATOMIC … END of one SELECT.
		if r := st.SqlBody.GetReturnStmt(); r != nil {
			text, err := deparseExpr(s.p.pgVersion, r.Returnval)
			if err != nil {
				return nil, err
			}
			body = "SELECT " + text
		} else if items := st.SqlBody.GetList().GetItems(); len(items) == 1 && len(items[0].GetList().GetItems()) == 1 &&
			items[0].GetList().GetItems()[0].GetSelectStmt() != nil {
			if body, err = deparse(s.p.pgVersion, items[0].GetList().GetItems()[0]); err != nil {
				return nil, err
			}
		} else {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a function body of other statements than one SELECT is not supported")
		}
	case language == "sql":
	case language == "plpgsql":
		m := plpgsqlReturn.FindStringSubmatch(body)
		if m == nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "PL/pgSQL functions are not supported, but for a body BEGIN RETURN expression; END")
		}
		body = "SELECT " + m[1]
	case language == "":
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "no language specified")
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "functions in language %q are not supported; write them in SQL", language)
	}
	tree, err := pg_query.Parse(body)
	if err != nil {
		return nil, parseError(err)
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil || tree.Stmts[0].Stmt.GetSelectStmt().IntoClause != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a function body of other statements than one SELECT is not supported")
	}
	if f.Body, err = deparse(s.p.pgVersion, tree.Stmts[0].Stmt); err != nil {
		return nil, err
	}
	for _, pn := range st.Parameters {
		p := pn.GetFunctionParameter()
		typ, err := typeSQL(s.p.pgVersion, p.ArgType)
		if err != nil {
			return nil, err
		}
		param := views.Param{Name: p.Name, Type: typ}
		if p.Defexpr != nil {
			if param.Default, err = deparseExpr(s.p.pgVersion, p.Defexpr); err != nil {
				return nil, err
			}
		}
		switch p.Mode {
		case pg_query.FunctionParameterMode_FUNC_PARAM_IN, pg_query.FunctionParameterMode_FUNC_PARAM_DEFAULT:
			f.Params = append(f.Params, param)
		case pg_query.FunctionParameterMode_FUNC_PARAM_OUT, pg_query.FunctionParameterMode_FUNC_PARAM_TABLE:
			f.Columns = append(f.Columns, param)
		default:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INOUT and VARIADIC parameters are not supported")
		}
	}
	if st.ReturnType != nil {
		f.SetOf = st.ReturnType.Setof
		if f.Returns, err = typeSQL(s.p.pgVersion, st.ReturnType); err != nil {
			return nil, err
		}
		f.Returns = strings.TrimPrefix(f.Returns, "SETOF ")
	}
	switch {
	case len(f.Columns) == 1 && !slices.ContainsFunc(st.Parameters, func(n *pg_query.Node) bool {
		return n.GetFunctionParameter().Mode == pg_query.FunctionParameterMode_FUNC_PARAM_TABLE
	}):
		// One OUT parameter: the function returns its type.
		f.Returns, f.Columns = f.Columns[0].Type, nil
	case len(f.Columns) > 0:
		f.Returns = ""
	case f.Returns == "record" || f.Returns == "void" || f.Returns == "trigger" || f.Returns == "":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "functions returning %s are not supported", cmp.Or(f.Returns, "nothing"))
	}
	if builtin, err := s.builtinFunction(ctx, name); err != nil {
		return nil, err
	} else if builtin {
		// PostgreSQL finds pg_catalog's function first, so a user's of
		// that name is not what a call means; here it would replace it.
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "function %q is built in: a function of a user may not take its name", name)
	}
	if old, ok := s.function(name); ok {
		same := len(old.Params) == len(f.Params)
		for i := range old.Params {
			same = same && old.Params[i].Type == f.Params[i].Type
		}
		switch {
		case !same:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "function %q already exists with other argument types: tsdb has one function of a name", name)
		case !st.Replace:
			return nil, sqlerr.New("42723", "function %q already exists with same argument types", name)
		case old.Returns != f.Returns || old.SetOf != f.SetOf || len(old.Columns) != len(f.Columns):
			return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "cannot change return type of existing function")
		}
	}
	if err := s.checkFunction(ctx, f); err != nil {
		return nil, err
	}
	if s.tx != nil && !s.tx.implicit {
		// The block's until COMMIT (txFunctions): ROLLBACK forgets it.
		s.tx.functions = append(s.tx.functions, txFunction{f: f, level: s.tx.level})
	} else if err := s.p.views.PutFunction(f); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	s.dropPlans()
	return &Result{Tag: "CREATE FUNCTION"}, nil
}

// txFunction is a function a transaction block created: it is the
// block's until COMMIT stores it, and a ROLLBACK (or ROLLBACK TO a
// savepoint before level) forgets it, as PostgreSQL's catalog rows are.
type txFunction struct {
	f     views.Function
	level int32
}

// function is the function of that name the session sees: the newest its
// transaction block created, else the store's.
func (s *Session) function(name string) (views.Function, bool) {
	if s.tx != nil {
		for i := len(s.tx.functions) - 1; i >= 0; i-- {
			if s.tx.functions[i].f.Name == name {
				return s.tx.functions[i].f, true
			}
		}
	}
	return s.p.views.Function(name)
}

// mentionsFunction reports whether text may call a function the session
// sees.
func (s *Session) mentionsFunction(text string) bool {
	if s.tx != nil {
		lower := strings.ToLower(text)
		for _, tf := range s.tx.functions {
			if strings.Contains(lower, strings.ToLower(tf.f.Name)) {
				return true
			}
		}
	}
	return s.p.views.MentionsFunction(text)
}

// builtinFunction reports whether name is a function PostgreSQL or the
// engine has.
func (s *Session) builtinFunction(ctx context.Context, name string) (bool, error) {
	if dialect.IsPostgresFunction(strings.ToLower(name)) {
		return true, nil
	}
	rows, err := s.engineQuerier().QueryContext(ctx, "SELECT 1 FROM duckdb_functions() WHERE lower(function_name) = lower(?) LIMIT 1", name)
	if err != nil {
		return false, engineError(err)
	}
	defer rows.Close()
	found := rows.Next()
	return found, rows.Err()
}

// checkFunction plans a call of f with NULL arguments: its body must plan,
// and give one column for a scalar, its columns' count for a table.
func (s *Session) checkFunction(ctx context.Context, f views.Function) error {
	args := make([]string, len(f.Params))
	for i, p := range f.Params {
		args[i] = "NULL::" + p.Type
		if polymorphic[p.Type] {
			args[i] = "NULL::text"
		}
	}
	call := fmt.Sprintf("SELECT %s(%s)", schema.QuoteIdent(f.Name), strings.Join(args, ", "))
	if f.SetOf || len(f.Columns) > 0 {
		call = fmt.Sprintf("SELECT * FROM %s(%s)", schema.QuoteIdent(f.Name), strings.Join(args, ", "))
	}
	tree, err := pg_query.Parse(call)
	if err != nil {
		return sqlerr.New(sqlerr.InternalError, "function check does not parse: %v", err)
	}
	node := tree.Stmts[0].Stmt
	lookup := func(name string) (views.Function, bool) {
		if name == f.Name {
			return f, true
		}
		return s.function(name)
	}
	if _, err := s.inlineFunctions(node, lookup); err != nil {
		return err
	}
	body, err := pg_query.Parse(f.Body)
	if err != nil {
		return sqlerr.New(sqlerr.InternalError, "function body does not parse: %v", err)
	}
	width := len(body.Stmts[0].Stmt.GetSelectStmt().GetTargetList())
	if sel := body.Stmts[0].Stmt.GetSelectStmt(); len(sel.ValuesLists) > 0 {
		width = len(sel.ValuesLists[0].GetList().GetItems())
	}
	star := strings.Contains(f.Body, "*")
	want := max(1, len(f.Columns))
	if !star && width != want && !dialect.IsSetOp(body.Stmts[0].Stmt.GetSelectStmt()) {
		return sqlerr.New(sqlerr.InvalidFunctionDefinition, "return type mismatch in function declared to return %s: the final statement must return %d column(s)",
			cmp.Or(f.Returns, "record"), want)
	}
	_, err = s.viewColumns(ctx, node)
	return err
}

// dropFunctions is DROP FUNCTION.
func (s *Session) dropFunctions(st *pg_query.DropStmt) (*Result, error) {
	var names []string
	var notice *sqlerr.Error
	for _, obj := range st.Objects {
		owa := obj.GetObjectWithArgs()
		if owa == nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "DROP FUNCTION needs a function name")
		}
		name, err := functionName(owa.Objname)
		if err != nil {
			return nil, err
		}
		f, ok := s.p.views.Function(name)
		if ok && !owa.ArgsUnspecified {
			// The arguments named must be the function's.
			var types []string
			for _, a := range owa.Objargs {
				t, err := typeSQL(s.p.pgVersion, a.GetTypeName())
				if err != nil {
					return nil, err
				}
				types = append(types, t)
			}
			ok = len(types) == len(f.Params)
			for i := range types {
				ok = ok && types[i] == f.Params[i].Type
			}
		}
		if !ok {
			if st.MissingOk {
				notice = &sqlerr.Error{Code: "00000", Message: fmt.Sprintf("function %s does not exist, skipping", name)}
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s does not exist", name)
		}
		names = append(names, name)
	}
	for _, n := range names {
		if err := s.p.views.DropFunction(n); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	s.dropPlans()
	return &Result{Tag: "DROP FUNCTION", Notice: notice}, nil
}

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
