package ingest

// A DELETE's or UPDATE's effect on data files: the files holding deleted
// rows rewritten without them (and an UPDATE's new rows written beside),
// committed with the table's dml txn, and taken back when another table of
// the same transaction fails to commit. CommitTx (txn.go) and replay call
// it; retention's position deletes come through CommitTx too.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/delta"
	"tsdb/internal/arrowutil"
)

// applyDeletes works out a table's part of a transaction's deletions: the
// buffered batches' new records (by batch ID, for membuffer.Replace) and,
// unless the table's dml txn shows it done (replay), the data files
// rewritten without the deleted rows, committed with the dml txn at
// sequence seq. The caller holds the table's write lock and publishes.
func (s *Store) applyDeletes(ctx context.Context, ts *tableState, seq uint64, part TxTable, replay bool) (*delta.Snapshot, map[uint64]arrow.RecordBatch, error) {
	recs, rw, err := s.prepareDeletes(ctx, ts, seq, part, replay)
	if err != nil || rw == nil {
		return nil, recs, err
	}
	next, err := rw.commit(ctx)
	if err != nil {
		return nil, nil, err
	}
	return next, recs, nil
}

// rewrite is a table's data files rewritten for a transaction's deletions,
// written but not committed yet: a transaction over several tables
// prepares every table's before it commits any, so that what can fail
// while reading and writing files (a damaged file, another writer's file
// that cannot be rewritten, a full disk) fails the transaction before any
// table's commit landed.
type rewrite struct {
	s       *Store
	ts      *tableState
	seq     uint64
	now     int64
	actions []delta.Action
	removed []delta.Add // the files actions removes, for revert
	cleanup func()      // deletes the files written
}

// revert takes back a rewrite that landed in its table's log (snap)
// because another table of the transaction failed to commit: one commit
// adds the files it removed back and removes the files it added, and is
// published, so that the failed transaction leaves the table as it was
// (other readers of the log may have seen the rewrite meanwhile). A
// revert that fails is logged: the table keeps its part.
func (rw *rewrite) revert(ctx context.Context) {
	now := rw.s.opts.Now().UnixMilli()
	// Recorded as taken back: a replay of the transaction's entries (a
	// crash before the WAL lets go of them) then redoes the rewrite
	// instead of taking the dml txn's word for it.
	actions := []delta.Action{{Txn: &delta.Txn{AppID: rw.s.undoneAppID(), Version: int64(rw.seq), LastUpdated: now}}}
	name := rw.ts.sch().Name
	store := rw.ts.delta.Store()
	for i := range rw.removed {
		add := rw.removed[i]
		// A VACUUM with no deleted-file retention may have deleted it
		// since the rewrite removed it: adding it back would name a
		// missing file, so the rewrite stays.
		if err := store.Fetch(context.WithoutCancel(ctx), add.Path); err != nil {
			rw.s.logger.Error("a failed transaction's DELETE/UPDATE stays in this table's files: a file it removed cannot be added back", "table", name, "file", add.Path, "err", err)
			return
		}
		if _, err := os.Stat(store.LocalPath(add.Path)); err != nil {
			rw.s.logger.Error("a failed transaction's DELETE/UPDATE stays in this table's files: a file it removed cannot be added back", "table", name, "file", add.Path, "err", err)
			return
		}
		add.DataChange = true
		actions = append(actions, delta.Action{Add: &add})
	}
	for _, a := range rw.actions {
		if a.Add != nil {
			actions = append(actions, delta.Action{Remove: delta.RemoveOf(*a.Add, now, true)})
		}
	}
	snap, err := rw.ts.delta.Commit(context.WithoutCancel(ctx), "DELETE", actions)
	if err != nil {
		rw.s.logger.Error("a failed transaction's DELETE/UPDATE may stay in this table's files: taking it back failed", "table", name, "err", err)
		return
	}
	rw.ts.mu.Lock()
	rw.ts.publish(snap)
	rw.ts.mu.Unlock()
	rw.s.logger.Warn("a failed transaction's DELETE/UPDATE was taken back from this table's files after another table's commit failed", "table", name)
}

// commit commits the rewrite with the table's dml txn at its sequence.
func (rw *rewrite) commit(ctx context.Context) (*delta.Snapshot, error) {
	return rw.s.commitRewrite(ctx, rw.ts, "DELETE", rw.seq, rw.now, rw.actions, rw.cleanup)
}

// prepareDeletes is applyDeletes without the commit: the buffered
// batches' new records and the rewrite to commit (nil when no file
// changes).
func (s *Store) prepareDeletes(ctx context.Context, ts *tableState, seq uint64, part TxTable, replay bool) (map[uint64]arrow.RecordBatch, *rewrite, error) {
	name := ts.sch().Name
	recs := map[uint64]arrow.RecordBatch{}
	if len(part.BatchDeletes) > 0 {
		batches, _ := s.buf.Snapshot(name)
		for _, b := range batches {
			rows, ok := part.BatchDeletes[b.Seq]
			if !ok {
				continue
			}
			rec, err := withoutRows(b.Rec, rows)
			if err != nil {
				return nil, nil, err
			}
			recs[b.ID] = rec
		}
		// A batch the log names that is not buffered any more was flushed
		// after the transaction committed (replay), with its rows gone.
	}
	if len(part.FileDeletes) == 0 {
		return recs, nil, nil
	}
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	if replay && s.rewriteLanded(snap, seq) {
		return recs, nil, nil // the files were rewritten before the crash
	}
	store := ts.delta.Store()
	var actions []delta.Action
	var removed []delta.Add // the files actions removes, as they were added
	var written []string
	cleanup := func() {
		for _, p := range written {
			store.Delete(context.Background(), p)
		}
	}
	now := time.Now().UnixMilli()
	paths := make([]string, 0, len(part.FileDeletes))
	for p := range part.FileDeletes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		i := sort.Search(len(snap.Files), func(i int) bool { return snap.Files[i].Path >= path })
		if i == len(snap.Files) || snap.Files[i].Path != path {
			cleanup()
			return nil, nil, fmt.Errorf("%w: %s is no longer in table %s", delta.ErrConflict, path, name)
		}
		f := snap.Files[i]
		if len(part.FileDeletes[path]) == 0 {
			// Every row: nothing to read or write.
			actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
			removed = append(removed, f.Add)
			continue
		}
		if cause := ts.isDamaged(f.Path); cause != nil {
			cleanup()
			return nil, nil, &UnavailableError{Table: name, File: f.Path, Err: cause}
		}
		if err := store.Fetch(ctx, f.Path); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := s.verifyBeforeRewrite(name, ts, f); err != nil {
			cleanup()
			return nil, nil, err
		}
		kept, err := s.keptRows(ctx, ts, f, part.FileDeletes[path])
		if err != nil {
			cleanup()
			if ue := s.CheckFile(ctx, name, f.Path); ue != nil {
				return nil, nil, ue
			}
			return nil, nil, err
		}
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
		removed = append(removed, f.Add)
		if kept.NumRows() > 0 {
			add, err := delta.WriteDataFile(ctx, store, ts.sch(), []arrow.RecordBatch{kept})
			kept.Release()
			if err != nil {
				cleanup()
				return nil, nil, err
			}
			written = append(written, add.Path)
			actions = append(actions, delta.Action{Add: &add})
		} else {
			kept.Release()
		}
	}
	if len(part.FileInserts) > 0 {
		// Live, or replayed because this commit did not land (replay
		// skips these rows' own entries when it did).
		add, err := delta.WriteDataFile(ctx, store, ts.sch(), part.FileInserts)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		written = append(written, add.Path)
		actions = append(actions, delta.Action{Add: &add})
	}
	return recs, &rewrite{s: s, ts: ts, seq: seq, now: now, actions: actions, removed: removed, cleanup: cleanup}, nil
}

// keptRows reads data file f of the table without the rows at the given
// (ascending) positions and those its deletion vector deletes; another
// writer's file by its columns' names (delta.ReadFileByName).
func (s *Store) keptRows(ctx context.Context, ts *tableState, f delta.File, rows []int64) (arrow.RecordBatch, error) {
	store := ts.delta.Store()
	dvRows, err := ts.deletedRows(ctx, f)
	if err != nil {
		return nil, err
	}
	// Rows another writer deleted by vector stay deleted in the copy.
	gone := withDeletedRows(rows, dvRows)
	if delta.OwnLayout(f) && f.NumRecords > 0 && int64(len(gone)) == f.NumRecords && gone[len(gone)-1] == f.NumRecords-1 {
		// Every row goes (its checksum verified, the file's statistics
		// are tsdb's own): nothing to read.
		b := array.NewRecordBuilder(memory.DefaultAllocator, ts.sch().ArrowSchema())
		defer b.Release()
		return b.NewRecordBatch(), nil
	}
	if !delta.OwnLayout(f) {
		set := make([]uint64, len(gone))
		for i, r := range gone {
			set[i] = uint64(r)
		}
		rec, err := delta.ReadFileByName(ctx, store, ts.sch(), f.Path, delta.NewRowSet(set...))
		var fe *delta.ForeignFileError
		if errors.As(err, &fe) {
			return nil, &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("cannot rewrite another writer's data file of table %s: %v", ts.sch().Name, err),
				Hint: "Change the rows of that file with the writer that wrote it; the file stays as it is.", Err: err}
		}
		return rec, err
	}
	in, err := delta.ReadDataFile(ctx, store, ts.sch(), f.Path)
	if err != nil {
		return nil, err
	}
	defer arrowutil.ReleaseAll(in)
	return withoutRowsOf(ts.sch().ArrowSchema(), in, gone)
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

// withoutRows is rec without the rows at the given (ascending) indexes.
func withoutRows(rec arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
	return withoutRowsOf(rec.Schema(), []arrow.RecordBatch{rec}, rows)
}

// withoutRowsOf is the records' rows, numbered across them in order,
// without those at the given (ascending) numbers, as one record of sch.
func withoutRowsOf(sch *arrow.Schema, recs []arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
	var keep []arrowutil.RowRef
	var at int64
	k := 0
	for ri, rec := range recs {
		for r := range int(rec.NumRows()) {
			for k < len(rows) && rows[k] < at {
				k++
			}
			if k >= len(rows) || rows[k] != at {
				keep = append(keep, arrowutil.RowRef{Rec: ri, Row: r})
			}
			at++
		}
	}
	padded := make([]arrow.RecordBatch, len(recs))
	for i, r := range recs {
		padded[i] = arrowutil.Pad(sch, r)
	}
	defer arrowutil.ReleaseAll(padded)
	return arrowutil.Take(sch, padded, keep)
}
