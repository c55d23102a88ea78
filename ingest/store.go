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
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/delta"
	"tsdb/internal/arrowutil"
	"tsdb/internal/fault"
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
	// MaxBucketBytes: a bucket (open or not) this large is cut into a file.
	MaxBucketBytes int64
	// SmallFileBytes: idle buckets smaller than this are held back and
	// merged into one file, up to LateMergeDelay after their first row.
	SmallFileBytes int64
	LateMergeDelay time.Duration
	// MemoryLimit is the hard limit of the MemBuffer: writers wait for
	// flushes there, up to WriteTimeout, then get SQLSTATE 53200.
	MemoryLimit int64
	// SoftMemoryLimit starts pressure flushes (largest buckets first).
	SoftMemoryLimit int64
	// MaxWALLag bounds WAL bytes not yet flushed to Delta; writers wait
	// above it like above MemoryLimit.
	MaxWALLag    int64
	WriteTimeout time.Duration
	// FlushConcurrency is how many tables flush at once.
	FlushConcurrency int
	// CompileDML turns logged DELETE/UPDATE statements back into work at
	// replay. Without it a WAL holding DML cannot be replayed.
	CompileDML DMLCompiler
	// Faults injects failures for tests; nil in production.
	Faults     *fault.Injector
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now returns the current time; nil means time.Now. Tests move it.
	Now func() time.Time
}

// withDefaults fills in unset options.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = min(max(o.IdleFlush/4, 10*time.Millisecond), 5*time.Second)
	}
	if o.MaxBucketBytes <= 0 {
		o.MaxBucketBytes = 128 << 20
	}
	if o.SmallFileBytes <= 0 {
		o.SmallFileBytes = min(1<<20, o.MaxBucketBytes)
	}
	if o.LateMergeDelay <= 0 {
		o.LateMergeDelay = 10 * time.Minute
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = 1 << 30
	}
	if o.SoftMemoryLimit <= 0 || o.SoftMemoryLimit > o.MemoryLimit {
		o.SoftMemoryLimit = o.MemoryLimit * 3 / 4
	}
	if o.MaxWALLag <= 0 {
		o.MaxWALLag = 2 * o.MemoryLimit
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.FlushConcurrency <= 0 {
		o.FlushConcurrency = 4
	}
	return o
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
	faults    *fault.Injector

	mu     sync.RWMutex // guards tables
	tables map[string]*tableState

	// gate holds writers back at the memory and WAL-lag limits.
	gate gate
	// walLag is the size of WAL entries not yet deleted after a flush.
	walLag atomic.Int64

	// Background flushing: the loop, its per-table goroutines and their
	// context, canceled by Close.
	bgCtx     context.Context
	bgCancel  context.CancelFunc
	kick      chan struct{}
	flushSem  chan struct{}
	flushWG   sync.WaitGroup
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// gate is where writers wait for memory. Waiters take the current channel
// and are woken when it is closed (on every release of memory).
type gate struct {
	mu       sync.Mutex
	reserved int64 // bytes admitted but not yet in the MemBuffer
	waiting  int   // writers waiting for room
	ch       chan struct{}
}

func (g *gate) notify() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
	}
	g.ch = make(chan struct{})
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

	flushing atomic.Bool // a background flush of the table is running
	schedMu  sync.Mutex  // guards failures, retryAt and pendingDML
	failures int
	retryAt  time.Time
	// pendingDML are logged DELETE/UPDATE entries that a replay may still
	// need (inserts logged before them are not all flushed).
	pendingDML []uint64
}

func (ts *tableState) isDropped() bool {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.dropped
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
	opts = opts.withDefaults()
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
		faults:    opts.Faults,
		kick:      make(chan struct{}, 1),
		flushSem:  make(chan struct{}, opts.FlushConcurrency),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	s.gate.notify()
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
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
	// Sequences must stay above every version a flush recorded, or new
	// entries would look flushed already (belt and braces: the WAL keeps
	// its own high-water mark too).
	var maxTxn uint64
	for _, ts := range s.tables {
		for _, v := range ts.published.Txns {
			maxTxn = max(maxTxn, uint64(v))
		}
	}
	if err := w.EnsureNextSeq(maxTxn + 1); err != nil {
		w.Close()
		return nil, err
	}
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

// replay re-applies WAL entries that no Delta commit holds yet. Entries that
// cannot be read are reported, quarantined by the WAL and skipped.
func (s *Store) replay(ctx context.Context) error {
	start := time.Now()
	var stale []uint64
	replayed, corrupt, rows := 0, 0, int64(0)
	lastLog := start
	err := s.wal.Replay(ctx, func(seq uint64, p []byte) error {
		if entryKind(p) == kindDML {
			return s.replayDML(ctx, seq, p, &stale)
		}
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
		s.buf.Append(e.table, membuffer.Batch{Seq: seq, Key: e.key, Rec: rec, MinTime: lo, MaxTime: hi, WALBytes: int64(len(p))}, s.opts.Now())
		s.walLag.Add(int64(len(p)))
		replayed++
		rows += rec.NumRows()
		if time.Since(lastLog) >= 2*time.Second {
			lastLog = time.Now()
			s.logger.Info("replaying wal", "entries", replayed, "rows", rows, "rows_per_sec", int64(float64(rows)/time.Since(start).Seconds()))
		}
		return nil
	}, func(ce *wal.CorruptionError) {
		corrupt++
		s.logger.Error("wal entry cannot be replayed; quarantined and skipped", "seq", ce.Seq, "err", ce.Err)
	})
	if err != nil {
		return fmt.Errorf("ingest: replay: %w", err)
	}
	if len(stale) > 0 {
		if err := s.wal.Delete(ctx, stale); err != nil {
			return fmt.Errorf("ingest: drop flushed wal entries: %w", err)
		}
	}
	for _, ts := range s.tables {
		s.dropObsoleteDML(ctx, ts)
	}
	d := time.Since(start)
	s.metrics.replaySeconds.Set(d.Seconds())
	s.metrics.walLag.Set(float64(s.walLag.Load()))
	s.logger.Info("wal replayed", "entries", replayed, "rows", rows, "already_flushed", len(stale), "corrupt", corrupt,
		"duration", d.Round(time.Millisecond).String(), "rows_per_sec", int64(float64(rows)/max(d.Seconds(), 1e-9)))
	return nil
}

// replayDML re-applies a logged DELETE/UPDATE in its place among the
// inserts: to the replayed buffered rows, and to the Delta files unless
// the table's dml txn shows that part was committed.
func (s *Store) replayDML(ctx context.Context, seq uint64, p []byte, stale *[]uint64) error {
	e, err := decodeDMLEntry(p)
	if err != nil {
		return &wal.CorruptionError{Seq: seq, Err: err}
	}
	ts := s.tables[e.table]
	if ts == nil || ts.schema.ID != e.tableID {
		*stale = append(*stale, seq)
		return nil
	}
	if s.opts.CompileDML == nil {
		return fmt.Errorf("wal entry %d is a %s but no DML compiler is configured", seq, e.op)
	}
	dml, err := s.opts.CompileDML(ctx, ts.schema, e.sql)
	if err != nil {
		return fmt.Errorf("wal entry %d: compile %s: %w", seq, e.op, err)
	}
	if _, err := s.applyDML(ctx, ts, seq, e.op, dml, true); err != nil {
		return fmt.Errorf("wal entry %d: replay %s: %w", seq, e.op, err)
	}
	ts.addPendingDML(seq)
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
	var need int64
	for i, p := range parts {
		if payloads[i], err = encodeEntry(entry{table: t.Name, tableID: t.ID, key: p.key, rec: p.rec}); err != nil {
			return 0, err
		}
		need += membuffer.RecordBytes(p.rec)
	}
	// Wait for room before the WAL append: a statement rejected here
	// leaves no trace, neither in the WAL nor in the MemBuffer.
	release, err := s.admit(ctx, need)
	if err != nil {
		return 0, err
	}
	defer release()
	first, err := s.wal.Append(ctx, payloads)
	if first == 0 {
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	if err != nil {
		s.seq.run(first, len(parts), func() {})
		var tl *wal.TooLargeError
		if errors.As(err, &tl) {
			return 0, &sqlerr.Error{Code: "54000", Message: tl.Error(), Err: err}
		}
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
			s.buf.Append(t.Name, membuffer.Batch{Seq: first + uint64(i), Key: p.key, Rec: p.rec, MinTime: p.lo, MaxTime: p.hi, WALBytes: int64(len(payloads[i]))}, now)
			s.walLag.Add(int64(len(payloads[i])))
		}
	})
	s.metrics.walLag.Set(float64(s.walLag.Load()))
	for _, p := range parts {
		if membuffer.RecordBytes(p.rec) >= s.opts.MaxBucketBytes {
			s.kickFlusher()
			break
		}
	}
	if s.buf.Bytes() > s.opts.SoftMemoryLimit {
		s.kickFlusher()
	}
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

// MaxStatementBytes is the most data one statement may bring: the
// MemBuffer's hard limit.
func (s *Store) MaxStatementBytes() int64 { return s.opts.MemoryLimit }

// BufferedBytes returns the memory held by the MemBuffer.
func (s *Store) BufferedBytes() int64 { return s.buf.Bytes() }

// overLimit reports why a write of need bytes must wait, or "".
func (s *Store) overLimit(need int64) string {
	used := s.buf.Bytes() + s.gate.reserved
	if used > 0 && used+need > s.opts.MemoryLimit {
		return fmt.Sprintf("the MemBuffer holds %s of its %s limit (--memory-limit)", mib(used), mib(s.opts.MemoryLimit))
	}
	if lag := s.walLag.Load(); lag > s.opts.MaxWALLag {
		return fmt.Sprintf("%s of WAL are not yet flushed to Delta (limit %s, --max-wal-lag)", mib(lag), mib(s.opts.MaxWALLag))
	}
	return ""
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// admit waits until need bytes fit under the memory and WAL-lag limits and
// reserves them; release gives the reservation back once the rows are in
// the MemBuffer (or were not written). After WriteTimeout the write is
// refused with SQLSTATE 53200.
func (s *Store) admit(ctx context.Context, need int64) (release func(), err error) {
	if need > s.opts.MemoryLimit {
		return nil, sqlerr.New(sqlerr.OutOfMemory, "this statement needs %s in memory, more than --memory-limit %s: split it into smaller statements", mib(need), mib(s.opts.MemoryLimit))
	}
	var timer *time.Timer
	waited := false
	for {
		s.gate.mu.Lock()
		why := s.overLimit(need)
		if why == "" {
			s.gate.reserved += need
			s.gate.mu.Unlock()
			if waited {
				s.metrics.admitted.Inc()
			}
			return func() {
				s.gate.mu.Lock()
				s.gate.reserved -= need
				s.gate.mu.Unlock()
				s.gate.notify()
			}, nil
		}
		ch := s.gate.ch
		s.gate.mu.Unlock()
		if !waited {
			waited = true
			s.metrics.waits.Inc()
			timer = time.NewTimer(s.opts.WriteTimeout)
			defer timer.Stop()
			s.gate.mu.Lock()
			s.gate.waiting++
			s.gate.mu.Unlock()
			defer func() {
				s.gate.mu.Lock()
				s.gate.waiting--
				s.gate.mu.Unlock()
			}()
		}
		s.kickFlusher()
		select {
		case <-ch:
		case <-timer.C:
			s.metrics.rejections.Inc()
			return nil, &sqlerr.Error{Code: sqlerr.OutOfMemory,
				Message: fmt.Sprintf("write refused after waiting %v: %s and flushes cannot keep up", s.opts.WriteTimeout, why),
				Hint:    "retry later, write smaller batches, or raise --memory-limit"}
		case <-ctx.Done():
			return nil, &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement while it waited for memory", Err: ctx.Err()}
		}
	}
}

// AcceptingWrites reports whether writes are admitted now, and why not:
// not while writers wait for room or the MemBuffer is within 1/16 of its
// hard limit.
func (s *Store) AcceptingWrites() (bool, string) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if why := s.overLimit(s.opts.MemoryLimit / 16); why != "" {
		return false, why
	}
	if s.gate.waiting > 0 {
		return false, fmt.Sprintf("%d writes are waiting for memory", s.gate.waiting)
	}
	return true, ""
}

// Close stops the flusher, flushes every buffered row to Delta and closes
// the WAL. Rows that cannot be flushed stay in the WAL for the next start.
func (s *Store) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.bgCancel()
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
	rows            prometheus.Counter
	flushes         prometheus.Counter
	flushErrors     prometheus.Counter
	flushedRows     prometheus.Counter
	flushedBytes    prometheus.Counter
	flushSeconds    prometheus.Histogram
	pressureFlushes prometheus.Counter
	waits           prometheus.Counter
	admitted        prometheus.Counter
	rejections      prometheus.Counter
	walLag          prometheus.Gauge
	replaySeconds   prometheus.Gauge
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		rows:            prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_ingest_rows_total", Help: "Rows acknowledged by the write path."}),
		flushes:         prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushes_total", Help: "Parquet files flushed and committed to Delta."}),
		flushErrors:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flush_errors_total", Help: "Flushes that failed and will be retried."}),
		flushedRows:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushed_rows_total", Help: "Rows written to Delta by flushes."}),
		flushedBytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushed_bytes_total", Help: "Parquet bytes written by flushes."}),
		flushSeconds:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_flush_duration_seconds", Help: "Time to write and commit one file.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		pressureFlushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pressure_flushes_total", Help: "Buckets flushed because the MemBuffer was above its soft limit."}),
		waits:           prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_waits_total", Help: "Writes that had to wait for memory or WAL lag."}),
		admitted:        prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_admitted_after_wait_total", Help: "Writes admitted after waiting."}),
		rejections:      prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_rejections_total", Help: "Writes refused with SQLSTATE 53200 after --write-timeout."}),
		walLag:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_unflushed_bytes", Help: "WAL bytes whose rows are not yet in Delta."}),
		replaySeconds:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_replay_seconds", Help: "Duration of the WAL replay at start-up."}),
	}
	if r != nil {
		r.MustRegister(m.rows, m.flushes, m.flushErrors, m.flushedRows, m.flushedBytes, m.flushSeconds, m.pressureFlushes,
			m.waits, m.admitted, m.rejections, m.walLag, m.replaySeconds)
	}
	return m
}
