package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/internal/views"
)

// Views: CREATE VIEW keeps a query under a name (internal/views, in the
// data directory; TEMP views in the session), and every statement that
// names a view reads its query in its place, as a subquery, before
// anything else looks at the statement. Its columns are those the query
// had when the view was made, as in PostgreSQL, which stores the query
// with * expanded.

// maxViewExpansions bounds the views one statement may expand: a view
// that reads itself through others (possible with CREATE OR REPLACE)
// would otherwise expand forever.
const maxViewExpansions = 256

// view returns the view named name: the session's temporary one, else
// the stored one.
func (s *Session) view(name string) (views.View, bool, bool) {
	if v, ok := s.tempViews[name]; ok {
		return v, true, true
	}
	v, ok := s.p.views.Get(name)
	return v, false, ok
}

// hasViews reports whether any view exists for the session.
func (s *Session) hasViews() bool { return len(s.tempViews) > 0 || s.p.views.Len() > 0 }

// createView runs CREATE [OR REPLACE] [TEMP] VIEW name [(columns)] AS
// query.
func (s *Session) createView(ctx context.Context, st *pg_query.ViewStmt) (*Result, error) {
	if st.WithCheckOption != pg_query.ViewCheckOption_NO_CHECK_OPTION {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH CHECK OPTION is not supported: tsdb views are read-only")
	}
	if len(st.Options) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "view options are not supported")
	}
	name, err := relationName(st.View)
	if err != nil {
		return nil, err
	}
	if !schema.ValidName(name) {
		return nil, sqlerr.New(sqlerr.InvalidName, "invalid view name %q", name)
	}
	if st.Query.GetSelectStmt() == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a view must be a SELECT")
	}
	temp := st.View.Relpersistence == "t"
	query, err := deparse(s.p.pgVersion, st.Query)
	if err != nil {
		return nil, err
	}
	reads, readsTemp := s.viewReads(st.Query)
	// The query is analysed before the name is taken, as PostgreSQL
	// does: its errors come first (FETCH FIRST NULL ROWS WITH TIES).
	cols, err := s.viewColumns(ctx, st.Query)
	if err != nil && !slices.Contains(reads, name) {
		return nil, err
	}
	if t, ok := s.p.store.Table(name); ok || s.p.store.Unavailable(name) != nil {
		if st.Replace {
			return nil, sqlerr.New(sqlerr.WrongObjectType, "%q is not a view", name)
		}
		if ok {
			name = t.Name
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	if s.isIndex(name) {
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	old, oldTemp, exists := s.view(name)
	if exists && !st.Replace {
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	if exists && oldTemp != temp && !temp {
		// CREATE OR REPLACE VIEW of a temporary view's name makes a new
		// view beside it, in PostgreSQL's other schema; tsdb has one.
		exists = false
	}
	if slices.Contains(reads, name) && !exists {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	temp = temp || readsTemp
	if len(st.Aliases) > len(cols) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE VIEW specifies more column names than columns")
	}
	for i, a := range st.Aliases {
		cols[i].Name = a.GetString_().GetSval()
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
	}
	if exists {
		// As PostgreSQL: the new query may add columns at the end, not
		// drop, rename or retype the old ones (queries over the view
		// rely on them).
		for i, oc := range old.Columns {
			switch {
			case i >= len(cols):
				return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot drop columns from view")
			case cols[i].Name != oc.Name:
				return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot change name of view column %q to %q", oc.Name, cols[i].Name)
			case cols[i].OID != oc.OID:
				return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot change data type of view column %q from %s to %s",
					oc.Name, pgTypeName(oc.OID), pgTypeName(cols[i].OID))
			}
		}
	}
	v := views.View{Name: name, Query: query, Columns: cols, Reads: reads}
	if temp {
		if s.tempViews == nil {
			s.tempViews = map[string]views.View{}
		}
		s.tempViews[name] = v
	} else if err := s.p.views.Put(v); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	s.dropPlans()
	return &Result{Tag: "CREATE VIEW"}, nil
}

// viewReads returns the tables and views query names, and whether one of
// them is a temporary view (which makes the new view temporary too, as in
// PostgreSQL).
func (s *Session) viewReads(query *pg_query.Node) ([]string, bool) {
	ctes := cteNames(query)
	var reads []string
	temp := false
	_ = sqltree.Walk(query.ProtoReflect(), func(m proto.Message) error {
		rv, ok := m.(*pg_query.RangeVar)
		if !ok || ctes[rv.Relname] || catalogName(rv) != "" && rv.Schemaname != "" {
			return nil
		}
		if _, ok := s.tempName(rv, ctes); ok {
			// A view of a temporary table is temporary, as in
			// PostgreSQL.
			temp = true
			return nil
		}
		name, err := relationName(rv)
		if err != nil {
			return nil
		}
		if _, isTemp, ok := s.view(name); ok {
			temp = temp || isTemp
		} else if !s.known(name) {
			return nil
		}
		if !slices.Contains(reads, name) {
			reads = append(reads, name)
		}
		return nil
	})
	return reads, temp
}

// cteNames are the names of every WITH query in n.
func cteNames(n *pg_query.Node) map[string]bool {
	names := map[string]bool{}
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if c, ok := m.(*pg_query.CommonTableExpr); ok {
			names[c.Ctename] = true
		}
		return nil
	})
	return names
}

// viewColumns runs query, read as a view would read it (a subquery), for
// no rows, and returns its columns: names by PostgreSQL's rules, types as
// the result has them. A query that fails fails CREATE VIEW.
func (s *Session) viewColumns(ctx context.Context, query *pg_query.Node) ([]views.Column, error) {
	sel := &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
			Val: &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{
				Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}}}}},
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: proto.Clone(query).(*pg_query.Node), Alias: &pg_query.Alias{Aliasname: "_tsdb_view"}}}}},
		LimitCount:  pg_query.MakeAConstIntNode(0, -1),
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_COUNT,
		Op:          pg_query.SetOperation_SETOP_NONE,
	}
	node := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return nil, err
	}
	res, err := s.executeStatement(ctx, statement{text: text, node: node})
	if err != nil {
		return nil, err
	}
	if res.Rows != nil {
		for res.Rows.Next() {
		}
		err = res.Rows.Err()
		res.Rows.Close()
		if err != nil {
			return nil, err
		}
	}
	// Named by the query's own select list (the engine renames a
	// repeated name in the subquery: a, a_1).
	named := slices.Clone(res.Columns)
	nameColumns(named, query.GetSelectStmt())
	cols := make([]views.Column, len(named))
	for i, c := range named {
		cols[i] = views.Column{Name: c.Name, OID: c.OID, Pad: c.Pad}
	}
	return cols, nil
}

// dropViews runs DROP VIEW [IF EXISTS] name, … [CASCADE].
func (s *Session) dropViews(names []string, missingOK, cascade bool) (*Result, error) {
	var stored, temp []string
	for _, n := range names {
		_, isTemp, ok := s.view(n)
		switch {
		case ok && isTemp:
			temp = append(temp, n)
		case ok:
			stored = append(stored, n)
		case s.known(n):
			return nil, &sqlerr.Error{Code: sqlerr.WrongObjectType, Message: fmt.Sprintf("%q is not a view", n), Hint: "Use DROP TABLE to remove a table."}
		case !missingOK:
			return nil, sqlerr.New(sqlerr.UndefinedTable, "view %q does not exist", n)
		}
	}
	dependents, err := s.viewDependents(append(append([]string{}, stored...), temp...), cascade)
	if err != nil {
		return nil, err
	}
	if err := s.forgetViews(append(append(stored, temp...), dependents...)); err != nil {
		return nil, err
	}
	return &Result{Tag: "DROP VIEW"}, nil
}

// viewDependents returns the views that read any of names and are not
// among them; without cascade, their existence is PostgreSQL's 2BP01.
func (s *Session) viewDependents(names []string, cascade bool) ([]string, error) {
	dropping := map[string]bool{}
	for _, n := range names {
		dropping[n] = true
	}
	var out []string
	add := func(from, dep string) error {
		if dropping[dep] {
			return nil
		}
		if !cascade {
			kind := "view"
			if s.known(from) {
				kind = "table"
			}
			return &sqlerr.Error{Code: sqlerr.DependentObjectsStillExist,
				Message: fmt.Sprintf("cannot drop %s %s because other objects depend on it", kind, from),
				Detail:  fmt.Sprintf("view %s depends on %s %s", dep, kind, from),
				Hint:    "Use DROP ... CASCADE to drop the dependent objects too."}
		}
		dropping[dep] = true
		out = append(out, dep)
		return nil
	}
	for _, n := range names {
		for _, dep := range s.p.views.Dependents(n) {
			if err := add(n, dep); err != nil {
				return nil, err
			}
		}
		// The session's temporary views, and those reading them.
		queue := []string{n}
		for len(queue) > 0 {
			from := queue[0]
			queue = queue[1:]
			for _, v := range s.tempViews {
				if slices.Contains(v.Reads, from) && !dropping[v.Name] {
					if err := add(n, v.Name); err != nil {
						return nil, err
					}
					queue = append(queue, v.Name)
				}
			}
		}
	}
	return out, nil
}

// forgetViews removes views, stored or temporary, by name.
func (s *Session) forgetViews(names []string) error {
	var stored []string
	for _, n := range names {
		if _, ok := s.tempViews[n]; ok {
			delete(s.tempViews, n)
			continue
		}
		if _, ok := s.p.views.Get(n); ok {
			stored = append(stored, n)
		}
	}
	if len(stored) > 0 {
		if err := s.p.views.Drop(stored...); err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	s.dropPlans()
	return nil
}

// expandViews puts each view a statement names in its place: FROM v AS x
// becomes FROM (SELECT c1, … FROM (query) AS _tsdb_view(c1, …)) AS x,
// which keeps the view's columns as they were when it was made. A WITH
// query of the view's name hides it.
func (s *Session) expandViews(st statement) (statement, error) {
	if st.node == nil || !s.hasViews() || st.node.GetViewStmt() != nil {
		// CREATE VIEW keeps the query as written: a view it reads is
		// read as it is when the new view is.
		return st, nil
	}
	ctes := cteNames(st.node)
	isView := func(rv *pg_query.RangeVar) (views.View, bool) {
		if rv == nil || rv.Catalogname != "" || ctes[rv.Relname] {
			return views.View{}, false
		}
		if sc := strings.ToLower(rv.Schemaname); sc != "" && sc != "public" && sc != "pg_temp" {
			return views.View{}, false
		}
		v, _, ok := s.view(rv.Relname)
		return v, ok
	}
	found := false
	_ = sqltree.Walk(st.node.ProtoReflect(), func(m proto.Message) error {
		if rv, ok := m.(*pg_query.RangeVar); ok {
			if _, ok := isView(rv); ok {
				found = true
			}
		}
		return nil
	})
	if !found {
		return st, nil
	}
	node := proto.Clone(st.node).(*pg_query.Node)
	expansions := 0
	var failed error
	sqltree.ReplaceNodes(node.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if failed != nil {
			return nil
		}
		rv := n.GetRangeVar()
		v, ok := isView(rv)
		if !ok {
			return nil
		}
		if expansions++; expansions > maxViewExpansions {
			failed = sqlerr.New("42P17", "infinite recursion detected in rules for relation %q", v.Name)
			return nil
		}
		r, err := viewSubquery(v, rv.Alias)
		if err != nil {
			failed = err
			return nil
		}
		s.renameTemps(r) // a temporary view may read a temporary table
		return r
	})
	if failed != nil {
		return st, failed
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return st, err
	}
	st.node, st.text = node, text
	return st, nil
}

// viewSubquery is the subquery that stands for v under alias (the
// view's name when nil).
func viewSubquery(v views.View, alias *pg_query.Alias) (*pg_query.Node, error) {
	tree, err := pg_query.Parse(v.Query)
	if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
		return nil, sqlerr.New(sqlerr.InternalError, "view %q: stored query does not parse: %v", v.Name, err)
	}
	names := make([]*pg_query.Node, len(v.Columns))
	targets := make([]*pg_query.Node, len(v.Columns))
	for i, c := range v.Columns {
		names[i] = pg_query.MakeStrNode(c.Name)
		targets[i] = &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{
			Val: &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{
				Fields: []*pg_query.Node{pg_query.MakeStrNode("_tsdb_view"), pg_query.MakeStrNode(c.Name)}}}}}}}
	}
	inner := &pg_query.SelectStmt{
		TargetList: targets,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: tree.Stmts[0].Stmt, Alias: &pg_query.Alias{Aliasname: "_tsdb_view", Colnames: names}}}}},
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	out := &pg_query.Alias{Aliasname: v.Name}
	if alias != nil {
		out = proto.Clone(alias).(*pg_query.Alias)
	}
	return &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
		Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}, Alias: out}}}, nil
}

// viewTable is a view as the catalogs list it: a table without files,
// its columns typed as tables type them where they can be (text
// otherwise).
func viewTable(v views.View) schema.Table {
	t := schema.Table{Name: v.Name, ID: "view:" + v.Name, ViewQuery: v.Query, TimeIndex: -1}
	for _, c := range v.Columns {
		ty, ok := storableTypes[c.OID]
		switch {
		case c.OID == oidNumeric:
			ty = schema.Decimal
		case !ok:
			ty = schema.Text
		}
		col := schema.Column{Name: c.Name, Type: ty}
		if c.Pad > 0 {
			col.MaxLength, col.Padded = c.Pad, true
		}
		t.Columns = append(t.Columns, col)
	}
	return t
}

// viewTables are the session's views as the catalogs list them.
func (s *Session) viewTables() []schema.Table {
	var out []schema.Table
	for _, v := range s.p.views.List() {
		if _, shadowed := s.tempViews[v.Name]; !shadowed {
			out = append(out, viewTable(v))
		}
	}
	for _, v := range s.tempViews {
		out = append(out, viewTable(v))
	}
	return out
}
