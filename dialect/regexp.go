package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// regexpFlags turns PostgreSQL's regular expression flags into the
// engine's (RE2) inline flags. PostgreSQL's '.' matches a newline unless
// the 'n' flag makes the match newline-sensitive (where ^ and $ match at
// line ends too); RE2's needs (?s) for the former and (?m) for the latter.
func regexpFlags(fn, flags string) (string, *sqlerr.Error) {
	ci, newline := false, false
	for _, f := range flags {
		switch f {
		case 'i':
			ci = true
		case 'c':
			ci = false
		case 'n', 'm':
			newline = true
		case 's', 'p', 'w':
			newline = false
		case 'g':
			return "", sqlerr.New(sqlerr.InvalidParameterValue, "%s() does not support the \"global\" option", fn)
		case 'x', 'b', 'e', 'q':
			return "", sqlerr.New(sqlerr.FeatureNotSupported, "regular expression option %q is not supported", string(f))
		default:
			return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid regular expression option: %q", string(f))
		}
	}
	out := "(?s"
	if newline {
		out = "(?m"
	}
	if ci {
		out += "i"
	}
	return out + ")", nil
}

// regexpArgs are the optional arguments of PostgreSQL 15's regexp_count,
// regexp_substr and regexp_like, by name (regexp_instr is goRegexpCall's).
var regexpArgs = map[string][]string{
	"regexp_like":   {"flags"},
	"regexp_count":  {"start", "flags"},
	"regexp_substr": {"start", "n", "flags", "subexpr"},
}

// regexpFunction answers PostgreSQL 15's regexp_like, regexp_count and
// regexp_substr with the engine's regular expression
// functions. Flags must be constants; other arguments may be expressions.
func regexpFunction(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	name := sqltree.LastName(fc.Funcname)
	names, ok := regexpArgs[name]
	if !ok || len(fc.Args) < 2 || len(fc.Args) > 2+len(names) {
		return nil, false
	}
	arg := map[string]*pg_query.Node{}
	for i, a := range fc.Args[2:] {
		arg[names[i]] = a
	}
	flags := ""
	if f, ok := arg["flags"]; ok {
		sv := f.GetAConst().GetSval()
		if sv == nil {
			return Raise(sqlerr.FeatureNotSupported, name+"() flags must be a constant"), true
		}
		flags = sv.Sval
	}
	if p := fc.Args[1].GetAConst().GetSval(); p != nil && strings.ContainsAny(flags, "xt") {
		// Expanded syntax ('x', until a later 't'): the pattern without
		// the white space and comments it ignores.
		if i, j := strings.LastIndexByte(flags, 'x'), strings.LastIndexByte(flags, 't'); i > j {
			fc.Args[1] = pg_query.MakeAConstStrNode(expandedPattern(p.Sval), -1)
		}
		flags = strings.NewReplacer("x", "", "t", "").Replace(flags)
	}
	prefix, err := regexpFlags(name, flags)
	if err != nil {
		return Raise(err.Code, err.Message), true
	}
	pattern := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("||")},
		pg_query.MakeAConstStrNode(prefix, -1), fc.Args[1], -1)
	// A positive integer argument: a constant is checked here, an
	// expression when it runs.
	positive := func(key string, def int64, min int64) (*pg_query.Node, *pg_query.Node) {
		a, ok := arg[key]
		if !ok {
			return pg_query.MakeAConstIntNode(def, -1), nil
		}
		if iv := a.GetAConst().GetIval(); iv != nil && int64(iv.Ival) < min {
			return nil, Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("invalid value for parameter %q: %d", key, iv.Ival))
		}
		return a, nil
	}
	start, bad := positive("start", 1, 1)
	if bad != nil {
		return bad, true
	}
	subject := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("substr")}, []*pg_query.Node{fc.Args[0], start}, -1)
	switch name {
	case "regexp_like":
		return call("_tsdb_re_match", fc.Args[0], pattern), true
	case "regexp_count":
		return call("length", call("regexp_extract_all", subject, pattern)), true
	default: // regexp_substr
		n, bad := positive("n", 1, 1)
		if bad != nil {
			return bad, true
		}
		sub, bad := positive("subexpr", 0, 0)
		if bad != nil {
			return bad, true
		}
		if iv := sub.GetAConst().GetIval(); iv != nil && fc.Args[1].GetAConst().GetSval() != nil && int(iv.Ival) > RegexGroups(fc.Args[1].GetAConst().GetSval().Sval) {
			return sqltree.Cast(&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, "text"), true // no such group: NULL
		}
		return call("list_extract", call("regexp_extract_all", subject, pattern, sub), n), true
	}
}

// goRegexpCall answers regexp_replace and regexp_instr with tsdb's Go
// functions (RegexpCache.RegexpReplace, RegexpInstr), every optional
// argument filled in. regexp_replace's fourth argument is its start when
// it is an integer and its flags otherwise, as PostgreSQL chooses by type.
func goRegexpCall(name string, fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	args := fc.Args
	intConst := func(v int64) *pg_query.Node { return pg_query.MakeAConstIntNode(v, -1) }
	empty := pg_query.MakeAConstStrNode("", -1)
	switch name {
	case "regexp_replace":
		if len(args) < 3 || len(args) > 6 {
			return nil, false
		}
		start, n, flags, given := intConst(1), intConst(0), empty, boolConst(len(args) >= 5)
		switch len(args) {
		case 4:
			if isIntegerConst(args[3]) {
				start = args[3]
			} else {
				flags = args[3]
			}
		case 5:
			start, n = args[3], args[4]
		case 6:
			start, n, flags = args[3], args[4], args[5]
		}
		return call("_tsdb_regexp_replace", args[0], args[1], args[2], start, n, given, flags), true
	default: // regexp_instr
		if len(args) < 2 || len(args) > 7 {
			return nil, false
		}
		full := []*pg_query.Node{args[0], args[1], intConst(1), intConst(1), intConst(0), empty, intConst(0)}
		copy(full, args)
		return call("_tsdb_regexp_instr", full...), true
	}
}

// boolConst is a boolean constant.
func boolConst(v bool) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: v}}}}}
}

// isIntegerConst reports whether n is an integer constant, or a cast of
// one to an integer type.
func isIntegerConst(n *pg_query.Node) bool {
	if tc := n.GetTypeCast(); tc != nil {
		switch sqltree.LastName(tc.TypeName.GetNames()) {
		case "int2", "int4", "int8", "smallint", "integer", "bigint":
			return true
		}
		return false
	}
	return n.GetAConst().GetIval() != nil
}

// isStringOrNull reports whether n is a string constant or NULL.
func isStringOrNull(n *pg_query.Node) bool {
	c := n.GetAConst()
	return c != nil && (c.Isnull || c.GetSval() != nil)
}

// call is a function call node.
func call(name string, args ...*pg_query.Node) *pg_query.Node {
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(name)}, args, -1)
}

// regexpSplit answers regexp_split_to_array and regexp_split_to_table in
// Go, which splits where PostgreSQL does: an empty match at the text's
// ends or right after another match does not split (the engine's split
// does), the empty pattern splits into characters.
func regexpSplit(name string, fc *pg_query.FuncCall) *pg_query.Node {
	flags := pg_query.MakeAConstStrNode("", -1)
	if len(fc.Args) == 3 {
		sv := fc.Args[2].GetAConst().GetSval()
		if sv == nil {
			return Raise(sqlerr.FeatureNotSupported, name+"() flags must be a constant")
		}
		if _, err := regexpFlags(name, sv.Sval); err != nil {
			return Raise(err.Code, err.Message)
		}
		flags = fc.Args[2]
	}
	split := call("_tsdb_regexp_split", fc.Args[0], fc.Args[1], flags)
	if name == "regexp_split_to_table" {
		return call("unnest", split)
	}
	return split
}
