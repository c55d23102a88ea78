package viewdef

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqltree"
)

// comparisons are the comparison operators every known type has.
var comparisons = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// arithmetic are the operators numbers have.
var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true}

// textOps are text's operators besides the comparisons: LIKE, ILIKE and
// the regular expression matches, which give booleans, and ||.
var textOps = map[string]bool{"~~": true, "!~~": true, "~~*": true, "!~~*": true, "~": true, "!~": true, "~*": true, "!~*": true, "||": true}

// aexpr analyses an operator expression: operators, IN, LIKE, BETWEEN.
func (a *analyzer) aexpr(e *pg_query.A_Expr, sel *pg_query.SelectStmt) (expr, error) {
	if len(e.Name) != 1 && e.Kind != pg_query.A_Expr_Kind_AEXPR_BETWEEN && e.Kind != pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN {
		return nil, refuse("a qualified operator")
	}
	op := sqltree.LastName(e.Name)
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP, pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE:
		r, err := a.expr(e.Rexpr, sel)
		if err != nil {
			return nil, err
		}
		if e.Lexpr == nil {
			if (op != "-" && op != "+") || !isNumber(r.typ()) {
				return nil, refuse("prefix operator %s", op)
			}
			return &opExpr{op: op, args: []expr{r}, t: r.typ()}, nil
		}
		l, err := a.expr(e.Lexpr, sel)
		if err != nil {
			return nil, err
		}
		return a.binary(op, l, r)
	case pg_query.A_Expr_Kind_AEXPR_IN:
		return a.in(op, e, sel)
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		// x BETWEEN a AND b is x >= a AND x <= b; NOT BETWEEN x < a OR
		// x > b: PostgreSQL's analysis rewrites it so, and prints that.
		bounds := e.Rexpr.GetList().GetItems()
		if len(bounds) != 2 {
			return nil, refuse("this BETWEEN")
		}
		x, err := a.expr(e.Lexpr, sel)
		if err != nil {
			return nil, err
		}
		ops, join := [2]string{">=", "<="}, "AND"
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN {
			ops, join = [2]string{"<", ">"}, "OR"
		}
		out := &boolExpr{op: join}
		for i, b := range bounds {
			bv, err := a.expr(b, sel)
			if err != nil {
				return nil, err
			}
			c, err := a.binary(ops[i], x, bv)
			if err != nil {
				return nil, err
			}
			out.args = append(out.args, c)
		}
		return out, nil
	}
	return nil, refuse("this operator")
}

// in analyses x IN (…) and x NOT IN (…): a list of constants is
// x = ANY (ARRAY[…]) (x <> ALL), one constant x = c.
func (a *analyzer) in(op string, e *pg_query.A_Expr, sel *pg_query.SelectStmt) (expr, error) {
	items := e.Rexpr.GetList().GetItems()
	if len(items) == 0 {
		return nil, refuse("IN with a subquery")
	}
	x, err := a.expr(e.Lexpr, sel)
	if err != nil {
		return nil, err
	}
	var elems []expr
	for _, it := range items {
		v, err := a.expr(it, sel)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*konst); !ok {
			return nil, refuse("IN with other than constants")
		}
		elems = append(elems, v)
	}
	if len(elems) == 1 {
		return a.binary(op, x, elems[0])
	}
	// The elements take the common type of all (select_common_type);
	// the left side must have it already, as the operator is then
	// that type's own.
	t, err := a.commonType(append([]expr{x}, elems...))
	if err != nil {
		return nil, err
	}
	if !t.known() || x.typ().OID != t.OID || t.OID == OIDBool {
		return nil, refuse("IN of a %s", x.typ())
	}
	for i := range elems {
		if elems[i], err = a.to(elems[i], Type{OID: t.OID, Mod: -1}); err != nil {
			return nil, err
		}
	}
	return &arrayOp{op: op, all: op == "<>", left: x, elems: elems}, nil
}

// binary resolves a binary operator as PostgreSQL's operator selection
// does for the known types, and inserts the coercions it would: a
// literal takes the other operand's type; an integer or numeric meeting
// a float becomes double precision, an integer meeting a numeric
// numeric; integers of different widths, and real with double precision,
// have operators of their own.
func (a *analyzer) binary(op string, l, r expr) (expr, error) {
	lt, rt := l.typ(), r.typ()
	var err error
	switch {
	case lt.OID == oidUnknown && rt.OID == oidUnknown:
		return nil, refuse("an operator between two literals")
	case lt.OID == oidUnknown:
		if l, err = coerceUnknown(l, literalType(op, rt), a.env); err != nil {
			return nil, err
		}
	case rt.OID == oidUnknown:
		if r, err = coerceUnknown(r, literalType(op, lt), a.env); err != nil {
			return nil, err
		}
	}
	lt, rt = l.typ(), r.typ()
	if lt.Mod != -1 && lt.OID != OIDNumeric || rt.Mod != -1 && rt.OID != OIDNumeric || !lt.known() || !rt.known() {
		return nil, refuse("an operator on %s and %s", lt, rt)
	}
	res := func(t Type) (expr, error) { return &opExpr{op: op, args: []expr{l, r}, t: t}, nil }
	cmp := comparisons[op]
	switch {
	case isNumber(lt) && isNumber(rt):
		if !cmp && !arithmetic[op] {
			break
		}
		switch {
		case isInt(lt) && isInt(rt):
			if op == "%" && lt != rt {
				break
			}
			if cmp {
				return res(tBool)
			}
			if intRank(lt) >= intRank(rt) {
				return res(lt)
			}
			return res(rt)
		case isFloat(lt) || isFloat(rt):
			if op == "%" {
				break
			}
			if !isFloat(lt) {
				l = &castExpr{arg: l, t: tFloat8, implicit: true}
			}
			if !isFloat(rt) {
				r = &castExpr{arg: r, t: tFloat8, implicit: true}
			}
			if cmp {
				return res(tBool)
			}
			if l.typ() == tFloat4 && r.typ() == tFloat4 {
				return res(tFloat4)
			}
			return res(tFloat8)
		default: // numeric with an integer or numeric
			if isInt(lt) {
				l = &castExpr{arg: l, t: tNumeric, implicit: true}
			}
			if isInt(rt) {
				r = &castExpr{arg: r, t: tNumeric, implicit: true}
			}
			if cmp {
				return res(tBool)
			}
			return res(tNumeric)
		}
	case lt == tText && rt == tText:
		switch {
		case cmp || op != "||" && textOps[op]:
			return res(tBool)
		case op == "||":
			return res(tText)
		}
	case lt == rt && (lt == tBool || lt == tDate || lt == tTimestamp || lt == tTimestamptz || lt == tInterval):
		switch {
		case cmp:
			return res(tBool)
		case op == "-" && (lt == tTimestamp || lt == tTimestamptz):
			return res(tInterval)
		case op == "-" && lt == tDate:
			return res(tInt4)
		case (op == "+" || op == "-") && lt == tInterval:
			return res(tInterval)
		}
	case (lt == tTimestamptz || lt == tTimestamp) && rt == tInterval && (op == "+" || op == "-"):
		return res(lt)
	case lt == tInterval && (rt == tTimestamptz || rt == tTimestamp) && op == "+":
		return res(rt)
	}
	return nil, refuse("operator %s on %s and %s", op, lt, rt)
}

// literalType is the type a literal takes beside an operand of type t: t,
// as PostgreSQL first tries the operator with both operands of the known
// type; for a date or time plus a literal, which has no such operator,
// an interval.
func literalType(op string, t Type) Type {
	if op == "+" && (t == tTimestamptz || t == tTimestamp || t == tDate) {
		return tInterval
	}
	return t
}
