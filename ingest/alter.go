package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"tsdb/delta"
	"tsdb/internal/schema"
)

// AddColumns appends nullable columns to a table (ALTER TABLE ADD COLUMN).
// Nothing is rewritten: buffered rows, WAL entries and files written before
// hold a prefix of the new columns, and every reader pads the rest with
// NULL. The new schema is one Delta metaData commit; it is published with
// the snapshot of that commit, so a query sees the columns and the files
// of one version. Columns the table has already (another writer added
// them first) are skipped.
func (s *Store) AddColumns(ctx context.Context, name string, cols []schema.Column) error {
	return s.AddTagColumns(ctx, name, cols, nil)
}

// AddTagColumns is AddColumns for line protocol: the columns named in
// tags are tags, which join the table's point identity in the same commit
// when that is its tag set (schema.Table.DedupTags).
func (s *Store) AddTagColumns(ctx context.Context, name string, cols []schema.Column, tags []string) error {
	ts, err := s.lockTable(ctx, name)
	if err != nil {
		return err
	}
	defer ts.flushMu.Unlock()
	if err := ts.writeBlock(); err != nil {
		return err
	}
	for _, c := range cols {
		if c.NotNull {
			return errorf(KindUnsupported, "column %q: an added column cannot be NOT NULL (the table's rows would have none)", c.Name)
		}
	}
	cur := ts.sch()
	for _, c := range cols {
		if i := cur.ColumnIndex(c.Name); i >= 0 && cur.Columns[i].Type != c.Type {
			return errorf(KindColumnExists, "column %q of relation %q already exists as %s", c.Name, name, cur.Columns[i].Type)
		}
	}
	if _, err := schema.New(cur.Name, append(append([]schema.Column(nil), cur.Columns...), missingColumns(cur, cols)...)); err != nil {
		var dup *schema.DuplicateColumnError
		var wide *schema.TooManyColumnsError
		switch {
		case errors.As(err, &dup):
			return wrapKind(KindColumnExists, err)
		case errors.As(err, &wide):
			return wrapKind(KindTooManyColumns, err)
		}
		return wrapKind(KindInvalidName, err)
	}
	snap, err := ts.delta.AddTagColumns(ctx, "ADD COLUMNS", cols, tags)
	if errors.Is(err, delta.ErrConflict) {
		return wrapKind(KindColumnExists, err)
	}
	if err != nil {
		return fmt.Errorf("ingest: add columns to %s: %w", name, err)
	}
	ts.mu.Lock()
	ts.publish(snap)
	ts.mu.Unlock()
	s.logger.Info("columns added", "table", name, "columns", len(cols))
	return nil
}

// SetCluster sets the column a table's data files group rows by within
// each hour (ALTER TABLE t SET (cluster_by = 'col')); empty returns to the
// default, the first TEXT column. The column must be a TEXT column. Files
// written before keep their order; compaction sorts the small ones anew
// when it merges them, larger ones keep it.
func (s *Store) SetCluster(ctx context.Context, name, column string) error {
	return s.SetOptions(ctx, name, TableOptions{Cluster: &column})
}

// SetOptions changes a table's options in one Delta commit, after checking
// them against the table as it is (under its flush lock), and publishes
// the new snapshot.
func (s *Store) SetOptions(ctx context.Context, name string, opts TableOptions) error {
	ts, err := s.lockTable(ctx, name)
	if err != nil {
		return err
	}
	defer ts.flushMu.Unlock()
	return s.setOptions(ctx, name, ts, opts)
}

// SetOptionsAs is SetOptions for transaction tx, which may hold the
// table's write lock already (LockTable): ALTER TABLE … SET (dedup_keys)
// checks the rows and sets the keys under one hold of it, after
// BlockPlainWrites.
func (s *Store) SetOptionsAs(ctx context.Context, tx TxID, name string, opts TableOptions) error {
	ts, err := s.state(name)
	if err != nil {
		return err
	}
	held, unlock, err := s.lockTableState(ctx, tx, ts, false)
	if err != nil {
		return err
	}
	if !held {
		defer unlock()
	}
	return s.setOptions(ctx, name, ts, opts)
}

// BlockPlainWrites waits until the plain writes of a table in flight
// (INSERT, COPY and line protocol into a table without dedup_keys) have
// their rows in the MemBuffer, and holds new ones back until release:
// giving the table dedup keys must see every row written without them.
// Take it before the table's write lock.
func (s *Store) BlockPlainWrites(ctx context.Context, name string) (release func(), err error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
	}
	// sync.RWMutex waits without a context: poll, as a statement's
	// cancel or timeout must end the wait.
	for !ts.plainMu.TryLock() {
		select {
		case <-ctx.Done():
			return nil, mapCanceled(ctx, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return ts.plainMu.Unlock, nil
}

// setOptions is SetOptions' work; the caller holds the table's write
// lock.
func (s *Store) setOptions(ctx context.Context, name string, ts *tableState, opts TableOptions) error {
	if err := ts.writeBlock(); err != nil {
		return err
	}
	if opts.Cluster != nil {
		if err := CheckCluster(ts.sch(), *opts.Cluster); err != nil {
			return err
		}
	}
	if opts.Dedup != nil {
		if err := schema.CheckDedup(ts.sch(), *opts.Dedup); err != nil {
			return wrapKind(KindUnsupported, err)
		}
	}
	cfg := opts.configuration()
	if len(cfg) == 0 {
		return nil
	}
	snap, err := ts.delta.SetConfiguration(ctx, "SET TBLPROPERTIES", cfg)
	if err != nil {
		return fmt.Errorf("ingest: set options of %s: %w", name, err)
	}
	ts.mu.Lock()
	ts.publish(snap)
	ts.mu.Unlock()
	s.logger.Info("table options set", "table", name, "options", cfg)
	return nil
}

// CheckCluster says whether column can be t's cluster column: empty (the
// default) or one of its TEXT columns.
func CheckCluster(t schema.Table, column string) error {
	if column == "" {
		return nil
	}
	i := t.ColumnIndex(column)
	if i < 0 {
		return errorf(KindNoSuchColumn, "cluster_by: column %q of relation %q does not exist", column, t.Name)
	}
	if t.Columns[i].Type != schema.Text {
		return errorf(KindTypeMismatch, "cluster_by: column %q is %s; the cluster column must be text", column, t.Columns[i].Type)
	}
	return nil
}

// publish makes snap what readers of the table see, with its schema when
// that is wider, or as wide with another cluster column, identity or
// column names: a commit may bring another writer's ADD COLUMN, SET
// (cluster_by) or, under column mapping, RENAME COLUMN along. The caller
// holds ts.mu for writing.
func (ts *tableState) publish(snap *delta.Snapshot) {
	ts.published = snap
	// Damage of files that left the table (removed by a DELETE,
	// retention, another writer) is no longer the table's.
	for p := range ts.damaged {
		i := sort.Search(len(snap.Files), func(i int) bool { return snap.Files[i].Path >= p })
		if i == len(snap.Files) || snap.Files[i].Path != p {
			delete(ts.damaged, p)
		}
	}
	cur := ts.sch()
	if n := len(snap.Schema.Columns); n > len(cur.Columns) || n == len(cur.Columns) && (snap.Schema.Cluster != cur.Cluster ||
		!slices.Equal(snap.Schema.Dedup, cur.Dedup) || snap.Schema.DedupTags != cur.DedupTags || !snap.Schema.SameNames(cur)) {
		sch := snap.Schema
		sch.Name = ts.sch().Name
		ts.schema.Store(&sch)
	}
}

// missingColumns are the columns of cols that t does not have by name.
func missingColumns(t schema.Table, cols []schema.Column) []schema.Column {
	var out []schema.Column
	for _, c := range cols {
		if t.ColumnIndex(c.Name) < 0 {
			out = append(out, c)
		}
	}
	return out
}

// lockTable returns a table with its write lock held (the caller unlocks
// ts.flushMu): no flush, DML or other schema change runs meanwhile.
func (s *Store) lockTable(ctx context.Context, name string) (*tableState, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
	}
	// A transaction that changed rows of the table holds the lock until
	// it ends: the wait ends with the statement's cancel or timeout.
	if err := ts.flushMu.LockContext(ctx); err != nil {
		return nil, mapCanceled(ctx, err)
	}
	if ts.isDropped() {
		ts.flushMu.Unlock()
		return nil, noSuchTable(name)
	}
	return ts, nil
}
