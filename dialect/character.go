package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqltree"
)

// CharacterCast rewrites a cast to varchar(n) or char(n), whose lengths
// the engine ignores (it has one string type), into what PostgreSQL
// computes:
//
//   - x::varchar(n) keeps the first n characters (an explicit cast
//     truncates without an error);
//   - x::char(n) keeps the first n characters too, and its trailing spaces
//     mean nothing: length('a  '::char(3)) is 1, 'a'::char(3) || 'b' is
//     'ab', so as a value it is the truncated text without them;
//   - written out as a column of the result (pad: the cast is a select
//     list item of the statement's own query), char(n) is padded with
//     spaces to n characters, as PostgreSQL prints it.
//
// char without a length is char(1); bpchar without one has no length and
// is left alone. It reports false for every other cast.
func CharacterCast(tc *pg_query.TypeCast, pad bool) (*pg_query.Node, bool) {
	tn := sqltree.LastName(tc.TypeName.GetNames())
	if (tn != "bpchar" && tn != "varchar") || len(tc.TypeName.GetTypmods()) != 1 || tc.TypeName.ArrayBounds != nil {
		return nil, false
	}
	n := tc.TypeName.Typmods[0].GetAConst().GetIval()
	if n == nil || n.Ival < 1 {
		return nil, false // the engine reports the bad length
	}
	text := sqltree.Cast(tc.Arg, "text")
	length := pg_query.MakeAConstIntNode(int64(n.Ival), -1)
	left := call("left", text, length)
	switch {
	case tn == "varchar":
		return left, true
	case pad:
		return call("rpad", left, length, pg_query.MakeAConstStrNode(" ", -1)), true
	default:
		return call("rtrim", left, pg_query.MakeAConstStrNode(" ", -1)), true
	}
}
