package dialect

// LIKE and SIMILAR TO as PostgreSQL reads their patterns.

import (
	"strings"
	"unicode/utf8"

	"tsdb/internal/sqltree"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// likeEscape rewrites a LIKE for PostgreSQL's escape character: a
// backslash escapes the next character unless ESCAPE names another, while
// DuckDB's LIKE has no escape character unless told. Only a constant
// pattern without a backslash (and without ESCAPE) means the same to both;
// it is left alone, so DuckDB keeps its LIKE optimizations for it.
func likeEscape(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	op := sqltree.LastName(e.Name)
	var fn string
	switch op {
	case "~~", "!~~":
		fn = "like_escape"
	case "~~*", "!~~*":
		fn = "ilike_escape"
	default:
		return nil, false
	}
	pattern, escape := e.Rexpr, pg_query.MakeAConstStrNode(`\`, -1)
	if f := e.Rexpr.GetFuncCall(); f != nil && sqltree.LastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
		pattern, escape = f.Args[0], f.Args[1]
	} else if sv := e.Rexpr.GetAConst().GetSval(); sv != nil && !strings.Contains(sv.Sval, `\`) {
		return nil, false
	}
	call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(fn)}, []*pg_query.Node{e.Lexpr, pattern, escape}, e.Location)
	if strings.HasPrefix(op, "!") {
		return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{call}, e.Location), true
	}
	return call, true
}

// similarTo rewrites a SIMILAR TO with a constant pattern into the
// regular expression it means (SimilarRegex): DuckDB reads the pattern as
// a regular expression as it stands, where % and _ are no wildcards and .
// is one. Other patterns are left to DuckDB. A NULL escape makes the
// result NULL; an escape of more than one character is refused.
func similarTo(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	op := sqltree.LastName(e.Name)
	f := e.Rexpr.GetFuncCall()
	if (op != "~" && op != "!~") || f == nil || len(f.Args) == 0 {
		return nil, false
	}
	pattern := f.Args[0].GetAConst().GetSval()
	escape := `\`
	if len(f.Args) == 2 {
		if c := f.Args[1].GetAConst(); c != nil && c.Isnull {
			return sqltree.Cast(f.Args[1], "boolean"), true
		}
		sv := f.Args[1].GetAConst().GetSval()
		if sv == nil {
			return nil, false
		}
		escape = sv.Sval // ESCAPE '': no escape character at all
	}
	if pattern == nil {
		if len(f.Args) == 2 && utf8.RuneCountInString(escape) > 1 {
			_, err := SimilarRegex("", escape)
			return raiseError(err), true
		}
		return nil, false
	}
	re, err := SimilarRegex(pattern.Sval, escape)
	if err != nil {
		return raiseError(err), true
	}
	call := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("regexp_full_match")},
		[]*pg_query.Node{e.Lexpr, pg_query.MakeAConstStrNode(re, -1)}, e.Location)
	if op == "!~" {
		return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{call}, e.Location), true
	}
	return call, true
}
