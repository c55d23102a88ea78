package planner

// DELETE and UPDATE statements logged as SQL text by versions of tsdb
// before their effect was logged (dmltx.go): the store replays such a WAL
// entry, left by a crash, through CompileDML, which evaluates it over the
// buffered batches and the data files it may touch.

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

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

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
