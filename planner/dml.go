package planner

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/delta"
	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/membuffer"
)

// volatileFunctions give another value on every call: a logged statement
// using them would not replay to the same result.
var volatileFunctions = map[string]bool{
	"random": true, "gen_random_uuid": true, "uuid": true, "nextval": true, "currval": true,
	"setseed": true, "clock_timestamp": true, "timeofday": true, "txid_current": true,
	// The engine's own clocks: a statement naming them is run once and
	// its effect logged, never replayed as text.
	"today": true, "get_current_timestamp": true, "current_localtimestamp": true, "get_current_time": true,
	"current_date": true, "localtimestamp": true, "localtime": true, "current_time": true,
}

// timeFunctions are replaced by the statement's time before a DML is
// logged, so that a replay computes the same rows.
var timeFunctions = map[string]bool{"now": true, "transaction_timestamp": true, "statement_timestamp": true, "current_timestamp": true}

// dml runs DELETE or UPDATE: the statement is checked, made deterministic,
// compiled once to validate it, and handed to ingest, which logs it and
// applies it to both layers.
func (s *Session) dml(ctx context.Context, node *pg_query.Node) (*Result, error) {
	if s.readsPadded(node) {
		// LIKE and the like over a character(n) column see its spaces.
		node = proto.Clone(node).(*pg_query.Node)
		s.padCharacterRefs(node, false)
	}
	switch n := node.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		if _, ok := isTempRelation(n.DeleteStmt.Relation); ok {
			return s.tempDML(ctx, node, "DELETE")
		}
	case *pg_query.Node_UpdateStmt:
		if _, ok := isTempRelation(n.UpdateStmt.Relation); ok {
			return s.tempDML(ctx, node, "UPDATE")
		}
		if err := s.refuseKeyUpdate(n.UpdateStmt); err != nil {
			return nil, err
		}
	}
	// A logged statement is replayed on a connection in UTC: one that a
	// session in another zone runs is applied once and its effect logged,
	// since its casts, date_trunc and zone-less literals mean the
	// session's zone.
	if s.tx != nil || needsEffect(node) || s.settings.Location() != time.UTC {
		return s.dmlEffect(ctx, node)
	}
	var rel *pg_query.RangeVar
	var where *pg_query.Node
	var exprs []*pg_query.Node
	op := "DELETE"
	switch n := node.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		d := n.DeleteStmt
		if len(d.UsingClause) > 0 || len(d.ReturningList) > 0 || d.WithClause != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DELETE … USING, RETURNING and WITH are not supported")
		}
		rel, where = d.Relation, d.WhereClause
	case *pg_query.Node_UpdateStmt:
		u := n.UpdateStmt
		op = "UPDATE"
		if len(u.FromClause) > 0 || len(u.ReturningList) > 0 || u.WithClause != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE … FROM, RETURNING and WITH are not supported")
		}
		rel, where = u.Relation, u.WhereClause
		for _, t := range u.TargetList {
			exprs = append(exprs, t.GetResTarget().GetVal())
		}
	}
	name, err := relationName(rel)
	if err != nil {
		return nil, err
	}
	tbl, ok := s.p.store.Table(name)
	if !ok {
		return nil, s.missing(name)
	}
	if u := node.GetUpdateStmt(); u != nil {
		// A bare string set to a column of a date or time type is of
		// that type, read by PostgreSQL's input rules (rewriteDateTimes),
		// as in the transaction's path (dmlInTx).
		for _, t := range u.TargetList {
			rt := t.GetResTarget()
			if i := tbl.ColumnIndex(rt.GetName()); i >= 0 && rt.Val.GetAConst().GetSval() != nil && tbl.Columns[i].Type.IsDateTime() {
				rt.Val = sqltree.Cast(rt.Val, tbl.Columns[i].Type.UDTName())
			}
		}
	}
	for _, e := range append(exprs, where) {
		if e == nil {
			continue
		}
		if err := checkDeterministic(e); err != nil {
			return nil, err
		}
	}
	// Fix the statement's time: now() becomes a literal.
	stamp := time.Now().UTC().Format("2006-01-02 15:04:05.999999+00")
	sqltree.ReplaceNodes(node.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		asType := ""
		if fc := n.GetFuncCall(); fc != nil && len(fc.Args) == 0 && timeFunctions[sqltree.LastName(fc.Funcname)] {
			asType = "timestamptz"
		}
		if sv := n.GetSqlvalueFunction(); sv != nil {
			// Every SQL time keyword, so that the logged text holds none:
			// CURRENT_DATE replayed on a later day means another day.
			switch sv.Op {
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
				asType = "timestamptz"
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
				asType = "date"
			case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
				asType = "timestamp"
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N,
				pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
				asType = "time"
			}
		}
		if asType == "" {
			return nil
		}
		lit := sqltree.Cast(pg_query.MakeAConstStrNode(stamp, -1), "timestamptz")
		if asType == "timestamptz" {
			return lit
		}
		return sqltree.Cast(lit, asType)
	})
	// Operands of the types PostgreSQL gives them (dialect.TypedOperands):
	// a bare string beside a time column is then read by its rules
	// (rewriteDateTimes).
	typeOf := s.argumentType(&pg_query.SelectStmt{FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}}})
	for _, e := range append(exprs, where) {
		dialect.TypedOperands(e, typeOf)
	}
	if err := s.rewriteDateTimes(node); err != nil {
		return nil, err
	}
	dialect.RewriteTree(node.ProtoReflect(), s.settings.Input(s.statementTime()))
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return nil, err
	}
	compiled, err := s.p.engine.CompileDML(ctx, tbl, text)
	if err != nil {
		return nil, err
	}
	n, err := s.p.store.ExecDML(ctx, name, text, op, compiled)
	if err != nil {
		return nil, engineError(err)
	}
	return &Result{Tag: fmt.Sprintf("%s %d", op, n)}, nil
}

// checkDeterministic refuses what a replay could not reproduce.
func checkDeterministic(n *pg_query.Node) error {
	return sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.SubLink:
			return sqlerr.New(sqlerr.FeatureNotSupported, "subqueries in DELETE and UPDATE are not supported")
		case *pg_query.FuncCall:
			if name := sqltree.LastName(x.Funcname); volatileFunctions[name] {
				return sqlerr.New(sqlerr.FeatureNotSupported, "%s() is not allowed in DELETE and UPDATE: the statement is replayed after a crash and must give the same rows", name)
			}
		}
		return nil
	})
}

// dmlPlan is a compiled DELETE or UPDATE of one table.
type dmlPlan struct {
	e       *Engine
	table   schema.Table
	alias   string
	update  bool
	where   string            // SQL of the WHERE clause; "" for all rows
	sets    map[string]string // UPDATE: column → SQL of its new value
	lo, hi  int64
	counter *atomic.Uint64
}

// CompileDML implements ingest.DMLCompiler: it parses a logged DELETE or
// UPDATE, computes the time range it may touch, and checks that it binds
// (unknown columns, type errors) against an empty table of the right shape.
func (e *Engine) CompileDML(ctx context.Context, tbl schema.Table, text string) (ingest.DML, error) {
	tree, err := pg_query.Parse(text)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "cannot parse logged statement %q: %v", text, err)
	}
	p := &dmlPlan{e: e, table: tbl, alias: tbl.Name, sets: map[string]string{}, counter: &atomic.Uint64{}}
	var rel *pg_query.RangeVar
	var where *pg_query.Node
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		rel, where = n.DeleteStmt.Relation, n.DeleteStmt.WhereClause
	case *pg_query.Node_UpdateStmt:
		p.update = true
		rel, where = n.UpdateStmt.Relation, n.UpdateStmt.WhereClause
		for _, t := range n.UpdateStmt.TargetList {
			rt := t.GetResTarget()
			if len(rt.Indirection) > 0 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE of sub-fields is not supported")
			}
			if tbl.ColumnIndex(rt.Name) < 0 {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", rt.Name, tbl.Name)
			}
			if _, dup := p.sets[rt.Name]; dup {
				return nil, sqlerr.New(sqlerr.SyntaxError, "multiple assignments to same column %q", rt.Name)
			}
			if rt.Val.GetSetToDefault() != nil {
				p.sets[rt.Name] = "NULL"
				continue
			}
			sqlText, err := deparseExpr(e.pgVersion, rt.Val)
			if err != nil {
				return nil, err
			}
			p.sets[rt.Name] = typmodSQL(tbl.Columns[tbl.ColumnIndex(rt.Name)], sqlText)
		}
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "not a DELETE or UPDATE: %q", text)
	}
	if rel.Alias != nil && rel.Alias.Aliasname != "" {
		p.alias = rel.Alias.Aliasname
	}
	p.lo, p.hi = fullRange.lo, fullRange.hi
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if where != nil {
		if p.where, err = deparseExpr(e.pgVersion, where); err != nil {
			return nil, err
		}
		root := &pg_query.SelectStmt{FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}}, WhereClause: where}
		ranges, err := planTimeRanges(root, map[string]schema.Table{tbl.Name: tbl}).evaluate(ctx, conn, e.pgVersion, nil, time.UTC)
		if err != nil {
			return nil, err
		}
		if r, ok := ranges[tbl.Name]; ok {
			p.lo, p.hi = r.lo, r.hi
		}
	}
	// Bind against an empty table of the right shape: errors surface here,
	// before anything is logged.
	empty := make([]string, len(tbl.Columns))
	for i, c := range tbl.Columns {
		empty[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.DuckDBType(), schema.QuoteIdent(c.Name))
	}
	if err := p.withView(ctx, conn, "SELECT "+strings.Join(empty, ", ")+" WHERE false", len(tbl.Columns), false, func() error {
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", p.projection(), schema.QuoteIdent(p.alias), p.cond()))
		if err != nil {
			return err
		}
		return rows.Close()
	}); err != nil {
		return nil, engineError(err)
	}
	return p, nil
}

// Columns implements ingest.DML.
func (p *dmlPlan) Columns() int { return len(p.table.Columns) }

// TimeRange implements ingest.DML.
func (p *dmlPlan) TimeRange() (int64, int64) { return p.lo, p.hi }

func (p *dmlPlan) cond() string {
	if p.where == "" {
		return "true"
	}
	return "(" + p.where + ")"
}

// projection is the new row: for UPDATE each assigned column is its new
// value where the condition holds.
func (p *dmlPlan) projection() string {
	cols := make([]string, len(p.table.Columns))
	for i, c := range p.table.Columns {
		q := schema.QuoteIdent(c.Name)
		expr, ok := p.sets[c.Name]
		switch {
		case !p.update || !ok:
			cols[i] = q
		case p.where == "":
			cols[i] = fmt.Sprintf("CAST((%s) AS %s) AS %s", expr, c.DuckDBType(), q)
		default:
			cols[i] = fmt.Sprintf("CASE WHEN %s IS TRUE THEN CAST((%s) AS %s) ELSE %s END AS %s", p.cond(), expr, c.DuckDBType(), q, q)
		}
	}
	return strings.Join(cols, ", ")
}

// rowFilter keeps the rows a DELETE leaves.
func (p *dmlPlan) rowFilter() string {
	if p.update {
		return "true"
	}
	return p.cond() + " IS NOT TRUE"
}

// withView creates a temporary view named like the statement's table (or
// alias) over source for the duration of fn.
func (p *dmlPlan) withView(ctx context.Context, conn *sql.Conn, source string, present int, withBatchID bool, fn func() error) error {
	list := selectList(p.table, present)
	if withBatchID {
		list += ", " + batchColumn
	}
	return p.withList(ctx, conn, source, list, fn)
}

// withList is withView with the select list that reads source as the
// table given.
func (p *dmlPlan) withList(ctx context.Context, conn *sql.Conn, source, list string, fn func() error) error {
	view := schema.QuoteIdent(p.alias)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS SELECT %s FROM (%s)", view, list, source)); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), "DROP VIEW IF EXISTS temp.main."+view)
	return fn()
}

// ApplyFile implements ingest.DML.
func (p *dmlPlan) ApplyFile(ctx context.Context, path string, f delta.File, deleted delta.RowSet) (arrow.RecordBatch, int64, error) {
	conn, err := p.e.db.Conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	var rec arrow.RecordBatch
	var changed int64
	// The view reads the file as the table: by prefix, or by name.
	list, err := p.e.layouts.fileList(ctx, conn, p.table, path, f)
	if err != nil {
		return nil, 0, err
	}
	err = p.withList(ctx, conn, fileSource(path, deleted), list, func() error {
		view := schema.QuoteIdent(p.alias)
		if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FILTER (WHERE %s IS TRUE) FROM %s", p.cond(), view)).Scan(&changed); err != nil {
			return err
		}
		if changed == 0 {
			return nil
		}
		var err error
		rec, err = scanRecord(ctx, conn, p.table, fmt.Sprintf("SELECT %s FROM %s WHERE %s", p.projection(), view, p.rowFilter()))
		return err
	})
	if err != nil {
		return nil, 0, engineError(err)
	}
	return rec, changed, nil
}

// ApplyBatches implements ingest.DML: the batches are loaded into a scratch
// table tagged with their IDs, evaluated in one query, and split again.
func (p *dmlPlan) ApplyBatches(ctx context.Context, batches []membuffer.Batch) (map[uint64]arrow.RecordBatch, int64, error) {
	conn, err := p.e.db.Conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	scratch := &mirrorTable{name: mirrorSchema + "." + schema.QuoteIdent(fmt.Sprintf("dml_%d_%d", time.Now().UnixNano(), p.counter.Add(1)))}
	if err := createMirrorTable(ctx, conn, p.table, scratch.name); err != nil {
		return nil, 0, engineError(err)
	}
	defer conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+scratch.name)
	recs := make([]arrow.RecordBatch, len(batches))
	ids := make([]uint64, len(batches))
	for i, b := range batches {
		recs[i], ids[i] = b.Rec, b.ID
	}
	if err := appendBatches(ctx, conn, p.table, scratch, recs, ids); err != nil {
		return nil, 0, err
	}
	out := map[uint64]arrow.RecordBatch{}
	var total int64
	err = p.withView(ctx, conn, "SELECT * FROM "+scratch.name, len(p.table.Columns), true, func() error {
		view := schema.QuoteIdent(p.alias)
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT %s, count(*) FILTER (WHERE %s IS TRUE) FROM %s GROUP BY 1", batchColumn, p.cond(), view))
		if err != nil {
			return err
		}
		var changedIDs []uint64
		for rows.Next() {
			var id uint64
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return err
			}
			if n > 0 {
				changedIDs = append(changedIDs, id)
				total += n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(changedIDs) == 0 {
			return nil
		}
		q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s AND %s", p.projection(), batchColumn, view, idPredicate(changedIDs), p.rowFilter())
		split, err := scanSplit(ctx, conn, p.table, q)
		if err != nil {
			return err
		}
		for _, id := range changedIDs {
			rec, ok := split[id]
			if !ok { // every row of the batch was deleted
				rec = array.NewRecordBatch(p.table.ArrowSchema(), emptyColumns(p.table), 0)
			}
			out[id] = rec
		}
		return nil
	})
	if err != nil {
		return nil, 0, engineError(err)
	}
	return out, total, nil
}

func emptyColumns(t schema.Table) []arrow.Array {
	cols := make([]arrow.Array, len(t.Columns))
	for i, c := range t.Columns {
		b := array.NewBuilder(memory.DefaultAllocator, c.ArrowType())
		cols[i] = b.NewArray()
		b.Release()
	}
	return cols
}

// truncate is TRUNCATE: a DELETE of every row of each table named. tsdb
// has no sequences and no foreign keys, so RESTART IDENTITY and CASCADE
// change nothing. In a transaction block the tables empty together at
// COMMIT; outside one, one after the other.
func (s *Session) truncate(ctx context.Context, st *pg_query.TruncateStmt) (*Result, error) {
	for _, r := range st.Relations {
		rv := r.GetRangeVar()
		if rv == nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "TRUNCATE names a table")
		}
		del := &pg_query.Node{Node: &pg_query.Node_DeleteStmt{DeleteStmt: &pg_query.DeleteStmt{Relation: proto.Clone(rv).(*pg_query.RangeVar)}}}
		if _, err := s.dml(ctx, del); err != nil {
			return nil, err
		}
	}
	return &Result{Tag: "TRUNCATE TABLE"}, nil
}

// ReadFile implements ingest.FileReader: the rows of data file f of table
// t, read by position or by name as the table's views read it, without
// the deleted rows.
func (e *Engine) ReadFile(ctx context.Context, t schema.Table, path string, f delta.File, deleted delta.RowSet) (arrow.RecordBatch, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	list, err := e.layouts.fileList(ctx, conn, t, path, f)
	if err != nil {
		return nil, err
	}
	return scanRecord(ctx, conn, t, fmt.Sprintf("SELECT %s FROM (%s)", list, fileSource(path, deleted)))
}
