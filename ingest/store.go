// Package ingest is tsdb's write path and the owner of table state: rows
// arrive as Arrow batches, are validated, written to the WAL (fsynced) and
// appended to the MemBuffer in WAL order; the flusher turns buckets into
// Delta commits and then drops their WAL entries; at start-up the WAL is
// replayed, skipping what Delta already holds. It hands readers consistent
// snapshots of a table: Delta files plus MemBuffer batches, each row in
// exactly one of them. It does not parse SQL.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/delta"
	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
	"tsdb/wal"
)

// Options configure a Store.
type Options struct {
	// DataDir holds wal/ and tables/.
	DataDir string
	// BucketDuration is the width of a MemBuffer time bucket.
	BucketDuration time.Duration
	// IdleFlush is how long a bucket whose time window has passed must go
	// without writes before it is flushed.
	IdleFlush time.Duration
	// FlushInterval is how often the flusher looks for buckets to flush.
	// Zero means a quarter of IdleFlush, between 10ms and 5s.
	FlushInterval time.Duration
	Logger        *slog.Logger
	Registerer    prometheus.Registerer
	// Now returns the current time; nil means time.Now. Tests move it.
	Now func() time.Time
}

// Store owns the WAL, the MemBuffer and the Delta tables.
type Store struct {
	opts      Options
	logger    *slog.Logger
	tablesDir string
	wal       *wal.WAL
	buf       *membuffer.Buffer
	seq       *sequencer
	metrics   *metrics

	mu     sync.RWMutex // guards tables
	tables map[string]*tableState

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// tableState is one table: its schema, its Delta table and the Delta
// snapshot that readers see.
type tableState struct {
	schema schema.Table
	delta  *delta.Table

	// mu makes "Delta snapshot + MemBuffer batches" one atomic read: a flush
	// publishes its new Delta snapshot and releases the flushed batches while
	// holding it for writing.
	mu        sync.RWMutex
	published *delta.Snapshot
	dropped   bool

	flushMu sync.Mutex // one flush (or drop) of the table at a time
}

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
}

// Open opens the data directory, loads every table, replays the WAL and
// starts the flusher.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.BucketDuration <= 0 {
		return nil, errors.New("ingest: bucket duration must be positive")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = min(max(opts.IdleFlush/4, 10*time.Millisecond), 5*time.Second)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		opts:      opts,
		logger:    logger,
		tablesDir: filepath.Join(opts.DataDir, "tables"),
		buf:       membuffer.New(opts.Registerer),
		tables:    map[string]*tableState{},
		metrics:   newMetrics(opts.Registerer),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if err := os.MkdirAll(s.tablesDir, 0o755); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := s.loadTables(ctx); err != nil {
		return nil, err
	}
	w, err := wal.Open(ctx, filepath.Join(opts.DataDir, "wal"), wal.Options{Logger: logger, Registerer: opts.Registerer})
	if err != nil {
		return nil, err
	}
	s.wal = w
	if err := s.replay(ctx); err != nil {
		w.Close()
		return nil, err
	}
	s.seq = newSequencer(w.NextSeq())
	go s.flushLoop()
	return s, nil
}

// loadTables rebuilds the catalog from data/tables/*/_delta_log.
func (s *Store) loadTables(ctx context.Context) error {
	ents, err := os.ReadDir(s.tablesDir)
	if err != nil {
		return fmt.Errorf("ingest: list tables: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(s.tablesDir, e.Name())
		if strings.HasPrefix(e.Name(), ".dropped-") {
			// A DROP TABLE that crashed before it finished removing files.
			if err := os.RemoveAll(dir); err != nil {
				s.logger.Warn("cannot remove dropped table", "dir", dir, "err", err)
			}
			continue
		}
		store, err := delta.NewLocalStore(dir)
		if err != nil {
			return err
		}
		t, err := delta.Open(ctx, store, e.Name())
		if errors.Is(err, delta.ErrNotATable) {
			// A CREATE TABLE that crashed before its first commit.
			s.logger.Warn("removing table directory without a Delta log", "dir", dir)
			os.RemoveAll(dir)
			continue
		}
		if err != nil {
			return fmt.Errorf("ingest: open table %s: %w", e.Name(), err)
		}
		snap := t.Snapshot()
		sch := snap.Schema
		sch.Name = e.Name()
		s.tables[e.Name()] = &tableState{schema: sch, delta: t, published: snap}
		s.logger.Info("table loaded", "table", e.Name(), "version", snap.Version, "files", len(snap.Files))
	}
	return nil
}

func appID(k membuffer.Key) string { return fmt.Sprintf("tsdb-bucket-%d-%d", k.Start, k.End) }

// replay re-applies WAL entries that no Delta commit holds yet.
func (s *Store) replay(ctx context.Context) error {
	var stale []uint64
	replayed, rows := 0, int64(0)
	err := s.wal.Replay(ctx, func(seq uint64, p []byte) error {
		e, body, err := decodeHeader(p)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		ts := s.tables[e.table]
		if ts == nil || ts.schema.ID != e.tableID {
			stale = append(stale, seq) // the table was dropped
			return nil
		}
		if v, ok := ts.published.Txns[appID(e.key)]; ok && uint64(v) >= seq {
			stale = append(stale, seq) // already flushed to Delta
			return nil
		}
		rec, err := decodeRecord(body)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		if err := checkSchema(ts.schema, rec); err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		lo, hi := timeBounds(rec, ts.schema.TimeIndex)
		s.buf.Append(e.table, membuffer.Batch{Seq: seq, Key: e.key, Rec: rec, MinTime: lo, MaxTime: hi}, s.opts.Now())
		replayed++
		rows += rec.NumRows()
		return nil
	})
	if err != nil {
		return fmt.Errorf("ingest: replay: %w", err)
	}
	if len(stale) > 0 {
		if err := s.wal.Delete(ctx, stale); err != nil {
			return fmt.Errorf("ingest: drop flushed wal entries: %w", err)
		}
	}
	s.logger.Info("wal replayed", "entries", replayed, "rows", rows, "already_flushed", len(stale))
	return nil
}

// Tables returns every table's schema, sorted by name.
func (s *Store) Tables() []schema.Table {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]schema.Table, 0, len(s.tables))
	for _, t := range s.tables {
		out = append(out, t.schema)
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
	return t.schema, true
}

func (s *Store) state(name string) (*tableState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.tables[name]
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	return t, nil
}

// CreateTable creates a Delta table for t. With ifNotExists an existing table
// is not an error (created reports whether it was made).
func (s *Store) CreateTable(ctx context.Context, t schema.Table, ifNotExists bool) (created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tables[t.Name]; ok {
		if ifNotExists {
			return false, nil
		}
		return false, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", t.Name)
	}
	dir := filepath.Join(s.tablesDir, t.Name)
	if err := os.RemoveAll(dir); err != nil { // leftovers of a crashed create
		return false, fmt.Errorf("ingest: %w", err)
	}
	store, err := delta.NewLocalStore(dir)
	if err != nil {
		return false, err
	}
	dt, err := delta.Create(ctx, store, t)
	if err != nil {
		return false, fmt.Errorf("ingest: create table %s: %w", t.Name, err)
	}
	snap := dt.Snapshot()
	sch := snap.Schema
	sch.Name = t.Name
	s.tables[t.Name] = &tableState{schema: sch, delta: dt, published: snap}
	s.logger.Info("table created", "table", t.Name, "id", sch.ID)
	return true, nil
}

// DropTable removes a table, its files and its buffered rows.
func (s *Store) DropTable(ctx context.Context, name string, ifExists bool) (dropped bool, err error) {
	s.mu.Lock()
	ts, ok := s.tables[name]
	if !ok {
		s.mu.Unlock()
		if ifExists {
			return false, nil
		}
		return false, sqlerr.New(sqlerr.UndefinedTable, "table %q does not exist", name)
	}
	delete(s.tables, name)
	s.mu.Unlock()

	ts.flushMu.Lock()
	defer ts.flushMu.Unlock()
	ts.mu.Lock()
	ts.dropped = true
	batches, _ := s.buf.Snapshot(name)
	s.buf.DropTable(name)
	ts.mu.Unlock()

	// Rename first so that a crash mid-removal leaves no half table behind:
	// start-up deletes .dropped-* directories.
	dir := filepath.Join(s.tablesDir, name)
	gone := filepath.Join(s.tablesDir, fmt.Sprintf(".dropped-%s-%d", name, time.Now().UnixNano()))
	if err := os.Rename(dir, gone); err != nil {
		return false, fmt.Errorf("ingest: drop table %s: %w", name, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		s.logger.Warn("cannot remove dropped table files", "dir", gone, "err", err)
	}
	// WAL entries of the table are useless now; replay would skip them too
	// (their table id no longer exists), so a failure here only wastes space.
	seqs := make([]uint64, 0, len(batches))
	for _, b := range batches {
		seqs = append(seqs, b.Seq)
	}
	if len(seqs) > 0 {
		if err := s.wal.Delete(ctx, seqs); err != nil {
			s.logger.Warn("cannot delete wal entries of dropped table", "table", name, "err", err)
		}
	}
	s.logger.Info("table dropped", "table", name)
	return true, nil
}

// Snapshot returns a consistent view of a table: every row acknowledged
// before the call, each exactly once, in Delta files or MemBuffer batches.
func (s *Store) Snapshot(name string) (*Snapshot, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.dropped {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	batches, maxID := s.buf.Snapshot(name)
	snap := &Snapshot{Table: ts.schema, DeltaVersion: ts.published.Version, Files: ts.published.Files, Batches: batches, MaxBatchID: maxID}
	snap.FilePaths = make([]string, len(snap.Files))
	for i, f := range snap.Files {
		snap.FilePaths[i] = ts.delta.Store().LocalPath(f.Path)
	}
	return snap, nil
}

// checkSchema verifies a record has exactly the table's column types.
func checkSchema(t schema.Table, rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(t.Columns) {
		return fmt.Errorf("record has %d columns, table %s has %d", rec.NumCols(), t.Name, len(t.Columns))
	}
	for i, c := range t.Columns {
		if !arrow.TypeEqual(rec.Column(i).DataType(), c.Type.Arrow()) {
			return fmt.Errorf("column %s is %s, want %s", c.Name, rec.Column(i).DataType(), c.Type.Arrow())
		}
	}
	return nil
}

func timeBounds(rec arrow.RecordBatch, idx int) (int64, int64) {
	ts := rec.Column(idx).(*array.Timestamp)
	lo, hi := int64(1<<63-1), int64(-1<<63)
	for i := 0; i < ts.Len(); i++ {
		v := int64(ts.Value(i))
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// Insert validates rec against the table, makes it durable in the WAL and
// adds it to the MemBuffer. It returns once the rows are fsynced and visible.
// rec must have the table's columns in order, with the table's Arrow types.
func (s *Store) Insert(ctx context.Context, name string, rec arrow.RecordBatch) (int64, error) {
	ts, err := s.state(name)
	if err != nil {
		return 0, err
	}
	t := ts.schema
	if err := checkSchema(t, rec); err != nil {
		return 0, sqlerr.Wrap(sqlerr.DatatypeMismatch, err)
	}
	if rec.NumRows() == 0 {
		return 0, nil
	}
	for i, c := range t.Columns {
		if c.NotNull && rec.Column(i).NullN() > 0 {
			return 0, &sqlerr.Error{Code: sqlerr.NotNullViolation,
				Message: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c.Name, t.Name)}
		}
	}
	parts, err := s.splitByBucket(t, rec)
	if err != nil {
		return 0, err
	}
	payloads := make([][]byte, len(parts))
	for i, p := range parts {
		if payloads[i], err = encodeEntry(entry{table: t.Name, tableID: t.ID, key: p.key, rec: p.rec}); err != nil {
			return 0, err
		}
	}
	first, err := s.wal.Append(ctx, payloads)
	if first == 0 {
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	if err != nil {
		s.seq.run(first, len(parts), func() {})
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	now := s.opts.Now()
	s.seq.run(first, len(parts), func() {
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		if ts.dropped {
			return
		}
		for i, p := range parts {
			s.buf.Append(t.Name, membuffer.Batch{Seq: first + uint64(i), Key: p.key, Rec: p.rec, MinTime: p.lo, MaxTime: p.hi}, now)
		}
	})
	s.metrics.rows.Add(float64(rec.NumRows()))
	return rec.NumRows(), nil
}

type part struct {
	key    membuffer.Key
	rec    arrow.RecordBatch
	lo, hi int64
}

// splitByBucket cuts a record into one record per time bucket.
func (s *Store) splitByBucket(t schema.Table, rec arrow.RecordBatch) ([]part, error) {
	ts := rec.Column(t.TimeIndex).(*array.Timestamp)
	keys := map[membuffer.Key][]arrowutil.RowRef{}
	var order []membuffer.Key
	for i := 0; i < ts.Len(); i++ {
		k := membuffer.BucketKey(int64(ts.Value(i)), s.opts.BucketDuration)
		if _, ok := keys[k]; !ok {
			order = append(order, k)
		}
		keys[k] = append(keys[k], arrowutil.RowRef{Row: i})
	}
	if len(order) == 1 {
		lo, hi := timeBounds(rec, t.TimeIndex)
		return []part{{key: order[0], rec: rec, lo: lo, hi: hi}}, nil
	}
	parts := make([]part, 0, len(order))
	for _, k := range order {
		r, err := arrowutil.Take(rec.Schema(), []arrow.RecordBatch{rec}, keys[k])
		if err != nil {
			return nil, fmt.Errorf("ingest: split by bucket: %w", err)
		}
		lo, hi := timeBounds(r, t.TimeIndex)
		parts = append(parts, part{key: k, rec: r, lo: lo, hi: hi})
	}
	return parts, nil
}

// BufferedBytes returns the memory held by the MemBuffer.
func (s *Store) BufferedBytes() int64 { return s.buf.Bytes() }

// Close stops the flusher, flushes every buffered row to Delta and closes
// the WAL. Rows that cannot be flushed stay in the WAL for the next start.
func (s *Store) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		if ferr := s.Checkpoint(ctx); ferr != nil {
			s.logger.Error("flush at shutdown failed; rows stay in the WAL", "err", ferr)
			err = ferr
		}
		if cerr := s.wal.Close(); cerr != nil && err == nil {
			err = cerr
		}
	})
	return err
}

type metrics struct {
	rows         prometheus.Counter
	flushes      prometheus.Counter
	flushErrors  prometheus.Counter
	flushedRows  prometheus.Counter
	flushSeconds prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		rows:         prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_ingest_rows_total", Help: "Rows acknowledged by the write path."}),
		flushes:      prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushes_total", Help: "Buckets flushed to Delta."}),
		flushErrors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flush_errors_total", Help: "Bucket flushes that failed and will be retried."}),
		flushedRows:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushed_rows_total", Help: "Rows written to Delta by flushes."}),
		flushSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_flush_duration_seconds", Help: "Time to write and commit one bucket.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	if r != nil {
		r.MustRegister(m.rows, m.flushes, m.flushErrors, m.flushedRows, m.flushSeconds)
	}
	return m
}
