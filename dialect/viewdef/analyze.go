package viewdef

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"tsdb/dialect"
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
		if cr := rt.Val.GetColumnRef(); cr != nil && isStar(cr) {
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

func isStar(cr *pg_query.ColumnRef) bool {
	return len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil
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
		if isStar(n.GetColumnRef()) {
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

// constant types a literal as PostgreSQL's make_const does: an integer
// that fits int4 is integer, a longer one bigint, then numeric; a number
// with a point or exponent numeric; a string unknown.
func (a *analyzer) constant(c *pg_query.A_Const) (expr, error) {
	switch {
	case c.Isnull:
		return &konst{t: tUnknown, null: true}, nil
	case c.GetIval() != nil:
		return &konst{t: tInt4, text: strconv.FormatInt(int64(c.GetIval().Ival), 10)}, nil
	case c.GetFval() != nil:
		s := c.GetFval().Fval
		if !strings.ContainsAny(s, ".eE") {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				if v >= math.MinInt32 && v <= math.MaxInt32 {
					return &konst{t: tInt4, text: strconv.FormatInt(v, 10)}, nil
				}
				return &konst{t: tInt8, text: strconv.FormatInt(v, 10)}, nil
			}
		}
		neg := strings.HasPrefix(s, "-")
		text, ok := numericText(strings.TrimPrefix(s, "-"))
		if neg {
			text = "-" + text
		}
		if !ok {
			return nil, refuse("the number %s", s)
		}
		return &konst{t: tNumeric, text: text}, nil
	case c.GetSval() != nil:
		return &konst{t: tUnknown, text: c.GetSval().Sval}, nil
	case c.GetBoolval() != nil:
		if c.GetBoolval().Boolval {
			return &konst{t: tBool, text: "t"}, nil
		}
		return &konst{t: tBool, text: "f"}, nil
	}
	return nil, refuse("this constant")
}

// numericText writes a numeric literal as numeric_out does: plain digits
// with the literal's scale (1.50 stays 1.50, 1e3 is 1000).
func numericText(s string) (string, bool) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 100 || e < -100 {
			return "", false
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if strings.Trim(intPart+frac, "0123456789") != "" || intPart+frac == "" {
		return "", false
	}
	digits := intPart + frac
	point := len(intPart) + exp // digits before the point
	scale := len(frac) - exp
	if scale < 0 {
		scale = 0
	}
	for point > len(digits) {
		digits += "0"
	}
	for point < 0 {
		digits = "0" + digits
		point++
	}
	for len(digits)-point < scale {
		digits += "0"
	}
	whole := strings.TrimLeft(digits[:point], "0")
	if whole == "" {
		whole = "0"
	}
	if scale == 0 {
		return whole, true
	}
	return whole + "." + digits[point:point+scale], true
}

// coerceUnknown gives an unknown literal the type t, as its input function
// reads it; the constant prints in t's output form.
func coerceUnknown(e expr, t Type, env Env) (expr, error) {
	k, ok := e.(*konst)
	if !ok || k.t.OID != oidUnknown {
		return nil, refuse("this coercion")
	}
	if k.null {
		return &konst{t: t, null: true}, nil
	}
	s := k.text
	var text string
	switch t.OID {
	case OIDText:
		text = s
	case OIDInt2, OIDInt4, OIDInt8:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		bits := map[uint32]int{OIDInt2: 16, OIDInt4: 32, OIDInt8: 64}[t.OID]
		if err != nil || bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1)) {
			return nil, refuse("the literal %q as %s", s, t)
		}
		text = strconv.FormatInt(v, 10)
	case OIDBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			text = "t"
		case "f", "false", "n", "no", "off", "0":
			text = "f"
		default:
			return nil, refuse("the literal %q as boolean", s)
		}
	case OIDFloat8:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, refuse("the literal %q as double precision", s)
		}
		text = string(dialect.AppendFloat(nil, f, 64, env.FloatDigits))
	case OIDNumeric:
		if t.Mod != -1 {
			return nil, refuse("a literal as numeric(p,s)")
		}
		var ok bool
		if text, ok = numericText(strings.TrimSpace(s)); !ok {
			return nil, refuse("the literal %q as numeric", s)
		}
	case OIDInterval:
		iv, err := pgdatetime.ParseIntervalStyle(s, env.Intervals)
		if err != nil {
			return nil, refuse("the literal %q as interval", s)
		}
		text = iv.Format(env.Intervals)
	case OIDDate, OIDTimestamp, OIDTimestamptz:
		kind := map[uint32]string{OIDDate: "date", OIDTimestamp: "timestamp without time zone", OIDTimestamptz: "timestamp with time zone"}[t.OID]
		v, err := pgdatetime.Parse(s, kind, env.Order)
		if err != nil || v.Special != pgdatetime.Finite {
			// 'now', 'today' and the like are the time the view was
			// made, which tsdb does not keep.
			return nil, refuse("the literal %q as %s", s, t)
		}
		var tm time.Time
		var tk pgdatetime.TimeKind
		switch t.OID {
		case OIDDate:
			tm, err = time.Parse("2006-01-02", v.Date())
			tk = pgdatetime.KindDate
		case OIDTimestamp:
			tm, err = time.Parse("2006-01-02 15:04:05.999999", v.Timestamp())
			tk = pgdatetime.KindTimestamp
		default:
			tm, err = time.Parse("2006-01-02 15:04:05.999999-07", v.Timestamptz(env.Loc))
			tk = pgdatetime.KindTimestamptz
		}
		if err != nil || tm.Year() < 1 {
			return nil, refuse("the literal %q as %s", s, t)
		}
		text = string(pgdatetime.AppendDateTime(nil, tm, tk, env.Loc, env.Dates, env.Order))
	default:
		return nil, refuse("a literal as %s", t)
	}
	return &konst{t: t, text: text}, nil
}

// typeOf resolves a type name the analysis knows.
func typeOf(tn *pg_query.TypeName) (Type, bool) {
	if len(tn.ArrayBounds) > 0 || tn.Setof || tn.PctType {
		return Type{}, false
	}
	name := sqltree.LastName(tn.Names)
	if len(tn.Typmods) > 0 {
		if name != "numeric" || len(tn.Typmods) > 2 {
			return Type{}, false
		}
		var mods []int32
		for _, m := range tn.Typmods {
			iv := m.GetAConst().GetIval()
			if iv == nil {
				return Type{}, false
			}
			mods = append(mods, iv.Ival)
		}
		if len(mods) == 1 {
			mods = append(mods, 0)
		}
		if mods[0] < 1 || mods[0] > 1000 || mods[1] < 0 || mods[1] > mods[0] {
			return Type{}, false
		}
		return Type{OID: OIDNumeric, Mod: mods[0]<<16 | mods[1] + 4}, true
	}
	switch name {
	case "bool", "boolean":
		return tBool, true
	case "int2", "smallint":
		return tInt2, true
	case "int4", "int", "integer":
		return tInt4, true
	case "int8", "bigint":
		return tInt8, true
	case "text":
		return tText, true
	case "float4", "real":
		return tFloat4, true
	case "float8":
		return tFloat8, true
	case "numeric", "decimal":
		return tNumeric, true
	case "date":
		return tDate, true
	case "timestamp":
		return tTimestamp, true
	case "timestamptz":
		return tTimestamptz, true
	case "interval":
		return tInterval, true
	}
	return Type{}, false
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

// window analyses a window definition.
func (a *analyzer) window(wd *pg_query.WindowDef) (*window, error) {
	w := &window{ref: wd.Refname, frame: wd.FrameOptions}
	var base *window
	if wd.Refname != "" {
		for _, nw := range a.q.windows {
			if nw.name == wd.Refname {
				base = nw
			}
		}
		if base == nil {
			return nil, refuse("window %q", wd.Refname)
		}
		if len(wd.PartitionClause) > 0 || base.frame&frameNonDefault != 0 || len(wd.OrderClause) > 0 && len(base.order) > 0 {
			return nil, refuse("this window")
		}
	}
	for _, p := range wd.PartitionClause {
		e, err := a.expr(p, nil)
		if err != nil {
			return nil, err
		}
		if _, ok := e.(*konst); ok {
			return nil, refuse("a constant in PARTITION BY")
		}
		w.partition = append(w.partition, sortKey{e: e})
	}
	for _, o := range wd.OrderClause {
		sb := o.GetSortBy()
		e, err := a.expr(sb.Node, nil)
		if err != nil {
			return nil, err
		}
		if _, ok := e.(*konst); ok {
			return nil, refuse("a constant in a window's ORDER BY")
		}
		k := sortKey{e: e}
		if err := orderOf(&k, sb); err != nil {
			return nil, err
		}
		w.order = append(w.order, k)
	}
	if base != nil && len(w.order) == 0 && len(base.order) > 0 {
		w.order, w.copiedOrder = base.order, true
	}
	var orderType Type
	if len(w.order) == 1 {
		orderType = w.order[0].e.typ()
	}
	var err error
	if wd.StartOffset != nil {
		if w.start, err = a.frameOffset(wd.StartOffset, w.frame, orderType); err != nil {
			return nil, err
		}
	}
	if wd.EndOffset != nil {
		if w.end, err = a.frameOffset(wd.EndOffset, w.frame, orderType); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// frameOffset is a frame's offset: an integer for ROWS and GROUPS (its
// coercion to bigint does not show), for RANGE of the type in_range
// takes for the ordering column's (an interval for dates and times).
func (a *analyzer) frameOffset(n *pg_query.Node, frame int32, orderType Type) (expr, error) {
	e, err := a.expr(n, nil)
	if err != nil {
		return nil, err
	}
	if frame&frameRange == 0 {
		if e.typ() != tInt4 {
			return nil, refuse("this frame offset")
		}
		return e, nil
	}
	switch {
	case orderType == tTimestamptz || orderType == tTimestamp || orderType == tDate:
		if e.typ().OID == oidUnknown {
			return coerceUnknown(e, tInterval, a.env)
		}
		if e.typ() == tInterval {
			return e, nil
		}
	case isInt(orderType) && e.typ() == tInt4:
		return e, nil
	}
	return nil, refuse("this RANGE offset")
}

// The bits of a window's frame options (PostgreSQL's FRAMEOPTION_*).
const (
	frameNonDefault              = 0x00001
	frameRange                   = 0x00002
	frameRows                    = 0x00004
	frameGroups                  = 0x00008
	frameBetween                 = 0x00010
	frameStartUnboundedPreceding = 0x00020
	frameEndUnboundedPreceding   = 0x00040
	frameStartUnboundedFollowing = 0x00080
	frameEndUnboundedFollowing   = 0x00100
	frameStartCurrentRow         = 0x00200
	frameEndCurrentRow           = 0x00400
	frameStartOffsetPreceding    = 0x00800
	frameEndOffsetPreceding      = 0x01000
	frameStartOffsetFollowing    = 0x02000
	frameEndOffsetFollowing      = 0x04000
	frameExcludeCurrentRow       = 0x08000
	frameExcludeGroup            = 0x10000
	frameExcludeTies             = 0x20000
)

// orderOf sets a sort key's direction from sb.
func orderOf(k *sortKey, sb *pg_query.SortBy) error {
	switch sb.SortbyDir {
	case pg_query.SortByDir_SORTBY_USING:
		return refuse("ORDER BY … USING")
	case pg_query.SortByDir_SORTBY_DESC:
		k.desc = true
	}
	switch sb.SortbyNulls {
	case pg_query.SortByNulls_SORTBY_NULLS_FIRST:
		k.nullsFirst = true
	case pg_query.SortByNulls_SORTBY_NULLS_LAST:
		k.nullsFirst = false
	default:
		k.nullsFirst = k.desc
	}
	return nil
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
		return sortKey{e: a.q.targets[i-1].e, resno: i}, nil
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
			if t != nil && t.Name == name || t != nil && t.Name == "" && a.q.targets[i].name == name && isVarNamed(a.q.targets[i].e, name) {
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

func isVarNamed(e expr, name string) bool {
	v, ok := e.(*varRef)
	return ok && v.col == name
}

// keyFor is e as a sort key: a constant names the output column it is
// (its resno), as PostgreSQL prints it.
func (a *analyzer) keyFor(e expr) sortKey {
	k := sortKey{e: e}
	if _, ok := e.(*konst); ok {
		for i, t := range a.q.targets {
			if t.e == e {
				k.resno = i + 1
			}
		}
	}
	return k
}

// windowFor finds the window a call's OVER names or writes: an inline
// definition equal to a named window is that window.
func (a *analyzer) windowFor(wd *pg_query.WindowDef) (*window, error) {
	if wd.Name != "" && wd.Refname == "" && len(wd.PartitionClause) == 0 && len(wd.OrderClause) == 0 && wd.FrameOptions&frameNonDefault == 0 {
		// OVER w
		for _, w := range a.q.windows {
			if w.name == wd.Name {
				return w, nil
			}
		}
		return nil, refuse("window %q", wd.Name)
	}
	if wd.Refname == "" {
		for i, w := range a.q.windows {
			if sameWindow(a.defs[i], wd) {
				return w, nil
			}
		}
	}
	return a.window(wd)
}

// sameWindow compares two window definitions as PostgreSQL's equal()
// does: partitioning, ordering, frame and offsets, not where they were
// written.
func sameWindow(x, y *pg_query.WindowDef) bool {
	if x.Refname != "" || x.FrameOptions != y.FrameOptions {
		return false
	}
	strip := func(ns []*pg_query.Node) []*pg_query.Node {
		out := make([]*pg_query.Node, len(ns))
		for i, n := range ns {
			out[i] = withoutLocations(n)
		}
		return out
	}
	eq := func(a, b []*pg_query.Node) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !proto.Equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	one := func(n *pg_query.Node) []*pg_query.Node {
		if n == nil {
			return nil
		}
		return []*pg_query.Node{n}
	}
	return eq(strip(x.PartitionClause), strip(y.PartitionClause)) && eq(strip(x.OrderClause), strip(y.OrderClause)) &&
		eq(strip(one(x.StartOffset)), strip(one(y.StartOffset))) && eq(strip(one(x.EndOffset)), strip(one(y.EndOffset)))
}

// withoutLocations is a copy of n with every location field zero.
func withoutLocations(n *pg_query.Node) *pg_query.Node {
	c := proto.Clone(n).(*pg_query.Node)
	var clear func(m protoreflect.Message)
	clear = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Name() == "location" || fd.Name() == "stmt_location":
				m.Clear(fd)
			case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
				for i := 0; i < v.List().Len(); i++ {
					clear(v.List().Get(i).Message())
				}
			case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
				clear(v.Message())
			}
			return true
		})
	}
	clear(c.ProtoReflect())
	return c
}
