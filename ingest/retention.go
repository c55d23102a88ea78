package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/delta"
	"tsdb/internal/arrowutil"
	"tsdb/membuffer"
)

// RetentionKey is the Delta configuration key that holds a table's data
// retention (a Go duration). It lives in the table's metaData so that every
// writer of a shared table applies the same one; other Delta readers ignore
// it.
const RetentionKey = "tsdb.retention"

// SetRetention sets how long a table keeps rows (by their time column);
// zero or less keeps them forever.
func (s *Store) SetRetention(ctx context.Context, name string, d time.Duration) error {
	return s.SetOptions(ctx, name, TableOptions{Retention: &d})
}

// Retention returns a table's retention; zero means forever.
func (s *Store) Retention(name string) (time.Duration, error) {
	ts, err := s.state(name)
	if err != nil {
		return 0, err
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return retentionOf(ts.published), nil
}

func retentionOf(snap *delta.Snapshot) time.Duration {
	d, err := time.ParseDuration(snap.Metadata.Configuration[RetentionKey])
	if err != nil {
		return 0
	}
	return d
}

// RetentionResult is what one EnforceRetention did.
type RetentionResult struct {
	Cutoff       time.Time // rows before it were dropped
	FilesRemoved int       // whole files taken out of the table
	Rows         int64     // rows dropped, in whole files and by the DELETE
}

// EnforceRetention drops a table's rows older than its retention. The
// cutoff is rounded down to the bucket duration: flushed files hold whole
// buckets, so most old data leaves as whole files, removed in one commit
// without being read; a file of tsdb's reaching across the cutoff is
// rewritten without its expired rows (delta.CutDataFile), swapped in one
// commit. Only another writer's file or buffered rows across the cutoff
// are handled by a logged DELETE (the same path as a user's, so it is
// ordered with inserts and survives a crash). Rows are dropped within one
// bucket duration (plus the enforcement interval) after they expire.
func (s *Store) EnforceRetention(ctx context.Context, name string) (RetentionResult, error) {
	var res RetentionResult
	ts, err := s.state(name)
	if err != nil {
		return res, err
	}
	if err := ts.rowChangeBlock(); err != nil {
		return res, err
	}
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	d := retentionOf(snap)
	if d <= 0 {
		return res, nil
	}
	// The start of the bucket the cutoff falls in (time.Truncate counts
	// from year 1, buckets from 1970: they differ for widths such as 7m).
	cut := membuffer.BucketKey(s.opts.Now().Add(-d).UnixMicro(), s.opts.BucketDuration).Start
	res.Cutoff = time.UnixMicro(cut).UTC()

	files, rows, err := s.dropExpiredFiles(ctx, ts, cut)
	res.FilesRemoved, res.Rows = files, rows
	if err != nil {
		return res, err
	}
	// Buffered buckets that end by the cutoff hold only expired rows:
	// flushed like any bucket (durably, exactly once), they become files
	// the cut drops whole. Neither step needs the SQL engine.
	expired := func(b membuffer.BucketInfo) bool { return b.Key.End <= cut }
	for _, bk := range s.buf.Buckets(name) {
		if bk.Rows > 0 && expired(bk) {
			if err := s.flushTable(ctx, ts, expired, true); err != nil {
				return res, fmt.Errorf("ingest: retention of %s: flush expired buckets: %w", name, err)
			}
			files, rows, err := s.dropExpiredFiles(ctx, ts, cut)
			res.FilesRemoved += files
			res.Rows += rows
			if err != nil {
				return res, err
			}
			break
		}
	}

	// Files of tsdb's layout across the cutoff are cut by storage too.
	files, rows, err = s.cutExpiredFiles(ctx, ts, cut)
	res.FilesRemoved += files
	res.Rows += rows
	if err != nil {
		return res, err
	}

	// Anything older left: a file of another writer (or with a deletion
	// vector) across the cutoff, or buffered rows.
	ts.mu.RLock()
	snap = ts.published
	ts.mu.RUnlock()
	older := false
	for _, f := range snap.Files {
		older = older || f.MinTime < cut
	}
	// Buckets hold rows of their own time range only, and cut is a
	// bucket start: a bucket starting before it holds only expired rows.
	for _, bk := range s.buf.Buckets(name) {
		older = older || (bk.Rows > 0 && bk.Key.Start < cut)
	}
	if !older {
		return res, s.logRetention(name, res)
	}
	// What is left is another writer's file (or one with a deletion
	// vector, or out of time order) across the cutoff, or a bucket of
	// another width across it: its expired rows are deleted by position,
	// logged and applied as a transaction's deletes are.
	n, err := s.deleteExpiredRows(ctx, name, cut)
	res.Rows += n
	if err != nil {
		return res, fmt.Errorf("ingest: retention of %s: %w", name, err)
	}
	return res, s.logRetention(name, res)
}

// deleteExpiredRows deletes the rows before cut from the table's buffered
// batches and data files, found by reading their time column, through the
// path of a transaction's deletes (CommitTx): one WAL entry names them by
// position, so a crash before the files are rewritten replays it.
func (s *Store) deleteExpiredRows(ctx context.Context, name string, cut int64) (int64, error) {
	tx := TxID(1<<63 | s.ownTx.Add(1))
	held, unlock, err := s.LockTable(ctx, tx, name)
	if err != nil {
		return 0, err
	}
	if !held {
		defer unlock()
	}
	ts, err := s.state(name)
	if err != nil {
		return 0, err
	}
	sch := ts.sch()
	part := TxTable{Table: name, TableID: sch.ID, FileDeletes: map[string][]int64{}, BatchDeletes: map[uint64][]int64{}}
	var n int64
	batches, _ := s.buf.Snapshot(name)
	for _, b := range batches {
		if b.MinTime >= cut || b.Rec.NumRows() == 0 {
			continue
		}
		rows := rowsBefore(b.Rec.Column(sch.TimeIndex).(*array.Timestamp), 0, cut)
		if len(rows) > 0 {
			part.BatchDeletes[b.Seq] = rows
			n += int64(len(rows))
		}
	}
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	for _, f := range snap.Files {
		if f.MinTime >= cut {
			continue
		}
		rows, err := s.fileRowsBefore(ctx, ts, f, cut)
		var fe *delta.ForeignFileError
		if errors.As(err, &fe) {
			// Another writer's file that cannot be rewritten without
			// changing a value keeps its expired rows; the rest of the
			// table's go.
			s.logger.Warn("retention leaves another writer's file as it is: it cannot be rewritten without changing a value", "table", sch.Name, "file", f.Path, "err", err)
			continue
		}
		if err != nil {
			return 0, err
		}
		if len(rows) > 0 {
			part.FileDeletes[f.Path] = rows
			n += int64(len(rows))
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := s.CommitTx(ctx, tx, []TxTable{part}); err != nil {
		return 0, err
	}
	return n, nil
}

// rowsBefore is the indexes, numbered from base, of the times before cut.
func rowsBefore(times *array.Timestamp, base, cut int64) []int64 {
	var rows []int64
	for i := range times.Len() {
		if times.IsValid(i) && int64(times.Value(i)) < cut {
			rows = append(rows, base+int64(i))
		}
	}
	return rows
}

// fileRowsBefore is the positions of data file f's rows before cut that
// its deletion vector does not delete already; a file of another writer
// is read by its columns' names.
func (s *Store) fileRowsBefore(ctx context.Context, ts *tableState, f delta.File, cut int64) ([]int64, error) {
	if cause := ts.isDamaged(f.Path); cause != nil {
		return nil, &UnavailableError{Table: ts.sch().Name, File: f.Path, Err: cause}
	}
	store := ts.delta.Store()
	if err := store.Fetch(ctx, f.Path); err != nil {
		return nil, err
	}
	dv, err := ts.deletedRows(ctx, f)
	if err != nil {
		return nil, err
	}
	var recs []arrow.RecordBatch
	if delta.OwnLayout(f) {
		recs, err = delta.ReadDataFile(ctx, store, ts.sch(), f.Path)
	} else {
		// Every row, so that positions are the file's.
		var rec arrow.RecordBatch
		rec, err = delta.ReadFileByName(ctx, store, ts.sch(), f.Path, delta.RowSet{})
		recs = []arrow.RecordBatch{rec}
	}
	if err != nil {
		return nil, err
	}
	defer arrowutil.ReleaseAll(recs)
	var rows []int64
	var base int64
	for _, rec := range recs {
		for _, r := range rowsBefore(rec.Column(ts.sch().TimeIndex).(*array.Timestamp), base, cut) {
			if !dv.Contains(uint64(r)) {
				rows = append(rows, r)
			}
		}
		base += rec.NumRows()
	}
	return rows, nil
}

func (s *Store) logRetention(name string, res RetentionResult) error {
	if res.Rows > 0 || res.FilesRemoved > 0 {
		s.metrics.retentionRows.Add(float64(res.Rows))
		s.logger.Info("retention dropped expired rows", "table", name, "before", res.Cutoff, "rows", res.Rows, "whole_files", res.FilesRemoved)
	}
	return nil
}

// dropExpiredFiles removes the files whose every row is before cut, in one
// commit. Nothing of them can be in the buffer or the WAL any more, so no
// WAL entry is needed: the commit alone is the durable record.
func (s *Store) dropExpiredFiles(ctx context.Context, ts *tableState, cut int64) (int, int64, error) {
	// Held by a transaction until it ends: the next round drops them.
	if !ts.flushMu.TryLock() {
		return 0, 0, nil
	}
	defer ts.flushMu.Unlock()
	if ts.isDropped() {
		return 0, 0, nil
	}
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	now := time.Now().UnixMilli()
	var actions []delta.Action
	var rows int64
	for _, f := range snap.Files {
		if f.MaxTime < cut {
			actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
			rows += f.NumRecords
		}
	}
	if len(actions) == 0 {
		return 0, 0, nil
	}
	next, err := ts.delta.Commit(ctx, "DELETE", actions)
	if errors.Is(err, delta.ErrConflict) {
		return 0, 0, nil // another writer changed these files; the next round sees how
	}
	if err != nil {
		return 0, 0, fmt.Errorf("ingest: retention of %s: %w", ts.sch().Name, err)
	}
	ts.mu.Lock()
	ts.publish(next)
	ts.mu.Unlock()
	return len(actions), rows, nil
}

// cutExpiredFiles rewrites each file of tsdb's layout that holds rows on
// both sides of cut without the rows before it, and swaps them in one
// commit (a file left empty is only removed). Like a compaction, the swap
// is dropped when a DELETE, UPDATE or transaction changed one of the files
// meanwhile: the next round cuts again. It needs no WAL entry: every row
// it drops is in a file, and the commit is the durable record.
func (s *Store) cutExpiredFiles(ctx context.Context, ts *tableState, cut int64) (int, int64, error) {
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	store := ts.delta.Store()
	sch := ts.sch()
	var actions []delta.Action
	var written []string
	var dropped int64
	now := time.Now().UnixMilli()
	cleanup := func() {
		for _, p := range written {
			store.Delete(context.Background(), p)
		}
	}
	for _, f := range snap.Files {
		if f.MinTime >= cut || f.MaxTime < cut || f.DeletionVector != nil || !delta.OwnLayout(f) || ts.isDamaged(f.Path) != nil {
			continue
		}
		if err := s.verifyBeforeRewrite(sch.Name, ts, f); err != nil {
			cleanup()
			return 0, 0, err
		}
		add, kept, err := delta.CutDataFile(ctx, store, sch, f.Path, cut)
		if errors.Is(err, delta.ErrUnsorted) {
			continue // not in file order: the DELETE below takes it
		}
		if err != nil {
			cleanup()
			return 0, 0, fmt.Errorf("ingest: retention of %s: cut %s: %w", sch.Name, f.Path, err)
		}
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
		if kept > 0 {
			written = append(written, add.Path)
			actions = append(actions, delta.Action{Add: &add})
		}
		dropped += f.NumRecords - kept
	}
	if len(actions) == 0 {
		return 0, 0, nil
	}
	// A transaction holding the table's lock names rows by their place in
	// these files: this round leaves them alone.
	if !ts.flushMu.TryLock() {
		cleanup()
		return 0, 0, nil
	}
	defer ts.flushMu.Unlock()
	if ts.isDropped() {
		cleanup()
		return 0, 0, nil
	}
	next, err := ts.delta.Commit(ctx, "DELETE", actions)
	if errors.Is(err, delta.ErrConflict) {
		cleanup()
		return 0, 0, nil
	}
	if err != nil {
		// Whether the commit landed is unknown: the new files stay, and
		// orphan cleanup takes them if no commit names them.
		return 0, 0, fmt.Errorf("ingest: retention of %s: %w", sch.Name, err)
	}
	ts.mu.Lock()
	ts.publish(next)
	ts.mu.Unlock()
	return 0, dropped, nil
}
