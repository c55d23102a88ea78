package planner

// Temporary tables: CREATE TEMP TABLE makes a table of the session only,
// as PostgreSQL's are. It lives in the engine, on the session's own
// connection (temp.main, under a name of tsdb's: tempPrefix and the
// table's name), not in the store: no WAL, no Delta table, gone when the
// session ends. It needs no time column, and takes PostgreSQL's
// constraints (PRIMARY KEY, UNIQUE, CHECK, NOT NULL, DEFAULT), which the
// engine enforces.
//
// A statement names it by its own name: expandTemps puts the engine's name
// in its place (with the table's name as alias) after views are expanded,
// so that a temporary table hides a table of the store by its name, as
// pg_temp comes first in PostgreSQL's search_path. SELECT, INSERT, UPDATE,
// DELETE, TRUNCATE and DROP TABLE run on the engine as written; a
// statement that also reads tables of the store binds them first.
//
// Writes to a temporary table are the engine's at once: ROLLBACK could not
// take them back, so a transaction block may not write one (0A000).

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// tempPrefix starts the engine's name of a temporary table.
const tempPrefix = "_tsdb_tt_"

// tempRelation is the engine's relation of temporary table name.
func tempRelation(name string, alias *pg_query.Alias) *pg_query.RangeVar {
	return &pg_query.RangeVar{Catalogname: "temp", Schemaname: "main", Relname: tempPrefix + name, Inh: true, Relpersistence: "p", Alias: alias}
}

// isTempRelation reports whether rv names the engine's relation of a
// temporary table (as expandTemps writes it), and which.
func isTempRelation(rv *pg_query.RangeVar) (string, bool) {
	if rv == nil || rv.Catalogname != "temp" || rv.Schemaname != "main" || !strings.HasPrefix(rv.Relname, tempPrefix) {
		return "", false
	}
	return strings.TrimPrefix(rv.Relname, tempPrefix), true
}

// isTemp reports whether the session has temporary table name.
func (s *Session) isTemp(name string) bool {
	_, ok := s.temps[name]
	return ok
}

// tempName is the temporary table a statement's relation names, if it
// names one: unqualified or in pg_temp, and not hidden by a CTE.
func (s *Session) tempName(rv *pg_query.RangeVar, ctes map[string]bool) (string, bool) {
	if rv == nil || len(s.temps) == 0 || rv.Catalogname != "" || ctes[rv.Relname] {
		return "", false
	}
	if sc := strings.ToLower(rv.Schemaname); sc != "" && sc != "pg_temp" {
		return "", false
	}
	return rv.Relname, s.isTemp(rv.Relname)
}

// expandTemps puts the engine's relation of each temporary table that a
// statement names in its place. It runs before unqualified removes
// public. (public.x is the store's x even when a temporary x hides it);
// expandViews does the same in each view it puts in place.
func (s *Session) expandTemps(st statement) (statement, error) {
	if st.node == nil || len(s.temps) == 0 || st.node.GetViewStmt() != nil {
		return st, nil
	}
	node := proto.Clone(st.node).(*pg_query.Node)
	if !s.renameTemps(node) {
		return st, nil
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return st, err
	}
	st.node, st.text = node, text
	return st, nil
}

// renameTemps renames, in place, the relations of node that name a
// temporary table to the engine's relation (the table's name its alias),
// and reports whether there was one.
func (s *Session) renameTemps(node *pg_query.Node) bool {
	if len(s.temps) == 0 {
		return false
	}
	ctes := cteNames(node)
	// The table a CREATE makes is named, not read.
	created := node.GetCreateStmt().GetRelation()
	if into := node.GetCreateTableAsStmt().GetInto(); into != nil {
		created = into.Rel
	}
	found := false
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		rv, ok := m.(*pg_query.RangeVar)
		if !ok || rv == created {
			return nil
		}
		name, ok := s.tempName(rv, ctes)
		if !ok {
			return nil
		}
		found = true
		alias := rv.Alias
		if alias == nil {
			alias = &pg_query.Alias{Aliasname: name}
		}
		// Field by field: a message must not be copied whole.
		rv.Catalogname, rv.Schemaname, rv.Relname, rv.Alias = "temp", "main", tempPrefix+name, alias
		return nil
	})
	return found
}

// tempWritable refuses a write to a temporary table in a transaction
// block (see the file's comment).
func (s *Session) tempWritable(what string) error {
	if s.tx != nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s of a temporary table inside a transaction block is not supported: its effect could not be rolled back", what)
	}
	return nil
}

// createTempTable runs CREATE TEMP TABLE.
func (s *Session) createTempTable(ctx context.Context, st *pg_query.CreateStmt) (*Result, error) {
	name := st.Relation.Relname
	if sc := strings.ToLower(st.Relation.Schemaname); sc != "" && sc != "pg_temp" {
		return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot create temporary relation in non-temporary schema")
	}
	if err := s.tempWritable("CREATE"); err != nil {
		return nil, err
	}
	if len(st.InhRelations) > 0 || st.Partspec != nil || st.OfTypename != nil || st.Partbound != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "inheritance, partitioning and typed tables are not supported")
	}
	switch st.Oncommit {
	case pg_query.OnCommitAction_ONCOMMIT_DROP, pg_query.OnCommitAction_ONCOMMIT_DELETE_ROWS:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON COMMIT DROP and ON COMMIT DELETE ROWS are not supported")
	}
	if exists, err := s.tempNameTaken(name, st.IfNotExists); exists || err != nil {
		return &Result{Tag: "CREATE TABLE"}, err
	}
	def := proto.Clone(st).(*pg_query.CreateStmt)
	var cols []schema.Column
	for _, elt := range def.TableElts {
		if cd := elt.GetColumnDef(); cd != nil {
			col, err := tempColumn(cd)
			if err != nil {
				return nil, err
			}
			cols = append(cols, col)
			continue
		}
		if err := tempConstraint(elt.GetConstraint()); err != nil {
			return nil, err
		}
	}
	for _, elt := range def.TableElts {
		if c := elt.GetConstraint(); c != nil && c.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
			for _, k := range c.Keys {
				for i := range cols {
					if cols[i].Name == k.GetString_().GetSval() {
						cols[i].NotNull = true
					}
				}
			}
		}
	}
	def.Relation = tempRelation(name, nil)
	def.Relation.Relpersistence = "t"
	def.Oncommit = pg_query.OnCommitAction_ONCOMMIT_NOOP
	node := &pg_query.Node{Node: &pg_query.Node_CreateStmt{CreateStmt: def}}
	dialect.RewriteTree(node.ProtoReflect(), s.settings.Input(s.statementTime()))
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return nil, err
	}
	if _, err := s.conn.ExecContext(ctx, text); err != nil {
		return nil, tempError(err)
	}
	if err := s.addTemp(ctx, name, cols); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE TABLE"}, nil
}

// tempNameTaken checks a new temporary table's name: taken by another
// temporary table (fine with IF NOT EXISTS) or by a view.
func (s *Session) tempNameTaken(name string, ifNotExists bool) (bool, error) {
	if s.isTemp(name) {
		if ifNotExists {
			return true, nil
		}
		return false, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	if _, _, ok := s.view(name); ok || s.seqs[name] {
		return false, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	return false, nil
}

// addTemp records a temporary table the engine now has, with its columns
// (as the engine has them when cols is nil).
func (s *Session) addTemp(ctx context.Context, name string, cols []schema.Column) error {
	if cols != nil {
		if s.temps == nil {
			s.temps = map[string][]schema.Column{}
		}
		s.temps[name] = cols
		return nil
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT name, type FROM pragma_table_info('temp.main."+strings.ReplaceAll(schema.QuoteIdent(tempPrefix+name), "'", "''")+"') ORDER BY cid")
	if err != nil {
		return engineError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c, ty string
		if err := rows.Scan(&c, &ty); err != nil {
			return engineError(err)
		}
		cols = append(cols, engineColumn(c, ty))
	}
	if s.temps == nil {
		s.temps = map[string][]schema.Column{}
	}
	s.temps[name] = cols
	return engineError(rows.Err())
}

// engineColumn is a column of the engine's type ty as tsdb's schema has
// it; schema.Invalid for a type tsdb's tables do not have.
func engineColumn(name, ty string) schema.Column {
	col := schema.Column{Name: name}
	base, mods, _ := strings.Cut(ty, "(")
	switch base {
	case "TIMESTAMP WITH TIME ZONE":
		col.Type = schema.Timestamptz
	case "DECIMAL":
		col.Type = schema.Decimal
		fmt.Sscanf(strings.TrimSuffix(mods, ")"), "%d,%d", &col.Digits, &col.Scale)
	default:
		if t, ok := schema.FromDuckDB(base); ok {
			col.Type = t
		}
	}
	col.NTZ = col.Type == schema.Timestamp
	return col
}

// tempTables are the session's temporary tables as the catalogs list
// them (in pg_temp_1, relpersistence t).
func (s *Session) tempTables() []schema.Table {
	names := make([]string, 0, len(s.temps))
	for n := range s.temps {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]schema.Table, 0, len(names))
	for _, n := range names {
		out = append(out, schema.Table{Name: n, ID: dialect.TempTableID + n, TimeIndex: -1, Columns: s.temps[n]})
	}
	return out
}

// paramTable is the table a relation names, a temporary table's columns
// too, for the types of a statement's parameters.
func (s *Session) paramTable(rv *pg_query.RangeVar) (schema.Table, bool) {
	if name, ok := isTempRelation(rv); ok && s.isTemp(name) {
		return schema.Table{Name: name, TimeIndex: -1, Columns: s.temps[name]}, true
	}
	return s.p.store.Table(rv.GetRelname())
}

// tempInsertTarget is temporary table name as INSERT reads values for
// it: a table of its columns, without a time column.
func (s *Session) tempInsertTarget(name string, returning []*pg_query.Node) (schema.Table, error) {
	if len(returning) > 0 {
		return schema.Table{}, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT … RETURNING of a temporary table is not supported")
	}
	if err := s.tempWritable("INSERT"); err != nil {
		return schema.Table{}, err
	}
	t := schema.Table{Name: name, TimeIndex: -1, Columns: s.temps[name]}
	for _, c := range t.Columns {
		if c.Type == schema.Invalid {
			return schema.Table{}, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT into temporary table %q: column %q has a type tsdb's tables do not have", name, c.Name)
		}
	}
	return t, nil
}

// insertTemp writes an INSERT's rows, read as for tbl, to the temporary
// table tbl names: the targeted columns only, so that the others get
// their defaults; the engine checks the constraints.
func (s *Session) insertTemp(ctx context.Context, tbl schema.Table, targets []int, rec arrow.RecordBatch) (*Result, error) {
	n, err := s.insertTempRows(ctx, tbl, targets, rec)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
}

// insertTempRows is insertTemp, returning how many rows it wrote; it
// releases rec.
func (s *Session) insertTempRows(ctx context.Context, tbl schema.Table, targets []int, rec arrow.RecordBatch) (int64, error) {
	// varchar(n) and numeric(p, s) as for tsdb's own tables.
	recs, err := applyTypmods(tbl, []arrow.RecordBatch{rec})
	if err != nil {
		rec.Release()
		return 0, err
	}
	if recs[0] != rec {
		rec.Release()
		rec = recs[0]
	}
	defer rec.Release()
	scratch := fmt.Sprintf(`%s."ins_%d"`, mirrorSchema, s.p.txSeq.Add(1))
	if err := createMirrorTable(ctx, s.conn, tbl, scratch); err != nil {
		return 0, engineError(err)
	}
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+scratch)
	if err := appendBatches(ctx, s.conn, tbl, &mirrorTable{name: scratch}, []arrow.RecordBatch{rec}, []uint64{0}); err != nil {
		return 0, engineError(err)
	}
	var names, exprs []string
	for _, i := range targets {
		c := tbl.Columns[i]
		names = append(names, schema.QuoteIdent(c.Name))
		exprs = append(exprs, selectList(schema.Table{Columns: []schema.Column{c}}, 1))
	}
	return s.engineExec(ctx, fmt.Sprintf("INSERT INTO temp.main.%s (%s) SELECT %s FROM %s ORDER BY %s",
		schema.QuoteIdent(tempPrefix+tbl.Name), strings.Join(names, ", "), strings.Join(exprs, ", "), scratch, rowColumn), nil)
}

// reLengthCheck is the engine's error for tempColumn's varchar(n) check.
var reLengthCheck = regexp.MustCompile(`CHECK\(\(length\(.*\) <= (\d+)\)\)`)

// tempError is engineError without the engine's names of temporary
// tables, and with PostgreSQL's error for a varchar(n) too long.
func tempError(err error) error {
	err = engineError(err)
	if e, ok := err.(*sqlerr.Error); ok {
		e.Message = strings.ReplaceAll(strings.ReplaceAll(e.Message, "temp.main.", ""), tempPrefix, "")
		e.Detail = strings.ReplaceAll(e.Detail, tempPrefix, "")
		if m := reLengthCheck.FindStringSubmatch(e.Message); m != nil {
			ty := "character varying"
			if strings.Contains(m[0], "rtrim(") {
				ty = "character" // character(n)'s check ignores trailing spaces
			}
			e.Code, e.Message = "22001", "value too long for type "+ty+"("+m[1]+")"
		}
	}
	return err
}

// tempColumn checks a column of a temporary table: a type tsdb's tables
// take (checked as CREATE TABLE checks it). varchar(n) is applied to what
// INSERT and COPY write as for tsdb's own tables, and checked by the
// engine on UPDATE (a CHECK, which the engine's VARCHAR lacks: its error
// is 23514 where PostgreSQL's is 22001). timestamp(p), which would need
// rounding on UPDATE too, is refused.
func tempColumn(cd *pg_query.ColumnDef) (schema.Column, error) {
	plain := proto.Clone(cd).(*pg_query.ColumnDef)
	plain.Constraints = nil
	col, err := columnFromDef(plain)
	if err != nil {
		return col, err
	}
	if col.FracDigits > 0 {
		return col, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: timestamp(p) is not supported in temporary tables", cd.Colname)
	}
	for _, c := range cd.Constraints {
		if err := tempConstraint(c.GetConstraint()); err != nil {
			return col, err
		}
		// For the catalogs: a key column is NOT NULL, as in PostgreSQL.
		switch c.GetConstraint().GetContype() {
		case pg_query.ConstrType_CONSTR_NOTNULL, pg_query.ConstrType_CONSTR_PRIMARY:
			col.NotNull = true
		}
	}
	switch {
	case col.Type == schema.Bit || col.Type == schema.VarBit:
		// The engine's BIT takes no length: a CHECK that raises
		// PostgreSQL's error holds bit(n) and bit varying(n) on UPDATE.
		cd.TypeName.Typmods = nil
		cd.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("bit")}
		if col.MaxLength > 0 {
			return col, addColumnCheck(cd, fmt.Sprintf("_tsdb_bit_check(_tsdb_arg1, %d, %t)", col.MaxLength, col.Type == schema.VarBit))
		}
	case col.MaxLength > 0:
		cd.TypeName.Typmods = nil
		expr := "length(_tsdb_arg1) <= %d"
		if col.Padded {
			// What UPDATE writes keeps its trailing spaces until
			// trimPadded takes them off: they do not count.
			cd.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("varchar")}
			expr = "length(rtrim(_tsdb_arg1, ' ')) <= %d"
		}
		return col, addColumnCheck(cd, fmt.Sprintf(expr, col.MaxLength))
	}
	return col, nil
}

// addColumnCheck adds to a column a CHECK of expr, in which _tsdb_arg1 is
// the column.
func addColumnCheck(cd *pg_query.ColumnDef, expr string) error {
	check, err := sqltree.Template(expr,
		&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(cd.Colname)}}}})
	if err != nil {
		return err
	}
	cd.Constraints = append(cd.Constraints, &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{
		Contype: pg_query.ConstrType_CONSTR_CHECK, RawExpr: check, InitiallyValid: true}}})
	return nil
}

// tempConstraint checks a constraint of a temporary table: the engine
// enforces NOT NULL, DEFAULT, CHECK, PRIMARY KEY and UNIQUE as PostgreSQL
// does; the rest is refused rather than ignored.
func tempConstraint(c *pg_query.Constraint) error {
	if c == nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "this table element is not supported in temporary tables")
	}
	switch c.Contype {
	case pg_query.ConstrType_CONSTR_NULL, pg_query.ConstrType_CONSTR_NOTNULL, pg_query.ConstrType_CONSTR_DEFAULT,
		pg_query.ConstrType_CONSTR_CHECK, pg_query.ConstrType_CONSTR_PRIMARY, pg_query.ConstrType_CONSTR_UNIQUE:
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, "%s constraints are not supported in temporary tables",
			strings.TrimPrefix(c.Contype.String(), "CONSTR_"))
	}
	if c.Initdeferred || len(c.Options) > 0 || c.Indexname != "" || c.Indexspace != "" || len(c.Including) > 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "INITIALLY DEFERRED, INCLUDE and index options of constraints are not supported in temporary tables")
	}
	// DEFERRABLE INITIALLY IMMEDIATE checks each statement as a plain
	// constraint does, since SET CONSTRAINTS … DEFERRED is not supported:
	// the engine's constraint is that.
	c.Deferrable = false
	return nil
}

// createTempTableAs runs CREATE TEMP TABLE … AS SELECT: the query as a
// SELECT runs (its tables bound, its PostgreSQL rewritten), its rows
// made a table of the engine.
func (s *Session) createTempTableAs(ctx context.Context, st *pg_query.CreateTableAsStmt) (*Result, error) {
	name := st.Into.Rel.Relname
	if err := s.tempWritable("CREATE"); err != nil {
		return nil, err
	}
	if st.Into.OnCommit == pg_query.OnCommitAction_ONCOMMIT_DROP || st.Into.OnCommit == pg_query.OnCommitAction_ONCOMMIT_DELETE_ROWS {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON COMMIT DROP and ON COMMIT DELETE ROWS are not supported")
	}
	if exists, err := s.tempNameTaken(name, st.IfNotExists); exists || err != nil {
		return &Result{Tag: "SELECT 0"}, err
	}
	sel := statement{node: st.Query}
	var err error
	if sel.text, err = deparse(s.p.pgVersion, st.Query); err != nil {
		return nil, err
	}
	if sel, err = s.expandTemps(sel); err != nil {
		return nil, err
	}
	text, tables, err := s.engineSelect(sel.node)
	if err != nil {
		return nil, err
	}
	if len(st.Into.ColNames) > 0 {
		var names []string
		for _, c := range st.Into.ColNames {
			names = append(names, schema.QuoteIdent(c.GetString_().GetSval()))
		}
		text = fmt.Sprintf("SELECT * FROM (%s) AS _tsdb_ctas(%s)", text, strings.Join(names, ", "))
	}
	if st.Into.SkipData {
		text = "SELECT * FROM (" + text + ") AS _tsdb_ctas LIMIT 0"
	}
	rel := tempRelation(name, nil)
	n, err := s.engineExec(ctx, fmt.Sprintf("CREATE TEMP TABLE temp.main.%s AS %s", schema.QuoteIdent(rel.Relname), text), tables)
	if err != nil {
		return nil, err
	}
	if err := s.addTemp(ctx, name, nil); err != nil {
		return nil, err
	}
	// The query's character(n) columns stay character(n) (the engine's
	// table has strings).
	if q := sel.node.GetSelectStmt(); q != nil && s.readsPadded(q) {
		a := &charAnalysis{s: s, width: len(s.temps[name])}
		if out, ok := a.selectCols(q); ok && len(out) == len(s.temps[name]) {
			for i, c := range out {
				if col := &s.temps[name][i]; c.width > 0 && col.Type == schema.Text {
					col.MaxLength, col.Padded = c.width, true
				}
			}
		}
	}
	return &Result{Tag: fmt.Sprintf("SELECT %d", n)}, nil
}

// dropTemps drops the temporary tables named (DROP TABLE).
func (s *Session) dropTemps(ctx context.Context, names []string) error {
	if err := s.tempWritable("DROP"); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp.main."+schema.QuoteIdent(tempPrefix+n)); err != nil {
			return engineError(err)
		}
		delete(s.temps, n)
	}
	s.dropPlans()
	return nil
}

// discardTemps is DISCARD TEMP (and part of DISCARD ALL, which a
// connection pooler sends between its clients): the session's temporary
// tables and views go.
func (s *Session) discardTemps(ctx context.Context) {
	s.closeTemps(ctx)
	clear(s.tempViews)
	clear(s.tempIndexes)
}

// closeTemps drops every temporary table: the session's connection goes
// back to the pool, whose next user must not find them.
func (s *Session) closeTemps(ctx context.Context) {
	s.dropEngineObjects(ctx, "TABLE", tempPrefix, slices.Collect(maps.Keys(s.temps)))
	clear(s.temps)
	s.closeSequences(ctx)
}

// dropEngineObjects drops the session's engine objects of a kind (TABLE,
// SEQUENCE) by their names, in order, ignoring failures: the connection
// is being handed back.
func (s *Session) dropEngineObjects(ctx context.Context, kind, prefix string, names []string) {
	sort.Strings(names)
	for _, n := range names {
		s.conn.ExecContext(ctx, "DROP "+kind+" IF EXISTS temp.main."+schema.QuoteIdent(prefix+n))
	}
}
