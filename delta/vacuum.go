package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"
)

// Housekeeping: deleting what left the table (removed data files after
// their retention, orphans no version names) and log entries no reader
// needs.

// DeleteRemovedFiles deletes the data files that left the table at least
// retention before now (their tombstones say when) and returns how many it
// deleted now or earlier. Queries that began before the removal may still read a file,
// which is why there is a retention period. A file added back since is
// kept.
func (t *Table) DeleteRemovedFiles(ctx context.Context, retention time.Duration, now time.Time) (int, error) {
	snap := t.Snapshot()
	live := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	cutoff := now.Add(-retention).UnixMilli()
	n := 0
	for _, r := range snap.Tombstones {
		if r.DeletionTimestamp > cutoff || live[r.Path] {
			continue
		}
		if err := t.store.Delete(ctx, r.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("delta: delete removed file %s: %w", r.Path, err)
		}
		n++
	}
	return n, nil
}

// DeleteOrphans deletes data files that no version of the table in its
// snapshot refers to (neither live nor tombstoned) and that were last
// written before olderThan: what a flush, compaction or DML left when the
// process died between writing a file and committing it, and removed files
// whose tombstones expired before a VACUUM deleted them. The age keeps
// files a writer (this one or another on shared storage) is about to
// commit. It reads the newest commits first and returns how many it
// deleted. A local mirror of an object store loses the copies of files
// that are neither live nor tombstoned any more.
func (t *Table) DeleteOrphans(ctx context.Context, olderThan time.Time) (int, error) {
	// List before reading the log: a file committed in between is then
	// known; listed after, it could look like an orphan.
	objs, err := t.store.ListData(ctx)
	if err != nil {
		return 0, err
	}
	snap, err := t.Refresh(ctx)
	if err != nil {
		return 0, err
	}
	known := make(map[string]bool, len(snap.Files)+len(snap.Tombstones))
	for _, f := range snap.Files {
		known[f.Path] = true
	}
	for _, r := range snap.Tombstones {
		known[r.Path] = true
	}
	if m, ok := t.store.(interface {
		PruneMirror(keep map[string]bool) (int, error)
	}); ok {
		if _, err := m.PruneMirror(known); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, o := range objs {
		if known[o.Path] || !o.ModTime.Before(olderThan) {
			continue
		}
		if err := t.store.Delete(ctx, o.Path); err != nil {
			return n, fmt.Errorf("delta: delete orphan %s: %w", o.Path, err)
		}
		n++
	}
	return n, nil
}

// CleanLog deletes the log entries a reader no longer needs: every commit
// and checkpoint older than the newest checkpoint whose commit is at least
// retention old (Delta's delta.logRetentionDuration). That checkpoint and
// everything after it stay, so the table opens as before; only history
// further back (which tsdb never reads) goes. It returns how many entries
// it deleted.
func (t *Table) CleanLog(ctx context.Context, retention time.Duration, now time.Time) (int, error) {
	names, err := t.store.List(ctx, logDir)
	if err != nil {
		return 0, err
	}
	commits, checkpoints := logVersions(names, ".json"), logVersions(names, ".checkpoint.parquet")
	cutoff := now.Add(-retention).UnixMilli()
	keep := int64(-1)
	for _, c := range slices.Backward(checkpoints) {
		ts, err := t.commitTime(ctx, c)
		if err != nil {
			return 0, err
		}
		if ts > 0 && ts <= cutoff {
			keep = c
			break
		}
	}
	if keep < 0 {
		return 0, nil
	}
	n := 0
	for _, v := range commits {
		if v < keep {
			if err := t.store.Delete(ctx, commitPath(v)); err != nil {
				return n, err
			}
			n++
		}
	}
	for _, c := range checkpoints {
		if c < keep {
			if err := t.store.Delete(ctx, checkpointPath(c)); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// commitTime is the commitInfo timestamp of commit v in ms, or 0 if the
// commit is gone or has none.
func (t *Table) commitTime(ctx context.Context, v int64) (int64, error) {
	data, err := t.store.Get(ctx, commitPath(v))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var a Action
		if json.Unmarshal(line, &a) == nil && a.CommitInfo != nil {
			return a.CommitInfo.Timestamp, nil
		}
	}
	return 0, nil
}
