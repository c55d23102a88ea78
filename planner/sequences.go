package planner

// Temporary sequences: CREATE TEMP SEQUENCE makes a sequence of the
// session, as PostgreSQL's are, in the engine on the session's own
// connection (temp.main, under seqPrefix and its name), beside the
// session's temporary tables. nextval, currval and setval name it by its
// own name; expandSequences puts the engine's name in their argument.
// A sequence of the store (CREATE SEQUENCE without TEMP) is refused: it
// would have to survive restarts and crashes as PostgreSQL's does.
//
// As in PostgreSQL, a sequence is not transactional: a value taken in a
// block that rolls back stays taken.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// seqPrefix starts the engine's name of a temporary sequence.
const seqPrefix = "_tsdb_sq_"

// sequenceFunctions are PostgreSQL's functions that name a sequence by
// their first argument.
var sequenceFunctions = map[string]bool{"nextval": true, "currval": true, "setval": true}

// createSequence runs CREATE TEMP SEQUENCE.
func (s *Session) createSequence(ctx context.Context, st *pg_query.CreateSeqStmt) (*Result, error) {
	rel := st.Sequence
	if rel.Relpersistence != "t" && !strings.EqualFold(rel.Schemaname, "pg_temp") {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "only temporary sequences are supported (CREATE TEMP SEQUENCE): a sequence of the store would have to survive restarts")
	}
	if sc := strings.ToLower(rel.Schemaname); sc != "" && sc != "pg_temp" {
		return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot create temporary relation in non-temporary schema")
	}
	name := rel.Relname
	if _, _, isView := s.view(name); s.seqs[name] || s.isTemp(name) || isView {
		if st.IfNotExists {
			return &Result{Tag: "CREATE SEQUENCE"}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	var opts []string
	for _, o := range st.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		value := ""
		switch a := d.Arg.GetNode().(type) {
		case *pg_query.Node_Integer:
			value = strconv.FormatInt(int64(a.Integer.Ival), 10)
		case *pg_query.Node_Float:
			// A bound beyond int32 arrives as a float's text.
			if _, err := strconv.ParseInt(a.Float.Fval, 10, 64); err != nil {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "sequence option %s: %s is not a bigint", d.Defname, a.Float.Fval)
			}
			value = a.Float.Fval
		}
		switch d.Defname {
		case "start":
			opts = append(opts, "START WITH "+value)
		case "increment":
			opts = append(opts, "INCREMENT BY "+value)
		case "minvalue":
			if d.Arg == nil {
				opts = append(opts, "NO MINVALUE")
			} else {
				opts = append(opts, "MINVALUE "+value)
			}
		case "maxvalue":
			if d.Arg == nil {
				opts = append(opts, "NO MAXVALUE")
			} else {
				opts = append(opts, "MAXVALUE "+value)
			}
		case "cycle":
			if d.Arg.GetBoolean().GetBoolval() {
				opts = append(opts, "CYCLE")
			} else {
				opts = append(opts, "NO CYCLE")
			}
		case "cache":
			// The engine hands out values one at a time.
		default:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "sequence option %s is not supported", strings.ToUpper(d.Defname))
		}
	}
	q := "CREATE TEMP SEQUENCE temp.main." + schema.QuoteIdent(seqPrefix+name) + " " + strings.Join(opts, " ")
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return nil, engineError(err)
	}
	if s.seqs == nil {
		s.seqs = map[string]bool{}
	}
	s.seqs[name] = true
	return &Result{Tag: "CREATE SEQUENCE"}, nil
}

// dropSequences runs DROP SEQUENCE of temporary sequences.
func (s *Session) dropSequences(ctx context.Context, st *pg_query.DropStmt) (*Result, error) {
	var names []string
	for _, obj := range st.Objects {
		var parts []string
		for _, it := range obj.GetList().GetItems() {
			parts = append(parts, it.GetString_().GetSval())
		}
		if len(parts) == 2 && strings.EqualFold(parts[0], "pg_temp") {
			parts = parts[1:]
		}
		if len(parts) != 1 || !s.seqs[parts[0]] {
			if st.MissingOk {
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedTable, "sequence %q does not exist", strings.Join(parts, "."))
		}
		names = append(names, parts[0])
	}
	for _, n := range names {
		if _, err := s.conn.ExecContext(ctx, "DROP SEQUENCE temp.main."+schema.QuoteIdent(seqPrefix+n)); err != nil {
			return nil, engineError(err)
		}
		delete(s.seqs, n)
	}
	return &Result{Tag: "DROP SEQUENCE"}, nil
}

// closeSequences drops every temporary sequence: the session's
// connection goes back to the pool, whose next user must not find them.
func (s *Session) closeSequences(ctx context.Context) {
	s.dropEngineObjects(ctx, "SEQUENCE", seqPrefix, slices.Collect(maps.Keys(s.seqs)))
	clear(s.seqs)
}

// expandSequences puts the engine's name of a temporary sequence in the
// first argument of nextval, currval and setval ('s' or 's'::regclass),
// and refuses a name that is no sequence of the session (42P01, as
// PostgreSQL answers). lastval is refused.
func (s *Session) expandSequences(st statement) (statement, error) {
	if st.node == nil || !(containsFold(st.text, "nextval") || containsFold(st.text, "currval") || containsFold(st.text, "setval") || containsFold(st.text, "lastval")) {
		// Names none of the functions: the tree (a large INSERT's) is
		// neither copied nor walked.
		return st, nil
	}
	node := proto.Clone(st.node).(*pg_query.Node)
	var failed error
	named := 0 // calls whose name this pass put in place
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		fc, ok := m.(*pg_query.FuncCall)
		if !ok || failed != nil {
			return nil
		}
		fn := sqltree.LastName(fc.Funcname)
		if fn == "lastval" && len(fc.Args) == 0 {
			failed = sqlerr.New(sqlerr.FeatureNotSupported, "lastval() is not supported; call currval() with the sequence's name")
			return nil
		}
		if !sequenceFunctions[fn] || len(fc.Args) == 0 {
			return nil
		}
		arg := fc.Args[0]
		if tc := arg.GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "regclass" {
			arg = tc.Arg
		}
		sv := arg.GetAConst().GetSval()
		if sv == nil {
			failed = sqlerr.New(sqlerr.FeatureNotSupported, "%s() takes the sequence's name as a constant", fn)
			return nil
		}
		if strings.HasPrefix(sv.Sval, `temp.main."`+seqPrefix) {
			return nil // put in place already (a prepared statement's)
		}
		name, ok := sequenceName(sv.Sval)
		if !ok || !s.seqs[name] {
			failed = sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", sv.Sval)
			return nil
		}
		fc.Args[0] = pg_query.MakeAConstStrNode("temp.main."+schema.QuoteIdent(seqPrefix+name), -1)
		named++
		return nil
	})
	if failed != nil {
		return st, failed
	}
	if named == 0 {
		// No sequence call, or a statement this pass already made
		// (prepared, then executed): its calls stay where they are.
		return st, nil
	}
	fenceSequenceFilters(node)
	if sel := node.GetSelectStmt(); sel != nil {
		lateSequenceCalls(sel)
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return st, err
	}
	st.node, st.text = node, text
	return st, nil
}

// sequenceName reads a sequence's name as regclass input does: a name
// not in double quotes folds to lower case, pg_temp. may qualify it.
func sequenceName(s string) (string, bool) {
	tree, err := pg_query.Parse("SELECT 1 FROM " + s)
	if err != nil || len(tree.Stmts) != 1 {
		return "", false
	}
	from := tree.Stmts[0].Stmt.GetSelectStmt().GetFromClause()
	if len(from) != 1 || from[0].GetRangeVar() == nil {
		return "", false
	}
	rv := from[0].GetRangeVar()
	if rv.Catalogname != "" || rv.Schemaname != "" && !strings.EqualFold(rv.Schemaname, "pg_temp") || rv.Alias != nil {
		return "", false
	}
	return rv.Relname, true
}

// lateSequenceCalls makes a select list's sequence calls run after the
// query's ORDER BY and LIMIT, as PostgreSQL's plan computes them (SELECT
// x, nextval('s') FROM t ORDER BY x LIMIT 10 takes ten values, in x's
// order); the engine computes its select list before it sorts, for every
// row. The query becomes SELECT … nextval(…) FROM (the query with NULL in
// their place) in the inner query's order.
func lateSequenceCalls(sel *pg_query.SelectStmt) {
	if sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.SortClause) == 0 && sel.LimitCount == nil && sel.LimitOffset == nil {
		return
	}
	// The rows OFFSET skips take values too (PostgreSQL's Limit reads
	// them from the projection): the inner query keeps LIMIT count +
	// offset, the outer skips.
	var offset *pg_query.Node
	if sel.LimitOffset != nil {
		off := sel.LimitOffset.GetAConst().GetIval()
		if off == nil || sel.LimitCount != nil && sel.LimitCount.GetAConst().GetIval() == nil {
			return // computed bounds: left as they are
		}
		offset = sel.LimitOffset
	}
	// The inner query's columns get names of their own: an ORDER BY by
	// an output name, or a *, would not find its column; such queries
	// are left as they are.
	aliases := map[string]bool{}
	for _, t := range sel.TargetList {
		if rt := t.GetResTarget(); rt != nil && rt.Name != "" {
			aliases[rt.Name] = true
		}
		if sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			if _, ok := m.(*pg_query.A_Star); ok {
				return errFound
			}
			return nil
		}) != nil {
			return
		}
	}
	for _, sb := range sel.SortClause {
		if cr := sb.GetSortBy().GetNode().GetColumnRef(); cr != nil && len(cr.Fields) == 1 && aliases[cr.Fields[0].GetString_().GetSval()] {
			return
		}
	}
	calls := map[int]*pg_query.Node{}
	for i, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || !callsSequence(rt.Val) {
			continue
		}
		if sqltree.Walk(rt.Val.ProtoReflect(), func(m proto.Message) error {
			if _, ok := m.(*pg_query.ColumnRef); ok {
				return errFound
			}
			return nil
		}) != nil {
			return // the call reads the row: left where it is
		}
		calls[i] = rt.Val
	}
	if len(calls) == 0 {
		return
	}
	inner := proto.Clone(sel).(*pg_query.SelectStmt)
	if offset != nil {
		if inner.LimitCount != nil {
			n := int64(inner.LimitCount.GetAConst().GetIval().GetIval()) + int64(offset.GetAConst().GetIval().GetIval())
			inner.LimitCount = pg_query.MakeAConstIntNode(n, -1)
		}
		inner.LimitOffset = nil
	}
	var outer []*pg_query.Node
	for i, t := range inner.TargetList {
		rt := t.GetResTarget()
		col := fmt.Sprintf("_tsdb_c%d", i)
		name := rt.Name
		if name == "" {
			name = figureColname(rt.Val)
		}
		if _, ok := calls[i]; ok {
			rt.Val = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}
			outer = append(outer, resTarget(name, calls[i]))
		} else {
			outer = append(outer, resTarget(name, columnRef("_tsdb_s", col)))
		}
		rt.Name = col
	}
	*sel = pg_query.SelectStmt{
		TargetList: outer,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}},
			Alias:    &pg_query.Alias{Aliasname: "_tsdb_s"},
		}}}},
		LimitOffset: offset,
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
}

// fenceSequenceFilters keeps a WHERE that calls nextval or setval where
// it is written: over a subquery in FROM, PostgreSQL calls it once for
// each of the subquery's rows (SELECT … FROM (SELECT DISTINCT ten FROM
// tenk1) ss WHERE ten < nextval('s') takes ten values); the engine moves
// the filter into the subquery, below its DISTINCT, and calls it for
// every row read. Each such subquery becomes a MATERIALIZED common table
// expression, which the engine does not filter inside.
func fenceSequenceFilters(root *pg_query.Node) {
	n := 0
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || sel.WhereClause == nil || !callsSequence(sel.WhereClause) {
			return nil
		}
		if sel.WithClause != nil && sel.WithClause.Recursive {
			return nil
		}
		for i, item := range sel.FromClause {
			rs := item.GetRangeSubselect()
			if rs == nil || rs.Lateral || rs.Alias == nil {
				continue
			}
			n++
			name := fmt.Sprintf("_tsdb_fence%d", n)
			if sel.WithClause == nil {
				sel.WithClause = &pg_query.WithClause{}
			}
			sel.WithClause.Ctes = append(sel.WithClause.Ctes, &pg_query.Node{Node: &pg_query.Node_CommonTableExpr{CommonTableExpr: &pg_query.CommonTableExpr{
				Ctename: name, Ctequery: rs.Subquery, Ctematerialized: pg_query.CTEMaterialize_CTEMaterializeAlways,
				Aliascolnames: rs.Alias.Colnames,
			}}})
			sel.FromClause[i] = &pg_query.Node{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{
				Relname: name, Inh: true, Relpersistence: "p", Alias: &pg_query.Alias{Aliasname: rs.Alias.Aliasname},
			}}}
		}
		return nil
	})
}

// errFound stops a walk that found what it looked for.
var errFound = errors.New("found")

// callsSequence reports whether n calls nextval or setval.
func callsSequence(n *pg_query.Node) bool {
	return sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok {
			if fn := sqltree.LastName(fc.Funcname); fn == "nextval" || fn == "setval" {
				return errFound
			}
		}
		return nil
	}) != nil
}
