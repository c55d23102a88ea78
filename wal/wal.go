// Package wal is tsdb's write-ahead log: a durable, ordered log of opaque
// entries stored in badger. Every Append is one badger transaction written
// with SyncWrites, so it returns only after the entry is fsynced; badger
// batches concurrent commits into one write and one fsync (group commit).
//
// Entries are numbered by a sequence the WAL assigns. Callers replay entries
// in sequence order after a restart and delete them once their contents are
// durable elsewhere. The WAL knows nothing about what an entry holds.
package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// keyPrefix marks entry keys; the rest of the key is the big-endian sequence,
// so badger's key order is sequence order.
const keyPrefix = 'e'

// headerSize is the CRC32-C that precedes every payload. badger checksums its
// own files, but the CRC also catches a payload that was written wrongly by
// us and makes corruption reportable with the entry's sequence.
const headerSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configure a WAL.
type Options struct {
	// Logger receives the WAL's and badger's messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the WAL's metrics; nil registers none.
	Registerer prometheus.Registerer
	// GCInterval is how often badger's value log is garbage collected.
	// Zero means one minute.
	GCInterval time.Duration
}

// WAL is an open write-ahead log. It is safe for concurrent use.
type WAL struct {
	db      *badger.DB
	logger  *slog.Logger
	metrics *metrics

	mu     sync.Mutex // guards next and closed
	next   uint64     // sequence of the next entry
	closed bool

	stop chan struct{}
	done chan struct{}
}

// CorruptionError reports an entry that cannot be read back as it was written.
type CorruptionError struct {
	Dir string
	Seq uint64
	Err error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal %s: corrupt entry %d: %v", e.Dir, e.Seq, e.Err)
}

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// ErrClosed is returned by operations on a closed WAL.
var ErrClosed = errors.New("wal: closed")

// Open opens (or creates) the WAL in dir.
func Open(ctx context.Context, dir string, opts Options) (*WAL, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bopts := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(badgerLogger{logger}).
		WithLoggingLevel(badger.WARNING).
		// The WAL is written far more than it is read: small memtables and
		// caches keep badger's footprint out of the MemBuffer's budget.
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithBlockCacheSize(8 << 20).
		WithValueThreshold(64 << 10).
		WithValueLogFileSize(256 << 20).
		WithNumCompactors(2).
		WithDetectConflicts(false)
	db, err := badger.Open(bopts)
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	w := &WAL{db: db, logger: logger, metrics: newMetrics(opts.Registerer), stop: make(chan struct{}), done: make(chan struct{})}
	last, err := w.lastSeq()
	if err != nil {
		db.Close()
		return nil, err
	}
	w.next = last + 1
	interval := opts.GCInterval
	if interval <= 0 {
		interval = time.Minute
	}
	go w.gcLoop(interval)
	return w, nil
}

func (w *WAL) lastSeq() (uint64, error) {
	var last uint64
	err := w.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte{keyPrefix}})
		defer it.Close()
		// Seek past the largest possible key of the prefix.
		it.Seek([]byte{keyPrefix, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		if it.Valid() {
			last = binary.BigEndian.Uint64(it.Item().Key()[1:])
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("wal: find last entry: %w", err)
	}
	return last, nil
}

func key(seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = keyPrefix
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

// Append writes the payloads as consecutive entries in one atomic, fsynced
// batch and returns the sequence of the first. Either all entries are durable
// when it returns nil, or none is visible.
func (w *WAL) Append(ctx context.Context, payloads [][]byte) (uint64, error) {
	if len(payloads) == 0 {
		return 0, errors.New("wal: append of no entries")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, ErrClosed
	}
	first := w.next
	w.next += uint64(len(payloads))
	w.mu.Unlock()

	start := time.Now()
	txn := w.db.NewTransaction(true)
	defer txn.Discard()
	var bytes int
	for i, p := range payloads {
		v := make([]byte, headerSize+len(p))
		binary.BigEndian.PutUint32(v, crc32.Checksum(p, castagnoli))
		copy(v[headerSize:], p)
		if err := txn.Set(key(first+uint64(i)), v); err != nil {
			w.metrics.failures.Inc()
			return first, fmt.Errorf("wal: append entry %d: %w", first+uint64(i), err)
		}
		bytes += len(v)
	}
	if err := txn.Commit(); err != nil {
		w.metrics.failures.Inc()
		return first, fmt.Errorf("wal: commit entries %d..%d: %w", first, first+uint64(len(payloads))-1, err)
	}
	w.metrics.appends.Add(float64(len(payloads)))
	w.metrics.bytes.Add(float64(bytes))
	w.metrics.latency.Observe(time.Since(start).Seconds())
	return first, nil
}

// NextSeq returns the sequence the next appended entry will get.
func (w *WAL) NextSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
}

// Replay calls fn for every entry in sequence order. An entry whose checksum
// does not match stops the replay with a *CorruptionError.
func (w *WAL) Replay(ctx context.Context, fn func(seq uint64, payload []byte) error) error {
	return w.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 16, Prefix: []byte{keyPrefix}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			seq := binary.BigEndian.Uint64(item.Key()[1:])
			v, err := item.ValueCopy(nil)
			if err != nil {
				return &CorruptionError{Dir: w.db.Opts().Dir, Seq: seq, Err: err}
			}
			if len(v) < headerSize {
				return &CorruptionError{Dir: w.db.Opts().Dir, Seq: seq, Err: fmt.Errorf("entry of %d bytes is shorter than its header", len(v))}
			}
			p := v[headerSize:]
			if want, got := binary.BigEndian.Uint32(v), crc32.Checksum(p, castagnoli); want != got {
				return &CorruptionError{Dir: w.db.Opts().Dir, Seq: seq, Err: fmt.Errorf("checksum %08x, want %08x", got, want)}
			}
			if err := fn(seq, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes entries whose contents are durable elsewhere. Deleting an
// entry that does not exist is not an error.
func (w *WAL) Delete(ctx context.Context, seqs []uint64) error {
	wb := w.db.NewWriteBatch()
	defer wb.Cancel()
	for _, s := range seqs {
		if err := wb.Delete(key(s)); err != nil {
			return fmt.Errorf("wal: delete entry %d: %w", s, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("wal: delete %d entries: %w", len(seqs), err)
	}
	w.metrics.deletes.Add(float64(len(seqs)))
	return nil
}

// gcLoop reclaims value-log space of deleted entries until Close.
func (w *WAL) gcLoop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			// RunValueLogGC rewrites at most one file per call; loop while it
			// finds work. ErrNoRewrite means nothing was worth reclaiming.
			for w.db.RunValueLogGC(0.5) == nil {
				select {
				case <-w.stop:
					return
				default:
				}
			}
		}
	}
}

// Close stops background work and closes badger. Appends after Close fail.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	if err := w.db.Close(); err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

type metrics struct {
	appends  prometheus.Counter
	bytes    prometheus.Counter
	deletes  prometheus.Counter
	failures prometheus.Counter
	latency  prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		appends:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_appended_total", Help: "WAL entries appended and fsynced."}),
		bytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_bytes_appended_total", Help: "Bytes appended to the WAL."}),
		deletes:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_deleted_total", Help: "WAL entries deleted after their rows became durable in Delta."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_append_failures_total", Help: "WAL appends that failed."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_wal_append_duration_seconds", Help: "Time to append and fsync a WAL batch.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
	}
	if r != nil {
		r.MustRegister(m.appends, m.bytes, m.deletes, m.failures, m.latency)
	}
	return m
}

// badgerLogger routes badger's log lines to slog.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(fmt.Sprintf(f, a...), "component", "badger")
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
