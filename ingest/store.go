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
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

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
	// ExpireTxns lets checkpoints leave settled bucket txns out
	// (txnExpired). The server turns it on. With the segment WAL the
	// crash loop showed duplicated rows with it in about one run of four
	// (a deletion the segment log could lose would fit: an entry back
	// after its txn expired is replayed twice); on badger, whose
	// deletions are synced LSM tombstones, 16 runs of 30 rounds showed
	// none.
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
	// ownTx numbers the store's own lock holders (retention's deletes),
	// above every TxID the server gives.
	ownTx atomic.Uint64
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
	// compressBufs are the buffers COPY's WAL entries are compressed into.
	compressBufs compressBuffers

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
	// unconvertible are other writers' files compaction found it cannot
	// rewrite without changing a value (delta.ForeignFileError); guarded
	// by compactMu.
	unconvertible map[string]bool
	// plainMu orders plain writes (INSERT, COPY, line protocol into a
	// table without dedup_keys, which take no table lock) against a
	// change of the table's point identity: they hold it for reading
	// from their look at the table's dedup keys until their rows are in
	// the MemBuffer, BlockPlainWrites for writing. Taken before flushMu.
	plainMu sync.RWMutex

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
