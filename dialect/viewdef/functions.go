package viewdef

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqltree"
)

// signature is one of a function's argument lists and its result type.
type signature struct {
	args   []Type
	result Type
}

func sig(result Type, args ...Type) signature { return signature{args: args, result: result} }

// scalarFunctions are the functions the analysis resolves, by the
// signatures PostgreSQL 15 has for them (those that take the known
// types).
var scalarFunctions = map[string][]signature{
	"now":             {sig(tTimestamptz)},
	"date_trunc":      {sig(tTimestamptz, tText, tTimestamptz), sig(tTimestamp, tText, tTimestamp), sig(tInterval, tText, tInterval)},
	"lower":           {sig(tText, tText)},
	"upper":           {sig(tText, tText)},
	"length":          {sig(tInt4, tText)},
	"abs":             {sig(tInt2, tInt2), sig(tInt4, tInt4), sig(tInt8, tInt8), sig(tFloat4, tFloat4), sig(tFloat8, tFloat8), sig(tNumeric, tNumeric)},
	"round":           {sig(tFloat8, tFloat8), sig(tNumeric, tNumeric), sig(tNumeric, tNumeric, tInt4)},
	"generate_series": {sig(tInt4, tInt4, tInt4), sig(tInt4, tInt4, tInt4, tInt4), sig(tInt8, tInt8, tInt8), sig(tInt8, tInt8, tInt8, tInt8), sig(tTimestamptz, tTimestamptz, tTimestamptz, tInterval), sig(tTimestamp, tTimestamp, tTimestamp, tInterval)},
}

// sumTypes and avgTypes are sum's and avg's result types by argument type.
var (
	sumTypes = map[Type]Type{tInt2: tInt8, tInt4: tInt8, tInt8: tNumeric, tNumeric: tNumeric, tFloat4: tFloat4, tFloat8: tFloat8, tInterval: tInterval}
	avgTypes = map[Type]Type{tInt2: tNumeric, tInt4: tNumeric, tInt8: tNumeric, tNumeric: tNumeric, tFloat4: tFloat8, tFloat8: tFloat8, tInterval: tInterval}
	// ordered are the types min and max take.
	ordered = map[Type]bool{tInt2: true, tInt4: true, tInt8: true, tNumeric: true, tFloat4: true, tFloat8: true, tText: true, tDate: true, tTimestamp: true, tTimestamptz: true, tInterval: true}
)

// rankingFunctions are the window functions without arguments.
var rankingFunctions = map[string]Type{"row_number": tInt8, "rank": tInt8, "dense_rank": tInt8, "percent_rank": tFloat8, "cume_dist": tFloat8}

// call analyses a function call.
func (a *analyzer) call(fc *pg_query.FuncCall, sel *pg_query.SelectStmt) (expr, error) {
	if len(fc.Funcname) != 1 || fc.FuncVariadic || len(fc.AggOrder) > 0 && !fc.AggWithinGroup {
		return nil, refuse("this function call")
	}
	name := sqltree.LastName(fc.Funcname)
	if fc.AggWithinGroup {
		return a.orderedSet(name, fc, sel)
	}
	var args []expr
	for _, n := range fc.Args {
		if n.GetNamedArgExpr() != nil {
			return nil, refuse("named arguments")
		}
		e, err := a.expr(n, sel)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	out := &funcCall{name: name, args: args, star: fc.AggStar, distinct: fc.AggDistinct}
	result, isAgg, err := a.aggregate(name, out)
	if err != nil {
		return nil, err
	}
	switch {
	case isAgg:
		out.t, out.agg = result, fc.Over == nil
	case fc.Over != nil:
		if out.t, err = a.windowFunction(name, out); err != nil {
			return nil, err
		}
	default:
		if fc.AggStar || fc.AggDistinct || fc.AggFilter != nil {
			return nil, refuse("%s(*), DISTINCT or FILTER", name)
		}
		if out.t, err = a.resolve(name, out.args); err != nil {
			return nil, err
		}
	}
	if fc.AggFilter != nil {
		if out.filter, err = a.condition(fc.AggFilter, sel); err != nil {
			return nil, err
		}
	}
	if fc.Over != nil {
		if out.over, err = a.windowFor(fc.Over); err != nil {
			return nil, err
		}
		if fc.AggDistinct {
			return nil, refuse("DISTINCT in a window function")
		}
	}
	return out, nil
}

// orderedSet analyses an ordered-set aggregate: percentile_disc,
// percentile_cont, mode, and the hypothetical-set ones, whose direct
// arguments take their ordering columns' types.
func (a *analyzer) orderedSet(name string, fc *pg_query.FuncCall, sel *pg_query.SelectStmt) (expr, error) {
	if fc.Over != nil || fc.AggDistinct {
		return nil, refuse("%s WITHIN GROUP with OVER or DISTINCT", name)
	}
	out := &funcCall{name: name, agg: true}
	for _, o := range fc.AggOrder {
		sb := o.GetSortBy()
		e, err := a.expr(sb.Node, sel)
		if err != nil {
			return nil, err
		}
		if _, ok := e.(*konst); ok {
			return nil, refuse("a constant in WITHIN GROUP")
		}
		k := sortKey{e: e}
		if err := orderOf(&k, sb); err != nil {
			return nil, err
		}
		out.withinGroup = append(out.withinGroup, k)
	}
	for _, n := range fc.Args {
		e, err := a.expr(n, sel)
		if err != nil {
			return nil, err
		}
		out.args = append(out.args, e)
	}
	first := out.withinGroup[0].e.typ()
	var err error
	switch name {
	case "percentile_disc", "percentile_cont":
		if len(out.args) != 1 || len(out.withinGroup) != 1 {
			return nil, refuse("%s of these arguments", name)
		}
		if name == "percentile_cont" && first != tFloat8 && first != tInterval || !first.known() {
			return nil, refuse("%s of a %s", name, first)
		}
		if out.args[0], err = a.to(out.args[0], tFloat8); err != nil {
			return nil, err
		}
		out.t = first
	case "mode":
		if len(out.args) != 0 || len(out.withinGroup) != 1 || !first.known() {
			return nil, refuse("mode of these arguments")
		}
		out.t = first
	case "rank", "dense_rank", "percent_rank", "cume_dist":
		if len(out.args) != len(out.withinGroup) {
			return nil, refuse("%s of these arguments", name)
		}
		for i, k := range out.withinGroup {
			switch t := k.e.typ(); {
			case out.args[i].typ().OID == oidUnknown:
				if out.args[i], err = coerceUnknown(out.args[i], t, a.env); err != nil {
					return nil, err
				}
			case out.args[i].typ().OID != t.OID:
				return nil, refuse("%s of values of other types", name)
			}
		}
		out.t = tInt8
		if name == "percent_rank" || name == "cume_dist" {
			out.t = tFloat8
		}
	default:
		return nil, refuse("%s WITHIN GROUP", name)
	}
	if fc.AggFilter != nil {
		if out.filter, err = a.condition(fc.AggFilter, sel); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// aggregate types an aggregate call; isAgg is false for anything else.
func (a *analyzer) aggregate(name string, f *funcCall) (Type, bool, error) {
	var t Type
	if len(f.args) == 1 {
		t = f.args[0].typ()
	}
	switch name {
	case "count":
		if f.star && len(f.args) == 0 || len(f.args) == 1 && t.OID != oidUnknown {
			return tInt8, true, nil
		}
	case "sum", "avg":
		table := sumTypes
		if name == "avg" {
			table = avgTypes
		}
		if len(f.args) == 1 && !f.star {
			if r, ok := table[Type{OID: t.OID, Mod: -1}]; ok {
				return r, true, nil
			}
		}
	case "min", "max":
		if len(f.args) == 1 && !f.star && ordered[Type{OID: t.OID, Mod: -1}] {
			return t, true, nil
		}
	case "bool_and", "bool_or", "every":
		if len(f.args) == 1 && t == tBool {
			return tBool, true, nil
		}
	default:
		return Type{}, false, nil
	}
	return Type{}, false, refuse("%s of these arguments", name)
}

// windowFunction types a window function that is not an aggregate.
func (a *analyzer) windowFunction(name string, f *funcCall) (Type, error) {
	if f.star || f.distinct {
		return Type{}, refuse("%s(*)", name)
	}
	if t, ok := rankingFunctions[name]; ok && len(f.args) == 0 {
		return t, nil
	}
	switch name {
	case "ntile":
		if len(f.args) == 1 && f.args[0].typ() == tInt4 {
			return tInt4, nil
		}
	case "first_value", "last_value":
		if len(f.args) == 1 && f.args[0].typ().OID != oidUnknown {
			return f.args[0].typ(), nil
		}
	case "nth_value":
		if len(f.args) == 2 && f.args[0].typ().OID != oidUnknown && f.args[1].typ() == tInt4 {
			return f.args[0].typ(), nil
		}
	case "lag", "lead":
		if len(f.args) >= 1 && len(f.args) <= 2 && f.args[0].typ().OID != oidUnknown && (len(f.args) == 1 || f.args[1].typ() == tInt4) {
			return f.args[0].typ(), nil
		}
	}
	return Type{}, refuse("window function %s of these arguments", name)
}

// resolve finds the one signature of a function the arguments match,
// literals taking the type of the argument they stand in, and coerces
// them to it.
func (a *analyzer) resolve(name string, args []expr) (Type, error) {
	var match *signature
	for i, s := range scalarFunctions[name] {
		if len(s.args) != len(args) {
			continue
		}
		ok := true
		for j, t := range s.args {
			// A type modifier does not matter (numeric(10,2) is a
			// numeric).
			if args[j].typ().OID != t.OID && args[j].typ().OID != oidUnknown {
				ok = false
			}
		}
		if ok {
			if match != nil {
				return Type{}, refuse("%s of these arguments", name)
			}
			match = &scalarFunctions[name][i]
		}
	}
	if match == nil {
		return Type{}, refuse("function %s of these arguments", name)
	}
	for j, t := range match.args {
		if args[j].typ().OID == oidUnknown {
			c, err := coerceUnknown(args[j], t, a.env)
			if err != nil {
				return Type{}, err
			}
			args[j] = c
		}
	}
	return match.result, nil
}

// caseExpr analyses CASE: its results share one type, literals taking
// the others' (text when all are literals).
func (a *analyzer) caseExpr(c *pg_query.CaseExpr, sel *pg_query.SelectStmt) (expr, error) {
	out := &caseExpr{}
	var err error
	if c.Arg != nil {
		if out.arg, err = a.expr(c.Arg, sel); err != nil {
			return nil, err
		}
	}
	var results []expr
	for _, w := range c.Args {
		cw := w.GetCaseWhen()
		var cond expr
		if out.arg != nil {
			v, err := a.expr(cw.Expr, sel)
			if err != nil {
				return nil, err
			}
			// CASE x WHEN v compares x = v; PostgreSQL prints v alone,
			// without the coercion the comparison gave it.
			cmp, err := a.binary("=", out.arg, v)
			if err != nil {
				return nil, err
			}
			op := cmp.(*opExpr)
			if _, isCast := op.args[0].(*castExpr); isCast {
				return nil, refuse("CASE whose argument is coerced")
			}
			cond = op.args[1]
			if ce, ok := cond.(*castExpr); ok && ce.implicit {
				cond = ce.arg
			}
		} else if cond, err = a.condition(cw.Expr, sel); err != nil {
			return nil, err
		}
		r, err := a.expr(cw.Result, sel)
		if err != nil {
			return nil, err
		}
		out.whens = append(out.whens, [2]expr{cond, r})
		results = append(results, r)
	}
	def := &konst{t: tUnknown, null: true}
	var d expr = def
	if c.Defresult != nil {
		if d, err = a.expr(c.Defresult, sel); err != nil {
			return nil, err
		}
	}
	results = append(results, d)
	t, err := a.commonType(results)
	if err != nil {
		return nil, err
	}
	for i := range out.whens {
		if out.whens[i][1], err = a.to(out.whens[i][1], t); err != nil {
			return nil, err
		}
	}
	if out.def, err = a.to(d, t); err != nil {
		return nil, err
	}
	out.t = t
	return out, nil
}

// vararg analyses COALESCE, GREATEST and LEAST.
func (a *analyzer) vararg(name string, ns []*pg_query.Node, sel *pg_query.SelectStmt) (expr, error) {
	out := &varargExpr{name: name}
	for _, n := range ns {
		e, err := a.expr(n, sel)
		if err != nil {
			return nil, err
		}
		out.args = append(out.args, e)
	}
	t, err := a.commonType(out.args)
	if err != nil {
		return nil, err
	}
	for i := range out.args {
		if out.args[i], err = a.to(out.args[i], t); err != nil {
			return nil, err
		}
	}
	out.t = t
	return out, nil
}

// commonType is select_common_type for the known types: of numbers the
// one the others convert to implicitly, literals aside (text if all are
// literals); values of other different types are refused.
func (a *analyzer) commonType(es []expr) (Type, error) {
	t, mods := tUnknown, true
	for _, e := range es {
		et := e.typ()
		switch {
		case et.OID == oidUnknown:
		case t.OID == oidUnknown:
			t = et
		case et.OID == t.OID:
			// One type modifier only if all have it (select_common_typmod).
			mods = mods && et.Mod == t.Mod
		case isNumber(et) && isNumber(t):
			if numberRank(et) > numberRank(t) {
				t = et
			}
			mods = false
		default:
			return Type{}, refuse("values of types %s and %s together", t, et)
		}
	}
	if t.OID == oidUnknown {
		t = tText
	}
	if !mods {
		t.Mod = -1
	}
	return t, nil
}

// to coerces e to t, the common type: a literal becomes a constant of
// it, a narrower number is cast implicitly.
func (a *analyzer) to(e expr, t Type) (expr, error) {
	switch {
	case e.typ().OID == oidUnknown:
		return coerceUnknown(e, t, a.env)
	case e.typ().OID == t.OID:
		return e, nil
	case isNumber(e.typ()) && isNumber(t):
		return &castExpr{arg: e, t: t, implicit: true}, nil
	}
	return nil, refuse("a value of %s as %s", e.typ(), t)
}
