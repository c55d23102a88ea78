package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
	"tsdb/membuffer"
	"tsdb/wal"
)

// gate is where writers wait for memory. Waiters take the current channel
// and are woken when it is closed (on every release of memory).
type gate struct {
	mu       sync.Mutex
	reserved int64 // bytes admitted but not yet in the MemBuffer
	waiting  int   // writers waiting for room
	wanted   int64 // bytes the waiting writers need
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

// checkSchema verifies a record has exactly the table's column types.
func checkSchema(t schema.Table, rec arrow.RecordBatch) error {
	// A record built before ALTER TABLE ADD COLUMN (a prepared INSERT, a
	// COPY under way, a WAL entry) holds a prefix of the columns; the
	// added ones are nullable and read as NULL.
	if int(rec.NumCols()) > len(t.Columns) || int(rec.NumCols()) <= t.TimeIndex {
		return fmt.Errorf("record has %d columns, table %s has %d", rec.NumCols(), t.Name, len(t.Columns))
	}
	for i, c := range t.Columns {
		if i >= int(rec.NumCols()) {
			if c.NotNull {
				return fmt.Errorf("record lacks column %s, which is NOT NULL", c.Name)
			}
			continue
		}
		if !arrow.TypeEqual(rec.Column(i).DataType(), c.ArrowType()) {
			return fmt.Errorf("column %s is %s, want %s", c.Name, rec.Column(i).DataType(), c.ArrowType())
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

// validate checks a record against the table: exactly its column types,
// and no NULL in a NOT NULL column. INSERT, COPY, line-protocol writes and
// the rows DELETE/UPDATE produce all pass here.
func (s *Store) validate(t schema.Table, rec arrow.RecordBatch) error {
	if err := checkSchema(t, rec); err != nil {
		return wrapKind(KindTypeMismatch, err)
	}
	for i, c := range t.Columns[:rec.NumCols()] {
		if c.NotNull && rec.Column(i).NullN() > 0 {
			return &Error{Kind: KindNotNull,
				Msg: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c.Name, t.Name)}
		}
		if c.Type == schema.Text {
			if row, err := checkStrings(rec.Column(i).(*array.String)); err != nil {
				return &Error{Kind: KindBadText,
					Msg: fmt.Sprintf("column %q, row %d: %v", c.Name, row+1, err), Err: err}
			}
		}
		if c.Type == schema.Time || c.Type == schema.TimeTZ || c.Type == schema.Bit || c.Type == schema.VarBit {
			a := rec.Column(i).(*array.String)
			for r := range a.Len() {
				if a.IsValid(r) {
					check := schema.CheckBitText
					if c.Type == schema.Time || c.Type == schema.TimeTZ {
						check = func(s string) error { return schema.CheckTimeText(s, c.Type == schema.TimeTZ) }
					}
					if err := check(a.Value(r)); err != nil {
						return &Error{Kind: KindBadText, Msg: fmt.Sprintf("column %q, row %d: %v", c.Name, r+1, err), Err: err}
					}
				}
			}
		}
	}
	return nil
}

// checkStrings finds the first value of a that is not valid text (see
// schema.CheckText) and returns its row. Every path into a table passes
// here, so no writer can store a value that would make the table
// unreadable. The values are checked in one pass over their bytes: all of
// them valid text with no value starting inside a character means each is.
func checkStrings(a *array.String) (int, error) {
	if a.Len() == 0 {
		return 0, nil
	}
	data := a.ValueBytes()
	if schema.CheckText(unsafe.String(unsafe.SliceData(data), len(data))) == nil {
		base := a.ValueOffset(0)
		ok := true
		for i := 1; i < a.Len() && ok; i++ {
			if o := a.ValueOffset(i) - base; o < len(data) && !utf8.RuneStart(data[o]) {
				ok = false
			}
		}
		if ok {
			return 0, nil
		}
	}
	for i := range a.Len() {
		if a.IsValid(i) {
			if err := schema.CheckText(a.Value(i)); err != nil {
				return i, err
			}
		}
	}
	return 0, nil
}

// Insert validates rec against the table, makes it durable in the WAL and
// adds it to the MemBuffer. It returns once the rows are fsynced and visible.
// rec must have the table's columns in order, with the table's Arrow types
// (or a prefix of them, see checkSchema).
func (s *Store) Insert(ctx context.Context, name string, rec arrow.RecordBatch) (int64, error) {
	return s.InsertBatches(ctx, name, []arrow.RecordBatch{rec})
}

// InsertBatches is Insert of several records as one statement: all of their
// rows land, or none. The store keeps the records.
//
// A table with keys (PRIMARY KEY, UNIQUE) is refused: its rows are
// written by InsertKeyed once the caller has checked them.
func (s *Store) InsertBatches(ctx context.Context, name string, recs []arrow.RecordBatch) (int64, error) {
	return s.insertBatches(ctx, name, recs, false)
}

// InsertKeyed is InsertBatches for a table with keys or dedup_keys: the
// caller holds the table's lock (LockTable) and has checked that no key
// repeats.
func (s *Store) InsertKeyed(ctx context.Context, name string, recs []arrow.RecordBatch) (int64, error) {
	return s.insertBatches(ctx, name, recs, true)
}

// DedupCovered reports whether rows checked to have one row per point of
// identity checked have one per point of identity current too: current
// is empty, or names every column checked names (a finer identity).
func DedupCovered(checked, current []string) bool {
	if len(current) == 0 {
		return true
	}
	if len(checked) == 0 {
		return false
	}
	for _, c := range checked {
		if !slices.Contains(current, c) {
			return false
		}
	}
	return true
}

// dedupChanged refuses rows checked under another point identity than
// the table has now.
func dedupChanged(table string) error {
	return errorf(KindConflict, "could not serialize access: table %q got dedup_keys while the rows were written; write them again", table)
}

// holdPlain holds plainMu for reading for a plain write of rows made for
// t (an INSERT or COPY that took no table lock), until release, once
// their rows are in the MemBuffer: giving the table dedup keys waits for
// it (BlockPlainWrites). A table that got keys since t was read refuses
// the write (40001), since nothing checked its rows' points; under the
// hold the keys cannot come any more.
func (ts *tableState) holdPlain(t schema.Table) (release func(), err error) {
	ts.plainMu.RLock()
	if !DedupCovered(t.Dedup, ts.sch().Dedup) {
		ts.plainMu.RUnlock()
		return nil, dedupChanged(t.Name)
	}
	return ts.plainMu.RUnlock, nil
}

// keyedError refuses a write that cannot check a table's keys.
func keyedError(t schema.Table) error {
	if len(t.Dedup) > 0 {
		return errorf(KindUnsupported, "table %q has dedup_keys, which only its write path (SQL, line protocol through the planner) keeps", t.Name)
	}
	return errorf(KindUnsupported, "table %q has a PRIMARY KEY or UNIQUE constraint, which only SQL writes (INSERT, COPY) check; write its rows with SQL", t.Name)
}

func (s *Store) insertBatches(ctx context.Context, name string, recs []arrow.RecordBatch, keyed bool) (int64, error) {
	ts, err := s.state(name)
	if err != nil {
		return 0, err
	}
	if err := ts.writeBlock(); err != nil {
		return 0, err
	}
	t := ts.sch()
	if (len(t.Keys) > 0 || len(t.Dedup) > 0) && !keyed {
		return 0, keyedError(t)
	}
	e, err := s.encode(t, recs, formRows)
	if err != nil {
		return 0, err
	}
	// The WAL has copied the frames into its log when AppendFramed
	// returns, whatever the outcome.
	defer s.recycle(e)
	if e.rows == 0 {
		return 0, nil
	}
	if !keyed {
		release, err := ts.holdPlain(t)
		if err != nil {
			return 0, err
		}
		defer release()
	}
	return s.commit(ctx, ts, t, e, func(ctx context.Context) (uint64, error) {
		return s.wal.AppendFramed(ctx, e.payloads)
	})
}

// commit is how every statement ends: it waits for room for e's rows,
// makes them durable with write (which returns the first WAL sequence it
// took) and puts them in the MemBuffer in WAL order. Waiting comes before
// the write: a statement refused there leaves no trace, neither in the WAL
// nor in the MemBuffer.
func (s *Store) commit(ctx context.Context, ts *tableState, t schema.Table, e *encoded, write func(context.Context) (uint64, error)) (int64, error) {
	release, err := s.admit(ctx, e.need)
	if err != nil {
		return 0, err
	}
	defer release()
	first, err := write(ctx)
	bucket, err := s.applyAppended(ts, t, first, err, e.parts, e.sizes)
	if err != nil {
		return 0, err
	}
	s.inserted(bucket, e.rows)
	return e.rows, nil
}

// encoded is a statement's rows cut by bucket, with each part encoded as a
// WAL frame.
type encoded struct {
	parts    []part
	payloads [][]byte
	sizes    []int64 // of the payloads, kept after the frames are recycled
	bufs     []*bytes.Buffer
	need     int64 // MemBuffer bytes
	rows     int64
}

// encode validates recs against t, cuts them by bucket and encodes the
// parts as WAL frames of the given form. The frames come from a pool:
// recycle returns them.
func (s *Store) encode(t schema.Table, recs []arrow.RecordBatch, form entryForm) (*encoded, error) {
	e := &encoded{}
	for _, rec := range recs {
		if err := s.validate(t, rec); err != nil {
			return nil, err
		}
		e.rows += rec.NumRows()
	}
	if e.rows == 0 {
		return e, nil
	}
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		p, err := s.splitByBucket(t, rec)
		if err != nil {
			return nil, err
		}
		e.parts = append(e.parts, p...)
	}
	var lz4 *compressBuffers
	if form == formSplit {
		lz4 = &s.compressBufs
	}
	e.payloads = make([][]byte, len(e.parts))
	e.sizes = make([]int64, len(e.parts))
	for i, p := range e.parts {
		buf, _ := s.frames.Get().(*bytes.Buffer)
		if buf == nil {
			buf = new(bytes.Buffer)
		}
		e.bufs = append(e.bufs, buf)
		var err error
		if e.payloads[i], err = encodeEntryFramed(buf, entry{table: t.Name, tableID: t.ID, key: p.key, rec: p.rec, fileRows: form == formFileRows}, wal.HeaderRoom, lz4); err != nil {
			s.recycle(e)
			return nil, err
		}
		e.sizes[i] = int64(len(e.payloads[i]))
		b := membuffer.RecordBytes(p.rec)
		e.need += b
	}
	return e, nil
}

// merge adds o's rows, already written to the WAL, to e: a Batch's rows
// are the merge of its slices.
func (e *encoded) merge(o *encoded) {
	e.parts = append(e.parts, o.parts...)
	e.sizes = append(e.sizes, o.sizes...)
	e.need += o.need
	e.rows += o.rows
}

// recycle returns e's frames to the pool.
func (s *Store) recycle(e *encoded) {
	for _, b := range e.bufs {
		s.frames.Put(b)
	}
	e.bufs, e.payloads = nil, nil
}

// applyAppended adds parts, appended to the WAL from sequence first with
// the outcome err, to the MemBuffer in WAL order, and returns the size of
// the largest bucket they went to.
func (s *Store) applyAppended(ts *tableState, t schema.Table, first uint64, err error, parts []part, sizes []int64) (int64, error) {
	if first == 0 {
		// Nothing was written; an error that already says why (a table
		// dropped meanwhile) keeps its kind.
		var se *Error
		if errors.As(err, &se) {
			return 0, err
		}
		return 0, s.storageError(err)
	}
	if err != nil {
		// The sequences are taken: later writers wait for their turn.
		s.seq.run(first, len(parts), func() {})
		var tl *wal.TooLargeError
		if errors.As(err, &tl) {
			return 0, &Error{Kind: KindTooLarge, Msg: tl.Error(), Err: err}
		}
		return 0, s.storageError(err)
	}
	now := s.opts.Now()
	var bucket int64
	s.seq.run(first, len(parts), func() {
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		if ts.dropped {
			return
		}
		for i, p := range parts {
			bucket = max(bucket, s.buf.Append(t.Name, membuffer.Batch{Seq: first + uint64(i), Key: p.key, Rec: p.rec, MinTime: p.lo, MaxTime: p.hi, WALBytes: sizes[i]}, now))
			s.walLag.Add(sizes[i])
		}
	})
	return bucket, nil
}

// inserted updates the metrics after a statement and starts a flush when
// the largest bucket it wrote to or the MemBuffer has grown past its
// limit: a bucket filled by many small statements is cut as soon as it
// passes MaxBucketBytes, not at the flusher's next tick, by when fast
// writers may have doubled it.
func (s *Store) inserted(bucket, rows int64) {
	s.metrics.walLag.Set(float64(s.walLag.Load()))
	if bucket >= s.opts.MaxBucketBytes || s.buf.Bytes() > s.opts.SoftMemoryLimit {
		s.kickFlusher()
	}
	s.metrics.rows.Add(float64(rows))
}

type part struct {
	key    membuffer.Key
	rec    arrow.RecordBatch
	lo, hi int64
}

// splitByBucket cuts a record into one record per time bucket.
func (s *Store) splitByBucket(t schema.Table, rec arrow.RecordBatch) ([]part, error) {
	ts := rec.Column(t.TimeIndex).(*array.Timestamp)
	// Most records (one INSERT, a COPY cut at bucket edges) lie in one
	// bucket: buckets are intervals, so the first and last times tell.
	if ts.Len() > 0 {
		lo, hi := timeBounds(rec, t.TimeIndex)
		if k := membuffer.BucketKey(lo, s.opts.BucketDuration); hi < k.End {
			return []part{{key: k, rec: rec, lo: lo, hi: hi}}, nil
		}
	}
	if parts, ok, err := splitRuns(t, rec, s.opts.BucketDuration); ok || err != nil {
		return parts, err
	}
	keys := map[membuffer.Key][]arrowutil.RowRef{}
	var order []membuffer.Key
	for i := 0; i < ts.Len(); i++ {
		k := membuffer.BucketKey(int64(ts.Value(i)), s.opts.BucketDuration)
		if _, ok := keys[k]; !ok {
			order = append(order, k)
		}
		keys[k] = append(keys[k], arrowutil.RowRef{Row: i})
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

// splitRuns splits rec by bucket when each bucket's rows are one run of
// rows (a request in time order crossing a bucket edge): each run is
// copied column by column. ok is false when a bucket's rows are apart.
func splitRuns(t schema.Table, rec arrow.RecordBatch, width time.Duration) (parts []part, ok bool, err error) {
	ts := rec.Column(t.TimeIndex).(*array.Timestamp)
	type run struct {
		key      membuffer.Key
		from, to int
	}
	var runs []run
	for i := 0; i < ts.Len(); i++ {
		v := int64(ts.Value(i))
		if n := len(runs); n > 0 && v >= runs[n-1].key.Start && v < runs[n-1].key.End {
			runs[n-1].to = i + 1
			continue
		}
		k := membuffer.BucketKey(v, width)
		for _, r := range runs {
			if r.key == k {
				return nil, false, nil // the bucket's rows are apart
			}
		}
		if len(runs) == 64 {
			return nil, false, nil // rows of many buckets: a map is cheaper
		}
		runs = append(runs, run{key: k, from: i, to: i + 1})
	}
	for _, r := range runs {
		c, err := arrowutil.CopyRows(rec, r.from, r.to)
		if err != nil {
			for _, p := range parts {
				p.rec.Release()
			}
			return nil, false, fmt.Errorf("ingest: split by bucket: %w", err)
		}
		lo, hi := timeBounds(c, t.TimeIndex)
		parts = append(parts, part{key: r.key, rec: c, lo: lo, hi: hi})
	}
	return parts, true, nil
}

// BucketDuration is the width of a MemBuffer time bucket. Writers that cut
// their records at bucket boundaries spare the store a re-split.
func (s *Store) BucketDuration() time.Duration { return s.opts.BucketDuration }

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

// tooLarge refuses a statement whose rows need more than --memory-limit
// in the MemBuffer with 54000 (program_limit_exceeded), not 53200: no wait
// and no retry makes it fit, and clients retry 53200.
func (s *Store) tooLarge(need int64) error {
	if need <= s.opts.MemoryLimit {
		return nil
	}
	return errorf(KindTooLarge, "this statement needs %s in memory, more than --memory-limit %s: split it into smaller statements", mib(need), mib(s.opts.MemoryLimit))
}

// admit waits until need bytes fit under the memory and WAL-lag limits and
// reserves them; release gives the reservation back once the rows are in
// the MemBuffer (or were not written). After WriteTimeout the write is
// refused with SQLSTATE 53200.
func (s *Store) admit(ctx context.Context, need int64) (release func(), err error) {
	if err := s.tooLarge(need); err != nil {
		return nil, err
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
			s.gate.wanted += need
			s.gate.mu.Unlock()
			defer func() {
				s.gate.mu.Lock()
				s.gate.waiting--
				s.gate.wanted -= need
				s.gate.mu.Unlock()
			}()
		}
		s.kickFlusher()
		select {
		case <-ch:
		case <-timer.C:
			s.metrics.rejections.Inc()
			return nil, &Error{Kind: KindOutOfMemory,
				Msg:  fmt.Sprintf("write refused after waiting %v: %s and flushes cannot keep up", s.opts.WriteTimeout, why),
				Hint: "retry later, write smaller batches, or raise --memory-limit"}
		case <-ctx.Done():
			return nil, &Error{Kind: KindCanceled, Msg: "canceling statement while it waited for memory", Err: ctx.Err()}
		}
	}
}

// AcceptingWrites reports whether writes are admitted now, and why not:
// not while writers wait for room or the MemBuffer is within 1/16 of its
// hard limit.
func (s *Store) AcceptingWrites() (bool, string) {
	if at := s.diskFullAt.Load(); at != 0 && s.opts.Now().Sub(time.Unix(0, at)) < diskFullMemory {
		return false, "the disk is full: a write or flush failed with no space left on device " + s.opts.Now().Sub(time.Unix(0, at)).Round(time.Second).String() + " ago"
	}
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

// diskFullMemory is how long after a write or flush failed for want of
// disk space /health says so.
const diskFullMemory = 30 * time.Second

// noteDiskFull remembers when storage ran out of space.
func (s *Store) noteDiskFull(err error) {
	if errors.Is(err, syscall.ENOSPC) {
		s.diskFullAt.Store(s.opts.Now().UnixNano())
	}
}

// storageError is the error of a write the WAL could not take: disk full
// is PostgreSQL's 53100, any other failure 58030.
func (s *Store) storageError(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		s.noteDiskFull(err)
		return &Error{Kind: KindDiskFull, Msg: "could not write to the write-ahead log: no space left on device", Hint: "Free space in --data-dir; the statement changed nothing.", Err: err}
	}
	return wrapKind(KindIO, err)
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
