package ingest

// DELETE and UPDATE statements logged as SQL text (WAL entry kind 2), as
// versions of tsdb before their effect was logged wrote them: replay
// compiles each again through the DMLCompiler the server gives and applies
// it in its place among the inserts. Nothing writes such entries any more
// (a DELETE or UPDATE now logs the rows it deletes, kindDeletes, and the
// new rows it writes); they are read so that a data directory a crash left
// with them loses no acknowledged statement.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/internal/schema"
	"tsdb/membuffer"
	"tsdb/wal"
)

// DML is a DELETE or UPDATE compiled for one table. Ingest decides where it
// applies (which batches and files, in which order with inserts) and how the
// result becomes durable; the DML only computes new rows.
type DML interface {
	// Columns is how many of the table's columns the statement was
	// compiled for; a table that gained columns since needs a new DML.
	Columns() int
	// TimeRange bounds the rows the statement may change (inclusive UTC
	// micros): batches and files outside are not opened.
	TimeRange() (lo, hi int64)
	// ApplyBatches evaluates the statement over buffered batches. It
	// returns the new records of the batches it changed (a record may have
	// no rows) and the number of rows deleted or updated.
	ApplyBatches(ctx context.Context, batches []membuffer.Batch) (map[uint64]arrow.RecordBatch, int64, error)
	// ApplyFile evaluates the statement over data file f, readable at
	// path, without the rows deleted (a deletion vector's, by position);
	// columns the file lacks read as NULL. changed == 0 means the file is
	// left as it is.
	ApplyFile(ctx context.Context, path string, f delta.File, deleted delta.RowSet) (rec arrow.RecordBatch, changed int64, err error)
}

// DMLCompiler turns the SQL text of a logged DELETE/UPDATE back into a DML
// (at execution and at WAL replay).
type DMLCompiler func(ctx context.Context, table schema.Table, sql string) (DML, error)

// replayDML re-applies a logged DELETE/UPDATE in its place among the
// inserts: to the replayed buffered rows, and to the Delta files unless
// the table's dml txn shows that part was committed.
func (s *Store) replayDML(ctx context.Context, seq uint64, p []byte, stale *[]uint64, held *int) error {
	e, err := decodeDMLEntry(p)
	if err != nil {
		return &wal.CorruptionError{Seq: seq, Err: err}
	}
	ts := s.replayTable(seq, e.table, e.tableID, stale, held)
	if ts == nil {
		return nil
	}
	if s.opts.CompileDML == nil {
		return fmt.Errorf("wal entry %d is a %s but no DML compiler is configured", seq, e.op)
	}
	dml, err := s.opts.CompileDML(ctx, ts.sch(), e.sql)
	if err != nil {
		return fmt.Errorf("wal entry %d: compile %s: %w", seq, e.op, err)
	}
	ts.flushMu.Lock()
	batches, _ := s.buf.Snapshot(e.table) // replay applies in log order: all are before it
	_, err = s.applyDML(ctx, ts, seq, e.op, e.sql, dml, batches)
	ts.flushMu.Unlock()
	if err != nil {
		var ue *UnavailableError
		if !errors.As(err, &ue) {
			return fmt.Errorf("wal entry %d: replay %s: %w", seq, e.op, err)
		}
		// A file the statement must rewrite is damaged: without the
		// statement the table's rows are not what was acknowledged, so
		// the whole table is out of service until the next start after
		// a repair. Its entries stay in the WAL.
		s.logger.Error("a logged DELETE/UPDATE cannot be replayed: its table is unavailable", "seq", seq, "op", e.op, "err", err)
		batches, _ := s.buf.Snapshot(e.table)
		for _, b := range batches {
			s.walLag.Add(-b.WALBytes)
		}
		s.buf.DropTable(e.table)
		s.mu.Lock()
		delete(s.tables, e.table)
		s.markUnavailable(&UnavailableError{Table: e.table, File: ue.File, Err: fmt.Errorf("the %s logged as WAL entry %d needs it: %w", e.op, seq, ue.Err), Whole: true})
		s.mu.Unlock()
		*held++
		return nil
	}
	ts.addPendingDML(seq)
	return nil
}

// applyDML changes the buffered batches (those logged before the
// statement: batches) and the Delta files the statement may touch, then
// publishes both at once. The caller holds the table's flush lock. During
// replay the Delta part is skipped when the table's dml txn shows it was
// committed already. Files that cannot match (by their time statistics)
// are not opened.
func (s *Store) applyDML(ctx context.Context, ts *tableState, seq uint64, op, text string, dml DML, batches []membuffer.Batch) (int64, error) {
	if ts.isDropped() {
		return 0, noSuchTable(ts.sch().Name)
	}
	// An ALTER TABLE ADD COLUMN between compiling and now: evaluated with
	// the old columns, the statement would drop the new ones' values.
	dml, err := s.recompileDML(ctx, ts, text, dml)
	if err != nil {
		return 0, err
	}
	name := ts.sch().Name
	lo, hi := dml.TimeRange()
	var cand []membuffer.Batch
	for _, b := range batches {
		if b.Rec.NumRows() > 0 && b.MinTime <= hi && b.MaxTime >= lo {
			cand = append(cand, b)
		}
	}
	var changed int64
	newRecs := map[uint64]arrow.RecordBatch{}
	if len(cand) > 0 {
		recs, n, err := dml.ApplyBatches(ctx, cand)
		if err != nil {
			return 0, err
		}
		for id, r := range recs {
			if err := s.validate(ts.sch(), r); err != nil {
				return 0, err
			}
			newRecs[id] = r
		}
		changed += n
	}

	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	if v, ok := snap.Txns[s.dmlAppID()]; !ok || uint64(v) < seq {
		// Another writer on shared storage may change the same files
		// meanwhile; the statement is then evaluated again over the
		// table as that writer left it (see delta.ErrConflict).
		var fileChanged int64
		for attempt := 0; ; attempt++ {
			var err error
			snap, fileChanged, err = s.applyDMLToFiles(ctx, ts, snap, seq, op, dml, lo, hi)
			if err == nil {
				break
			}
			if !errors.Is(err, delta.ErrConflict) {
				return 0, err
			}
			if attempt >= 4 {
				return 0, wrapKind(KindConflict, fmt.Errorf("could not serialize %s with another writer's commits: %w", op, err))
			}
			// Take the other writer's commits (and perhaps its columns).
			snap = ts.delta.Snapshot()
			ts.mu.Lock()
			ts.publish(snap)
			ts.mu.Unlock()
			if dml, err = s.recompileDML(ctx, ts, text, dml); err != nil {
				return 0, err
			}
		}
		changed += fileChanged
	}
	ts.mu.Lock()
	ts.publish(snap)
	s.buf.Replace(name, newRecs, func(rec arrow.RecordBatch) (int64, int64) { return timeBoundsOrEmpty(rec, ts.sch().TimeIndex) })
	ts.mu.Unlock()
	s.gate.notify()
	return changed, nil
}

// applyDMLToFiles rewrites the files of published that the statement
// changes and commits removes and adds with the statement's txn. It
// returns the snapshot to publish and the number of rows changed in files.
func (s *Store) applyDMLToFiles(ctx context.Context, ts *tableState, published *delta.Snapshot, seq uint64, op string, dml DML, lo, hi int64) (*delta.Snapshot, int64, error) {
	store := ts.delta.Store()
	var actions []delta.Action
	var written []string
	cleanup := func() {
		for _, p := range written {
			store.Delete(context.Background(), p)
		}
	}
	var changed int64
	now := time.Now().UnixMilli()
	for _, f := range published.Files {
		if f.MaxTime < lo || f.MinTime > hi {
			continue
		}
		if f.Columns > dml.Columns() {
			// A file with columns the statement does not know: another
			// writer added them. Evaluate again with its schema.
			cleanup()
			return nil, 0, fmt.Errorf("%w: %s has columns added meanwhile", delta.ErrConflict, f.Path)
		}
		if cause := ts.isDamaged(f.Path); cause != nil {
			cleanup()
			return nil, 0, &UnavailableError{Table: ts.sch().Name, File: f.Path, Err: cause}
		}
		if err := store.Fetch(ctx, f.Path); err != nil {
			cleanup()
			return nil, 0, err
		}
		if err := s.verifyBeforeRewrite(ts.sch().Name, ts, f); err != nil {
			cleanup()
			return nil, 0, err
		}
		deleted, err := ts.deletedRows(ctx, f)
		if err != nil {
			cleanup()
			return nil, 0, err
		}
		rec, n, err := dml.ApplyFile(ctx, store.LocalPath(f.Path), f, deleted)
		if err != nil {
			cleanup()
			if ue := s.CheckFile(ctx, ts.sch().Name, f.Path); ue != nil {
				return nil, 0, ue
			}
			return nil, 0, err
		}
		if n == 0 {
			continue
		}
		changed += n
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
		if rec != nil && rec.NumRows() > 0 {
			if err := s.validate(ts.sch(), rec); err != nil {
				cleanup()
				return nil, 0, err
			}
			add, err := delta.WriteDataFile(ctx, store, ts.sch(), []arrow.RecordBatch{rec})
			if err != nil {
				cleanup()
				return nil, 0, err
			}
			written = append(written, add.Path)
			actions = append(actions, delta.Action{Add: &add})
		}
	}
	// The txn is committed even when no file changed: a replay must
	// never apply this statement to files flushed after it.
	snap, err := s.commitRewrite(ctx, ts, op, seq, now, actions, cleanup)
	if err != nil {
		return nil, 0, err
	}
	return snap, changed, nil
}

// recompileDML compiles text again when the table's columns are no longer
// the ones dml was compiled for.
func (s *Store) recompileDML(ctx context.Context, ts *tableState, text string, dml DML) (DML, error) {
	cur := ts.sch()
	if dml.Columns() == len(cur.Columns) {
		return dml, nil
	}
	if s.opts.CompileDML == nil {
		return nil, errors.New("ingest: the table's columns changed and no DML compiler is configured")
	}
	return s.opts.CompileDML(ctx, cur, text)
}
