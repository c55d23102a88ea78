package planner

// A session's tables exist in DuckDB only as temporary views over one
// snapshot: bind makes them (pruned by the statement's time range), and the
// session keeps views and prepared plans while their definitions hold.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	bindings "github.com/duckdb/duckdb-go-bindings"
	"google.golang.org/protobuf/proto"

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/schema"
)

// maxSessionPlans bounds a session's prepared statements; when full they
// are all dropped (dashboards repeat a handful of queries).
const maxSessionPlans = 64

// sessionView is a temporary view on a session's connection: its CREATE
// statement, the ID of the tsdb table it reads (empty for catalog views)
// and the table's columns it was made for (its shape).
type sessionView struct {
	create  string
	tableID string
	shape   string
}

// ensureView creates the temporary view name as v.create (a CREATE OR
// REPLACE TEMP VIEW statement) unless the session's view is exactly that.
func (s *Session) ensureView(ctx context.Context, name string, v sessionView) error {
	if old, ok := s.views[name]; ok && old.create == v.create {
		return nil
	}
	delete(s.views, name)
	s.dropPlans()
	if _, err := s.conn.ExecContext(ctx, v.create); err != nil {
		// The old view may still be there, no longer tracked: it must not
		// outlive the session.
		s.conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS temp.main."+schema.QuoteIdent(name))
		return engineError(err)
	}
	s.views[name] = v
	return nil
}

// viewsFit reports whether the session has a view of each table as it is
// now (the same table, the same columns), whatever files and batches the
// view reads: enough to describe a statement's result columns.
func (s *Session) viewsFit(tables []string) bool {
	for _, name := range tables {
		v, ok := s.views[name]
		if !ok {
			return false
		}
		t, ok := s.p.store.Table(name)
		if !ok || t.ID != v.tableID || viewShape(t) != v.shape {
			return false
		}
	}
	return true
}

// viewShape names a table's columns and types as its views show them.
func viewShape(t schema.Table) string {
	return selectList(t, len(t.Columns)) + " " + fmt.Sprint(t.Columns)
}

// plan is a prepared SELECT of a session. When every result column has a
// Kind, it runs through DuckDB's C API and streams chunks (raw, kinds);
// otherwise through database/sql (stmt), which has a Go value for every
// type.
type plan struct {
	stmt  *sql.Stmt
	raw   bindings.PreparedStatement
	kinds []Kind
	cols  []Column
}

func (p *plan) close() {
	if p.stmt != nil {
		p.stmt.Close()
	}
	bindings.DestroyPrepare(&p.raw)
}

// dropPlans closes the session's prepared statements.
func (s *Session) dropPlans() {
	for text, p := range s.plans {
		p.close()
		delete(s.plans, text)
	}
}

// prepare makes the plan of a SELECT. DuckDB parses, binds and optimizes
// it, which a cancel cannot interrupt: see engineCall.
func (s *Session) prepare(ctx context.Context, text string) (*plan, error) {
	conn, raw := s.conn, s.raw
	return engineCall(ctx, s, func() (*plan, error) {
		return prepareOn(context.WithoutCancel(ctx), conn, raw, text)
	}, (*plan).close)
}

// prepareOn prepares text on a connection: through the C API when every
// result column has a Kind, else through the driver.
func prepareOn(ctx context.Context, conn *sql.Conn, raw bindings.Connection, text string) (*plan, error) {
	p := &plan{}
	if bindings.Prepare(raw, text, &p.raw) == bindings.StateSuccess {
		n := int(bindings.PreparedStatementColumnCount(p.raw))
		kinds, cols := make([]Kind, n), make([]Column, n)
		for i := range n {
			lt := bindings.PreparedStatementColumnLogicalType(p.raw, bindings.IdxT(i))
			kinds[i] = kindOf(bindings.GetTypeId(lt), bindings.LogicalTypeGetAlias(lt))
			bindings.DestroyLogicalType(&lt)
			if kinds[i] == 0 {
				kinds = nil
				break
			}
			cols[i] = columnFor(bindings.PreparedStatementColumnName(p.raw, bindings.IdxT(i)), kinds[i].typeName())
		}
		if n > 0 && kinds != nil {
			p.kinds, p.cols = kinds, cols
			return p, nil
		}
	}
	// Types without a Kind, or a statement DuckDB refused: the driver's
	// path runs it, and words a refusal as the driver does.
	bindings.DestroyPrepare(&p.raw)
	st, err := conn.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	p.stmt = st
	return p, nil
}

// run runs a SELECT through the session's plan of text, preparing it first
// if there is none. The rows call cleanup when they are closed; on error
// it is not called.
func (s *Session) run(ctx context.Context, text string, cleanup func()) (Rows, []Column, error) {
	for attempt := 0; ; attempt++ {
		p, ok := s.plans[text]
		if !ok {
			var err error
			if p, err = s.prepare(ctx, text); err != nil {
				return nil, nil, err
			}
			if len(s.plans) >= maxSessionPlans {
				s.dropPlans()
			}
			s.plans[text] = p
		}
		if p.kinds == nil {
			defer s.planned()
			return s.runDriver(ctx, p, cleanup)
		}
		rows, err := runChunks(ctx, s, p.raw, p.kinds)
		if !errors.Is(err, errStalePlan) {
			s.planned()
		}
		if errors.Is(err, errStalePlan) && attempt == 0 {
			// Prepared again, the plan has the columns DuckDB now gives.
			delete(s.plans, text)
			p.close()
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		rows.cleanup = cleanup
		rows.scrub = func(err error) error { return s.clientError(ctx, err) }
		return rows, slices.Clone(p.cols), nil
	}
}

// runDriver runs a plan through database/sql.
func (s *Session) runDriver(ctx context.Context, p *plan, cleanup func()) (Rows, []Column, error) {
	rows, err := engineCall(ctx, s, func() (*sql.Rows, error) { return p.stmt.QueryContext(ctx) }, closeRows)
	if err != nil {
		return nil, nil, err
	}
	names, err := rows.Columns()
	if err != nil {
		rows.Close()
		return nil, nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		return nil, nil, err
	}
	cols := make([]Column, len(names))
	for i := range names {
		cols[i] = columnFor(names[i], types[i].DatabaseTypeName())
	}
	r := newSQLRows(rows, len(cols), cleanup)
	r.scrub = func(err error) error { return s.clientError(ctx, err) }
	return r, cols, nil
}

// closeRows is the discard of an engineCall that returns rows.
func closeRows(r *sql.Rows) { r.Close() }

// querier runs a statement: a *sql.Conn, or a session's connection
// through engineCall (Session.engineQuerier).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// guardedConn runs statements on a session's connection as engineCall.
type guardedConn struct{ s *Session }

func (g guardedConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	conn := g.s.conn
	return engineCall(ctx, g.s, func() (*sql.Rows, error) { return conn.QueryContext(ctx, query, args...) }, closeRows)
}

// engineQuerier runs statements that make DuckDB plan client SQL on the
// session's connection, so that a cancel answers while DuckDB plans.
func (s *Session) engineQuerier() querier { return guardedConn{s} }

// dropStaleViews drops the views of tables that were dropped (or dropped
// and created anew) since the view was made. A statement naming such a
// table must fail as undefined, not read the old table's files.
func (s *Session) dropStaleViews(ctx context.Context) error {
	for name, v := range s.views {
		if v.tableID == "" {
			continue
		}
		if t, ok := s.p.store.Table(name); ok && t.ID == v.tableID {
			continue
		}
		s.dropPlans()
		if _, err := s.conn.ExecContext(ctx, "DROP VIEW IF EXISTS temp.main."+schema.QuoteIdent(name)); err != nil {
			return engineError(err)
		}
		delete(s.views, name)
	}
	return nil
}

// bound is the engine state a statement reads: a temporary view per table
// over one snapshot, whose mirrored batches stay until done unpins the
// epoch.
type bound struct {
	s      *Session
	epoch  uint64
	pruned []*pruned
	// spillDir holds the Parquet files of buffered rows the views read
	// (bindWith's spill); removed by done.
	spillDir string
}

// bufferedDir is where, under the engine's temporary directory, buffered
// rows are written for a statement that reads them as files.
const bufferedDir = "buffered"

// hasBuffered reports whether a view reads buffered rows.
func (b *bound) hasBuffered() bool {
	for _, p := range b.pruned {
		if len(p.batchIDs) > 0 {
			return true
		}
	}
	return false
}

// bind pins an epoch, takes a snapshot of each table, makes sure the
// snapshot's buffered batches are in the mirror, computes the time range
// the statement (root, may be nil) needs of each table, and makes a
// temporary view per table over the snapshot's files and mirrored batches
// in that range. Temporary views are private to the connection: tsdb
// tables exist in DuckDB only as these views. The statement runs on its
// own (autocommit): one statement reads one consistent state of the
// mirror, and the view names every file and batch it reads, so a view
// left from an earlier statement with the same definition is the same
// relation.
func (s *Session) bind(ctx context.Context, tables []string, root proto.Message) (*bound, error) {
	return s.bindOpts(ctx, tables, root, bindOptions{})
}

// bindOptions change what bind makes.
type bindOptions struct {
	// spill: the snapshot's buffered rows in range are written to Parquet
	// files of the statement's own, which the views read instead of the
	// engine's copy of the batches.
	spill bool
	// identity names the table a DELETE or UPDATE changes: it gets an
	// identity view too (txview.go).
	identity string
	// last: the statement needs only the newest row of each value of a
	// column of this table (lastpoint.go), which bounds what is read.
	last *lastKey
}

// bindWith is bind with spill.
func (s *Session) bindWith(ctx context.Context, tables []string, root proto.Message, spill bool) (*bound, error) {
	return s.bindOpts(ctx, tables, root, bindOptions{spill: spill})
}

func (s *Session) bindOpts(ctx context.Context, tables []string, root proto.Message, opts bindOptions) (*bound, error) {
	spill := opts.spill
	if err := s.dropStaleViews(ctx); err != nil {
		return nil, err
	}
	b := &bound{s: s, epoch: s.p.mirror.epochs.pin()}
	snaps := make([]*ingest.Snapshot, 0, len(tables))
	mirrors := map[string]string{}
	schemas := map[string]schema.Table{}
	for _, name := range tables {
		snap, err := s.snapshot(ctx, name)
		if err != nil {
			b.done()
			return nil, err
		}
		// Mirroring happens outside the query's transaction: what one
		// session appends must be committed before others rely on it.
		mirrored, err := s.p.mirror.ensure(ctx, s.conn, snap)
		if err != nil {
			b.done()
			return nil, engineError(err)
		}
		mirrors[name] = mirrored
		snaps = append(snaps, snap)
		schemas[name] = snap.Table
	}
	ranges := map[string]interval{}
	if root != nil && len(snaps) > 0 {
		var err error
		ranges, err = planTimeRanges(root, schemas).evaluate(ctx, s.conn, s.p.pgVersion, schemas, s.settings.Location())
		if err != nil {
			b.done()
			return nil, err
		}
	}
	for _, snap := range snaps {
		r, ok := ranges[snap.Table.Name]
		if !ok {
			r = fullRange
		}
		var from *int64
		newest := ""
		if opts.last != nil && opts.last.table == snap.Table.Name && (!opts.last.upper || r.hi != math.MaxInt64) {
			bound, ok, err := s.lastKeyBound(ctx, snap, opts.last.column, r)
			if err != nil {
				b.done()
				return nil, err
			}
			if ok {
				r = r.intersect(interval{bound, math.MaxInt64})
				from = &bound
				s.p.metrics.lastKeyBounds.Inc()
				if newest, err = s.newestFiles(ctx, snap, opts.last.column); err != nil {
					b.done()
					return nil, err
				}
			}
		}
		pr := prune(snap, r)
		pr.from = from
		if newest != "" {
			// The files' newest rows stand for the files.
			pr.files, pr.fileCols, pr.fileDeleted, pr.fileByName = nil, nil, nil, nil
			pr.newest = newest
		}
		if pr.damage != nil {
			b.done()
			return nil, unavailableError(pr.damage)
		}
		if err := s.p.engine.layouts.resolveLayouts(ctx, s.conn, pr); err != nil {
			b.done()
			return nil, err
		}
		pr.mirror = mirrors[snap.Table.Name]
		var tt *txTable
		if s.tx != nil {
			tt = s.tx.tables[snap.Table.Name]
		}
		// Rows a transaction deleted are named by their batch: those
		// are not read from a spilled file.
		if spill && len(pr.batchIDs) > 0 && (tt == nil || len(tt.dels) == 0) && opts.identity != snap.Table.Name {
			if err := b.spillBuffered(ctx, pr); err != nil {
				b.done()
				return nil, err
			}
		}
		if tt != nil || opts.identity == snap.Table.Name {
			if err := s.txViews(ctx, pr, tt, opts.identity == snap.Table.Name); err != nil {
				b.done()
				return nil, err
			}
		} else {
			v := sessionView{create: viewSQL(pr), tableID: snap.Table.ID, shape: viewShape(snap.Table)}
			if err := s.ensureView(ctx, snap.Table.Name, v); err != nil {
				b.done()
				return nil, err
			}
		}
		b.pruned = append(b.pruned, pr)
	}
	return b, nil
}

// done unpins the epoch: the mirror may drop batches the statement read.
func (b *bound) done() {
	b.s.p.mirror.epochs.unpin(b.epoch)
	if b.spillDir != "" {
		os.RemoveAll(b.spillDir)
		b.spillDir = ""
	}
}

// spillBuffered writes the buffered batches p reads into a Parquet file
// and makes p read that file instead of the engine's copy.
func (b *bound) spillBuffered(ctx context.Context, p *pruned) error {
	if b.spillDir == "" {
		dir, err := os.MkdirTemp(filepath.Join(b.s.p.engine.opts.TempDir, bufferedDir), "stmt-")
		if os.IsNotExist(err) {
			if err = os.MkdirAll(filepath.Join(b.s.p.engine.opts.TempDir, bufferedDir), 0o700); err == nil {
				dir, err = os.MkdirTemp(filepath.Join(b.s.p.engine.opts.TempDir, bufferedDir), "stmt-")
			}
		}
		if err != nil {
			return fmt.Errorf("planner: spill buffered rows: %w", err)
		}
		b.spillDir = dir
	}
	keep := map[uint64]bool{}
	for _, id := range p.batchIDs {
		keep[id] = true
	}
	var recs []arrow.RecordBatch
	for _, bt := range p.snap.Batches {
		if keep[bt.ID] && bt.Rec.NumRows() > 0 {
			recs = append(recs, bt.Rec)
		}
	}
	if len(recs) > 0 {
		store, err := delta.NewLocalStore(filepath.Join(b.spillDir, p.snap.Table.ID))
		if err != nil {
			return err
		}
		add, err := delta.WriteDataFile(ctx, store, p.snap.Table, recs)
		if err != nil {
			return fmt.Errorf("planner: spill buffered rows: %w", err)
		}
		p.files = append(p.files, store.LocalPath(add.Path))
		p.fileCols = append(p.fileCols, len(p.snap.Table.Columns))
		p.fileDeleted = append(p.fileDeleted, delta.RowSet{})
		p.fileByName = append(p.fileByName, false)
	}
	p.batchIDs = nil
	return nil
}

// viewSQL builds the view of one pruned table snapshot: its files and its
// buffered batches in range, each row exactly once (a row is either in a
// committed file or in a batch of the snapshot, never both).
func viewSQL(p *pruned) string {
	snap := p.snap
	all := len(snap.Table.Columns)
	var parts []string
	counts, byCols := p.filesByColumns()
	// Rows older than from cannot change the answer (lastpoint.go): the
	// engine skips row groups and rows before it.
	filter := ""
	if p.from != nil {
		filter = " WHERE " + timeFrom(snap.Table, *p.from, true)
	}
	if p.newest != "" {
		parts = append(parts, "SELECT * FROM "+p.newest)
	}
	for _, n := range counts {
		parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet([%s])%s", fileColumnList(snap.Table, n), strings.Join(byCols[n], ", "), filter))
	}
	keys, byLayout, layouts := p.layoutGroups()
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet([%s])", layoutSelectList(snap.Table, layouts[k]), strings.Join(byLayout[k], ", ")))
	}
	for _, i := range p.filesWithDeletes() {
		parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet(%s, file_row_number = true) WHERE %s",
			p.fileSelectList(i), schema.QuoteString(p.files[i]), keptRows(p.deletesIn(i))))
	}
	list := selectList(snap.Table, all)
	// Without buffered batches in range the view is the files alone: a
	// UNION ALL with an empty branch still costs DuckDB plan and pipeline
	// work on every query.
	if len(p.batchIDs) > 0 || len(parts) == 0 {
		cond := idPredicate(p.batchIDs)
		if p.from != nil {
			cond = "(" + cond + ") AND " + timeFrom(snap.Table, *p.from, false)
		}
		parts = append(parts, fmt.Sprintf("SELECT %s FROM %s WHERE %s", list, p.mirror, cond))
	}
	return fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s", schema.QuoteIdent(snap.Table.Name), strings.Join(parts, " UNION ALL "))
}

// filesByColumns groups the files p reads by how many of the table's
// columns they hold, most first: files written before ALTER TABLE ADD
// COLUMN lack the later columns, and each group is one read_parquet. The
// files come quoted as SQL strings.
func (p *pruned) filesByColumns() ([]int, map[int][]string) {
	all := len(p.snap.Table.Columns)
	byCols := map[int][]string{}
	var counts []int
	for i, f := range p.files {
		if p.deletesIn(i).Len() > 0 || p.layoutOf(i) != nil {
			continue // read on its own (filesWithDeletes) or by name (layoutGroups)
		}
		n := min(p.fileCols[i], all)
		if _, ok := byCols[n]; !ok {
			counts = append(counts, n)
		}
		byCols[n] = append(byCols[n], schema.QuoteString(f))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	return counts, byCols
}

// filesWithDeletes returns the indexes of the files p reads that have
// rows deleted by deletion vector: each is read on its own, filtered by
// row position.
func (p *pruned) filesWithDeletes() []int {
	var out []int
	for i := range p.files {
		if p.deletesIn(i).Len() > 0 {
			out = append(out, i)
		}
	}
	return out
}

// selectList is the select list that reads a source holding the first
// present columns of t as the table: timestamps without time zone turned
// back from the stored UTC instant into the wall clock, columns added
// after the source was written NULL.
func selectList(t schema.Table, present int) string { return columnList(t, present, false) }

// fileColumnList is selectList over data files, which name a column by
// its physical name under Delta column mapping.
func fileColumnList(t schema.Table, present int) string { return columnList(t, present, true) }

func columnList(t schema.Table, present int, file bool) string {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		q, f := schema.QuoteIdent(c.Name), schema.QuoteIdent(c.Name)
		if file {
			f = schema.QuoteIdent(c.FileName())
		}
		switch {
		case i >= present:
			cols[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.DuckDBType(), q)
		case c.Type == schema.Timestamp && !c.NTZ:
			// The wall clock in UTC, whatever the connection's TimeZone: a
			// CAST would show it in the session's zone.
			cols[i] = fmt.Sprintf("timezone('UTC', %s) AS %s", f, q)
		case c.Type == schema.Interval:
			// Files hold intervals as text (schema.IntervalText); buffered
			// rows already as intervals, which the cast leaves alone.
			cols[i] = fmt.Sprintf("CAST(%s AS INTERVAL) AS %s", f, q)
		case c.Type == schema.Time || c.Type == schema.TimeTZ || c.Type == schema.Bit || c.Type == schema.VarBit:
			// Held as text everywhere (schema.TimeText).
			cols[i] = fmt.Sprintf("CAST(%s AS %s) AS %s", f, c.Type.DuckDB(), q)
		case f != q:
			cols[i] = f + " AS " + q
		default:
			cols[i] = q
		}
	}
	return strings.Join(cols, ", ")
}
