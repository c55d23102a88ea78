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
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/delta"
	"tsdb/internal/fault"
	"tsdb/internal/schema"
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
	// TargetFileSize is the size compaction merges small files up to.
	// Zero means 64 MiB. A merge of files that follow each other in time
	// streams them; one of overlapping files holds their rows in memory,
	// several times their Parquet size.
	TargetFileSize int64
	// CompactInterval is how often background compaction runs; zero means
	// 10 minutes, negative turns it off (VACUUM still compacts).
	CompactInterval time.Duration
	// DeletedFileRetention is how long VACUUM keeps files removed from a
	// table (queries may still read them) before deleting them. Zero
	// means 7 days (Delta's delta.deletedFileRetentionDuration default);
	// negative means at once.
	DeletedFileRetention time.Duration
	// LogRetention is how long VACUUM keeps Delta log history (commits
	// and checkpoints before the newest checkpoint older than this). Zero
	// means 30 days (Delta's delta.logRetentionDuration default).
	LogRetention time.Duration
	// Root is where the Delta tables live; nil means DataDir/tables on the
	// local filesystem.
	Root delta.Root
	// RefreshInterval is how often the store reads commits other writers
	// made to its tables (and tables they created). Zero means every 2s on
	// an object-store root and never on a local one; negative means never.
	RefreshInterval time.Duration
	// OrphanFileAge is how old a data file no commit refers to (left by a
	// crash between writing and committing it) must be before VACUUM
	// deletes it; zero means 24 hours. Younger files may be about to be
	// committed, by this process or another writer of shared storage.
	OrphanFileAge time.Duration
	// RetentionInterval is how often rows past their table's retention
	// are dropped; zero means one minute.
	RetentionInterval time.Duration
	// ScrubInterval is how often the scrubber reads a share of the data
	// files to check them against their checksums (see damage.go); zero
	// means one minute, negative turns it off.
	ScrubInterval time.Duration
	// FlushConcurrency is how many tables flush at once.
	FlushConcurrency int
	// CompileDML turns logged DELETE/UPDATE statements back into work at
	// replay. Without it a WAL holding DML cannot be replayed.
	CompileDML DMLCompiler
	// ReadFile reads any data file of a table as the table's rows (by
	// column name, without rows a deletion vector deletes): compaction
	// rewrites other writers' files and files with deletion vectors in
	// tsdb's layout with it. Without it they stay as they are.
	ReadFile FileReader
	// ExpireTxns lets checkpoints leave settled bucket txns out
	// (txnExpired). Off by default: the crash loop showed duplicated rows
	// with it on in about one run of four, cause not yet found.
	ExpireTxns bool
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
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = 64 << 20
	}
	if o.DeletedFileRetention == 0 {
		o.DeletedFileRetention = 7 * 24 * time.Hour
	}
	if o.DeletedFileRetention < 0 {
		o.DeletedFileRetention = 0
	}
	if o.LogRetention <= 0 {
		o.LogRetention = 30 * 24 * time.Hour
	}
	if o.CompactInterval == 0 {
		o.CompactInterval = 10 * time.Minute
	}
	if o.OrphanFileAge <= 0 {
		o.OrphanFileAge = 24 * time.Hour
	}
	if o.RetentionInterval <= 0 {
		o.RetentionInterval = time.Minute
	}
	if o.ScrubInterval == 0 {
		o.ScrubInterval = time.Minute
	}
	if o.FlushConcurrency <= 0 {
		o.FlushConcurrency = 4
	}
	return o
}

// Store owns the WAL, the MemBuffer and the Delta tables.
type Store struct {
	opts    Options
	logger  *slog.Logger
	root    delta.Root
	writer  string // this store's writer id, part of its Delta txn appIds
	wal     *wal.WAL
	buf     *membuffer.Buffer
	seq     *sequencer
	metrics *metrics
	faults  *fault.Injector

	mu     sync.RWMutex // guards tables, unavailable and dropping
	tables map[string]*tableState
	// unavailable are tables whose Delta log could not be read (see
	// damage.go): not in tables, but never taken for absent either.
	unavailable map[string]*UnavailableError
	// walLoss says what start-up found missing from the WAL (see
	// checkWALContinuity); set once by Open.
	walLoss []string
	// dropping are tables whose files DropTable is deleting: the refresh
	// loop must not find them in storage and open them again.
	dropping map[string]bool

	// locks finds deadlocks between transactions (see LockTable).
	locks *lockManager
	// commitMu makes a transaction's changes of several tables visible
	// at once: commits publish under it, readers take their snapshots of
	// several tables under it (Snapshots).
	commitMu sync.RWMutex

	// gate holds writers back at the memory and WAL-lag limits.
	gate gate
	// walLag is the size of WAL entries not yet deleted after a flush.
	walLag atomic.Int64
	// walDeleteFailed: a flush could not delete its WAL entries since
	// the start, so bucket txns must stay (txnExpired).
	walDeleteFailed atomic.Bool

	// diskFullAt is when a write or flush last failed for want of disk
	// space (UnixNano; zero: never).
	diskFullAt atomic.Int64
	// frames are encoding buffers of WAL entries, reused once the WAL has
	// written them: a 1,000-row INSERT otherwise allocates (and the
	// runtime zeroes) a fresh quarter MiB per statement.
	frames sync.Pool

	// bg runs the background services (services.go); the flusher's
	// per-table flushes are counted in flushWG, which it waits for.
	bg        *services
	kick      chan struct{}
	flushSem  chan struct{}
	flushWG   sync.WaitGroup
	closeOnce sync.Once
}

// tableState is one table: its schema, its Delta table and the Delta
// snapshot that readers see.
type tableState struct {
	// schema is the table's schema; ALTER TABLE ADD COLUMN replaces it
	// (under mu, together with published), readers load it.
	schema atomic.Pointer[schema.Table]
	delta  *delta.Table

	// mu makes "Delta snapshot + MemBuffer batches" one atomic read: a flush
	// publishes its new Delta snapshot and releases the flushed batches while
	// holding it for writing.
	mu        sync.RWMutex
	published *delta.Snapshot
	dropped   bool

	flushMu   tableLock  // the table's write lock: see tableLock
	compactMu sync.Mutex // one compaction of the table at a time

	// damaged are data files found missing or not matching their add
	// action, with why (guarded by mu; see damage.go).
	damaged map[string]error
	// logDamage is set when newer commits of the table (another writer's)
	// could not be read: reads fail with it (guarded by mu).
	logDamage *UnavailableError
	// verified are data files the scrubber read whole, with when
	// (guarded by mu).
	verified map[string]time.Time

	// settled are this writer's bucket txns of the table (app → version)
	// whose WAL entries are deleted (settledMu guards it; txnExpired).
	settledMu sync.Mutex
	settled   map[string]int64
	// blocked is writeBlock's answer for the published snapshot.
	blocked atomic.Pointer[writeBlockResult]
	// dvCache holds decoded deletion vectors by unique id (see
	// deletedRows; guarded by dvMu).
	dvMu    sync.Mutex
	dvCache map[string]delta.RowSet

	flushing atomic.Bool // a background flush of the table is running
	schedMu  sync.Mutex  // guards failures, retryAt and pendingDML
	failures int
	retryAt  time.Time
	// pendingDML are logged DELETE/UPDATE entries that a replay may still
	// need (inserts logged before them are not all flushed).
	pendingDML []uint64
}

// sch returns the table's current schema.
func (ts *tableState) sch() schema.Table { return *ts.schema.Load() }

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
		opts:        opts,
		logger:      logger,
		root:        opts.Root,
		buf:         membuffer.New(opts.Registerer),
		tables:      map[string]*tableState{},
		unavailable: map[string]*UnavailableError{},
		locks:       newLockManager(),
		dropping:    map[string]bool{},
		metrics:     newMetrics(opts.Registerer),
		faults:      opts.Faults,
		kick:        make(chan struct{}, 1),
		flushSem:    make(chan struct{}, opts.FlushConcurrency),
	}
	s.gate.notify()
	if s.root == nil {
		root, err := delta.NewLocalRoot(filepath.Join(opts.DataDir, "tables"))
		if err != nil {
			return nil, err
		}
		s.root = root
	}
	writer, err := loadWriterID(opts.DataDir)
	if err != nil {
		return nil, err
	}
	s.writer = writer
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
		for id, v := range ts.published.Txns {
			if s.ownsAppID(id) {
				maxTxn = max(maxTxn, uint64(v))
			}
		}
	}
	s.checkWALContinuity(w, maxTxn)
	if err := w.EnsureNextSeq(maxTxn + 1); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.replay(ctx); err != nil {
		w.Close()
		return nil, err
	}
	s.seq = newSequencer(w.NextSeq())
	s.bg = startServices(
		flusher{s},
		s.eachTable(s.opts.CompactInterval, "compaction failed; the table is unchanged", func(ctx context.Context, table string) error {
			_, err := s.Compact(ctx, table)
			return err
		}),
		s.eachTable(s.opts.RetentionInterval, "enforcing retention failed; retrying next round", func(ctx context.Context, table string) error {
			_, err := s.EnforceRetention(ctx, table)
			return err
		}),
		s.refresher(),
		periodic{every: s.opts.ScrubInterval, fn: func(ctx context.Context) { s.Scrub(ctx, scrubBytesPerRound) }},
	)
	return s, nil
}

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

// Validate checks records for table name as every write does (types, NOT
// NULL, text): a transaction checks its rows when it takes them, long
// before it commits them.
func (s *Store) Validate(name string, recs []arrow.RecordBatch) error {
	ts, err := s.state(name)
	if err != nil {
		return err
	}
	if err := ts.writeBlock(); err != nil {
		return err
	}
	t := ts.sch()
	for _, rec := range recs {
		if err := s.validate(t, rec); err != nil {
			return err
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

// Close stops the background services and waits for them, flushes every
// buffered row to Delta and closes the WAL. Rows that cannot be flushed stay in the WAL for the next start.
func (s *Store) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.bg.Stop()
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
