package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/internal/schema"
	"tsdb/membuffer"
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

// FileReader reads data file f of table t, readable at path, as the
// table's rows without those deleted (a deletion vector's).
type FileReader func(ctx context.Context, t schema.Table, path string, f delta.File, deleted delta.RowSet) (arrow.RecordBatch, error)

// DMLCompiler turns the SQL text of a logged DELETE/UPDATE back into a DML
// (at execution and at WAL replay).
type DMLCompiler func(ctx context.Context, table schema.Table, sql string) (DML, error)

// ExecDML logs a DELETE or UPDATE in the WAL and applies it to buffered rows
// and Delta files, in WAL order with inserts: rows inserted before it are
// changed, rows inserted after it are not, also when the WAL is replayed
// after a crash. It returns the number of rows deleted or updated. A
// statement that fails changes nothing and is removed from the WAL.
//
// Only the statement's place in the log is taken in line with inserts:
// at its turn in the sequencer it takes the buffered batches that hold
// the rows logged before it, and the sequencer goes on. Evaluating the
// statement over those batches and rewriting the files it touches happen
// after, while inserts of every table, this one included, go on; the
// table's flush lock, held from before the statement is logged until it
// is published, keeps those batches and files from being flushed,
// compacted or changed by another statement meanwhile. Readers see the
// statement whole or not at all: both layers are published at once.
func (s *Store) ExecDML(ctx context.Context, table, sqlText, op string, dml DML) (int64, error) {
	ts, err := s.lockTable(ctx, table)
	if err != nil {
		return 0, err
	}
	defer ts.flushMu.Unlock()
	if err := ts.rowChangeBlock(); err != nil {
		return 0, err
	}
	payload, err := encodeDMLEntry(dmlEntry{table: table, tableID: ts.sch().ID, op: op, sql: sqlText})
	if err != nil {
		return 0, err
	}
	first, err := s.wal.Append(ctx, [][]byte{payload})
	if first == 0 {
		return 0, s.storageError(err)
	}
	if err != nil {
		s.seq.run(first, 1, func() {})
		return 0, s.storageError(err)
	}
	var before []membuffer.Batch
	s.seq.run(first, 1, func() {
		// Every entry logged before this one is applied, none after.
		before, _ = s.buf.Snapshot(table)
	})
	n, applyErr := s.applyDML(ctx, ts, first, op, sqlText, dml, before, false)
	if applyErr != nil {
		// Nothing was published; the entry must not be replayed.
		if err := s.wal.Delete(context.Background(), []uint64{first}); err != nil {
			s.logger.Error("cannot remove failed DML from the WAL; it would be replayed", "seq", first, "err", err)
		}
		return 0, applyErr
	}
	ts.addPendingDML(first)
	s.dropObsoleteDML(ctx, ts)
	return n, nil
}

func (ts *tableState) addPendingDML(seq uint64) {
	ts.schedMu.Lock()
	defer ts.schedMu.Unlock()
	ts.pendingDML = append(ts.pendingDML, seq)
}

// dropObsoleteDML deletes logged DML entries that no replay can need any
// more: every insert logged before them is flushed.
func (s *Store) dropObsoleteDML(ctx context.Context, ts *tableState) {
	batches, _ := s.buf.Snapshot(ts.sch().Name)
	minSeq := uint64(1<<64 - 1)
	for _, b := range batches {
		minSeq = min(minSeq, b.Seq)
	}
	ts.schedMu.Lock()
	var drop, keep []uint64
	for _, q := range ts.pendingDML {
		if q < minSeq {
			drop = append(drop, q)
		} else {
			keep = append(keep, q)
		}
	}
	ts.pendingDML = keep
	ts.schedMu.Unlock()
	if len(drop) > 0 {
		if err := s.wal.Delete(ctx, drop); err != nil {
			s.logger.Warn("cannot delete obsolete DML entries; replay will re-check them", "err", err)
		}
	}
}

// applyDML changes the buffered batches (those logged before the
// statement: batches) and the Delta files the statement may touch, then
// publishes both at once. The caller holds the table's flush lock. During
// replay the Delta part is skipped when the table's dml txn shows it was
// committed already. Files that cannot match (by their time statistics)
// are not opened.
func (s *Store) applyDML(ctx context.Context, ts *tableState, seq uint64, op, text string, dml DML, batches []membuffer.Batch, replay bool) (int64, error) {
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
	if v, ok := snap.Txns[s.dmlAppID()]; !replay || !ok || uint64(v) < seq {
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

func timeBoundsOrEmpty(rec arrow.RecordBatch, idx int) (int64, int64) {
	if rec.NumRows() == 0 {
		return 1, 0 // an empty range overlaps nothing
	}
	return timeBounds(rec, idx)
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

// commitRewrite commits the files a DELETE/UPDATE (or a transaction's
// deletes) rewrote, with the dml txn at its WAL sequence seq. When that
// txn is committed already (a replay), the new files go (cleanup) and the
// table's snapshot is returned as it is.
func (s *Store) commitRewrite(ctx context.Context, ts *tableState, op string, seq uint64, now int64, actions []delta.Action, cleanup func()) (*delta.Snapshot, error) {
	actions = append(actions, delta.Action{Txn: &delta.Txn{AppID: s.dmlAppID(), Version: int64(seq), LastUpdated: now}})
	snap, err := ts.delta.Commit(ctx, op, actions)
	if errors.Is(err, delta.ErrTxnAlreadyCommitted) {
		cleanup()
		return ts.delta.Snapshot(), nil
	}
	if err != nil {
		// After an error other than a refusal the commit may have landed:
		// its files stay (VACUUM deletes them if they turn out orphans).
		if delta.Refused(err) {
			cleanup()
		}
		return nil, err
	}
	return snap, nil
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
