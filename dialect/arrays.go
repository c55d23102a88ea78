package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// RegexpMatches is PostgreSQL's regexp_matches(s, pattern) in a select
// list: a row holding the array of the pattern's groups (or of the whole
// match, when it has none) if s matches, no row if not. The pattern must
// be a constant, which the number of groups is read from.
func RegexpMatches(str, pattern, flags *pg_query.Node) (*pg_query.Node, bool) {
	global, rest, given := false, "", ""
	if flags != nil {
		fv := flags.GetAConst().GetSval()
		if fv == nil {
			return Raise(sqlerr.FeatureNotSupported, "regexp_matches() flags must be a constant"), true
		}
		given = fv.Sval
		global, rest = strings.Contains(fv.Sval, "g"), strings.ReplaceAll(fv.Sval, "g", "")
	}
	prefix, perr := regexpFlags("regexp_matches", rest)
	if perr != nil {
		return Raise(perr.Code, perr.Message), true
	}
	if global {
		// Every match as PostgreSQL finds them, empty ones too (the
		// engine's extract-all skips an empty match after another).
		return call("unnest", call("_tsdb_regexp_matches", str, pattern, pg_query.MakeAConstStrNode(given, -1))), true
	}
	sv := pattern.GetAConst().GetSval()
	if sv == nil {
		return nil, false
	}
	p := pg_query.MakeAConstStrNode(prefix+sv.Sval, -1)
	n := RegexGroups(sv.Sval)
	// The first match's groups: the engine's extract-all gives '' for a
	// group that matched nothing and NULL for one that took no part, as
	// PostgreSQL does.
	items := []string{"regexp_extract(_tsdb_arg1, _tsdb_arg2, 0)"}
	if n > 0 {
		items = items[:0]
		for g := 1; g <= n; g++ {
			items = append(items, fmt.Sprintf("(regexp_extract_all(_tsdb_arg1, _tsdb_arg2, %d))[1]", g))
		}
	}
	r, err := sqltree.Template("unnest(CASE WHEN _tsdb_re_match(_tsdb_arg1, _tsdb_arg2) THEN list_value(list_value("+strings.Join(items, ", ")+")) ELSE list_value() END)", str, p)
	return r, err == nil
}

// RegexGroups counts a pattern's capturing groups: the parentheses not
// escaped, not in a bracket expression and not (?…).
func RegexGroups(p string) int {
	n, inBracket := 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inBracket:
			if c == ']' {
				inBracket = false
			}
		case c == '[':
			inBracket = true
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(' && (i+1 >= len(p) || p[i+1] != '?'):
			n++
		}
	}
	return n
}

// AnyOfArrayText rewrites x op ANY('{a,b}') and x op ALL('{a,b}'), the
// form a client that inlines an array parameter sends: PostgreSQL reads
// the text as an array of x's type; the engine would compare x with one
// string. The elements stay untyped constants, so the engine converts
// them to x's type as it does any literal: = ANY is IN, <> ALL is
// NOT IN, other operators a chain of OR (ANY) or AND (ALL).
func AnyOfArrayText(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	all := e.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP_ANY && !all {
		return nil, false
	}
	sv := e.Rexpr.GetAConst().GetSval()
	if sv == nil {
		return nil, false
	}
	arr, err := ParseArrayText(sv.Sval)
	if err != nil {
		return Raise(sqlerr.InvalidTextRep, fmt.Sprintf("malformed array literal: %q", sv.Sval)), true
	}
	elems := arr.GetAArrayExpr().GetElements()
	for _, el := range elems {
		if el.GetAArrayExpr() != nil {
			return nil, false // a nested array: left to the engine
		}
	}
	op := sqltree.LastName(e.Name)
	switch {
	case len(elems) == 0:
		// Nothing to compare with: ANY is false, ALL is true.
		return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{
			Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: all}}}}}, true
	case op == "=" && !all || op == "<>" && all:
		name := "="
		if all {
			name = "<>"
		}
		return &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
			Kind: pg_query.A_Expr_Kind_AEXPR_IN, Name: []*pg_query.Node{pg_query.MakeStrNode(name)},
			Lexpr: e.Lexpr, Rexpr: pg_query.MakeListNode(elems), Location: e.Location}}}, true
	}
	var terms []*pg_query.Node
	for _, el := range elems {
		terms = append(terms, pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, e.Name, proto.Clone(e.Lexpr).(*pg_query.Node), el, e.Location))
	}
	kind := pg_query.BoolExprType_OR_EXPR
	if all {
		kind = pg_query.BoolExprType_AND_EXPR
	}
	if len(terms) == 1 {
		return terms[0], true
	}
	return pg_query.MakeBoolExprNode(kind, terms, e.Location), true
}

// ParseArrayText reads PostgreSQL's array text ({1,2}, {a,"b c",NULL},
// {{1,2},{3,4}}) into an ARRAY[…] of text constants and NULLs, nested as
// written, for the cast around it to convert.
func ParseArrayText(s string) (*pg_query.Node, error) {
	p := &arrayText{s: s}
	p.space()
	n, err := p.array()
	if err != nil {
		return nil, err
	}
	if p.space(); p.i != len(p.s) {
		return nil, fmt.Errorf("junk after closing right brace")
	}
	return n, nil
}

type arrayText struct {
	s     string
	i     int
	depth int
}

// maxArrayDims is PostgreSQL's limit on an array's dimensions.
const maxArrayDims = 6

func (p *arrayText) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *arrayText) array() (*pg_query.Node, error) {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, fmt.Errorf("array value must start with \"{\"")
	}
	if p.depth++; p.depth > maxArrayDims {
		return nil, fmt.Errorf("number of array dimensions exceeds the maximum allowed (%d)", maxArrayDims)
	}
	defer func() { p.depth-- }()
	p.i++
	var items []*pg_query.Node
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return &pg_query.Node{Node: &pg_query.Node_AArrayExpr{AArrayExpr: &pg_query.A_ArrayExpr{}}}, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unexpected end of input")
		}
		var item *pg_query.Node
		switch c := p.s[p.i]; {
		case c == '{':
			a, err := p.array()
			if err != nil {
				return nil, err
			}
			item = a
		case c == '"':
			p.i++
			var b strings.Builder
			for {
				if p.i >= len(p.s) {
					return nil, fmt.Errorf("unexpected end of input")
				}
				c := p.s[p.i]
				p.i++
				if c == '\\' && p.i < len(p.s) {
					b.WriteByte(p.s[p.i])
					p.i++
					continue
				}
				if c == '"' {
					break
				}
				b.WriteByte(c)
			}
			item = pg_query.MakeAConstStrNode(b.String(), -1)
		default:
			start := p.i
			var b strings.Builder
			for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != '}' {
				if p.s[p.i] == '\\' && p.i+1 < len(p.s) {
					p.i++
				} else if p.s[p.i] == '{' || p.s[p.i] == '"' {
					return nil, fmt.Errorf("unexpected character")
				}
				b.WriteByte(p.s[p.i])
				p.i++
			}
			v := strings.TrimRight(b.String(), " \t\n\r")
			switch {
			case v == "":
				return nil, fmt.Errorf("unexpected character")
			case strings.EqualFold(v, "null") && !strings.Contains(p.s[start:p.i], "\\"):
				item = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}
			default:
				item = pg_query.MakeAConstStrNode(v, -1)
			}
		}
		items = append(items, item)
		p.space()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unexpected end of input")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return &pg_query.Node{Node: &pg_query.Node_AArrayExpr{AArrayExpr: &pg_query.A_ArrayExpr{Elements: items}}}, nil
		default:
			return nil, fmt.Errorf("unexpected character")
		}
	}
}
