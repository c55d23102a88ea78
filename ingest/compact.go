package ingest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/internal/arrowutil"
	"tsdb/internal/fault"
	"tsdb/internal/schema"
)

// Compaction merges the small files that flushes, late rows and DELETE /
// UPDATE leave behind into files of about TargetFileSize, in file order
// (hour, cluster column, time: see delta/order.go) and not overlapping in
// time, each merge one Delta commit of removes and an add with dataChange
// false. It reads and writes without holding the table's flush lock, so
// inserts and flushes go on; only the commit takes the lock, to check that
// no DELETE/UPDATE removed an input file meanwhile (the merge is then
// dropped). Removed files stay on disk for queries still reading them.
// A crash before the commit leaves an unreferenced file and the table as it
// was; after it, the merged table.

// CompactResult says what a compaction did.
type CompactResult struct {
	FilesBefore, FilesAfter int
	Merged                  int // input files replaced
	Written                 int // files written
	Dropped                 int // merges dropped because a DML changed an input
	Deleted                 int // removed files past retention, gone from storage (Vacuum)
	LogEntriesDeleted       int // old commits and checkpoints deleted (Vacuum)
	OrphansDeleted          int // files no commit refers to, deleted (Vacuum)
}

// compactGroups picks runs of adjacent small files (by time) to merge: a
// run grows while it stays under target, and a file that overlaps the run
// in time always joins it, so merged files do not overlap each other.
// Files of at least a quarter of target are left alone, which bounds how
// often a row is rewritten.
func compactGroups(files []delta.File, target int64) [][]delta.File {
	sorted := append([]delta.File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].MinTime != sorted[j].MinTime {
			return sorted[i].MinTime < sorted[j].MinTime
		}
		return sorted[i].Path < sorted[j].Path
	})
	var groups [][]delta.File
	var cur []delta.File
	var size, maxTime int64
	flush := func() {
		if len(cur) >= 2 {
			groups = append(groups, cur)
		}
		cur, size = nil, 0
	}
	for _, f := range sorted {
		small := f.Size < target/4
		overlaps := len(cur) > 0 && f.MinTime <= maxTime
		switch {
		case overlaps:
			// Must join, whatever its size.
		case !small:
			flush()
			continue
		case size+f.Size > target:
			flush()
		}
		if len(cur) == 0 || f.MaxTime > maxTime {
			maxTime = f.MaxTime
		}
		cur = append(cur, f)
		size += f.Size
	}
	flush()
	return groups
}

// Compact merges the table's small files (see compactGroups). One table is
// compacted at a time; concurrent calls for it wait.
func (s *Store) Compact(ctx context.Context, name string) (CompactResult, error) {
	var res CompactResult
	ts, err := s.state(name)
	if err != nil {
		return res, err
	}
	if err := ts.writeBlock(); err != nil {
		return res, err
	}
	ts.compactMu.Lock()
	defer ts.compactMu.Unlock()
	ts.mu.RLock()
	snap := ts.published
	ts.mu.RUnlock()
	res.FilesBefore, res.FilesAfter = len(snap.Files), len(snap.Files)
	store := ts.delta.Store()
	// Files of other layouts and files with deletion vectors are
	// rewritten in tsdb's first (one each), so that they merge.
	for _, f := range snap.Files {
		if ts.isDamaged(f.Path) != nil || (f.DeletionVector == nil && delta.OwnLayout(f)) || f.Size > s.opts.TargetFileSize || ts.unconvertible[f.Path] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		rewritten, err := s.normalizeFile(ctx, ts, f)
		var fe *delta.ForeignFileError
		if errors.As(err, &fe) {
			// Data files never change: not read again.
			if ts.unconvertible == nil {
				ts.unconvertible = map[string]bool{}
			}
			ts.unconvertible[f.Path] = true
			s.logger.Warn("another writer's file stays as it is: it cannot be rewritten in tsdb's layout without changing a value", "table", name, "file", f.Path, "err", err)
			continue
		}
		if err != nil {
			s.metrics.compactionErrors.Inc()
			s.logger.Warn("rewriting another writer's file in tsdb's layout failed; the file stays as it is", "table", name, "file", f.Path, "err", err)
			continue
		}
		if rewritten {
			res.Merged++
			res.Written++
		}
	}
	ts.mu.RLock()
	snap = ts.published
	ts.mu.RUnlock()
	// Damaged files stay as they are (see damage.go); the rest is merged
	// around them. So do files with a deletion vector (another writer's
	// row deletes) and files of other layouts (another writer's; see
	// delta.OwnLayout): the merge reads files whole and by position.
	files := make([]delta.File, 0, len(snap.Files))
	for _, f := range snap.Files {
		if ts.isDamaged(f.Path) == nil && f.DeletionVector == nil && delta.OwnLayout(f) {
			files = append(files, f)
		}
	}
	var errs []error
	for _, group := range compactGroups(files, s.opts.TargetFileSize) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var add delta.Add
		err := s.verifyGroup(name, ts, group)
		if err == nil {
			add, err = s.mergeGroup(ctx, store, ts.sch(), group)
		}
		if err != nil {
			// One group that cannot be merged (a damaged or foreign
			// file) stops neither the others nor the rest of VACUUM.
			for _, f := range group {
				if ue := s.CheckFile(ctx, name, f.Path); ue != nil {
					err = ue
					break
				}
			}
			s.metrics.compactionErrors.Inc()
			s.logger.Warn("compaction of a group of files failed; the files stay as they are", "table", name, "files", len(group), "err", err)
			errs = append(errs, fmt.Errorf("ingest: compact %s: %w", name, err))
			continue
		}
		add.DataChange = false
		if err := s.faults.Hit(fault.CompactAfterWrite, name); err != nil {
			store.Delete(context.Background(), add.Path)
			return res, err
		}
		committed, err := s.commitCompaction(ctx, ts, group, add)
		if err != nil {
			// The commit may have landed (its answer was lost): the file
			// stays, and VACUUM deletes it once it is an old orphan.
			return res, err
		}
		if !committed {
			store.Delete(context.Background(), add.Path)
			res.Dropped++
			continue
		}
		res.Merged += len(group)
		res.Written++
		res.FilesAfter -= len(group) - 1
		s.metrics.compactions.Inc()
		s.metrics.compactedFiles.Add(float64(len(group)))
	}
	if res.Written > 0 {
		s.logger.Info("compacted", "table", name, "files_before", res.FilesBefore, "files_after", res.FilesAfter, "merged", res.Merged, "written", res.Written)
	}
	return res, errors.Join(errs...)
}

// verifyGroup checks the files of a merge (verifyBeforeRewrite).
func (s *Store) verifyGroup(name string, ts *tableState, group []delta.File) error {
	for _, f := range group {
		if err := s.verifyBeforeRewrite(name, ts, f); err != nil {
			return err
		}
	}
	return nil
}

// commitCompaction swaps group for add in one commit, unless a DELETE or
// UPDATE (of this or another writer) removed one of the group's files
// since the merge read them.
func (s *Store) commitCompaction(ctx context.Context, ts *tableState, group []delta.File, add delta.Add) (bool, error) {
	// A transaction that deleted rows of these files holds the lock until
	// it ends, naming the rows by their place in them: the merge is
	// dropped and done again later.
	if !ts.flushMu.TryLock() {
		return false, nil
	}
	defer ts.flushMu.Unlock()
	if ts.isDropped() {
		return false, nil
	}
	now := time.Now().UnixMilli()
	actions := make([]delta.Action, 0, len(group)+1)
	for _, f := range group {
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, false)})
	}
	actions = append(actions, delta.Action{Add: &add})
	snap, err := ts.delta.Commit(ctx, "OPTIMIZE", actions)
	if err != nil {
		if errors.Is(err, delta.ErrConflict) {
			// A DELETE/UPDATE (here or by another writer) or another
			// compaction removed an input first (delta's conflict check):
			// dropping this merge loses nothing.
			return false, nil
		}
		return false, fmt.Errorf("ingest: commit compaction of %s: %w", ts.sch().Name, err)
	}
	s.faults.Hit(fault.CompactAfterCommit, ts.sch().Name)
	ts.mu.Lock()
	ts.publish(snap)
	ts.mu.Unlock()
	return true, nil
}

// normalizeFile rewrites one file of another layout, or with a deletion
// vector, as a file of tsdb's (the table's columns in order, file order,
// no deleted rows) and swaps the two in one commit, the vector named in
// the remove. It reports whether the swap committed.
func (s *Store) normalizeFile(ctx context.Context, ts *tableState, f delta.File) (bool, error) {
	store := ts.delta.Store()
	if err := store.Fetch(ctx, f.Path); err != nil {
		return false, err
	}
	deleted, err := ts.deletedRows(ctx, f)
	if err != nil {
		return false, err
	}
	sch := ts.sch()
	rec, err := delta.ReadFileByName(ctx, store, sch, f.Path, deleted)
	if err != nil {
		return false, err
	}
	defer rec.Release()
	if err := s.validate(sch, rec); err != nil {
		return false, err
	}
	add, err := delta.WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		return false, err
	}
	add.DataChange = false
	committed, err := s.commitCompaction(ctx, ts, []delta.File{f}, add)
	if err != nil || !committed {
		store.Delete(context.Background(), add.Path)
	}
	return committed, err
}

// mergeGroup writes the rows of a group of files as one file in file order
// (see delta/order.go). Files in that order (every file tsdb writes) are
// merged a batch at a time; a group holding another order (files of another
// Delta writer, or written before files were clustered by host) is sorted
// together in memory.
func (s *Store) mergeGroup(ctx context.Context, store delta.Store, sch schema.Table, group []delta.File) (delta.Add, error) {
	add, err := delta.MergeDataFiles(ctx, store, sch, group)
	if !errors.Is(err, delta.ErrUnsorted) {
		if err == nil {
			s.metrics.streamedMerges.Inc()
		}
		return add, err
	}
	var batches []arrow.RecordBatch
	defer func() { arrowutil.ReleaseAll(batches) }()
	for _, f := range group {
		recs, err := delta.ReadDataFile(ctx, store, sch, f.Path)
		if err != nil {
			return delta.Add{}, err
		}
		batches = append(batches, recs...)
	}
	return delta.WriteDataFile(ctx, store, sch, batches)
}

// Vacuum drops rows past the table's retention, compacts the table, deletes
// files no commit refers to that are older than OrphanFileAge, deletes the files that left it more than
// DeletedFileRetention ago (see delta.Table.DeleteRemovedFiles) and the log
// history older than LogRetention (delta.Table.CleanLog).
//
// Each step runs whatever the one before it did: a table whose retention
// or compaction fails (a damaged file) still gets its removed files, log
// history and orphans deleted. The errors are returned together.
func (s *Store) Vacuum(ctx context.Context, name string) (CompactResult, error) {
	ts, err := s.state(name)
	if err != nil {
		return CompactResult{}, err
	}
	if err := ts.writeBlock(); err != nil {
		// Deleting files is writing (vacuumProtocolCheck): a table of
		// features tsdb lacks is vacuumed by the writer that has them.
		return CompactResult{}, err
	}
	var errs []error
	if _, err := s.EnforceRetention(ctx, name); err != nil {
		errs = append(errs, err)
	}
	res, err := s.Compact(ctx, name)
	if err != nil {
		errs = append(errs, err)
	}
	if ctx.Err() != nil {
		return res, errors.Join(append(errs, ctx.Err())...)
	}
	n, err := ts.delta.DeleteRemovedFiles(ctx, s.opts.DeletedFileRetention, s.opts.Now())
	res.Deleted = n
	if err != nil {
		errs = append(errs, fmt.Errorf("ingest: vacuum %s: %w", name, err))
	}
	if res.LogEntriesDeleted, err = ts.delta.CleanLog(ctx, s.opts.LogRetention, s.opts.Now()); err != nil {
		errs = append(errs, fmt.Errorf("ingest: vacuum %s: clean log: %w", name, err))
	}
	if res.OrphansDeleted, err = ts.delta.DeleteOrphans(ctx, s.opts.Now().Add(-s.opts.OrphanFileAge)); err != nil {
		errs = append(errs, fmt.Errorf("ingest: vacuum %s: %w", name, err))
	}
	if res.OrphansDeleted > 0 {
		s.logger.Info("deleted files no commit refers to", "table", name, "files", res.OrphansDeleted)
	}
	return res, errors.Join(errs...)
}
