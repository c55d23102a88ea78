// Package membuffer holds rows that are durable in the WAL but not yet in
// Delta: per table, per time bucket, a list of immutable Arrow record batches.
//
// Readers take snapshots (a list of batches) under the buffer's lock and may
// keep using them after the lock is released, because batches are never
// changed once appended. Writers append new batches. The flusher seals a
// bucket (later rows for the same time range go to a new bucket instance),
// writes the sealed batches elsewhere and then releases them. The package does
// no I/O.
package membuffer

import (
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"
)

// Key identifies a bucket's time range [Start, End) in UTC microseconds.
type Key struct {
	Start, End int64
}

// BucketKey returns the bucket containing micros for the given bucket
// duration. It floors, so rows before 1970 (negative micros) land in the
// bucket that contains them rather than the one after.
func BucketKey(micros int64, d time.Duration) Key {
	w := d.Microseconds()
	if w <= 0 {
		w = 1
	}
	start := micros / w * w
	if micros%w != 0 && micros < 0 {
		start -= w
	}
	return Key{Start: start, End: start + w}
}

// Batch is one immutable record batch of a table's rows in one bucket.
type Batch struct {
	ID      uint64 // unique for the life of the process, increasing
	Seq     uint64 // the WAL entry holding these rows
	Key     Key
	Rec     arrow.RecordBatch
	MinTime int64 // micros, of the table's time column
	MaxTime int64
	Bytes   int64
	// WALBytes is the size of the WAL entry holding the batch: flush lag
	// is counted in it.
	WALBytes int64
}

type bucket struct {
	key       Key
	batches   []Batch
	sealed    bool
	created   time.Time
	lastWrite time.Time
	bytes     int64
	rows      int64
}

type table struct {
	open    map[Key]*bucket
	buckets []*bucket // every unreleased bucket, in creation order
}

// BucketInfo describes a bucket for the flush policy.
type BucketInfo struct {
	Table     string
	Key       Key
	Rows      int64
	Bytes     int64
	Created   time.Time
	LastWrite time.Time
	Sealed    bool
}

func (bk *bucket) info(table string) BucketInfo {
	return BucketInfo{Table: table, Key: bk.key, Rows: bk.rows, Bytes: bk.bytes, Created: bk.created, LastWrite: bk.lastWrite, Sealed: bk.sealed}
}

// Sealed is a bucket that takes no more rows and waits to be flushed.
type Sealed struct {
	Table   string
	Key     Key
	Batches []Batch
	b       *bucket
}

// MaxSeq returns the largest WAL sequence among the sealed batches.
func (s *Sealed) MaxSeq() uint64 {
	var m uint64
	for _, b := range s.Batches {
		m = max(m, b.Seq)
	}
	return m
}

// Bytes returns the memory the sealed batches hold.
func (s *Sealed) Bytes() int64 { return s.b.bytes }

// WALBytes returns the WAL bytes of the sealed batches.
func (s *Sealed) WALBytes() int64 {
	var n int64
	for _, b := range s.Batches {
		n += b.WALBytes
	}
	return n
}

// Seqs returns the WAL sequences of the sealed batches.
func (s *Sealed) Seqs() []uint64 {
	out := make([]uint64, 0, len(s.Batches))
	for _, b := range s.Batches {
		out = append(out, b.Seq)
	}
	return out
}

// Buffer is the in-memory buffer of all tables. It is safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	tables  map[string]*table
	bytes   int64
	rows    int64
	nextID  uint64
	metrics *metrics
}

// New returns an empty buffer. reg may be nil.
func New(reg prometheus.Registerer) *Buffer {
	return &Buffer{tables: map[string]*table{}, metrics: newMetrics(reg)}
}

// Append adds a batch to the open bucket of its key, creating the bucket if
// needed, and returns the bucket's size with it: the writer can tell when
// the bucket has grown past a limit. ID and Bytes are filled in by the
// buffer.
func (b *Buffer) Append(tableName string, bt Batch, now time.Time) (bucketBytes int64) {
	bt.Bytes = RecordBytes(bt.Rec)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		t = &table{open: map[Key]*bucket{}}
		b.tables[tableName] = t
	}
	bk := t.open[bt.Key]
	if bk == nil {
		bk = &bucket{key: bt.Key, created: now}
		t.open[bt.Key] = bk
		t.buckets = append(t.buckets, bk)
	}
	b.nextID++
	bt.ID = b.nextID
	bk.batches = append(bk.batches, bt)
	bk.lastWrite = now
	bk.bytes += bt.Bytes
	bk.rows += bt.Rec.NumRows()
	b.bytes += bt.Bytes
	b.rows += bt.Rec.NumRows()
	b.metrics.add(tableName, bt.Rec.NumRows(), bt.Bytes)
	return bk.bytes
}

// Snapshot returns every batch of the table that has not been released, open
// and sealed buckets alike, in bucket creation order, and the largest batch
// ID handed out so far: a batch with a smaller ID that is not in the
// snapshot has been released for good.
func (b *Buffer) Snapshot(tableName string) ([]Batch, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		return nil, b.nextID
	}
	var out []Batch
	for _, bk := range t.buckets {
		out = append(out, bk.batches...)
	}
	return out, b.nextID
}

// Buckets describes the table's unreleased buckets in creation order.
func (b *Buffer) Buckets(tableName string) []BucketInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		return nil
	}
	out := make([]BucketInfo, 0, len(t.buckets))
	for _, bk := range t.buckets {
		out = append(out, bk.info(tableName))
	}
	return out
}

// Seal closes the open buckets of the table for which pick returns true, then
// returns every sealed bucket of the table (newly sealed and earlier ones not
// yet released, e.g. after a failed flush) in creation order, oldest first.
// Flushing them in that order keeps, for every bucket key, the flushed WAL
// sequences a prefix of the key's sequences.
func (b *Buffer) Seal(tableName string, pick func(BucketInfo) bool) []*Sealed {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		return nil
	}
	var out []*Sealed
	for _, bk := range t.buckets {
		if !bk.sealed && pick(bk.info(tableName)) {
			bk.sealed = true
			delete(t.open, bk.key)
		}
		if bk.sealed {
			out = append(out, &Sealed{Table: tableName, Key: bk.key, Batches: append([]Batch(nil), bk.batches...), b: bk})
		}
	}
	return out
}

// Replace swaps batches for new records (after a DELETE or UPDATE): each
// replaced batch gets a new ID (readers holding the old one keep seeing the
// old rows) and keeps its bucket and WAL sequence. A record may have no
// rows: the batch stays so that its WAL entry is dropped at the flush.
// bounds computes a record's time range.
func (b *Buffer) Replace(tableName string, recs map[uint64]arrow.RecordBatch, bounds func(arrow.RecordBatch) (int64, int64)) {
	if len(recs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		return
	}
	for _, bk := range t.buckets {
		for i, old := range bk.batches {
			rec, ok := recs[old.ID]
			if !ok {
				continue
			}
			nb := old
			b.nextID++
			nb.ID = b.nextID
			nb.Rec = rec
			nb.Bytes = RecordBytes(rec)
			nb.MinTime, nb.MaxTime = bounds(rec)
			bk.batches[i] = nb
			dRows, dBytes := rec.NumRows()-old.Rec.NumRows(), nb.Bytes-old.Bytes
			bk.rows += dRows
			bk.bytes += dBytes
			b.rows += dRows
			b.bytes += dBytes
			b.metrics.add(tableName, dRows, dBytes)
		}
	}
}

// Release removes a flushed bucket from the buffer.
func (b *Buffer) Release(s *Sealed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[s.Table]
	if t == nil {
		return
	}
	for i, bk := range t.buckets {
		if bk == s.b {
			t.buckets = append(t.buckets[:i], t.buckets[i+1:]...)
			b.bytes -= bk.bytes
			b.rows -= bk.rows
			b.metrics.add(s.Table, -bk.rows, -bk.bytes)
			break
		}
	}
	if len(t.buckets) == 0 {
		// Nothing is kept for a table without buffered rows: the next
		// row recreates its state.
		delete(b.tables, s.Table)
		b.metrics.forget(s.Table)
	}
}

// DropTable forgets every bucket of the table.
func (b *Buffer) DropTable(tableName string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[tableName]
	if t == nil {
		return
	}
	for _, bk := range t.buckets {
		b.bytes -= bk.bytes
		b.rows -= bk.rows
		b.metrics.add(tableName, -bk.rows, -bk.bytes)
	}
	delete(b.tables, tableName)
	b.metrics.forget(tableName)
}

// Tables returns the names of tables with buffered rows, sorted.
func (b *Buffer) Tables() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.tables))
	for n := range b.tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Bytes returns the memory held by buffered batches.
func (b *Buffer) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes
}

type metrics struct {
	bytes      prometheus.Gauge
	rows       prometheus.Gauge
	tableBytes *prometheus.GaugeVec
	tableRows  *prometheus.GaugeVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		bytes:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_membuffer_bytes", Help: "Bytes of Arrow data buffered in memory."}),
		rows:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_membuffer_rows", Help: "Rows buffered in memory."}),
		tableBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tsdb_membuffer_table_bytes", Help: "Bytes buffered in memory, per table."}, []string{"table"}),
		tableRows:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tsdb_membuffer_table_rows", Help: "Rows buffered in memory, per table."}, []string{"table"}),
	}
	if r != nil {
		r.MustRegister(m.bytes, m.rows, m.tableBytes, m.tableRows)
	}
	return m
}

func (m *metrics) add(table string, rows, bytes int64) {
	m.bytes.Add(float64(bytes))
	m.rows.Add(float64(rows))
	m.tableBytes.WithLabelValues(table).Add(float64(bytes))
	m.tableRows.WithLabelValues(table).Add(float64(rows))
}

func (m *metrics) forget(table string) {
	m.tableBytes.DeleteLabelValues(table)
	m.tableRows.DeleteLabelValues(table)
}

// RecordBytes returns the memory held by a record's buffers.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
