package planner

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/views"
)

// Functions written in SQL (CREATE FUNCTION … LANGUAGE sql): this file
// makes, checks, finds and drops them; inline.go puts their calls in
// place. A function is kept as its body's SQL text; PL/pgSQL has the one
// form that is an expression, BEGIN RETURN expression; END. One made
// inside a transaction block is the block's until COMMIT (txFunction).

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
	if s.tx != nil && len(s.tx.functions) > 0 {
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
