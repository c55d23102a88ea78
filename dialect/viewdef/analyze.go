package viewdef

import (
	"fmt"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqltree"
)

// Env is what the analysis reads besides the query: the relations it
// names and the session's settings, which govern how constants print.
type Env struct {
	// Relation gives the columns of a table or view by name.
	Relation    func(name string) ([]Column, bool)
	Loc         *time.Location
	Dates       pgdatetime.DateStyle
	Order       pgdatetime.Order
	Intervals   pgdatetime.IntervalStyle
	FloatDigits int
}

// analyzer turns a SELECT into a query, resolving names and types as
// PostgreSQL's parse analysis does for what it supports.
type analyzer struct {
	env     Env
	q       *query
	targets []*pg_query.ResTarget
	// defs are the named windows as written, for windowFor.
	defs []*pg_query.WindowDef
}

// parse reads a view's query.
func parse(text string) (*pg_query.SelectStmt, error) {
	tree, err := pg_query.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("viewdef: %w", err)
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
		return nil, refuse("a view that is not one SELECT")
	}
	return tree.Stmts[0].Stmt.GetSelectStmt(), nil
}

// analyze analyses sel, whose output columns are named names.
func analyze(sel *pg_query.SelectStmt, names []string, env Env) (*query, error) {
	if sel.Op != pg_query.SetOperation_SETOP_NONE || sel.WithClause != nil || len(sel.ValuesLists) > 0 || sel.IntoClause != nil {
		return nil, refuse("a view of a set operation, WITH or VALUES")
	}
	if len(sel.LockingClause) > 0 || sel.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, refuse("FOR UPDATE or WITH TIES")
	}
	a := &analyzer{env: env, q: &query{}}
	q := a.q
	for _, f := range sel.FromClause {
		it, err := a.fromItem(f)
		if err != nil {
			return nil, err
		}
		q.from = append(q.from, it)
	}
	// Named windows first: an inline window equal to one of them is
	// that window (PostgreSQL's transformWindowFuncCall).
	for _, w := range sel.WindowClause {
		wd := w.GetWindowDef()
		win, err := a.window(wd)
		if err != nil {
			return nil, err
		}
		win.name = wd.Name
		q.windows = append(q.windows, win)
		a.defs = append(a.defs, wd)
	}
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && sqltree.IsStar(rt.Val) {
			vars, err := a.star(cr)
			if err != nil {
				return nil, err
			}
			for _, v := range vars {
				q.targets = append(q.targets, target{e: v})
				a.targets = append(a.targets, nil)
			}
			continue
		}
		e, err := a.expr(rt.Val, sel)
		if err != nil {
			return nil, err
		}
		if e.typ().OID == oidUnknown {
			// An unknown literal in a view's select list is text.
			if e, err = coerceUnknown(e, tText, a.env); err != nil {
				return nil, err
			}
		}
		q.targets = append(q.targets, target{e: e})
		a.targets = append(a.targets, rt)
	}
	if len(names) != len(q.targets) {
		return nil, refuse("a view whose columns are not its select list's")
	}
	for i := range q.targets {
		q.targets[i].name = names[i]
	}
	q.distinct = len(sel.DistinctClause) > 0
	if q.distinct && sel.DistinctClause[0].GetNode() != nil {
		return nil, refuse("DISTINCT ON")
	}
	var err error
	if sel.WhereClause != nil {
		if q.where, err = a.condition(sel.WhereClause, sel); err != nil {
			return nil, err
		}
	}
	for _, g := range sel.GroupClause {
		k, err := a.sortKey(g, sel, true)
		if err != nil {
			return nil, err
		}
		q.groupBy = append(q.groupBy, k)
	}
	if sel.HavingClause != nil {
		if q.having, err = a.condition(sel.HavingClause, sel); err != nil {
			return nil, err
		}
	}
	for _, o := range sel.SortClause {
		sb := o.GetSortBy()
		k, err := a.sortKey(sb.Node, sel, false)
		if err != nil {
			return nil, err
		}
		if err := orderOf(&k, sb); err != nil {
			return nil, err
		}
		q.orderBy = append(q.orderBy, k)
	}
	if sel.LimitCount != nil {
		if c := sel.LimitCount.GetAConst(); c != nil && c.Isnull {
			q.limitAll = true
		} else if q.limit, err = a.limitValue(sel.LimitCount); err != nil {
			return nil, err
		}
	}
	if sel.LimitOffset != nil {
		if q.offset, err = a.limitValue(sel.LimitOffset); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// limitValue is a LIMIT or OFFSET: an integer constant (its coercion to
// bigint does not show).
func (a *analyzer) limitValue(n *pg_query.Node) (expr, error) {
	c := n.GetAConst()
	if c == nil || c.GetIval() == nil && c.Isnull {
		return nil, refuse("a LIMIT or OFFSET other than a number")
	}
	return a.constant(c)
}

// fromItem resolves a FROM item: a table or view, or generate_series.
func (a *analyzer) fromItem(n *pg_query.Node) (*fromItem, error) {
	switch {
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		if rv.Schemaname != "" && rv.Schemaname != "public" && rv.Schemaname != "pg_temp" || rv.Catalogname != "" || !rv.Inh {
			return nil, refuse("a relation named with its schema or ONLY")
		}
		cols, ok := a.env.Relation(rv.Relname)
		if !ok {
			return nil, refuse("relation %q", rv.Relname)
		}
		it := &fromItem{relname: rv.Relname, refname: rv.Relname, cols: cols}
		if rv.Alias != nil {
			if len(rv.Alias.Colnames) > 0 {
				return nil, refuse("column aliases of a relation")
			}
			it.alias, it.refname = rv.Alias.Aliasname, rv.Alias.Aliasname
		}
		return it, nil
	case n.GetRangeFunction() != nil:
		rf := n.GetRangeFunction()
		if rf.Lateral || rf.Ordinality || rf.IsRowsfrom || len(rf.Functions) != 1 || len(rf.Coldeflist) > 0 {
			return nil, refuse("this function in FROM")
		}
		fl := rf.Functions[0].GetList()
		if fl == nil || len(fl.Items) == 0 || fl.Items[0].GetFuncCall() == nil || len(fl.Items) > 1 && fl.Items[1].GetNode() != nil {
			return nil, refuse("this function in FROM")
		}
		fc := fl.Items[0].GetFuncCall()
		if sqltree.LastName(fc.Funcname) != "generate_series" || len(fc.Funcname) != 1 {
			return nil, refuse("function %s in FROM", sqltree.LastName(fc.Funcname))
		}
		e, err := a.call(fc, nil)
		if err != nil {
			return nil, err
		}
		f := e.(*funcCall)
		it := &fromItem{fn: f, refname: f.name}
		if rf.Alias != nil {
			it.refname = rf.Alias.Aliasname
			if len(rf.Alias.Colnames) > 1 {
				return nil, refuse("more column aliases than columns")
			}
		}
		col := it.refname
		if rf.Alias != nil && len(rf.Alias.Colnames) == 1 {
			col = rf.Alias.Colnames[0].GetString_().GetSval()
		}
		it.alias = it.refname
		it.cols = []Column{{Name: col, Type: f.t}}
		return it, nil
	}
	return nil, refuse("a join or subquery in FROM")
}

// star expands * or rel.* into the columns it names.
func (a *analyzer) star(cr *pg_query.ColumnRef) ([]expr, error) {
	var out []expr
	switch len(cr.Fields) {
	case 1:
		for _, it := range a.q.from {
			for _, c := range it.cols {
				out = append(out, &varRef{rel: it.refname, col: c.Name, t: c.Type})
			}
		}
	case 2:
		rel := cr.Fields[0].GetString_().GetSval()
		it := a.rel(rel)
		if it == nil {
			return nil, refuse("a reference to %q", rel)
		}
		for _, c := range it.cols {
			out = append(out, &varRef{rel: it.refname, col: c.Name, t: c.Type})
		}
	default:
		return nil, refuse("a qualified *")
	}
	if len(out) == 0 {
		return nil, refuse("* of no columns")
	}
	return out, nil
}

func (a *analyzer) rel(name string) *fromItem {
	for _, it := range a.q.from {
		if it.refname == name {
			return it
		}
	}
	return nil
}

// column resolves a column reference.
func (a *analyzer) column(cr *pg_query.ColumnRef) (expr, error) {
	var names []string
	for _, f := range cr.Fields {
		s := f.GetString_()
		if s == nil {
			return nil, refuse("this column reference")
		}
		names = append(names, s.Sval)
	}
	switch len(names) {
	case 1:
		var found *varRef
		for _, it := range a.q.from {
			for _, c := range it.cols {
				if c.Name == names[0] {
					if found != nil {
						return nil, refuse("an ambiguous column")
					}
					found = &varRef{rel: it.refname, col: c.Name, t: c.Type}
				}
			}
		}
		if found == nil {
			return nil, refuse("column %q", names[0])
		}
		return found, nil
	case 2:
		it := a.rel(names[0])
		if it == nil {
			return nil, refuse("relation %q", names[0])
		}
		for _, c := range it.cols {
			if c.Name == names[1] {
				return &varRef{rel: it.refname, col: c.Name, t: c.Type}, nil
			}
		}
		return nil, refuse("column %q", names[1])
	}
	return nil, refuse("a column named with its schema")
}

// condition analyses a WHERE, HAVING, FILTER or WHEN condition: boolean.
func (a *analyzer) condition(n *pg_query.Node, sel *pg_query.SelectStmt) (expr, error) {
	e, err := a.expr(n, sel)
	if err != nil {
		return nil, err
	}
	if e.typ().OID == oidUnknown {
		return coerceUnknown(e, tBool, a.env)
	}
	if e.typ() != tBool {
		return nil, refuse("a condition that is not boolean")
	}
	return e, nil
}

// expr analyses an expression.
func (a *analyzer) expr(n *pg_query.Node, sel *pg_query.SelectStmt) (expr, error) {
	switch {
	case n.GetColumnRef() != nil:
		if sqltree.IsStar(n) {
			return nil, refuse("* in an expression")
		}
		return a.column(n.GetColumnRef())
	case n.GetAConst() != nil:
		return a.constant(n.GetAConst())
	case n.GetTypeCast() != nil:
		return a.cast(n.GetTypeCast(), sel)
	case n.GetAExpr() != nil:
		return a.aexpr(n.GetAExpr(), sel)
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		op := map[pg_query.BoolExprType]string{pg_query.BoolExprType_AND_EXPR: "AND", pg_query.BoolExprType_OR_EXPR: "OR", pg_query.BoolExprType_NOT_EXPR: "NOT"}[b.Boolop]
		out := &boolExpr{op: op}
		for _, arg := range b.Args {
			e, err := a.condition(arg, sel)
			if err != nil {
				return nil, err
			}
			out.args = append(out.args, e)
		}
		return out, nil
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		e, err := a.expr(nt.Arg, sel)
		if err != nil {
			return nil, err
		}
		if e.typ().OID == oidUnknown {
			return nil, refuse("IS NULL of a literal")
		}
		return &nullTest{arg: e, not: nt.Nulltesttype == pg_query.NullTestType_IS_NOT_NULL}, nil
	case n.GetFuncCall() != nil:
		return a.call(n.GetFuncCall(), sel)
	case n.GetCaseExpr() != nil:
		return a.caseExpr(n.GetCaseExpr(), sel)
	case n.GetCoalesceExpr() != nil:
		return a.vararg("COALESCE", n.GetCoalesceExpr().Args, sel)
	case n.GetMinMaxExpr() != nil:
		mm := n.GetMinMaxExpr()
		name := "GREATEST"
		if mm.Op == pg_query.MinMaxOp_IS_LEAST {
			name = "LEAST"
		}
		return a.vararg(name, mm.Args, sel)
	}
	return nil, refuse("this expression")
}

// cast analyses x::type: a literal becomes a constant of the type, a
// number a cast between number types; anything else is refused (casts to
// and from text go through I/O in PostgreSQL, printed otherwise).
func (a *analyzer) cast(tc *pg_query.TypeCast, sel *pg_query.SelectStmt) (expr, error) {
	t, ok := typeOf(tc.TypeName)
	if !ok {
		return nil, refuse("a cast to %s", sqltree.LastName(tc.TypeName.Names))
	}
	if tc.TypeName.Names != nil && len(tc.TypeName.Names) > 2 {
		return nil, refuse("this type name")
	}
	arg, err := a.expr(tc.Arg, sel)
	if err != nil {
		return nil, err
	}
	switch {
	case arg.typ().OID == oidUnknown:
		return coerceUnknown(arg, t, a.env)
	case arg.typ() == t && t.Mod == -1:
		return arg, nil // a cast to the type a value has is none
	case arg.typ().OID == OIDNumeric && t.OID == OIDNumeric:
		return nil, refuse("a cast between numerics of other precision")
	case isNumber(arg.typ()) && isNumber(t), isDateTime(arg.typ()) && isDateTime(t):
		// Casts by function (pg_cast's method f), printed as casts.
		return &castExpr{arg: arg, t: t}, nil
	}
	return nil, refuse("a cast from %s to %s", arg.typ(), t)
}

// sortKey resolves a GROUP BY or ORDER BY item as PostgreSQL does: a
// number is an output column; a bare name is, for ORDER BY, an output
// column's name first, for GROUP BY an input column first.
func (a *analyzer) sortKey(n *pg_query.Node, sel *pg_query.SelectStmt, group bool) (sortKey, error) {
	if iv := n.GetAConst().GetIval(); iv != nil {
		i := int(iv.Ival)
		if i < 1 || i > len(a.q.targets) {
			return sortKey{}, refuse("a position out of range")
		}
		return sortKey{e: a.q.targets[i-1].e}, nil
	}
	if n.GetAConst() != nil {
		return sortKey{}, refuse("a constant in ORDER BY or GROUP BY")
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
		name := cr.Fields[0].GetString_().Sval
		if group {
			if e, err := a.column(cr); err == nil {
				return a.keyFor(e), nil
			}
		}
		match := -1
		for i, t := range a.targets {
			if t != nil && (t.Name == name || t.Name == "" && figureName(t.Val) == name) {
				if match >= 0 {
					return sortKey{}, refuse("an ambiguous ORDER BY name")
				}
				match = i
			}
		}
		if match >= 0 {
			return a.keyFor(a.q.targets[match].e), nil
		}
	}
	e, err := a.expr(n, sel)
	if err != nil {
		return sortKey{}, err
	}
	return a.keyFor(e), nil
}

// figureName is the name PostgreSQL's FigureColname gives an unaliased
// select list item, as far as ORDER BY's output names need it: a
// column's name, a function's, a cast's argument's (else its type's),
// case, coalesce, greatest, least; "" for none (?column?).
func figureName(n *pg_query.Node) string {
	switch {
	case n.GetColumnRef() != nil:
		if f := n.GetColumnRef().Fields; len(f) > 0 {
			return f[len(f)-1].GetString_().GetSval()
		}
	case n.GetFuncCall() != nil:
		return sqltree.LastName(n.GetFuncCall().Funcname)
	case n.GetTypeCast() != nil:
		if name := figureName(n.GetTypeCast().Arg); name != "" {
			return name
		}
		return sqltree.LastName(n.GetTypeCast().TypeName.GetNames())
	case n.GetCaseExpr() != nil:
		return "case"
	case n.GetCoalesceExpr() != nil:
		return "coalesce"
	case n.GetMinMaxExpr() != nil:
		if n.GetMinMaxExpr().Op == pg_query.MinMaxOp_IS_LEAST {
			return "least"
		}
		return "greatest"
	}
	return ""
}

// keyFor is e as a sort key.
func (a *analyzer) keyFor(e expr) sortKey { return sortKey{e: e} }
