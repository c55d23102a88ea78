package viewdef

import (
	"strings"

	"tsdb/dialect"
)

// The printer follows PostgreSQL 15's ruleutils.c as pg_get_viewdef runs
// it: indentation on (PRETTYFLAG_INDENT), a new line for every output
// column after the first (wrap column 0), and, unless pretty, each
// operator in parentheses of its own.
const (
	indentStd   = 8  // PRETTYINDENT_STD
	indentVar   = 4  // PRETTYINDENT_VAR
	indentLimit = 40 // PRETTYINDENT_LIMIT
)

type printer struct {
	buf    []byte
	pretty bool // PRETTYFLAG_PAREN
	indent int
	q      *query
}

func (p *printer) str(s string) { p.buf = append(p.buf, s...) }

// trimSpaces drops the spaces at the end of the output
// (removeStringInfoSpaces).
func (p *printer) trimSpaces() {
	for len(p.buf) > 0 && p.buf[len(p.buf)-1] == ' ' {
		p.buf = p.buf[:len(p.buf)-1]
	}
}

// keyword starts a new line for s (appendContextKeyword): the indent
// moves by before, the line is indented by it plus plus, and it moves by
// after.
func (p *printer) keyword(s string, before, after, plus int) {
	p.indent += before
	p.trimSpaces()
	p.buf = append(p.buf, '\n')
	amount := max(p.indent, 0) + plus
	if p.indent >= indentLimit {
		amount = (indentLimit+(p.indent-indentLimit)/(indentStd/2))%indentLimit + plus
	}
	p.str(strings.Repeat(" ", amount))
	p.str(s)
	p.indent += after
	if p.indent < 0 {
		p.indent = 0
	}
}

// Def writes the view query (PostgreSQL's text) whose output columns are
// named names as pg_get_viewdef(view, pretty) does, or fails with an
// error wrapping ErrUnsupported.
func Def(queryText string, names []string, env Env, pretty bool) (string, error) {
	tree, err := parse(queryText)
	if err != nil {
		return "", err
	}
	q, err := analyze(tree, names, env)
	if err != nil {
		return "", err
	}
	p := &printer{pretty: pretty, q: q}
	p.query()
	p.str(";")
	return string(p.buf), nil
}

// query is get_select_query_def and get_basic_select_query.
func (p *printer) query() {
	q := p.q
	p.indent += indentStd
	p.str(" SELECT")
	if q.distinct {
		p.str(" DISTINCT")
	}
	p.targets()
	if len(q.from) > 0 {
		p.keyword(" FROM ", -indentStd, indentStd, 2)
		for i, it := range q.from {
			if i > 0 {
				p.str(", ")
				// Every item after the first on a line of its own (wrap
				// column 0).
				p.keyword("", -indentStd, indentStd, indentVar)
			}
			p.fromItem(it)
		}
	}
	if q.where != nil {
		p.keyword(" WHERE ", -indentStd, indentStd, 1)
		p.expr(q.where, false)
	}
	if len(q.groupBy) > 0 {
		p.keyword(" GROUP BY ", -indentStd, indentStd, 1)
		for i, k := range q.groupBy {
			if i > 0 {
				p.str(", ")
			}
			p.sortGroupItem(k)
		}
	}
	if q.having != nil {
		p.keyword(" HAVING ", -indentStd, indentStd, 0)
		p.expr(q.having, false)
	}
	var named []*window
	for _, w := range q.windows {
		if w.name != "" {
			named = append(named, w)
		}
	}
	if len(named) > 0 {
		p.keyword(" WINDOW ", -indentStd, indentStd, 1)
		for i, w := range named {
			if i > 0 {
				p.str(", ")
			}
			p.str(dialect.QuoteIdent(w.name) + " AS ")
			p.windowSpec(w)
		}
	}
	if len(q.orderBy) > 0 {
		p.keyword(" ORDER BY ", -indentStd, indentStd, 1)
		p.orderBy(q.orderBy)
	}
	if q.offset != nil {
		p.keyword(" OFFSET ", -indentStd, indentStd, 0)
		p.expr(q.offset, false)
	}
	if q.limit != nil || q.limitAll {
		p.keyword(" LIMIT ", -indentStd, indentStd, 0)
		if q.limitAll {
			p.str("ALL")
		} else {
			p.expr(q.limit, false)
		}
	}
}

// targets is get_target_list with wrap column 0.
func (p *printer) targets() {
	sep := " "
	for i, t := range p.q.targets {
		p.str(sep)
		sep = ", "
		outer := p.buf
		p.buf = nil
		attname := ""
		if v, ok := t.e.(*varRef); ok {
			p.varRef(v)
			attname = v.col
		} else {
			p.expr(t.e, true)
		}
		if attname != t.name {
			p.str(" AS " + dialect.QuoteIdent(t.name))
		}
		field := p.buf
		p.buf = outer
		// A field that starts a line of its own (CASE) goes as it is;
		// any other after the first starts a new one (wrap column 0).
		if len(field) > 0 && field[0] == '\n' {
			p.trimSpaces()
		} else if i > 0 {
			p.keyword("", -indentStd, indentStd, indentVar)
		}
		p.buf = append(p.buf, field...)
	}
}

// fromItem is get_from_clause_item for a relation or a function.
func (p *printer) fromItem(it *fromItem) {
	if it.fn != nil {
		p.call(it.fn)
		p.str(" " + dialect.QuoteIdent(it.refname) + "(" + dialect.QuoteIdent(it.cols[0].Name) + ")")
		return
	}
	p.str(dialect.QuoteIdent(it.relname))
	if it.alias != "" {
		p.str(" " + dialect.QuoteIdent(it.alias))
	}
}

func (p *printer) varRef(v *varRef) {
	p.str(dialect.QuoteIdent(v.rel) + "." + dialect.QuoteIdent(v.col))
}

// sortGroupItem is get_rule_sortgroupclause: a column plain, a constant
// with its type (ORDER BY 5::integer: a bare 5 would be a position), a
// function-like expression in parentheses (any other expression too when
// pretty).
func (p *printer) sortGroupItem(k sortKey) {
	switch e := k.e.(type) {
	case *konst:
		p.konstShown(e, false, true)
	case *varRef:
		p.varRef(e)
	default:
		_, fn := e.(*funcCall)
		_, cast := e.(*castExpr)
		paren := p.pretty || fn || cast
		if paren {
			p.str("(")
		}
		p.expr(e, true)
		if paren {
			p.str(")")
		}
	}
}

// orderBy is get_rule_orderby.
func (p *printer) orderBy(keys []sortKey) {
	for i, k := range keys {
		if i > 0 {
			p.str(", ")
		}
		p.sortGroupItem(k)
		switch {
		case !k.desc && k.nullsFirst:
			p.str(" NULLS FIRST")
		case k.desc:
			p.str(" DESC")
			if !k.nullsFirst {
				p.str(" NULLS LAST")
			}
		}
	}
}

// windowSpec is get_rule_windowspec.
func (p *printer) windowSpec(w *window) {
	p.str("(")
	space := false
	if w.ref != "" {
		p.str(dialect.QuoteIdent(w.ref))
		space = true
	}
	if len(w.partition) > 0 && w.ref == "" {
		if space {
			p.str(" ")
		}
		p.str("PARTITION BY ")
		for i, k := range w.partition {
			if i > 0 {
				p.str(", ")
			}
			p.sortGroupItem(k)
		}
		space = true
	}
	if len(w.order) > 0 && !w.copiedOrder {
		if space {
			p.str(" ")
		}
		p.str("ORDER BY ")
		p.orderBy(w.order)
		space = true
	}
	if w.frame&frameNonDefault != 0 {
		if space {
			p.str(" ")
		}
		switch {
		case w.frame&frameRange != 0:
			p.str("RANGE ")
		case w.frame&frameRows != 0:
			p.str("ROWS ")
		default:
			p.str("GROUPS ")
		}
		if w.frame&frameBetween != 0 {
			p.str("BETWEEN ")
		}
		p.frameBound(w.frame, w.start, frameStartUnboundedPreceding, frameStartUnboundedFollowing, frameStartCurrentRow, frameStartOffsetPreceding, frameStartOffsetFollowing)
		if w.frame&frameBetween != 0 {
			p.str("AND ")
			p.frameBound(w.frame, w.end, frameEndUnboundedPreceding, frameEndUnboundedFollowing, frameEndCurrentRow, frameEndOffsetPreceding, frameEndOffsetFollowing)
		}
		switch {
		case w.frame&frameExcludeCurrentRow != 0:
			p.str("EXCLUDE CURRENT ROW ")
		case w.frame&frameExcludeGroup != 0:
			p.str("EXCLUDE GROUP ")
		case w.frame&frameExcludeTies != 0:
			p.str("EXCLUDE TIES ")
		}
		p.buf = p.buf[:len(p.buf)-1] // the trailing space
	}
	p.str(")")
}

// frameBound writes one end of a frame, each word followed by a space.
func (p *printer) frameBound(frame int32, offset expr, unbPreceding, unbFollowing, current, preceding, following int32) {
	switch {
	case frame&unbPreceding != 0:
		p.str("UNBOUNDED PRECEDING ")
	case frame&unbFollowing != 0:
		p.str("UNBOUNDED FOLLOWING ")
	case frame&current != 0:
		p.str("CURRENT ROW ")
	case frame&(preceding|following) != 0:
		p.expr(offset, false)
		if frame&preceding != 0 {
			p.str(" PRECEDING ")
		} else {
			p.str(" FOLLOWING ")
		}
	}
}
