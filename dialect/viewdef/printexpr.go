package viewdef

import (
	"strings"

	"tsdb/dialect"
)

// expr is get_rule_expr: showImplicit shows the coercions the analysis
// inserted (operator and function arguments show them, conditions not).
func (p *printer) expr(e expr, showImplicit bool) {
	switch x := e.(type) {
	case *varRef:
		p.varRef(x)
	case *konst:
		p.konst(x, false)
	case *opExpr:
		if !p.pretty {
			p.str("(")
		}
		if len(x.args) == 1 {
			p.str(x.op + " ")
			p.exprParen(x.args[0], true, x)
		} else {
			p.exprParen(x.args[0], true, x)
			p.str(" " + x.op + " ")
			p.exprParen(x.args[1], true, x)
		}
		if !p.pretty {
			p.str(")")
		}
	case *castExpr:
		if x.implicit && !showImplicit {
			p.exprParen(x.arg, false, x)
			return
		}
		// get_coercion_expr: a constant of the type already shows bare.
		if k, ok := x.arg.(*konst); ok && k.t == x.t {
			p.konst(k, true)
		} else {
			if !p.pretty {
				p.str("(")
			}
			p.exprParen(x.arg, false, x)
			if !p.pretty {
				p.str(")")
			}
		}
		p.str("::" + x.t.String())
	case *funcCall:
		p.call(x)
	case *boolExpr:
		if !p.pretty {
			p.str("(")
		}
		if x.op == "NOT" {
			p.str("NOT ")
			p.exprParen(x.args[0], false, x)
		} else {
			for i, a := range x.args {
				if i > 0 {
					p.str(" " + x.op + " ")
				}
				p.exprParen(a, false, x)
			}
		}
		if !p.pretty {
			p.str(")")
		}
	case *nullTest:
		if !p.pretty {
			p.str("(")
		}
		p.exprParen(x.arg, true, x)
		if x.not {
			p.str(" IS NOT NULL")
		} else {
			p.str(" IS NULL")
		}
		if !p.pretty {
			p.str(")")
		}
	case *arrayOp:
		if !p.pretty {
			p.str("(")
		}
		p.exprParen(x.left, true, x)
		if x.all {
			p.str(" " + x.op + " ALL (")
		} else {
			p.str(" " + x.op + " ANY (")
		}
		p.str("ARRAY[")
		for i, el := range x.elems {
			if i > 0 {
				p.str(", ")
			}
			p.expr(el, true)
		}
		p.str("])")
		if !p.pretty {
			p.str(")")
		}
	case *caseExpr:
		p.keyword("CASE", 0, indentVar, 0)
		if x.arg != nil {
			p.str(" ")
			p.expr(x.arg, true)
		}
		for _, w := range x.whens {
			p.keyword("WHEN ", 0, 0, 0)
			p.expr(w[0], false)
			p.str(" THEN ")
			p.expr(w[1], true)
		}
		p.keyword("ELSE ", 0, 0, 0)
		p.expr(x.def, true)
		p.keyword("END", -indentVar, 0, 0)
	case *varargExpr:
		p.str(x.name + "(")
		for i, a := range x.args {
			if i > 0 {
				p.str(", ")
			}
			p.expr(a, true)
		}
		p.str(")")
	}
}

// exprParen is get_rule_expr_paren: in parentheses when pretty and the
// node is not simple beneath its parent (without pretty every operator
// brings its own).
func (p *printer) exprParen(e expr, showImplicit bool, parent expr) {
	paren := p.pretty && !p.simple(e, parent)
	if paren {
		p.str("(")
	}
	p.expr(e, showImplicit)
	if paren {
		p.str(")")
	}
}

// simple is isSimpleNode: whether e needs no parentheses beneath parent.
func (p *printer) simple(e, parent expr) bool {
	switch x := e.(type) {
	case *varRef, *konst, *funcCall, *varargExpr, *caseExpr, *castExpr:
		// (A cast is a FuncExpr: function-like.)
		return true
	case *opExpr:
		if po, ok := parent.(*opExpr); ok && len(x.args) == 2 && len(po.args) == 2 {
			lo, hi := strings.ContainsRune("+-", rune(x.op[0])), strings.ContainsRune("*/%", rune(x.op[0]))
			plo, phi := strings.ContainsRune("+-", rune(po.op[0])), strings.ContainsRune("*/%", rune(po.op[0]))
			if !(lo || hi) || !(plo || phi) {
				return false
			}
			if hi && plo {
				return true
			}
			if lo && phi {
				return false
			}
			// The same precedence: (a - b) - c needs none, a - (b - c)
			// does.
			return po.args[0] == e
		}
		return simpleUnder(parent)
	case *nullTest:
		return simpleUnder(parent)
	case *boolExpr:
		if pb, ok := parent.(*boolExpr); ok {
			switch x.op {
			case "NOT", "AND":
				return pb.op == "AND" || pb.op == "OR"
			case "OR":
				return pb.op == "OR"
			}
			return false
		}
		return simpleUnder(parent)
	}
	return false
}

// simpleUnder is isSimpleNode's rule for operators, IS NULL and boolean
// expressions beneath a parent that brings its own parentheses or
// separators; beneath a cast they need theirs.
func simpleUnder(parent expr) bool {
	switch parent.(type) {
	case *castExpr:
		return false
	case *funcCall, *varargExpr, *caseExpr, *boolExpr:
		return true
	}
	return false
}

// konst is get_const_expr; bare is showtype -1 (no type label).
func (p *printer) konst(k *konst, bare bool) { p.konstShown(k, bare, false) }

// konstShown is get_const_expr with showtype -1 (bare), 0 or 1 (labelled:
// a constant sort key, which a bare number would make a position).
func (p *printer) konstShown(k *konst, bare, labelled bool) {
	if k.null {
		p.str("NULL")
		if !bare {
			p.str("::" + k.t.String())
		}
		return
	}
	label := false
	switch k.t.OID {
	case OIDInt4:
		if !strings.HasPrefix(k.text, "-") {
			p.str(k.text)
		} else {
			p.str("'" + k.text + "'")
			label = true
		}
	case OIDNumeric:
		if k.text != "" && k.text[0] >= '0' && k.text[0] <= '9' && strings.ContainsAny(k.text, "eE.") {
			p.str(k.text)
		} else {
			p.str("'" + k.text + "'")
			label = true
		}
		label = label || k.t.Mod >= 0
	case OIDBool:
		if k.text == "t" {
			p.str("true")
		} else {
			p.str("false")
		}
	default:
		p.str("'" + strings.ReplaceAll(k.text, "'", "''") + "'")
		label = true
	}
	if label && !bare || labelled {
		p.str("::" + k.t.String())
	}
}

// call is get_func_expr, get_agg_expr and get_windowfunc_expr.
func (p *printer) call(f *funcCall) {
	p.str(dialect.QuoteIdent(f.name) + "(")
	if f.distinct {
		p.str("DISTINCT ")
	}
	if f.star {
		p.str("*")
	}
	for i, a := range f.args {
		if i > 0 {
			p.str(", ")
		}
		p.expr(a, true)
	}
	if len(f.withinGroup) > 0 {
		p.str(") WITHIN GROUP (ORDER BY ")
		p.orderBy(f.withinGroup)
	}
	if f.filter != nil {
		p.str(") FILTER (WHERE ")
		p.expr(f.filter, false)
	}
	p.str(")")
	if f.over != nil {
		p.str(" OVER ")
		if f.over.name != "" {
			p.str(dialect.QuoteIdent(f.over.name))
		} else {
			p.windowSpec(f.over)
		}
	}
}
