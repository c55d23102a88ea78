package ingest

// Snapshots: the consistent view of a table a statement reads.

import (
	"context"
	"fmt"

	"tsdb/delta"
	"tsdb/internal/schema"
	"tsdb/membuffer"
)

// Snapshot is what a query of one table reads.
type Snapshot struct {
	Table schema.Table
	// DeltaVersion is the Delta version the files belong to.
	DeltaVersion int64
	Files        []delta.File
	// FilePaths are the files' absolute local paths, index-aligned with Files.
	FilePaths []string
	Batches   []membuffer.Batch
	// MaxBatchID is the largest MemBuffer batch ID handed out when the
	// snapshot was taken.
	MaxBatchID uint64
	// Deleted are the rows of files that another writer deleted by
	// deletion vector, by file path: a reader must skip them (filled by
	// FetchSnapshot).
	Deleted map[string]delta.RowSet
	// Damaged are the damaged data files among Files, with why: a
	// statement that needs one must fail (UnavailableError), never read
	// around it.
	Damaged map[string]error
}

// DamagedFile returns the UnavailableError of a damaged file of the
// snapshot, or nil.
func (s *Snapshot) DamagedFile(path string) error {
	if cause, ok := s.Damaged[path]; ok {
		return &UnavailableError{Table: s.Table.Name, File: path, Err: cause}
	}
	return nil
}

// Snapshot returns a consistent view of a table: every row acknowledged
// before the call, each exactly once, in Delta files or MemBuffer batches.
// Every file is readable at its FilePaths entry (on an object store, files
// another writer added are downloaded into the local mirror first).
func (s *Store) Snapshot(ctx context.Context, name string) (*Snapshot, error) {
	snap, _, err := s.snapshot(name)
	if err != nil {
		return nil, err
	}
	if err := s.FetchSnapshot(ctx, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// Snapshots is Snapshot of several tables at one moment: a transaction
// that changed several of them is seen in all or in none. A table that
// does not exist (any more) is left out. The files are not fetched:
// FetchSnapshot does that for the tables a statement reads.
func (s *Store) Snapshots(ctx context.Context, names []string) (map[string]*Snapshot, error) {
	out := make(map[string]*Snapshot, len(names))
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	for _, name := range names {
		snap, _, err := s.snapshot(name)
		if err != nil {
			if KindOf(err) == KindNoSuchTable {
				continue
			}
			return nil, err
		}
		out[name] = snap
	}
	return out, nil
}

// FetchSnapshot makes every file of a snapshot readable at its FilePaths
// entry, as Snapshot does.
func (s *Store) FetchSnapshot(ctx context.Context, snap *Snapshot) error {
	ts, err := s.state(snap.Table.Name)
	if err != nil {
		return err
	}
	store := ts.delta.Store()
	for _, f := range snap.Files {
		if err := store.Fetch(ctx, f.Path); err != nil {
			return fmt.Errorf("ingest: %s: %w", snap.Table.Name, err)
		}
		if f.DeletionVector != nil {
			rows, err := ts.deletedRows(ctx, f)
			if err != nil {
				return err
			}
			if snap.Deleted == nil {
				snap.Deleted = map[string]delta.RowSet{}
			}
			snap.Deleted[f.Path] = rows
		}
	}
	return nil
}

func (s *Store) snapshot(name string) (*Snapshot, delta.Store, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, nil, err
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.dropped {
		return nil, nil, noSuchTable(name)
	}
	if ts.logDamage != nil {
		return nil, nil, ts.logDamage
	}
	batches, maxID := s.buf.Snapshot(name)
	snap := &Snapshot{Table: ts.sch(), DeltaVersion: ts.published.Version, Files: ts.published.Files, Batches: batches, MaxBatchID: maxID}
	if len(ts.damaged) > 0 {
		snap.Damaged = make(map[string]error, len(ts.damaged))
		for p, cause := range ts.damaged {
			snap.Damaged[p] = cause
		}
	}
	snap.FilePaths = make([]string, len(snap.Files))
	for i, f := range snap.Files {
		snap.FilePaths[i] = ts.delta.Store().LocalPath(f.Path)
	}
	return snap, ts.delta.Store(), nil
}
