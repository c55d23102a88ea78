package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"tsdb/delta"
)

// Tables shared with other Delta writers may ask for protocol features
// tsdb does not implement as a writer (delta.FeatureError). Such a table
// stays readable and refuses every change up front, before a row is
// taken into the WAL: rows accepted for a table that can never be
// committed to would wait in the WAL for good.

// writeBlock returns the SQL error of a table tsdb must not write, or nil.
// Every write asks: the answer is kept per published snapshot (reading
// the protocol parses the schema).
func (ts *tableState) writeBlock() error {
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	if snap == nil {
		return nil
	}
	if c := ts.blocked.Load(); c != nil && c.snap == snap {
		return c.err
	}
	err := snap.Writable()
	if err != nil {
		err = readOnlyError(ts.sch().Name, err)
	}
	ts.blocked.Store(&writeBlockResult{snap: snap, err: err})
	return err
}

// writeBlockResult is writeBlock's answer for one snapshot.
type writeBlockResult struct {
	snap *delta.Snapshot
	err  error
}

// rowChangeBlock is writeBlock, and for a table another writer made
// append-only (delta.appendOnly) the refusal of changes to its rows:
// DELETE, UPDATE, retention.
func (ts *tableState) rowChangeBlock() error {
	if err := ts.writeBlock(); err != nil {
		return err
	}
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	if snap != nil && delta.AppendOnly(snap.Metadata) {
		return &Error{Kind: KindUnsupported,
			Msg: "table \"" + ts.sch().Name + "\" is append-only (delta.appendOnly): rows can be added, not changed or deleted"}
	}
	return nil
}

// readOnlyError is the SQL error of a write to a table whose protocol
// tsdb cannot write.
func readOnlyError(table string, cause error) error {
	var fe *delta.FeatureError
	msg := cause.Error()
	if errors.As(cause, &fe) {
		msg = fe.Error()
	}
	return &Error{Kind: KindUnsupported, Msg: "table \"" + table + "\" is read-only in tsdb: " + msg,
		Hint: "Another Delta writer gave the table this feature; change the table with that writer.", Err: cause}
}

// deletedRows returns the rows f's deletion vector deletes (empty without
// one). Vectors are immutable, so each is read once per table and kept
// while a snapshot of the table still names it.
func (ts *tableState) deletedRows(ctx context.Context, f delta.File) (delta.RowSet, error) {
	dv := f.DeletionVector
	if dv == nil {
		return delta.RowSet{}, nil
	}
	id := dv.UniqueID()
	ts.dvMu.Lock()
	rows, ok := ts.dvCache[id]
	ts.dvMu.Unlock()
	if ok {
		return rows, nil
	}
	rows, err := delta.LoadDeletionVector(ctx, ts.delta.Store(), dv)
	if err != nil {
		return delta.RowSet{}, fmt.Errorf("ingest: %s: deletion vector of %s: %w", ts.sch().Name, f.Path, err)
	}
	ts.dvMu.Lock()
	defer ts.dvMu.Unlock()
	if ts.dvCache == nil || len(ts.dvCache) >= maxCachedVectors {
		ts.dvCache = map[string]delta.RowSet{}
	}
	ts.dvCache[id] = rows
	return rows, nil
}

// maxCachedVectors bounds a table's cache of decoded deletion vectors;
// beyond it the cache starts over.
const maxCachedVectors = 4096

// withDeletedRows merges the rows a deletion vector deletes into rows
// (ascending), ascending.
func withDeletedRows(rows []int64, dv delta.RowSet) []int64 {
	if dv.Len() == 0 {
		return rows
	}
	out := make([]int64, 0, len(rows)+int(dv.Len()))
	out = append(out, rows...)
	dv.Runs(func(first, last uint64) {
		for r := first; r <= last; r++ {
			out = append(out, int64(r))
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}
