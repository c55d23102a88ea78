package planner

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	bindings "github.com/duckdb/duckdb-go-bindings"

	"tsdb/ingest"
	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
	"tsdb/membuffer"
)

// mirrorSchema is the DuckDB schema holding copies of buffered batches.
const mirrorSchema = "_tsdb"

// batchColumn tags each mirrored row with its MemBuffer batch ID.
const batchColumn = "_b"

// rowColumn numbers each mirrored row within its batch: a transaction
// names the buffered rows it deletes by batch and row (ingest.TxTable).
const rowColumn = "_tsdb_r"

// mirror keeps a DuckDB table per tsdb table with a copy of the buffered
// batches, each handed to DuckDB once through the C API's bulk Arrow
// conversion. Queries select the batches of their snapshot by batch ID, so a
// batch that was flushed meanwhile is simply not selected; its rows are
// deleted only when no running query can still need them (epochs).
type mirror struct {
	mu     sync.Mutex
	tables map[string]*mirrorTable // by table ID
	epochs epochs
}

type mirrorTable struct {
	mu       sync.Mutex
	name     string       // quoted DuckDB name
	table    schema.Table // the columns the DuckDB table has
	created  bool
	reaped   bool // dropped by the reaper; callers must look up anew
	lastUsed time.Time
	have     map[uint64]bool
	retired  []retired
	// outgrown are DuckDB tables of the same tsdb table with fewer columns
	// (before ALTER TABLE ADD COLUMN) or other column names (before
	// another writer's RENAME COLUMN), dropped once no query can read
	// them.
	outgrown []retiredTable
	// renames counts the mirror tables made for renamed columns: part of
	// their names, which the column count alone would repeat.
	renames int
}

type retiredTable struct {
	name  string
	epoch uint64
}

type retired struct {
	id    uint64
	epoch uint64
}

func newMirror() *mirror { return &mirror{tables: map[string]*mirrorTable{}} }

// mirrorName names the DuckDB table mirroring t's batches; the column count
// is part of it, since a table that gains columns gets a new mirror table.
func mirrorName(t schema.Table) string { return renamedMirrorName(t, 0) }

// renamedMirrorName is mirrorName for the renames-th set of t's column
// names (0: the first).
func renamedMirrorName(t schema.Table, renames int) string {
	name := fmt.Sprintf("m_%s_%d", strings.ReplaceAll(t.ID, "-", ""), len(t.Columns))
	if renames > 0 {
		name += fmt.Sprintf("_r%d", renames)
	}
	return mirrorSchema + "." + schema.QuoteIdent(name)
}

func (m *mirror) table(t schema.Table) *mirrorTable {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := m.tables[t.ID]
	if mt == nil {
		mt = &mirrorTable{name: mirrorName(t), table: t, have: map[uint64]bool{}}
		m.tables[t.ID] = mt
	}
	return mt
}

// drop forgets a dropped table's mirror.
func (m *mirror) drop(ctx context.Context, conn *sql.Conn, t schema.Table) error {
	m.mu.Lock()
	mt := m.tables[t.ID]
	delete(m.tables, t.ID)
	m.mu.Unlock()
	names := []string{mirrorName(t)}
	if mt != nil {
		mt.mu.Lock()
		names = []string{mt.name}
		for _, o := range mt.outgrown {
			names = append(names, o.name)
		}
		mt.mu.Unlock()
	}
	for _, name := range names {
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
			return err
		}
	}
	return nil
}

// ensure makes every batch of snap present in the mirror, retires batches
// that left the MemBuffer before snap was taken, and deletes retired batches
// that no running query can see any more. It returns the DuckDB table to
// read the batches from: it has at least snap's columns.
func (m *mirror) ensure(ctx context.Context, conn *sql.Conn, snap *ingest.Snapshot) (string, error) {
	var mt *mirrorTable
	for {
		mt = m.table(snap.Table)
		mt.mu.Lock()
		if !mt.reaped {
			break
		}
		mt.mu.Unlock()
	}
	defer mt.mu.Unlock()
	mt.lastUsed = time.Now()
	if n := len(snap.Table.Columns); n > len(mt.table.Columns) || n == len(mt.table.Columns) && !snap.Table.SameNames(mt.table) {
		// The table gained columns, or another writer renamed one
		// (under column mapping): its batches move to a new mirror
		// table; queries that began before may still read the old one.
		if mt.created {
			mt.outgrown = append(mt.outgrown, retiredTable{name: mt.name, epoch: m.epochs.current()})
		}
		if n == len(mt.table.Columns) {
			mt.renames++
		}
		mt.name, mt.table, mt.created = renamedMirrorName(snap.Table, mt.renames), snap.Table, false
		mt.have, mt.retired = map[uint64]bool{}, nil
	}
	if !mt.created {
		if err := createMirrorTable(ctx, conn, mt.table, mt.name); err != nil {
			return "", fmt.Errorf("planner: create mirror of %s: %w", snap.Table.Name, err)
		}
		mt.created = true
	}
	if err := m.dropOutgrown(ctx, conn, mt); err != nil {
		return "", err
	}
	inSnap := make(map[uint64]bool, len(snap.Batches))
	var missingBatches []membuffer.Batch
	for _, b := range snap.Batches {
		inSnap[b.ID] = true
		if mt.have[b.ID] {
			continue
		}
		// A batch another statement retired (its snapshot was taken after
		// the batch left the MemBuffer, this one's before) is still in the
		// table until no query can read it: it is taken back, not
		// appended again, which would show its rows twice.
		if i := slices.IndexFunc(mt.retired, func(r retired) bool { return r.id == b.ID }); i >= 0 {
			mt.retired = slices.Delete(mt.retired, i, i+1)
			mt.have[b.ID] = true
			continue
		}
		missingBatches = append(missingBatches, b)
	}
	// Appended in the order they were written (their WAL sequence), where
	// the MemBuffer lists them by time bucket: a scan reads the mirror in
	// its order, and a query without ORDER BY over buffered rows returns
	// them as they were inserted, as PostgreSQL's heap does for a table
	// that was only appended to, not grouped by the bucket each row's
	// time fell in. Only the batches new to the mirror are sorted: most
	// queries find none.
	slices.SortStableFunc(missingBatches, func(a, b membuffer.Batch) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	missing := make([]arrow.RecordBatch, len(missingBatches))
	missingIDs := make([]uint64, len(missingBatches))
	for i, b := range missingBatches {
		missing[i], missingIDs[i] = b.Rec, b.ID
	}
	if len(missing) > 0 {
		if err := appendBatches(ctx, conn, mt.table, mt, missing, missingIDs); err != nil {
			return "", err
		}
		for _, id := range missingIDs {
			mt.have[id] = true
		}
	}
	// A mirrored batch missing from the snapshot with an ID the snapshot's
	// MemBuffer had already handed out was released (flushed or dropped)
	// before the snapshot: it never comes back. A larger ID was appended
	// after the snapshot and is kept.
	now := m.epochs.current()
	for id := range mt.have {
		if !inSnap[id] && id <= snap.MaxBatchID {
			mt.retired = append(mt.retired, retired{id: id, epoch: now})
			delete(mt.have, id)
		}
	}
	oldest := m.epochs.oldest()
	var gone []uint64
	keep := mt.retired[:0]
	for _, r := range mt.retired {
		if r.epoch < oldest {
			gone = append(gone, r.id)
		} else {
			keep = append(keep, r)
		}
	}
	mt.retired = keep
	if len(gone) > 0 {
		q := fmt.Sprintf("DELETE FROM %s WHERE %s", mt.name, idPredicate(gone))
		if _, err := conn.ExecContext(ctx, q); err != nil {
			// The rows stay hidden by the batch filter; retry next time.
			for _, id := range gone {
				mt.retired = append(mt.retired, retired{id: id, epoch: 0})
			}
			return "", fmt.Errorf("planner: reclaim mirrored batches: %w", err)
		}
	}
	return mt.name, nil
}

// dropOutgrown drops the outgrown tables of mt no running query can read.
func (m *mirror) dropOutgrown(ctx context.Context, conn *sql.Conn, mt *mirrorTable) error {
	if len(mt.outgrown) == 0 {
		return nil // every query but after an ADD COLUMN
	}
	var err error
	if mt.outgrown, err = dropRetiredTables(ctx, conn, mt.outgrown, m.epochs.oldest()); err != nil {
		return fmt.Errorf("planner: drop outgrown mirror: %w", err)
	}
	return nil
}

// dropRetiredTables drops the engine tables retired before epoch oldest
// (no running query can read them) and returns the others, and the one
// the engine failed to drop with the tables after it, to try again.
func dropRetiredTables(ctx context.Context, conn *sql.Conn, ts []retiredTable, oldest uint64) ([]retiredTable, error) {
	keep := ts[:0]
	for i, t := range ts {
		if t.epoch >= oldest {
			keep = append(keep, t)
			continue
		}
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+t.name); err != nil {
			return append(keep, ts[i:]...), err
		}
	}
	return keep, nil
}

// createMirrorTable creates a DuckDB table for a tsdb table's rows plus the
// batch ID column.
func createMirrorTable(ctx context.Context, conn *sql.Conn, t schema.Table, name string) error {
	var cols []string
	for _, c := range t.Columns {
		ty := c.DuckDBType()
		if c.StoredAsInstant() {
			ty = "TIMESTAMPTZ" // stored as UTC micros; views cast
		}
		cols = append(cols, schema.QuoteIdent(c.Name)+" "+ty)
	}
	cols = append(cols, batchColumn+" UBIGINT", rowColumn+" UINTEGER")
	_, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s)", name, strings.Join(cols, ", ")))
	return err
}

// reap drops the DuckDB tables of mirrors that hold no batches and were not
// used for idle: state kept for idle tables is freed and recreated by the
// next query. It returns how many were dropped.
func (m *mirror) reap(ctx context.Context, conn *sql.Conn, idle time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, mt := range m.tables {
		if !mt.mu.TryLock() {
			continue // in use
		}
		if len(mt.have) == 0 && len(mt.retired) == 0 && len(mt.outgrown) == 0 && time.Since(mt.lastUsed) >= idle {
			if mt.created {
				if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+mt.name); err != nil {
					mt.mu.Unlock()
					return n, err
				}
			}
			mt.reaped = true
			delete(m.tables, id)
			n++
		}
		mt.mu.Unlock()
	}
	return n, nil
}

// appendBatches appends records to the mirror table through the C API:
// Arrow record → DuckDB DataChunk (bulk conversion) → appender. Each record
// gets the batch ID and row number columns; a record written before
// columns were added gets NULL in them.
func appendBatches(ctx context.Context, conn *sql.Conn, t schema.Table, mt *mirrorTable, recs []arrow.RecordBatch, ids []uint64) error {
	tsch := t.ArrowSchema()
	fields := append(append([]arrow.Field(nil), tsch.Fields()...), arrow.Field{Name: batchColumn, Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: rowColumn, Type: arrow.PrimitiveTypes.Uint32})
	sch := arrow.NewSchema(fields, nil)
	return appendArrow(ctx, conn, mt.name, sch, len(recs), func(i int) (arrow.RecordBatch, error) {
		rec := recs[i]
		if int(rec.NumCols()) > tsch.NumFields() {
			return nil, fmt.Errorf("planner: batch %d has %d columns, the mirror %d", ids[i], rec.NumCols(), tsch.NumFields())
		}
		padded := arrowutil.Pad(tsch, rec)
		defer padded.Release()
		return withBatchID(sch, padded, ids[i]), nil
	})
}

// appendArrow appends n records of schema sch, made one at a time by
// record, to the DuckDB table name ("schema"."table") through the C API.
func appendArrow(ctx context.Context, conn *sql.Conn, name string, sch *arrow.Schema, n int, record func(i int) (arrow.RecordBatch, error)) error {
	rc, err := driverConnection(ctx, conn)
	if err != nil {
		return err
	}
	converted, ed := bindings.SchemaFromArrow(rc, sch)
	if bindings.ErrorDataHasError(ed) {
		defer bindings.DestroyErrorData(&ed)
		return fmt.Errorf("planner: arrow schema of %s: %s", name, bindings.ErrorDataMessage(ed))
	}
	bindings.DestroyErrorData(&ed)
	defer bindings.DestroyArrowConvertedSchema(&converted)
	parts := strings.SplitN(name, ".", 2)
	var app bindings.Appender
	if bindings.AppenderCreate(rc, parts[0], strings.Trim(parts[1], `"`), &app) == bindings.StateError {
		defer bindings.AppenderDestroy(&app)
		return fmt.Errorf("planner: appender of %s: %s", name, bindings.AppenderError(app))
	}
	defer bindings.AppenderDestroy(&app)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		full, err := record(i)
		if err != nil {
			return err
		}
		// DuckDB data chunks hold at most 2048 rows (the vector size).
		for off := int64(0); off < full.NumRows(); off += 2048 {
			n := min(2048, full.NumRows()-off)
			slice := full.NewSlice(off, off+n)
			chunk, ed := bindings.DataChunkFromArrow(rc, slice, converted)
			slice.Release()
			if bindings.ErrorDataHasError(ed) {
				msg := bindings.ErrorDataMessage(ed)
				bindings.DestroyErrorData(&ed)
				full.Release()
				return fmt.Errorf("planner: convert a record for %s: %s", name, msg)
			}
			bindings.DestroyErrorData(&ed)
			state := bindings.AppendDataChunk(app, chunk)
			bindings.DestroyDataChunk(&chunk)
			if state == bindings.StateError {
				full.Release()
				return fmt.Errorf("planner: append to %s: %s", name, bindings.AppenderError(app))
			}
		}
		full.Release()
	}
	if bindings.AppenderClose(app) == bindings.StateError {
		return fmt.Errorf("planner: commit appended rows of %s: %s", name, bindings.AppenderError(app))
	}
	return nil
}

// withBatchID is rec with the batch ID and row number columns.
func withBatchID(sch *arrow.Schema, rec arrow.RecordBatch, id uint64) arrow.RecordBatch {
	b := array.NewUint64Builder(memory.DefaultAllocator)
	defer b.Release()
	r := array.NewUint32Builder(memory.DefaultAllocator)
	defer r.Release()
	b.Reserve(int(rec.NumRows()))
	r.Reserve(int(rec.NumRows()))
	for i := int64(0); i < rec.NumRows(); i++ {
		b.UnsafeAppend(id)
		r.UnsafeAppend(uint32(i))
	}
	cols := append(append([]arrow.Array(nil), rec.Columns()...), b.NewArray(), r.NewArray())
	return array.NewRecordBatch(sch, cols, rec.NumRows())
}

// idPredicate renders a filter on the batch column for a set of IDs,
// collapsing consecutive IDs into ranges.
func idPredicate(ids []uint64) string {
	if len(ids) == 0 {
		return "false"
	}
	s := append([]uint64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var parts []string
	var singles []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%s BETWEEN %d AND %d", batchColumn, s[i], s[j]))
		} else {
			for k := i; k <= j; k++ {
				singles = append(singles, fmt.Sprint(s[k]))
			}
		}
		i = j + 1
	}
	if len(singles) > 0 {
		parts = append(parts, fmt.Sprintf("%s IN (%s)", batchColumn, strings.Join(singles, ",")))
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// epochs tracks running queries so that mirrored rows are deleted only after
// every query that might read them has finished.
type epochs struct {
	mu      sync.Mutex
	counter uint64
	active  map[uint64]int
}

// pin registers a query; it must happen before the query takes its snapshot.
func (e *epochs) pin() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active == nil {
		e.active = map[uint64]int{}
	}
	e.counter++
	e.active[e.counter]++
	return e.counter
}

func (e *epochs) unpin(x uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active[x]--; e.active[x] <= 0 {
		delete(e.active, x)
	}
}

func (e *epochs) current() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counter
}

// oldest returns the smallest pinned epoch, or one past the current epoch
// when nothing is pinned.
func (e *epochs) oldest() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.counter + 1
	for x := range e.active {
		o = min(o, x)
	}
	return o
}
