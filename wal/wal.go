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
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// keyPrefix marks entry keys; the rest of the key is the big-endian sequence,
// so badger's key order is sequence order.
const keyPrefix = 'e'

// nextSeqKey holds the sequence the next entry gets. It is written in every
// commit, so sequences keep increasing across restarts even when every
// entry has been deleted: callers compare sequences with what they recorded
// elsewhere (the Delta txn versions), and a reused sequence would look
// already flushed.
var nextSeqKey = []byte("m/next")

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

	// requests carries appends to the commit loop, which owns next.
	requests chan *request
	next     atomic.Uint64 // sequence of the next entry; written only by commitLoop after Open

	mu     sync.Mutex // guards closed
	closed bool

	stop       chan struct{}
	commitDone chan struct{}
	gcDone     chan struct{}
}

// request is one Append waiting for the commit loop.
type request struct {
	payloads [][]byte
	framed   bool // payloads start with HeaderRoom reserved bytes
	first    uint64
	err      error
	done     chan struct{}
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
		// Entries above 1 KiB live in the value log and cost a
		// transaction only their key and a pointer. Badger caps a
		// transaction at 15% of a memtable (2.4 MB here) counting inline
		// values in full, and one statement is one transaction: with
		// 64 KiB inline, an INSERT … SELECT of 9 MB failed.
		WithValueThreshold(1 << 10).
		WithValueLogFileSize(256 << 20).
		WithNumCompactors(2).
		WithDetectConflicts(false)
	db, err := badger.Open(bopts)
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	w := &WAL{db: db, logger: logger, metrics: newMetrics(opts.Registerer), requests: make(chan *request, 1024),
		stop: make(chan struct{}), commitDone: make(chan struct{}), gcDone: make(chan struct{})}
	last, err := w.lastSeq()
	if err != nil {
		db.Close()
		return nil, err
	}
	w.next.Store(last + 1)
	interval := opts.GCInterval
	if interval <= 0 {
		interval = time.Minute
	}
	go w.gcLoop(interval)
	go w.commitLoop()
	return w, nil
}

func (w *WAL) lastSeq() (uint64, error) {
	var last uint64
	err := w.db.View(func(txn *badger.Txn) error {
		if item, err := txn.Get(nextSeqKey); err == nil {
			if err := item.Value(func(v []byte) error {
				if len(v) == 8 {
					last = binary.BigEndian.Uint64(v) - 1
				}
				return nil
			}); err != nil {
				return err
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte{keyPrefix}})
		defer it.Close()
		// Seek past the largest possible key of the prefix.
		it.Seek([]byte{keyPrefix, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		if it.Valid() {
			last = max(last, binary.BigEndian.Uint64(it.Item().Key()[1:]))
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
// when it returns nil, or none is visible. Concurrent appends share one
// badger commit and one fsync (group commit).
//
// A non-zero sequence is returned whenever sequences were assigned, also
// with an error: callers that apply entries in sequence order must skip it.
func (w *WAL) Append(ctx context.Context, payloads [][]byte) (uint64, error) {
	return w.append(ctx, payloads, false)
}

// HeaderRoom is how many bytes AppendFramed expects reserved at the front
// of each frame.
const HeaderRoom = headerSize

// AppendFramed is Append of payloads that each start with HeaderRoom
// reserved bytes, which the WAL fills with the entry header in place: a
// large write is then stored without another copy. The WAL writes the
// frames' headers in place and keeps no reference to them once it returns
// (badger has copied them into its log), so callers may reuse them.
func (w *WAL) AppendFramed(ctx context.Context, frames [][]byte) (uint64, error) {
	for _, f := range frames {
		if len(f) < HeaderRoom {
			return 0, errors.New("wal: frame shorter than its header")
		}
	}
	return w.append(ctx, frames, true)
}

func (w *WAL) append(ctx context.Context, payloads [][]byte, framed bool) (uint64, error) {
	if len(payloads) == 0 {
		return 0, errors.New("wal: append of no entries")
	}
	req := &request{payloads: payloads, framed: framed, done: make(chan struct{})}
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	select {
	case w.requests <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-w.stop:
		return 0, ErrClosed
	}
	// Once queued the outcome is decided by the commit loop: waiting for it
	// (not for ctx) keeps "acknowledged" and "durable" the same thing.
	select {
	case <-req.done:
		return req.first, req.err
	case <-w.commitDone:
		// The loop stopped; it finished every request it took.
		select {
		case <-req.done:
			return req.first, req.err
		default:
			return 0, ErrClosed
		}
	}
}

// maxGroupBytes bounds the payload bytes committed together.
const maxGroupBytes = 8 << 20

// commitLoop takes every queued request, assigns sequences in queue order,
// writes them in one badger transaction (one fsync) and wakes the writers.
// While a group is being fsynced, the next one queues up.
func (w *WAL) commitLoop() {
	defer close(w.commitDone)
	for {
		var first *request
		select {
		case first = <-w.requests:
		case <-w.stop:
			// Fail what is still queued: nothing of it was written.
			for {
				select {
				case r := <-w.requests:
					r.err = ErrClosed
					close(r.done)
				default:
					return
				}
			}
		}
		group := []*request{first}
		size := payloadBytes(first)
	drain:
		for size < maxGroupBytes {
			select {
			case r := <-w.requests:
				group = append(group, r)
				size += payloadBytes(r)
			default:
				break drain
			}
		}
		w.commitGroup(group)
	}
}

func payloadBytes(r *request) int {
	n := 0
	for _, p := range r.payloads {
		n += len(p)
		if !r.framed {
			n += headerSize
		}
	}
	return n
}

// commitGroup writes a group of requests. Each request lands in exactly one
// badger transaction; a request that does not fit with the others gets a
// transaction of its own.
func (w *WAL) commitGroup(group []*request) {
	start := time.Now()
	for _, r := range group {
		r.first = w.next.Add(uint64(len(r.payloads))) - uint64(len(r.payloads))
	}
	var pending []*request
	txn := w.db.NewTransaction(true)
	commit := func() {
		var next [8]byte
		binary.BigEndian.PutUint64(next[:], w.next.Load())
		err := txn.Set(nextSeqKey, next[:])
		if err == nil {
			err = txn.Commit()
		}
		w.metrics.fsyncs.Inc()
		for _, r := range pending {
			r.err = err
		}
		pending = nil
		txn = w.db.NewTransaction(true)
	}
	for _, r := range group {
		err := w.setAll(txn, r)
		if errors.Is(err, badger.ErrTxnTooBig) && len(pending) > 0 {
			// Commit what fits so far, then retry this request alone.
			txn.Discard()
			txn = w.db.NewTransaction(true)
			for _, p := range pending {
				if err := w.setAll(txn, p); err != nil {
					p.err = err
				}
			}
			commit()
			err = w.setAll(txn, r)
		}
		if err != nil {
			if errors.Is(err, badger.ErrTxnTooBig) {
				err = &TooLargeError{Bytes: payloadBytes(r)}
			}
			r.err = fmt.Errorf("wal: append entries %d..%d: %w", r.first, r.first+uint64(len(r.payloads))-1, err)
			// The transaction may hold part of r: drop it and re-add the others.
			txn.Discard()
			txn = w.db.NewTransaction(true)
			for _, p := range pending {
				if err := w.setAll(txn, p); err != nil {
					p.err = err
				}
			}
			continue
		}
		pending = append(pending, r)
	}
	if len(pending) > 0 {
		commit()
	}
	txn.Discard()
	for _, r := range group {
		if r.err != nil {
			w.metrics.failures.Inc()
		} else {
			w.metrics.appends.Add(float64(len(r.payloads)))
			w.metrics.bytes.Add(float64(payloadBytes(r)))
		}
		close(r.done)
	}
	w.metrics.groupSize.Observe(float64(len(group)))
	w.metrics.latency.Observe(time.Since(start).Seconds())
}

func (w *WAL) setAll(txn *badger.Txn, r *request) error {
	for i, p := range r.payloads {
		if r.framed {
			binary.BigEndian.PutUint32(p, crc32.Checksum(p[headerSize:], castagnoli))
			if err := txn.Set(key(r.first+uint64(i)), p); err != nil {
				return err
			}
			continue
		}
		v := make([]byte, headerSize+len(p))
		binary.BigEndian.PutUint32(v, crc32.Checksum(p, castagnoli))
		copy(v[headerSize:], p)
		if err := txn.Set(key(r.first+uint64(i)), v); err != nil {
			return err
		}
	}
	return nil
}

// TooLargeError reports a single append larger than one WAL transaction.
type TooLargeError struct{ Bytes int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("a single write of %d bytes is too large for one WAL transaction; split it into smaller statements", e.Bytes)
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
	w.next.Store(seq)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], seq)
	if err := w.db.Update(func(txn *badger.Txn) error { return txn.Set(nextSeqKey, v[:]) }); err != nil {
		return fmt.Errorf("wal: persist next sequence: %w", err)
	}
	return nil
}

// Replay calls fn for every entry in sequence order. An entry that cannot be
// read back (badger error, checksum mismatch) is reported to onCorrupt,
// moved out of the log into a quarantine key range (kept for inspection,
// never replayed again) and skipped, so that one bad entry does not keep
// the server from starting. fn may also return a *CorruptionError for an
// entry it cannot decode; it is quarantined the same way. Any other error
// from fn stops the replay.
func (w *WAL) Replay(ctx context.Context, fn func(seq uint64, payload []byte) error, onCorrupt func(*CorruptionError)) error {
	var bad []uint64
	err := w.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64, Prefix: []byte{keyPrefix}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			seq := binary.BigEndian.Uint64(item.Key()[1:])
			corrupt := func(cause error) {
				ce := &CorruptionError{Dir: w.db.Opts().Dir, Seq: seq, Err: cause}
				w.metrics.corrupt.Inc()
				if onCorrupt != nil {
					onCorrupt(ce)
				}
				bad = append(bad, seq)
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				corrupt(err)
				continue
			}
			if len(v) < headerSize {
				corrupt(fmt.Errorf("entry of %d bytes is shorter than its header", len(v)))
				continue
			}
			p := v[headerSize:]
			if want, got := binary.BigEndian.Uint32(v), crc32.Checksum(p, castagnoli); want != got {
				corrupt(fmt.Errorf("checksum %08x, want %08x", got, want))
				continue
			}
			if err := fn(seq, p); err != nil {
				var ce *CorruptionError
				if errors.As(err, &ce) {
					corrupt(ce.Err)
					continue
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.quarantine(bad)
}

// quarantineKeyPrefix holds entries that could not be replayed.
const quarantineKeyPrefix = 'q'

func (w *WAL) quarantine(seqs []uint64) error {
	for _, seq := range seqs {
		err := w.db.Update(func(txn *badger.Txn) error {
			var v []byte
			if item, err := txn.Get(key(seq)); err == nil {
				v, _ = item.ValueCopy(nil) // a value badger cannot read is quarantined empty
			}
			qk := key(seq)
			qk[0] = quarantineKeyPrefix
			if err := txn.Set(qk, v); err != nil {
				return err
			}
			return txn.Delete(key(seq))
		})
		if err != nil {
			return fmt.Errorf("wal: quarantine entry %d: %w", seq, err)
		}
	}
	return nil
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
	defer close(w.gcDone)
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
	<-w.commitDone
	<-w.gcDone
	if err := w.db.Close(); err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

type metrics struct {
	appends   prometheus.Counter
	bytes     prometheus.Counter
	deletes   prometheus.Counter
	failures  prometheus.Counter
	fsyncs    prometheus.Counter
	corrupt   prometheus.Counter
	latency   prometheus.Histogram
	groupSize prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		appends:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_appended_total", Help: "WAL entries appended and fsynced."}),
		bytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_bytes_appended_total", Help: "Bytes appended to the WAL."}),
		deletes:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_entries_deleted_total", Help: "WAL entries deleted after their rows became durable in Delta."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_append_failures_total", Help: "WAL appends that failed."}),
		fsyncs:   prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_fsyncs_total", Help: "WAL commits (each one fsync), shared by the appends of a group."}),
		corrupt:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_wal_corrupt_entries_total", Help: "WAL entries that could not be replayed and were quarantined."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_wal_commit_duration_seconds", Help: "Time to write and fsync one group of appends.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_wal_group_appends", Help: "Appends committed together by one fsync.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
	}
	if r != nil {
		r.MustRegister(m.appends, m.bytes, m.deletes, m.failures, m.fsyncs, m.corrupt, m.latency, m.groupSize)
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
