package ingest

import (
	"context"
	"errors"
	"fmt"

	"tsdb/delta"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// AddColumns appends nullable columns to a table (ALTER TABLE ADD COLUMN).
// Nothing is rewritten: buffered rows, WAL entries and files written before
// hold a prefix of the new columns, and every reader pads the rest with
// NULL. The new schema is one Delta metaData commit; it is published with
// the snapshot of that commit, so a query sees the columns and the files
// of one version.
func (s *Store) AddColumns(ctx context.Context, name string, cols []schema.Column) error {
	ts, err := s.lockTable(name)
	if err != nil {
		return err
	}
	defer ts.flushMu.Unlock()
	for _, c := range cols {
		if c.NotNull {
			return sqlerr.New(sqlerr.FeatureNotSupported, "column %q: an added column cannot be NOT NULL (the table's rows would have none)", c.Name)
		}
	}
	for attempt := 0; ; attempt++ {
		old := ts.sch()
		next, err := schema.New(old.Name, append(append([]schema.Column(nil), old.Columns...), cols...))
		if err != nil {
			var dup *schema.DuplicateColumnError
			if errors.As(err, &dup) {
				return &sqlerr.Error{Code: sqlerr.DuplicateColumn, Message: err.Error()}
			}
			return &sqlerr.Error{Code: sqlerr.InvalidName, Message: err.Error()}
		}
		next.ID, next.TimeIndex = old.ID, old.TimeIndex
		snap, err := ts.delta.SetSchema(ctx, "ADD COLUMNS", next)
		if errors.Is(err, delta.ErrConflict) && attempt < 3 {
			// Another writer changed the schema first (perhaps adding the
			// same columns): take its version and add what is still missing.
			caught := ts.delta.Snapshot()
			ts.mu.Lock()
			ts.published = caught
			ts.adoptSchema(caught.Schema)
			ts.mu.Unlock()
			cols = missingColumns(ts.sch(), cols)
			if len(cols) == 0 {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("ingest: add columns to %s: %w", name, err)
		}
		ts.mu.Lock()
		ts.published = snap
		ts.schema.Store(&next)
		ts.mu.Unlock()
		break
	}
	s.logger.Info("columns added", "table", name, "columns", len(cols))
	return nil
}

// adoptSchema takes a wider schema another writer committed.
func (ts *tableState) adoptSchema(sch schema.Table) {
	cur := ts.sch()
	if len(sch.Columns) > len(cur.Columns) {
		sch.Name = cur.Name
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

// lockTable returns a table with its flush lock held (the caller unlocks
// ts.flushMu): no flush, DML or other schema change runs meanwhile.
func (s *Store) lockTable(name string) (*tableState, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
	}
	ts.flushMu.Lock()
	if ts.isDropped() {
		ts.flushMu.Unlock()
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	return ts, nil
}
