package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// catalogPrefix names the per-statement temporary views that stand in for
// PostgreSQL's catalog relations.
const catalogPrefix = "_tsdb_catalog_"

// catalogName returns the catalog relation a RangeVar names, if tsdb
// answers it: schema-qualified, or a bare pg_catalog name.
func catalogName(rv *pg_query.RangeVar) string {
	// pg_query folded what was unquoted; "PG_CLASS" is no catalog's.
	schemaName, rel := rv.Schemaname, rv.Relname
	if schemaName == "" {
		schemaName = "pg_catalog"
	}
	name := schemaName + "." + rel
	if dialect.CatalogRelation(name) != nil {
		return name
	}
	return ""
}

func catalogView(name string) string {
	return catalogPrefix + strings.ReplaceAll(name, ".", "_")
}

// sessionFunction is the value of a function of the session:
// current_setting('x'), version(), current_database(), current_schema().
func (s *Session) sessionFunction(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	switch sqltree.LastName(fc.Funcname) {
	case "current_setting":
		if len(fc.Args) >= 1 {
			if c := fc.Args[0].GetAConst(); c != nil && c.GetSval() != nil {
				name := strings.ToLower(c.GetSval().Sval)
				if dialect.Known(name) {
					return pg_query.MakeAConstStrNode(s.settings.Get(name), -1), true
				}
			}
		}
	case "version":
		if len(fc.Args) == 0 {
			return pg_query.MakeAConstStrNode("PostgreSQL "+dialect.ServerVersion+" (tsdb, a time-series store on DuckDB) on x86_64-pc-linux-gnu, 64-bit", -1), true
		}
	case "current_database":
		return pg_query.MakeAConstStrNode("tsdb", -1), true
	case "current_schema":
		return pg_query.MakeAConstStrNode("public", -1), true
	}
	return nil, false
}

// rewriteSession replaces, in a copy of the tree, catalog relations by
// tsdb's catalog views and session functions by their values:
// current_setting('x'), version(), current_database(), current_schema(),
// current_user, session_user, user. It returns nil when nothing changed.
func (s *Session) rewriteSession(node *pg_query.Node) (*pg_query.Node, []string, error) {
	return s.rewriteSessionExact(node, true)
}

// rewriteSessionExact is rewriteSession, with the select list's avg,
// variance and standard deviation answered exactly (ExactAggregates) and
// number literals keeping their scales (NumericLiteralScales), or not:
// the first needs sum() of the argument, which the engine does not have
// for every type avg takes (interval), the second makes a struct of a
// column an ORDER BY expression may not take, and a query either fails
// for runs as written instead (see retryInexact).
func (s *Session) rewriteSessionExact(node *pg_query.Node, exact bool) (*pg_query.Node, []string, error) {
	out := proto.Clone(node).(*pg_query.Node)
	// Number literals first: every rewrite below reads 1.5e3 as the
	// numeric 1500 PostgreSQL makes of it.
	changed := dialect.NumberLiterals(out)
	// Before the rewrite below renames functions (ln → _tsdb_ln).
	changed = nameSubqueryColumns(out) || changed
	byName, err := orderByOutputNames(out)
	if err != nil {
		return nil, nil, err
	}
	changed = byName || changed
	features := dialect.FeaturesOf(out)
	if features.Err != nil {
		return nil, nil, features.Err
	}
	if err := dialect.CheckArrayScales(out.GetSelectStmt()); err != nil {
		return nil, nil, err
	}
	if features.SetOps {
		changed = dialect.UnknownSetOpLiterals(out) || changed
	}
	changed = fillEmptySelectLists(out) || changed
	ties, err := dialect.WithTies(out)
	if err != nil {
		return nil, nil, err
	}
	changed = ties || changed
	if features.Windows {
		windows, err := dialect.WindowChecks(out)
		if err != nil {
			return nil, nil, err
		}
		changed = windows || changed
	}
	// extract of a timestamp is numeric: of a cast anywhere, of a table's
	// column in the select list.
	changed = dialect.ExtractNumeric(out, nil) || changed
	// bytea functions of a bytea cast or function anywhere, of a table's
	// column in the select list.
	if features.Bytea {
		changed = dialect.ByteaFunctions(out, nil) || changed
	}
	if features.Interval {
		changed = dialect.IntervalArithmetic(out, nil) || changed
	}
	if features.Minus {
		changed = dialect.TimestamptzDifference(out, nil) || changed
	}
	// Operands of the types PostgreSQL gives them (a bare string beside
	// a time column, a real beside another number): in every SELECT of
	// the statement, by the columns of its own FROM.
	changed = s.typeOperands(out) || changed
	// Constants of number, date and time types read now, as PostgreSQL's
	// parse analysis reads them: their input errors are the statement's
	// even where no row reaches them.
	if err := s.checkConstantInput(out); err != nil {
		return nil, nil, err
	}
	// character(n) columns where PostgreSQL computes with their spaces.
	changed = s.padCharacterRefs(out, true) || changed
	// The types of the select list's columns, for the rewrites below that
	// need them: its FROM tables are looked up once.
	var typeOf func(*pg_query.Node) schema.Type
	if sel := out.GetSelectStmt(); sel != nil {
		typeOf = s.argumentType(sel)
		if features.JSON {
			if err := dialect.JSONValueTypes(sel, typeOf, s.rowColumns(sel)); err != nil {
				return nil, nil, err
			}
		}
		// The float variances' Go function takes every value as a list:
		// for queries over no table of the store only (VALUES, series,
		// temporary tables), where the input is the statement's own and
		// PostgreSQL's order is the one the rows come in. Over a store
		// table, which may hold billions of rows, the engine's own
		// algorithm answers (its last digits may differ).
		// (The tables are looked up only for a select list that has a
		// variance: a WHERE of 20,000 terms must not be walked again.)
		smallInput := false
		if dialect.HasVariance(sel.TargetList) {
			if r, err := collectRefs(sel, s); err == nil && len(r.tables) == 0 {
				smallInput = true
			}
		}
		if features.Windows {
			if err := dialect.RangeOffsetTypes(sel, typeOf); err != nil {
				return nil, nil, err
			}
		}
		if sel.WhereClause != nil {
			// bytea LIKE over a column the FROM list types as bytea.
			changed = dialect.ByteaFunctions(sel.WhereClause, typeOf) || changed
		}
		for _, t := range sel.TargetList {
			if rt := t.GetResTarget(); rt != nil && rt.Val != nil {
				changed = dialect.ExtractNumeric(rt.Val, typeOf) || changed
				changed = dialect.ByteaFunctions(rt.Val, typeOf) || changed
				changed = dialect.IntegerSums(rt.Val, typeOf) || changed
				changed = dialect.PercentileFloat(rt.Val, typeOf) || changed
				changed = dialect.PercentileFraction(t) || changed
				if smallInput {
					changed = dialect.FloatVariances(rt.Val, typeOf) || changed
				}
				changed = dialect.IntervalArithmetic(rt.Val, typeOf) || changed
				if features.Windows && exact {
					changed = dialect.ScaledWindowDefault(rt, typeOf) || changed
				}
				if exact {
					changed = dialect.NumericDivision(sel, rt, typeOf) || changed
				}
				if features.Minus {
					changed = dialect.TimestamptzDifference(rt.Val, typeOf) || changed
				}
			}
		}
	}
	changed = dialect.WindowOutputOrder(out.GetSelectStmt()) || changed
	if sel := out.GetSelectStmt(); sel != nil && features.Windows {
		// After the output order, which compares the keys as written.
		changed = dialect.WidenRangeKeys(sel, typeOf) || changed
	}
	changed = dialect.NameRowValues(out) || changed
	if sel := out.GetSelectStmt(); sel != nil && exact {
		changed = dialect.ExactAggregates(sel, typeOf) || changed
		changed = dialect.NumericLiteralScales(sel) || changed
		changed = dialect.ScaledValuesColumns(sel) || changed
	}
	if sel := out.GetSelectStmt(); sel != nil {
		// A char(n) the result shows is padded to n, as PostgreSQL prints it.
		for _, t := range sel.TargetList {
			if rt := t.GetResTarget(); rt != nil && rt.Val.GetTypeCast() != nil {
				if r, ok := dialect.CharacterCast(rt.Val.GetTypeCast(), true); ok {
					rt.Val, changed = r, true
				}
			}
		}
	}
	var used []string
	var failed error
	raised := false // a rewrite put a Raise in (TypedRaises)
	seen := map[string]bool{}
	in := s.settings.Input(s.statementTime())
	use := func(name string) {
		if !seen[name] {
			seen[name] = true
			used = append(used, name)
		}
	}
	sqltree.ReplaceNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if failed != nil {
			return nil
		}
		if r, ok := int2vectorText(n); ok {
			changed = true
			return r
		}
		if name, ok := regclassLiteral(n); ok {
			// 'cpu'::regclass is the table's OID, as pg_class and
			// pg_attribute give it: tools join on it.
			oid, err := s.relationOID(name)
			if err != nil {
				failed = err
				return nil
			}
			changed = true
			return pg_query.MakeAConstIntNode(oid, -1)
		}
		if fc := n.GetFuncCall(); fc != nil {
			r, rel, ok, err := s.rewriteCall(fc)
			if err != nil {
				failed = err
				return nil
			}
			if ok {
				changed = true
				if rel != "" {
					use(rel)
				}
				return r
			}
		}
		if fc := n.GetFuncCall(); fc != nil {
			// Before rewritePG, which takes pg_catalog. off the name.
			if r, ok := s.sessionFunction(fc); ok {
				changed = true
				return r
			}
		}
		if tc := n.GetTypeCast(); tc != nil && !dialect.IsISOLiteral(tc) {
			r, ok, err := dialect.DateTimeLiteral(tc, in)
			if err != nil {
				failed = err
				return nil
			}
			if ok {
				changed = true
				return r
			}
		}
		if r, ok := dialect.RewritePG(n, in); ok {
			changed = true
			raised = raised || r != nil && dialect.HasRaise(r)
			return r
		}
		switch {
		case n.GetRangeFunction() != nil:
			rf := n.GetRangeFunction()
			if r := int4Series(rf); r != nil {
				changed = true
				return r
			}
			if len(rf.Functions) != 1 || rf.Ordinality || rf.Alias == nil {
				return nil
			}
			items := rf.Functions[0].GetList().GetItems()
			if len(items) == 0 || items[0].GetFuncCall() == nil || !scalarInFrom[sqltree.LastName(items[0].GetFuncCall().Funcname)] {
				return nil
			}
			// FROM f(x) AS s  →  FROM (SELECT f(x) AS s) AS s
			changed = true
			sub := &pg_query.SelectStmt{TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: rf.Alias.Aliasname, Val: items[0]}}}}}
			return &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
				Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}},
				Alias:    &pg_query.Alias{Aliasname: rf.Alias.Aliasname},
			}}}
		case n.GetRangeVar() != nil:
			rv := n.GetRangeVar()
			name := catalogName(rv)
			if name == "" {
				return nil
			}
			use(name)
			alias := rv.Alias
			if alias == nil {
				alias = &pg_query.Alias{Aliasname: rv.Relname}
			}
			changed = true
			return &pg_query.Node{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: catalogView(name), Inh: true, Relpersistence: "p", Alias: alias, Location: rv.Location}}}
		case n.GetSqlvalueFunction() != nil:
			switch n.GetSqlvalueFunction().Op {
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER, pg_query.SQLValueFunctionOp_SVFOP_USER, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
				changed = true
				return pg_query.MakeAConstStrNode("tsdb", -1)
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
				changed = true
				return pg_query.MakeAConstStrNode("tsdb", -1)
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
				changed = true
				return pg_query.MakeAConstStrNode("public", -1)
			}
		}
		return nil
	})
	if failed != nil {
		return nil, nil, failed
	}
	if raised {
		changed = dialect.TypedRaises(out.ProtoReflect()) || changed
	}
	if !changed {
		return nil, nil, nil
	}
	return out, used, nil
}

// rewriteCall translates a call tsdb answers itself, not the engine:
// format() and to_char() with a constant format, and the size functions
// (which read the relation rel). ok is false for any other call.
func (s *Session) rewriteCall(fc *pg_query.FuncCall) (r *pg_query.Node, rel string, ok bool, err error) {
	switch name := sqltree.LastName(fc.Funcname); {
	case name == "format" && len(fc.Args) >= 1 && dialect.ExpandVariadic(fc):
		// (Expanded here: format is translated before the other calls.)
		r, err = dialect.FormatCall(fc.Args)
	case name == "to_char" && len(fc.Args) == 2:
		r, err = dialect.ToCharCall(fc.Args[0], fc.Args[1], s.settings.Location().String())
	case relationSizeFuncs[name] && len(fc.Args) == 1:
		r, err = s.relationSize(fc.Args[0])
		rel = sizesRelation
	case name == "pg_get_viewdef":
		r, err = s.viewDef(fc)
		if r == nil && err == nil {
			return nil, "", false, nil
		}
	case name == "pg_get_indexdef" && (len(fc.Args) == 1 || len(fc.Args) == 3),
		name == "pg_get_constraintdef" && (len(fc.Args) == 1 || len(fc.Args) == 2):
		// The texts of the index and the constraint behind a key
		// (dialect.KeyDefsRelation): the whole index, or its n-th column
		// (pg_get_indexdef(oid, n, pretty), JDBC's getIndexInfo); NULL for
		// any other OID, as before.
		rel = dialect.KeyDefsRelation
		view := schema.QuoteIdent(catalogView(rel))
		switch {
		case name == "pg_get_constraintdef":
			r, err = sqltree.Template("(SELECT _tsdb_condef FROM "+view+" WHERE _tsdb_con_oid = CAST(_tsdb_arg1 AS BIGINT))", fc.Args[0])
		case len(fc.Args) == 3:
			r, err = sqltree.Template("(SELECT CASE WHEN _tsdb_arg2 = 0 THEN _tsdb_indexdef ELSE _tsdb_columns[_tsdb_arg2] END FROM "+view+
				" WHERE _tsdb_index_oid = CAST(_tsdb_arg1 AS BIGINT))", fc.Args[0], fc.Args[1])
		default:
			r, err = sqltree.Template("(SELECT _tsdb_indexdef FROM "+view+" WHERE _tsdb_index_oid = CAST(_tsdb_arg1 AS BIGINT))", fc.Args[0])
		}
	case name == "pg_backend_pid" && len(fc.Args) == 0:
		r = sqltree.Cast(pg_query.MakeAConstIntNode(int64(s.pid), -1), "int4")
	default:
		return nil, "", false, nil
	}
	return r, rel, true, err
}

// int2vectorColumns are pg_index's int2vector columns, which tsdb's
// catalog holds as lists.
var int2vectorColumns = map[string]bool{"indkey": true, "indoption": true, "indclass": true, "indcollation": true}

// int2vectorText turns a cast to text of pg_index's int2vector columns
// (ix.indkey::varchar, which SQLAlchemy splits on spaces) into
// PostgreSQL's text of an int2vector, "3 1", not the list's "{3,1}".
func int2vectorText(n *pg_query.Node) (*pg_query.Node, bool) {
	tc := n.GetTypeCast()
	if tc == nil || tc.Arg.GetColumnRef() == nil {
		return nil, false
	}
	switch sqltree.LastName(tc.TypeName.GetNames()) {
	case "text", "varchar":
	default:
		return nil, false
	}
	if fields := tc.Arg.GetColumnRef().Fields; !int2vectorColumns[fields[len(fields)-1].GetString_().GetSval()] {
		return nil, false
	}
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("array_to_string")},
		[]*pg_query.Node{tc.Arg, pg_query.MakeAConstStrNode(" ", -1)}, -1), true
}

// bindCatalog makes the catalog views a statement uses, over the tables
// as they are now.
func (s *Session) bindCatalog(ctx context.Context, used []string) error {
	if len(used) == 0 {
		return nil
	}
	stored := s.p.store.Tables()
	tables := append(append(slices.Clip(stored), s.viewTables()...), s.tempTables()...)
	for _, name := range used {
		view := catalogView(name)
		var def string
		switch name {
		case "pg_catalog.pg_roles":
			def = dialect.RolesRelation(s.p.roles)
		case "pg_catalog.pg_auth_members":
			def = dialect.AuthMembersRelation(s.p.roles)
		case sizesRelation:
			if err := s.refreshSizes(ctx, stored); err != nil {
				return err
			}
			continue
		default:
			def = dialect.CatalogRelation(name)(tables)
		}
		if err := s.ensureView(ctx, view, sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s", schema.QuoteIdent(view), def)}); err != nil {
			return err
		}
	}
	return nil
}

// seriesInFrom reports whether rf is a plain generate_series(a, b[,
// step]) in FROM (no ordinality, LATERAL or column definitions), with the
// names PostgreSQL gives its table and column: the alias and its column
// alias, else generate_series.
func seriesInFrom(rf *pg_query.RangeFunction) (fc *pg_query.FuncCall, table, col string, ok bool) {
	if len(rf.Functions) != 1 || rf.Ordinality || rf.Lateral || rf.IsRowsfrom {
		return nil, "", "", false
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 || len(items) > 1 && items[1].GetNode() != nil { // a column definition list
		return nil, "", "", false
	}
	fc = items[0].GetFuncCall()
	if fc == nil || sqltree.LastName(fc.Funcname) != "generate_series" || len(fc.Funcname) > 2 || len(fc.Args) < 2 || len(fc.Args) > 3 || fc.Over != nil {
		return nil, "", "", false
	}
	table, col = "generate_series", "generate_series"
	if rf.Alias != nil {
		table, col = rf.Alias.Aliasname, rf.Alias.Aliasname
		if len(rf.Alias.Colnames) > 1 {
			return nil, "", "", false
		}
		if len(rf.Alias.Colnames) == 1 {
			col = rf.Alias.Colnames[0].GetString_().GetSval()
		}
	}
	return fc, table, col, true
}

// int4Series gives FROM generate_series(a, b[, step]) over integer
// constants PostgreSQL's type, integer; the engine's is bigint, so that
// date + i failed (no date + bigint) and pg_typeof said bigint. The
// column keeps PostgreSQL's name: the column alias, else the table alias,
// else generate_series. nil when the call is not that.
func int4Series(rf *pg_query.RangeFunction) *pg_query.Node {
	fc, table, col, ok := seriesInFrom(rf)
	if !ok {
		return nil
	}
	args := make([]*pg_query.Node, len(fc.Args))
	for i, a := range fc.Args {
		arg := a
		if tc := a.GetTypeCast(); tc != nil {
			switch sqltree.LastName(tc.TypeName.GetNames()) {
			case "int4", "integer", "int":
				arg = tc.Arg
			default:
				return nil
			}
		}
		neg := false
		if e := arg.GetAExpr(); e != nil && e.Lexpr == nil && sqltree.LastName(e.Name) == "-" {
			arg, neg = e.Rexpr, true
		}
		c := arg.GetAConst()
		if c == nil || c.GetIval() == nil {
			return nil // not an integer constant that fits integer
		}
		v := int64(c.GetIval().Ival)
		if neg {
			v = -v
		}
		if v > 1<<30 || v < -(1<<30) {
			// Near integer's limits the engine's RANGE frame offsets
			// (x + 4 FOLLOWING) overflow where PostgreSQL's do not: such
			// series stay bigint.
			return nil
		}
		args[i] = sqltree.Cast(pg_query.MakeAConstIntNode(v, -1), "int8")
	}
	// FROM (SELECT CAST(g AS integer) AS col FROM generate_series(a::int8, …) AS g(g)) AS table(col);
	// the inner call's bigint arguments keep it from being rewritten again.
	inner := &pg_query.RangeFunction{
		Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{
			pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("generate_series")}, args, fc.Location), nil})},
		Alias: &pg_query.Alias{Aliasname: "g", Colnames: []*pg_query.Node{pg_query.MakeStrNode("g")}},
	}
	sub := &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: col,
			Val: sqltree.Cast(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode("g")}, -1), "int4")}}}},
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeFunction{RangeFunction: inner}}},
	}
	return &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
		Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}},
		Alias:    &pg_query.Alias{Aliasname: table, Colnames: []*pg_query.Node{pg_query.MakeStrNode(col)}},
	}}}
}

// checkConstantInput returns the first input error of a constant cast in
// node (dialect.CheckConstantInput).
func (s *Session) checkConstantInput(node *pg_query.Node) error {
	in := s.settings.Input(s.statementTime())
	var failed error
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if tc, ok := m.(*pg_query.TypeCast); ok && failed == nil {
			failed = dialect.CheckConstantInput(tc, in)
			// PostgreSQL points at the constant (psql's caret).
			var se *sqlerr.Error
			if c := tc.Arg.GetAConst(); c != nil && errors.As(failed, &se) && se.Position == 0 && c.Location >= 0 {
				se.Offset = int(c.Location) + 1
			}
		}
		return nil
	})
	return failed
}

// typeOperands applies dialect.TypedOperands to every SELECT in node,
// each with the column types of its own FROM tables: its WHERE, HAVING,
// select list and join conditions.
func (s *Session) typeOperands(node *pg_query.Node) bool {
	changed := false
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok {
			return nil
		}
		typeOf := s.argumentType(sel)
		roots := append([]*pg_query.Node{sel.WhereClause, sel.HavingClause}, sel.TargetList...)
		for _, f := range sel.FromClause {
			_ = sqltree.Walk(f.ProtoReflect(), func(m proto.Message) error {
				switch x := m.(type) {
				case *pg_query.RangeSubselect, *pg_query.SelectStmt:
					return sqltree.SkipChildren
				case *pg_query.JoinExpr:
					roots = append(roots, x.Quals)
				}
				return nil
			})
		}
		for _, r := range roots {
			changed = dialect.TypedOperands(r, typeOf) || changed
		}
		// Float arithmetic that overflows fails, as in PostgreSQL: in
		// GROUP BY, ORDER BY and DISTINCT ON alike, so that the engine
		// still finds there the select list's expressions.
		changed = dialect.FloatOverflow(&sel.WhereClause, typeOf) || changed
		changed = dialect.FloatOverflow(&sel.HavingClause, typeOf) || changed
		for _, t := range sel.TargetList {
			if rt := t.GetResTarget(); rt != nil {
				changed = dialect.FloatOverflow(&rt.Val, typeOf) || changed
			}
		}
		for _, list := range [][]*pg_query.Node{sel.GroupClause, sel.DistinctClause} {
			for i := range list {
				changed = dialect.FloatOverflow(&list[i], typeOf) || changed
			}
		}
		for _, o := range sel.SortClause {
			if sb := o.GetSortBy(); sb != nil {
				changed = dialect.FloatOverflow(&sb.Node, typeOf) || changed
			}
		}
		return nil
	})
	return changed
}
