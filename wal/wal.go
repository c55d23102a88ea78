// Package wal is tsdb's write-ahead log: a durable, ordered log of opaque
// entries, kept in a badger database. Every Append returns only after its
// entries are written and synced; appends that arrive while a group is
// being written share the next badger transaction and its one sync (group
// commit).
//
// Entries are numbered by a sequence the WAL assigns. Callers replay entries
// in sequence order after a restart and delete them once their contents are
// durable elsewhere. A Stage writes a large statement's entries as they are
// produced and turns them into entries with one commit record (see
// stage.go). The WAL knows nothing about what an entry holds.
//
// Keys (big-endian numbers, so that badger's order is the log's order):
//
//	'e' seq             an entry: CRC32-C of the payload, then the payload
//	'p' stage index     a staged part, the same layout
//	'c' stage           a stage's commit: first sequence, part count
//	"m/next"            the sequence the next entry gets, at least
//	"m/stage"           the id the next stage gets, at least
//
// The CRC is ours, not badger's: it makes a payload damaged on disk
// reportable with its sequence and quarantinable, whatever badger's own
// checks caught or missed.
//
// Disk space: payloads above a kilobyte live in badger's value log, which
// only value-log GC shrinks, and badger learns what is garbage only when
// LSM compaction meets a deletion with the value it deletes. A WAL's keys
// are few and tiny, so its memtable would almost never fill and nothing
// would ever be reclaimed. Reclaim (reclaim.go) therefore flushes the
// memtable after deletions and then runs the GC: the reclaim loop on its
// interval and when a file's worth was deleted, and ReclaimIfDue for a
// caller (the flusher) that wants the space back before it goes on.
package wal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/internal/fsutil"
)

// Options configure a WAL.
type Options struct {
	// Logger receives the WAL's and badger's messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the WAL's metrics; nil registers none.
	Registerer prometheus.Registerer
	// ReclaimInterval is how often the reclaim loop gives back the disk
	// space of deleted entries (see reclaim.go). Zero means ten seconds;
	// negative turns the loop off (tests): only ReclaimIfDue and Reclaim
	// reclaim then.
	ReclaimInterval time.Duration
	// ValueLogFileBytes is the size of one value-log file: the unit in
	// which GC gives space back, and so the floor of the log's disk use
	// (the file being written is never collected). Zero means 4 MiB, small
	// enough that the log stays within twice the unflushed bytes at 100
	// hosts' rate (docs/benchmarks.md); at least 1 MiB.
	ValueLogFileBytes int64
}

// WAL is an open write-ahead log. It is safe for concurrent use.
type WAL struct {
	dir string
	db  *badger.DB
	// vlogBytes is the size of a value-log file: a file's worth of
	// deletions wakes the reclaimer (badger's Opts copies its whole
	// options struct, too much for every deletion).
	vlogBytes int64
	// chunkBytes is the largest value a payload is stored as (see
	// putFrame): it follows vlogBytes.
	chunkBytes int
	// groupBytes bounds a commit group (see groupBytes).
	groupBytes int
	logger     *slog.Logger
	metrics    *metrics
	// frameBufs are stages' copies of parts (*[]byte) a finished stage
	// leaves to the next one (see Stage.copyFrame): a bulk loader sends
	// one COPY, so one stage, per batch of rows.
	frameBufs sync.Pool

	// requests carries appends, deletions and stage operations to the
	// commit loop, which alone writes to badger (see writeMu).
	requests chan *request
	next     atomic.Uint64 // sequence of the next entry; moved only by the commit loop after Open
	// nextStage is the id of the next Stage. Ids are never reused while
	// a part of theirs may be in the log, so that a commit never claims
	// parts an aborted stage left behind.
	nextStage atomic.Uint64

	// syncFailed holds badger's message when a value-log fsync failed:
	// badger only logs that (value.go, "Error while curlf sync") and
	// reports the write as done, so the commit loop checks it after
	// every transaction (see badgerLogger).
	syncFailed *atomic.Pointer[string]

	// reclaimMu makes reclaims (the loop's and ReclaimIfDue's) take
	// turns, and Close wait for the one running.
	reclaimMu sync.Mutex

	// writeMu is held by the commit loop while it writes and by the
	// reclaimer while it flushes the memtable: badger refuses writes
	// (ErrBlockedWrites) while DropPrefix runs, rather than waiting.
	writeMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	closed  bool
	live    map[uint64]loc     // entries not deleted
	commits map[uint64]*commit // committed stages with parts still live, by stage
	damaged []*CorruptionError // found by Open, reported by the next Replay
	// deletedBytes are payload bytes deleted since the last reclaim.
	deletedBytes int64

	// cancel ends the reclaim loop's context (Close).
	cancel context.CancelFunc
	// reclaimNow wakes the reclaim loop before its interval when a value-log
	// file's worth of entries was deleted (see apply).
	reclaimNow  chan struct{}
	stop        chan struct{}
	commitDone  chan struct{}
	reclaimDone chan struct{}
}

// loc is where an entry lies: its own key, or a part of a committed stage.
type loc struct {
	stage  uint64 // zero for an appended entry
	part   uint32
	chunks uint32 // values it takes (see putFrame)
	size   int64  // value bytes, for reclaim accounting
}

// key returns the badger key of the entry seq at l.
func (l loc) key(seq uint64) []byte {
	if l.stage == 0 {
		return entryKey(seq)
	}
	return partKey(l.stage, l.part)
}

// commit is a committed stage whose parts are not all deleted yet: its
// commit record goes with the last of them.
type commit struct {
	first uint64
	live  int
}

// CorruptionError reports log contents that cannot be read back as they
// were written: an entry (Seq), or a staged write or converted segment
// log that lost some of its parts.
type CorruptionError struct {
	Dir string
	Seq uint64
	// Key is the badger key of the damaged value, when known; Segment and
	// Offset say where in a converted segment log the damage was.
	Key     string
	Segment string
	Offset  int64
	Err     error
}

func (e *CorruptionError) Error() string {
	switch {
	case e.Segment != "" && e.Seq == 0:
		return fmt.Sprintf("wal %s: segment %s offset %d: %v", e.Dir, e.Segment, e.Offset, e.Err)
	case e.Segment != "":
		return fmt.Sprintf("wal %s: corrupt entry %d (segment %s offset %d): %v", e.Dir, e.Seq, e.Segment, e.Offset, e.Err)
	case e.Key != "":
		return fmt.Sprintf("wal %s: corrupt entry %d (key %s): %v", e.Dir, e.Seq, e.Key, e.Err)
	}
	return fmt.Sprintf("wal %s: corrupt entry %d: %v", e.Dir, e.Seq, e.Err)
}

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// ErrClosed is returned by operations on a closed WAL.
var ErrClosed = errors.New("wal: closed")

// TooLargeError reports a single entry larger than the log can hold.
type TooLargeError struct{ Bytes int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("a single write of %d bytes is too large for one WAL entry; split it into smaller statements", e.Bytes)
}

// quarantineDir holds, by sequence, entries that could not be replayed.
const quarantineDir = "quarantine"

// quarantineEntry keeps payload p of entry seq in the quarantine directory
// of the log in dir, durably: the entry is deleted from the log only after
// this returns, so a crash in between must leave it in one place or the
// other.
func quarantineEntry(dir string, seq uint64, p []byte) error {
	qdir := filepath.Join(dir, quarantineDir)
	if _, err := os.Stat(qdir); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(qdir, 0o755); err != nil {
			return fmt.Errorf("wal: quarantine entry %d: %w", seq, err)
		}
		if err := fsutil.SyncDir(dir); err != nil {
			return fmt.Errorf("wal: quarantine entry %d: %w", seq, err)
		}
	}
	if err := fsutil.WriteFile(filepath.Join(qdir, fmt.Sprintf("%020d", seq)), p); err != nil {
		return fmt.Errorf("wal: quarantine entry %d: %w", seq, err)
	}
	return nil
}

// badgerOptions are the WAL's badger settings. Each is measured or
// required; docs/benchmarks.md has the numbers.
func badgerOptions(dir string, logger badgerLogger, vlogBytes int64) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(logger).
		// Every write is synced: the value log and the memtable's log,
		// once per transaction, and the commit loop makes a transaction
		// of every group.
		WithSyncWrites(true).
		// Payloads above 1 KiB go to the value log, written once;
		// inline they would be written again by every memtable flush
		// and compaction (measured: 96 against 218 MB/s).
		WithValueThreshold(1 << 10).
		WithValueLogFileSize(vlogBytes).
		// The LSM holds keys and value pointers only: a small memtable,
		// no block cache, and one level-0 table is enough to compact, so
		// that deletions meet their values soon and value-log GC learns
		// what it may reclaim.
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(1).
		WithNumLevelZeroTablesStall(8).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		// Payloads are Arrow IPC of already compact columns: compressing
		// the LSM's keys and pointers buys nothing.
		WithCompression(0).
		// One writer (the commit loop) and no read-modify-write
		// transactions: nothing can conflict.
		WithDetectConflicts(false).
		WithNumGoroutines(2)
}

// Open opens (or creates) the WAL in dir. A log written by earlier
// versions as segment files is converted first (migrate.go).
func Open(ctx context.Context, dir string, opts Options) (*WAL, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	vlogBytes := opts.ValueLogFileBytes
	if vlogBytes <= 0 {
		vlogBytes = 4 << 20
	}
	// Badger's smallest value-log file; payloads are chunked to fit.
	vlogBytes = max(vlogBytes, 1<<20)
	syncFailed := new(atomic.Pointer[string])
	db, err := badger.Open(badgerOptions(dir, badgerLogger{l: logger, syncFailed: syncFailed}, vlogBytes))
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	w := &WAL{dir: dir, db: db, vlogBytes: vlogBytes, chunkBytes: chunkBytes(vlogBytes), groupBytes: groupBytes(vlogBytes), syncFailed: syncFailed, logger: logger, metrics: newMetrics(opts.Registerer),
		requests: make(chan *request, 1024), live: map[uint64]loc{}, commits: map[uint64]*commit{},
		reclaimNow: make(chan struct{}, 1), stop: make(chan struct{}), commitDone: make(chan struct{}), reclaimDone: make(chan struct{})}
	if err := w.convertSegments(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := w.load(ctx); err != nil {
		db.Close()
		return nil, err
	}
	interval := opts.ReclaimInterval
	if interval == 0 {
		interval = 10 * time.Second
	}
	go w.commitLoop()
	if interval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		go w.reclaimLoop(ctx, interval)
	} else {
		close(w.reclaimDone)
	}
	return w, nil
}

// Append writes the payloads as consecutive entries in one atomic, synced
// batch and returns the sequence of the first. Either all entries are durable
// when it returns nil, or none is visible. Concurrent appends share one
// badger transaction and one sync (group commit).
//
// A non-zero sequence is returned whenever sequences were assigned, also
// with an error: callers that apply entries in sequence order must skip it.
func (w *WAL) Append(ctx context.Context, payloads [][]byte) (uint64, error) {
	if len(payloads) == 0 {
		return 0, errors.New("wal: append of no entries")
	}
	frames := make([][]byte, len(payloads))
	for i, p := range payloads {
		frames[i] = append(make([]byte, HeaderRoom, HeaderRoom+len(p)), p...)
	}
	return w.submit(ctx, &request{op: opAppend, frames: frames})
}

// HeaderRoom is how many bytes AppendFramed expects reserved at the front
// of each frame.
const HeaderRoom = crcSize

// AppendFramed is Append of payloads that each start with HeaderRoom
// reserved bytes, which the WAL fills with the payload's checksum in
// place: a large write then reaches badger without another copy. Badger
// has copied the frames into its log and memtable when this returns, so
// callers may reuse them.
func (w *WAL) AppendFramed(ctx context.Context, frames [][]byte) (uint64, error) {
	if len(frames) == 0 {
		return 0, errors.New("wal: append of no entries")
	}
	if err := checkFrames(frames); err != nil {
		return 0, err
	}
	return w.submit(ctx, &request{op: opAppend, frames: frames})
}

func checkFrames(frames [][]byte) error {
	for _, f := range frames {
		if len(f) < HeaderRoom {
			return errors.New("wal: frame shorter than its header")
		}
	}
	return nil
}

// NextSeq returns the sequence the first appended entry will get. It is
// meant for start-up, before any Append.
func (w *WAL) NextSeq() uint64 { return w.next.Load() }

// EnsureNextSeq raises the next sequence to at least seq and makes that
// durable. Callers use it at start-up with the largest sequence their other
// records (Delta txn versions) mention, before any Append.
func (w *WAL) EnsureNextSeq(seq uint64) error {
	if w.next.Load() >= seq {
		return nil
	}
	if _, err := w.submit(context.Background(), &request{op: opMark, first: seq}); err != nil {
		return fmt.Errorf("wal: persist next sequence: %w", err)
	}
	return nil
}

// Delete removes entries whose contents are durable elsewhere; it returns
// once the deletion is synced. Their disk space comes back with the next
// reclaim: the loop's, woken when a value-log file's worth is garbage, or
// ReclaimIfDue's. Deleting an entry that does not exist is not an error.
func (w *WAL) Delete(ctx context.Context, seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	if _, err := w.submit(ctx, &request{op: opDelete, deletes: seqs}); err != nil {
		return fmt.Errorf("wal: delete %d entries: %w", len(seqs), err)
	}
	return nil
}

// DiskBytes returns the bytes the log's files take on disk now.
func (w *WAL) DiskBytes() int64 { return w.diskUsage() }

// Close stops the background work, after the appends the commit loop
// took, and closes badger. Appends after Close fail.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	if w.cancel != nil {
		w.cancel()
	}
	<-w.reclaimDone
	// A ReclaimIfDue still running must end before badger closes; later
	// ones see closed and return.
	w.reclaimMu.Lock()
	w.reclaimMu.Unlock()
	<-w.commitDone
	// badger's Close flushes its memtable, and retries a failed flush
	// every second for as long as it fails: with the log's directory
	// removed under a running server (an operator's rm, a script's
	// cleanup racing a shutdown) that is forever, and the process could
	// not stop. While it runs, the directory is looked at; once it is
	// gone, Close gives up with an error (the entries went with it) and
	// leaves badger's goroutines to the process's exit.
	done := make(chan error, 1)
	go func() { done <- w.db.Close() }()
	tick := time.NewTicker(closeCheckInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("wal: close: %w", err)
			}
			return nil
		case <-tick.C:
			if _, err := os.Stat(w.dir); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("wal: close: the log's directory was removed, its unflushed entries with it: %w", err)
			}
		}
	}
}

// closeCheckInterval is how often Close looks for the log's directory
// while badger closes.
const closeCheckInterval = 250 * time.Millisecond

type metrics struct {
	appends   prometheus.Counter
	bytes     prometheus.Counter
	deletes   prometheus.Counter
	failures  prometheus.Counter
	fsyncs    prometheus.Counter
	corrupt   prometheus.Counter
	reclaimed prometheus.Counter
	diskBytes prometheus.Gauge
	latency   prometheus.Histogram
	groupSize prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		appends:   prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_appended_total", Help: "WAL entries appended and synced."}),
		bytes:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_bytes_appended_total", Help: "Payload bytes appended to the WAL."}),
		deletes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_deleted_total", Help: "WAL entries deleted after their rows became durable in Delta."}),
		failures:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_append_failures_total", Help: "WAL appends and deletions that failed."}),
		fsyncs:    prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_fsyncs_total", Help: "WAL commits (each one synced badger transaction), shared by the appends of a group."}),
		corrupt:   prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_corrupt_entries_total", Help: "Damaged WAL entries found; damaged entries are quarantined."}),
		reclaimed: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_value_log_files_reclaimed_total", Help: "Value-log files badger's GC rewrote or removed after deletions."}),
		diskBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_disk_bytes", Help: "Bytes the WAL takes on disk (badger LSM and value log), as of the last reclaim."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_wal_commit_duration_seconds", Help: "Time to write and sync one group of appends.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_wal_group_appends", Help: "Appends committed together by one sync.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
	}
	if r != nil {
		r.MustRegister(m.appends, m.bytes, m.deletes, m.failures, m.fsyncs, m.corrupt, m.reclaimed, m.diskBytes, m.latency, m.groupSize)
	}
	return m
}

// badgerLogger routes badger's log lines to slog, and catches the one
// error badger logs instead of returning: a failed fsync of the value
// log, after which the write it was for is reported as done.
type badgerLogger struct {
	l          *slog.Logger
	syncFailed *atomic.Pointer[string]
}

// vlogSyncFailure starts the format of badger's message for a failed
// value-log fsync.
const vlogSyncFailure = "Error while curlf sync"

func (b badgerLogger) Errorf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	if strings.HasPrefix(f, vlogSyncFailure) && b.syncFailed != nil {
		b.syncFailed.Store(&msg)
	}
	b.l.Error(msg, "component", "badger")
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Infof(f string, a ...any) {
	b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Debugf(f string, a ...any) {
	b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
}
