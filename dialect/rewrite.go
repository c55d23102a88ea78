package dialect

// The statement-level rewrite: PostgreSQL's syntax and functions the
// engine spells otherwise, changed node by node in a parse tree.

import (
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"tsdb/internal/pgdatetime"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// IsOIDAlias reports whether a type is one of PostgreSQL's OID alias
// types (regclass, oid, …): a cast to one keeps the value (an OID) as it
// is.
func IsOIDAlias(name string) bool { return oidAliasTypes[name] }

var oidAliasTypes = map[string]bool{
	"regclass": true, "regtype": true, "regproc": true, "regnamespace": true,
	"oid": true, "regrole": true, "name": true, "regconfig": true,
}

// RewriteTree applies RewritePG to every node under m, reading date and
// time constants as in describes (the session's TimeZone, DateStyle and
// IntervalStyle). Statements that do not go through the planner's
// rewriteSession (DELETE, UPDATE, INSERT … SELECT, EXPLAIN, RETURNING) get
// it too, so that a WHERE clause means in them what it means in a SELECT,
// and a logged DML statement replays with that meaning.
func RewriteTree(m protoreflect.Message, in Input) {
	sqltree.ReplaceNodes(m, func(n *pg_query.Node) *pg_query.Node {
		r, _ := RewritePG(n, in)
		return r
	})
	TypedRaises(m)
}

// RewritePG adapts PostgreSQL-only syntax in a tree for the engine:
// OPERATOR(pg_catalog.~) becomes ~, COLLATE clauses go, ::regclass and
// similar OID-alias casts become plain values, and pg_catalog functions
// map to tsdb's macros, date and time constants are read by PostgreSQL's
// rules as in describes. It reports whether anything changed.
func RewritePG(n *pg_query.Node, in Input) (*pg_query.Node, bool) {
	switch {
	case n.GetResTarget() != nil:
		rt := n.GetResTarget()
		// In a select list PostgreSQL's generate_series and
		// regexp_matches give a row per value, the engine's one list:
		// unnested, the item, or what it computes with, gives the rows.
		// (In UPDATE … SET both refuse it.)
		if val := proto.Clone(rt.Val).(*pg_query.Node); unnestSetReturning(&val) {
			return &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
				Name: rt.Name, Location: rt.Location, Val: val}}}, true
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if r, ok := AnyOfArrayText(e); ok {
			return r, true
		}
		if r, ok := unknownIntegerOperand(e); ok {
			return r, true
		}
		if r, ok := moduloMinusOne(e); ok {
			return r, true
		}
		if r, ok := shiftLeft(e); ok {
			return r, true
		}
		if op := sqltree.LastName(e.Name); e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && (op == "<<" || op == ">>") {
			// A bit string shifted by a negative count is shifted the
			// other way (the engine's shifts in zeros only).
			return call("_tsdb_shift", e.Lexpr, e.Rexpr, boolConst(op == "<<")), true
		}
		if r, ok := nanDivision(e); ok {
			return r, true
		}
		if r, ok := concatText(e, in); ok {
			return r, true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && sqltree.LastName(e.Name) == "#" {
			// # is PostgreSQL's bitwise exclusive or.
			return call("xor", e.Lexpr, e.Rexpr), true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && sqltree.LastName(e.Name) == "^" {
			// ^ is power, with power's errors.
			return call("_tsdb_power", e.Lexpr, e.Rexpr), true
		}
		if e.Lexpr == nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && len(e.Name) >= 1 {
			// PostgreSQL's prefix square and cube root operators.
			fn := map[string]string{"|/": "_tsdb_sqrt", "||/": "cbrt"}[sqltree.LastName(e.Name)]
			if fn != "" {
				return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(fn)}, []*pg_query.Node{e.Rexpr}, e.Location), true
			}
			if tc := e.Rexpr.GetTypeCast(); tc != nil && sqltree.LastName(e.Name) == "-" {
				// The engine folds the negation of a constant integer
				// into a wider type when it overflows (-(-2^63::int8) was
				// 2^63, a numeric); PostgreSQL says "bigint out of range".
				// 0 - x keeps the type and overflows as PostgreSQL does.
				switch t := sqltree.LastName(tc.TypeName.GetNames()); t {
				case "int2", "int4", "int8", "smallint", "integer", "bigint":
					return &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
						Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: e.Name,
						Lexpr: sqltree.Cast(pg_query.MakeAConstIntNode(0, e.Location), t), Rexpr: e.Rexpr, Location: e.Location,
					}}}, true
				}
			}
		}
		if len(e.Name) == 2 && strings.EqualFold(e.Name[0].GetString_().GetSval(), "pg_catalog") {
			e.Name = e.Name[1:]
			return nil, true
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_SIMILAR {
			if r, ok := similarTo(e); ok {
				return r, true
			}
		}
		if e.Kind == pg_query.A_Expr_Kind_AEXPR_LIKE || e.Kind == pg_query.A_Expr_Kind_AEXPR_ILIKE {
			if r, ok := likeEscape(e); ok {
				return r, true
			}
		}
		if sym := e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM; sym || e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM {
			// a BETWEEN SYMMETRIC x AND y is (a BETWEEN x AND y) OR
			// (a BETWEEN y AND x), as PostgreSQL expands it; DuckDB
			// has no SYMMETRIC.
			bounds := e.Rexpr.GetList().GetItems()
			if len(bounds) != 2 {
				return nil, false
			}
			between := func(lo, hi *pg_query.Node) *pg_query.Node {
				return &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
					Kind: pg_query.A_Expr_Kind_AEXPR_BETWEEN, Name: []*pg_query.Node{pg_query.MakeStrNode("BETWEEN")},
					Lexpr: proto.Clone(e.Lexpr).(*pg_query.Node), Rexpr: pg_query.MakeListNode([]*pg_query.Node{lo, hi}), Location: e.Location,
				}}}
			}
			either := pg_query.MakeBoolExprNode(pg_query.BoolExprType_OR_EXPR, []*pg_query.Node{
				between(bounds[0], bounds[1]),
				between(proto.Clone(bounds[1]).(*pg_query.Node), proto.Clone(bounds[0]).(*pg_query.Node)),
			}, e.Location)
			if sym {
				return either, true
			}
			return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{either}, e.Location), true
		}
	case n.GetCollateClause() != nil:
		return n.GetCollateClause().Arg, true
	case n.GetSortBy() != nil && n.GetSortBy().SortbyDir == pg_query.SortByDir_SORTBY_USING:
		// ORDER BY x USING < is ascending and USING > descending with
		// the types' default orderings, which are the engine's.
		sb := n.GetSortBy()
		switch sqltree.LastName(sb.UseOp) {
		case "<", "<=":
			sb.SortbyDir = pg_query.SortByDir_SORTBY_ASC
		case ">", ">=":
			sb.SortbyDir = pg_query.SortByDir_SORTBY_DESC
		default:
			sb.SortbyDir = pg_query.SortByDir_SORTBY_DEFAULT
			sb.Node = Raise(sqlerr.FeatureNotSupported, "ORDER BY … USING supports the operators < and > only")
		}
		sb.UseOp = nil
		return nil, true
	case n.GetAConst().GetBsval() != nil:
		// B'101' and X'1F' are PostgreSQL's bit strings; the engine reads
		// X'1F' as bytes (bitstring.go).
		return bitConstant(n.GetAConst().GetBsval().Bsval), true
	case n.GetAConst().GetFval() != nil:
		return numberLiteral(n.GetAConst(), n.GetAConst().Location)
	case n.GetTypeCast() != nil:
		return rewriteTypeCast(n, in)
	case n.GetFuncCall() != nil:
		return rewriteFuncCall(n, in)
	}
	return nil, false
}

// UTCInput reads date and time text as a session with PostgreSQL's
// defaults and TimeZone UTC does, now meaning now.
func UTCInput() Input { return Input{Loc: time.UTC, Order: pgdatetime.MDY, Now: time.Now()} }

// unnestSetReturning unnests, in place, the generate_series or
// regexp_matches (as RegexpMatches answers it) at *slot, or each one the
// expression there computes with (generate_series(1,5) / 2), through
// operators, casts and function arguments but not into subqueries, and
// reports whether it changed one. A call already unnested is left as it
// is, so that the rewrite, which walks into what it put in place, ends.
func unnestSetReturning(slot **pg_query.Node) bool {
	n := *slot
	if fc := n.GetFuncCall(); fc != nil && fc.Over == nil {
		switch sqltree.LastName(fc.Funcname) {
		case "generate_series":
			*slot = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unnest")}, []*pg_query.Node{n}, fc.Location)
			return true
		case "regexp_matches":
			if len(fc.Args) == 2 || len(fc.Args) == 3 {
				var flags *pg_query.Node
				if len(fc.Args) == 3 {
					flags = fc.Args[2]
				}
				if r, ok := RegexpMatches(fc.Args[0], fc.Args[1], flags); ok {
					*slot = r
					return true
				}
			}
		}
	}
	changed := false
	switch {
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Lexpr != nil {
			changed = unnestSetReturning(&e.Lexpr) || changed
		}
		if e.Rexpr != nil {
			changed = unnestSetReturning(&e.Rexpr) || changed
		}
	case n.GetTypeCast() != nil:
		changed = unnestSetReturning(&n.GetTypeCast().Arg)
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		if sqltree.LastName(fc.Funcname) == "unnest" || fc.Over != nil || fc.AggStar || len(fc.AggOrder) > 0 {
			return false
		}
		for i := range fc.Args {
			changed = unnestSetReturning(&fc.Args[i]) || changed
		}
	}
	return changed
}
