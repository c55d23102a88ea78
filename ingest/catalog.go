package ingest

// The table catalog: which tables there are, their states, and their
// creation and removal.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"tsdb/delta"
	"tsdb/internal/schema"
)

// loadTables rebuilds the catalog from the tables under the root.
func (s *Store) loadTables(ctx context.Context) error {
	names, err := s.root.Tables(ctx)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	for _, name := range names {
		ts, err := s.openTable(ctx, name)
		if errors.Is(err, delta.ErrNotATable) {
			// A CREATE TABLE that crashed before its first commit, unless
			// data files say a table was there.
			s.logger.Warn("table without a Delta log", "table", name, "root", s.root.String())
			err = s.root.DropIncomplete(ctx, name)
			if err == nil {
				continue
			}
			if !errors.Is(err, delta.ErrHasData) {
				s.logger.Warn("cannot remove incomplete table", "table", name, "err", err)
				continue
			}
		}
		if ue := logDamage(name, err); ue != nil {
			// One damaged table must not keep the others from serving.
			s.mu.Lock()
			s.markUnavailable(ue)
			s.mu.Unlock()
			continue
		}
		if err != nil {
			return fmt.Errorf("ingest: open table %s: %w", name, err)
		}
		s.tables[name] = ts
		s.checkFileSizes(name, ts)
		s.logger.Info("table loaded", "table", name, "version", ts.published.Version, "files", len(ts.published.Files))
	}
	return nil
}

// openTable opens an existing table under the root.
func (s *Store) openTable(ctx context.Context, name string) (*tableState, error) {
	store, err := s.root.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	t, err := delta.Open(ctx, store, name)
	if err != nil {
		return nil, err
	}
	return s.newTableState(name, t), nil
}

func (s *Store) newTableState(name string, t *delta.Table) *tableState {
	ts := newTableState(name, t)
	if s.opts.ExpireTxns {
		t.SetTxnExpiry(func(app string, version, updated int64, all map[string]int64) bool {
			return s.txnExpired(ts, app, version, all)
		})
	}
	return ts
}

func newTableState(name string, t *delta.Table) *tableState {
	snap := t.Snapshot()
	sch := snap.Schema
	sch.Name = name
	ts := &tableState{delta: t, published: snap}
	ts.flushMu.init()
	ts.schema.Store(&sch)
	return ts
}

// Tables returns every table's schema, sorted by name.
func (s *Store) Tables() []schema.Table {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]schema.Table, 0, len(s.tables))
	for _, t := range s.tables {
		out = append(out, t.sch())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Table returns a table's schema.
func (s *Store) Table(name string) (schema.Table, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tables[name]
	if !ok {
		return schema.Table{}, false
	}
	return t.sch(), true
}

// TableSize is the room a table takes now: the data files of its current
// Delta version (not the files older versions still name until VACUUM
// removes them) and its rows in the buffer, as Arrow holds them.
type TableSize struct {
	Files     int   // data files of the current version
	FileBytes int64 // their bytes, as the Delta log records them
	// BufferedRows and BufferedBytes are the rows not yet flushed and
	// their Arrow bytes.
	BufferedRows  int64
	BufferedBytes int64
}

// Bytes is the table's size in PostgreSQL's sense: what its rows take.
func (z TableSize) Bytes() int64 { return z.FileBytes + z.BufferedBytes }

// Size returns the room table name takes. Unlike Snapshot it fetches
// nothing from object storage: the sizes are in the Delta log.
func (s *Store) Size(name string) (TableSize, error) {
	snap, _, err := s.snapshot(name)
	if err != nil {
		return TableSize{}, err
	}
	z := TableSize{Files: len(snap.Files)}
	for _, f := range snap.Files {
		z.FileBytes += f.Size
	}
	for _, b := range snap.Batches {
		z.BufferedRows += b.Rec.NumRows()
		z.BufferedBytes += b.Bytes
	}
	return z, nil
}

func (s *Store) state(name string) (*tableState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tables[name]
	if !ok {
		if ue := s.unavailable[name]; ue != nil {
			return nil, ue
		}
		return nil, noSuchTable(name)
	}
	return t, nil
}

// Unavailable returns the UnavailableError of a table whose log cannot be
// read, or nil: such a table is not among Tables, but it is not absent
// either, and a statement naming it must say why it fails.
func (s *Store) Unavailable(name string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ue := s.unavailable[name]; ue != nil {
		return ue
	}
	return nil
}

// CreateTable creates a Delta table for t. With ifNotExists an existing table
// is not an error (created reports whether it was made).
func (s *Store) CreateTable(ctx context.Context, t schema.Table, ifNotExists bool) (created bool, err error) {
	return s.CreateTableWith(ctx, t, ifNotExists, TableOptions{})
}

// TableOptions are a table's settings kept in its Delta configuration
// (CREATE TABLE … WITH, ALTER TABLE … SET / RESET). A nil field is left as
// it is; a zero value resets it.
type TableOptions struct {
	// Retention: how long rows are kept; zero or less keeps them forever.
	Retention *time.Duration
	// Cluster: the table's cluster column (schema.Table.Cluster); empty
	// is the first TEXT column. t.Cluster sets it at CREATE.
	Cluster *string
	// Dedup: the columns that identify a point (schema.Table.Dedup), the
	// time column first; empty turns deduplication off. t.Dedup sets it
	// at CREATE.
	Dedup *[]string
}

// configuration renders the options as Delta configuration changes
// (an empty value removes the key).
func (o TableOptions) configuration() map[string]string {
	cfg := map[string]string{}
	if o.Retention != nil {
		cfg[RetentionKey] = ""
		if *o.Retention > 0 {
			cfg[RetentionKey] = o.Retention.String()
		}
	}
	if o.Cluster != nil {
		cfg[delta.ClusterKey] = *o.Cluster
	}
	if o.Dedup != nil {
		maps.Copy(cfg, delta.DedupConfiguration(*o.Dedup, false))
	}
	return cfg
}

// CreateTableWith is CreateTable with options, written in the table's
// first commit: the table never exists without them.
func (s *Store) CreateTableWith(ctx context.Context, t schema.Table, ifNotExists bool, opts TableOptions) (created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tables[t.Name]; ok {
		if ifNotExists {
			return false, nil
		}
		return false, errorf(KindTableExists, "relation %q already exists", t.Name)
	}
	if ue := s.unavailable[t.Name]; ue != nil {
		// The table exists; only its log cannot be read. Creating it anew
		// would remove what is left of it.
		return false, ue
	}
	if err := schema.CheckNewTableName(t.Name); err != nil {
		return false, wrapKind(KindReservedName, err)
	}
	if err := schema.CheckDedup(t, t.Dedup); err != nil {
		return false, wrapKind(KindUnsupported, err)
	}
	for other := range s.tables {
		if schema.SameName(other, t.Name) {
			return false, errorf(KindTableExists, "relation %q differs only in case from table %q: tsdb's engine does not tell such names apart", t.Name, other)
		}
	}
	for other := range s.unavailable {
		if schema.SameName(other, t.Name) {
			return false, errorf(KindTableExists, "relation %q differs only in case from table %q, which cannot be read now", t.Name, other)
		}
	}
	// Leftovers of a crashed create go first (where only this process
	// writes; see Root.DropIncomplete).
	if err := s.root.DropIncomplete(ctx, t.Name); err != nil {
		return false, fmt.Errorf("ingest: %w", err)
	}
	store, err := s.root.Table(ctx, t.Name)
	if err != nil {
		return false, err
	}
	dt, err := delta.Create(ctx, store, t, opts.configuration())
	if errors.Is(err, delta.ErrExists) {
		// Another writer on shared storage created the table: take it
		// into the catalog, as IF NOT EXISTS expects.
		ts, oerr := s.openTable(ctx, t.Name)
		if oerr != nil {
			return false, fmt.Errorf("ingest: open table %s created elsewhere: %w", t.Name, oerr)
		}
		s.tables[t.Name] = ts
		s.logger.Info("table created by another writer", "table", t.Name, "id", ts.sch().ID)
		if ifNotExists {
			return false, nil
		}
		return false, errorf(KindTableExists, "relation %q already exists", t.Name)
	}
	if err != nil {
		return false, fmt.Errorf("ingest: create table %s: %w", t.Name, err)
	}
	ts := s.newTableState(t.Name, dt)
	s.tables[t.Name] = ts
	s.logger.Info("table created", "table", t.Name, "id", ts.sch().ID)
	return true, nil
}

// DropTable removes a table, its files and its buffered rows.
func (s *Store) DropTable(ctx context.Context, name string, ifExists bool) (dropped bool, err error) {
	s.mu.Lock()
	ts, ok := s.tables[name]
	if !ok && s.unavailable[name] != nil {
		// DROP TABLE is how an operator gives up a table whose log cannot
		// be read: its files go as any table's do.
		delete(s.unavailable, name)
		s.updateDamageMetrics()
		s.mu.Unlock()
		if err := s.root.DropTable(ctx, name); err != nil {
			return false, fmt.Errorf("ingest: %w", err)
		}
		s.logger.Warn("unavailable table dropped", "table", name)
		return true, nil
	}
	if !ok {
		s.mu.Unlock()
		if ifExists {
			return false, nil
		}
		return false, errorf(KindNoSuchTable, "table %q does not exist", name)
	}
	delete(s.tables, name)
	s.dropping[name] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.dropping, name)
		s.mu.Unlock()
	}()

	ts.flushMu.Lock()
	defer ts.flushMu.Unlock()
	ts.mu.Lock()
	ts.dropped = true
	batches, _ := s.buf.Snapshot(name)
	s.buf.DropTable(name)
	ts.mu.Unlock()

	if err := s.root.DropTable(ctx, name); err != nil {
		return false, fmt.Errorf("ingest: %w", err)
	}
	// WAL entries of the table are useless now; replay would skip them too
	// (their table id no longer exists), so a failure here only wastes space.
	seqs := make([]uint64, 0, len(batches))
	var walBytes int64
	for _, b := range batches {
		seqs = append(seqs, b.Seq)
		walBytes += b.WALBytes
	}
	if len(seqs) > 0 {
		if err := s.wal.Delete(ctx, seqs); err != nil {
			s.logger.Warn("cannot delete wal entries of dropped table", "table", name, "err", err)
		} else {
			s.walLag.Add(-walBytes)
		}
	}
	s.gate.notify()
	s.logger.Info("table dropped", "table", name)
	return true, nil
}
