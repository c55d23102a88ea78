package planner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/ingest"
	"tsdb/internal/slabs"
	"tsdb/internal/sqlerr"
)

// COPY FROM STDIN decodes as the data arrives. Write cuts the stream into
// chunks of whole rows (a partial row waits for the next payload) and hands
// them to decoder goroutines, one per core, which convert them straight
// into Arrow records. As chunks are decoded, in input order, their records
// are staged in the WAL (ingest.Batch: written, not yet durable or
// visible), so that the disk writes while the client still sends. Finish
// stages what is left and commits: a COPY is all or nothing, and the raw
// bytes are never held whole.

// copySlabAfter is how many input bytes a COPY takes before its columns
// are cut from huge-page slabs (tsdb/internal/slabs): the rows of a large
// COPY stay buffered together, while a small COPY would hold a huge page
// of mostly nothing with its few rows. The last, partly used huge page of
// a COPY (at most 2 MiB) is what a COPY past this size may waste. tsdb
// import sends 100,000-row COPYs (27 MB of TSBS CSV): with 16 MiB here
// most of each took 4 KiB faults and the 8.64M-row import ran at 389-396k
// rows/s; with 4 MiB, 414-466k.
const copySlabAfter = 4 << 20

// copyChunkBytes is how much complete input is gathered before a chunk is
// handed to a decoder.
const copyChunkBytes = 1 << 20

// copyFeed is the dispatching side of a COPY in progress. Its goroutines
// are started by the first chunk and stopped by Close.
type copyFeed struct {
	pending []byte // input not yet dispatched (ends with a partial row)
	bytes   int64  // input bytes taken, bounded by the memory limit
	lines   int    // rows dispatched so far, for line numbers
	header  bool   // binary header read
	ended   bool   // the end marker was dispatched
	// chunkBytes overrides copyChunkBytes (tests use tiny chunks), and
	// slabsAfter copySlabAfter.
	chunkBytes int
	slabsAfter int64

	jobs   chan copyJob
	wg     sync.WaitGroup
	failed atomic.Bool
	// textBytes is, per column, the text bytes per row (×16) of the last
	// record cut, for sizing the next builders' data buffers up front.
	textBytes []atomic.Int64
	// slabs hold the columns of a large COPY's rows: past copySlabAfter
	// input bytes, the builders allocate from them.
	slabs slabs.Allocator
	// results are the decoders by chunk sequence; only the connection's
	// goroutine (dispatch, Finish, Close) touches the slice.
	results []*chunkDecoder
	closed  bool
	// batch holds the records of results[:staged], written to the WAL.
	batch  *ingest.Batch
	staged int
	// stageErr is the failure of a staging: the COPY fails, whatever the
	// caller does next.
	stageErr error
	// txRecs are the decoded rows of a COPY in a transaction block.
	txRecs []arrow.RecordBatch
}

type copyJob struct {
	data []byte
	buf  []byte // the buffer data lies in, reused once data is decoded
	dec  *chunkDecoder
}

// Write takes one CopyData payload.
func (c *CopyIn) Write(p []byte) (err error) {
	defer func() { err = storeError(err) }()
	f := &c.feed
	if f.stageErr != nil {
		return f.stageErr
	}
	if f.ended || f.failed.Load() {
		return nil // after the end marker or a bad row, the rest is dropped
	}
	f.bytes += int64(len(p))
	if limit := c.s.p.store.MaxStatementBytes(); f.bytes > limit {
		return sqlerr.New(sqlerr.ProgramLimitExceeded, "COPY data exceeds %d MiB (--memory-limit); split it into smaller COPY statements", limit>>20)
	}
	f.pending = append(f.pending, p...)
	if chunk := f.chunkBytes; len(f.pending) < copyChunkBytes && (chunk == 0 || len(f.pending) < chunk) {
		return nil
	}
	return c.dispatch(false)
}

// dispatch hands the complete rows of pending to a decoder (all of it when
// final).
func (c *CopyIn) dispatch(final bool) error {
	f := &c.feed
	data := f.pending
	if c.Format == CopyBinary && !f.header {
		n, err := c.binaryHeader(data, final)
		if err != nil || n == 0 {
			return err
		}
		data, f.header = data[n:], true
	}
	end, rows, ended, err := c.rowsEnd(data, final)
	if err != nil {
		return err
	}
	f.ended = ended
	if end == 0 {
		f.pending = append(f.pending[:0], data...)
		return nil
	}
	// The chunk keeps pending's array; only the partial row after it is
	// copied into a new one, so each input byte is copied once.
	rest := data[end:]
	buf := f.pending[:0]
	f.pending = append(c.buffer(len(rest)+copyChunkBytes), rest...)
	d := &chunkDecoder{c: c, line: f.lines, chunkRows: rows}
	if after := cmp.Or(f.slabsAfter, copySlabAfter); f.bytes > after {
		d.alloc = &f.slabs
	}
	c.start(copyJob{data: data[:end:end], buf: buf, dec: d})
	f.lines += rows
	return c.stage(context.Background(), false)
}

// stage writes the records of the decoded chunks that follow the staged
// ones, in input order, to the WAL, up to the end marker. While data
// still arrives it stops at a chunk being decoded, a failed one or one
// left for later (skipped); at the end (final, all decoders done) it
// decodes the skipped chunks itself and fails with the first chunk's
// error.
func (c *CopyIn) stage(ctx context.Context, final bool) error {
	f := &c.feed
	var recs []arrow.RecordBatch
	for ; f.staged < len(f.results); f.staged++ {
		if f.staged > 0 && f.results[f.staged-1].ended {
			break // rows after the end marker do not count
		}
		d := f.results[f.staged]
		if !final && (!d.finished.Load() || d.err != nil || d.skipped != nil) {
			break
		}
		if d.skipped != nil {
			// Recovered as on a decoder goroutine: a panic here would
			// take the connection, not fail the COPY.
			if err := consumeSafely(d, d.skipped); err != nil {
				return err
			}
			d.done()
		}
		if d.err != nil {
			return d.err
		}
		recs = append(recs, d.recs...)
		d.recs = nil // the store keeps them
	}
	if len(recs) == 0 {
		return nil
	}
	if err := c.addToBatch(ctx, recs); err != nil {
		f.stageErr = err
		return err
	}
	return nil
}

// addToBatch stages recs, beginning the batch first if need be. In a
// transaction block the rows are kept for it instead.
func (c *CopyIn) addToBatch(ctx context.Context, recs []arrow.RecordBatch) error {
	f := &c.feed
	if c.s.tx == nil {
		// In a block, writeRows applies them at the end.
		var err error
		if recs, err = applyTypmods(c.tbl, recs); err != nil {
			return err
		}
	}
	if c.temp {
		// A temporary table's rows go to the engine at the end.
		f.txRecs = append(f.txRecs, recs...)
		return nil
	}
	if c.s.tx != nil || len(c.tbl.Keys) > 0 || len(c.tbl.Dedup) > 0 {
		// A table with keys or dedup_keys gets its rows at the end
		// too, checked against each other and the table (writeKeyed,
		// writeDedup).
		if err := c.s.p.store.Validate(c.tbl.Name, recs); err != nil {
			return err
		}
		f.txRecs = append(f.txRecs, recs...)
		return nil
	}
	if f.batch == nil {
		b, err := c.s.p.store.BeginBatch(c.tbl.Name)
		if err != nil {
			return err
		}
		f.batch = b
	}
	return f.batch.Add(ctx, recs)
}

// buffer returns an empty buffer of at least size bytes: one the decoders
// of this or an earlier COPY are done with, when there is one. New memory
// costs a page fault per 4 KiB at first touch, and a COPY's chunks are a
// MiB each.
func (c *CopyIn) buffer(size int) []byte {
	if p, _ := c.s.p.copyBufs.Get().(*[]byte); p != nil && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// start runs job on a decoder goroutine, starting them on first use.
func (c *CopyIn) start(job copyJob) {
	f := &c.feed
	if f.jobs == nil {
		workers := max(1, min(runtime.GOMAXPROCS(0), 4))
		f.jobs = make(chan copyJob)
		f.textBytes = make([]atomic.Int64, len(c.tbl.Columns))
		for range workers {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				for j := range f.jobs {
					if f.failed.Load() {
						// Another chunk failed; this one matters only if
						// an end marker comes before that one: Finish
						// decodes it then.
						j.dec.skipped = j.data
						j.dec.finished.Store(true)
						continue
					}
					if err := consumeSafely(j.dec, j.data); err != nil {
						// The builder may hold half a row: no record.
						j.dec.err = err
						f.failed.Store(true)
						j.dec.finished.Store(true)
						continue
					}
					j.dec.done()
					j.dec.finished.Store(true)
					// Nothing decoded points into the input: the
					// builders copied what they keep.
					c.s.p.copyBufs.Put(&j.buf)
				}
			}()
		}
	}
	f.results = append(f.results, job.dec)
	f.jobs <- job
}

// wait stops the decoders once they are done.
func (c *CopyIn) wait() {
	f := &c.feed
	if f.jobs != nil && !f.closed {
		close(f.jobs)
		f.wg.Wait()
		f.closed = true
	}
}

// Finish decodes what is left, waits for the decoders, stages the rest
// and commits every row as one write; it returns the row count for the
// COPY n tag.
func (c *CopyIn) Finish(ctx context.Context) (n int64, err error) {
	defer func() { err = storeError(err) }()
	defer c.Close()
	f := &c.feed
	if f.stageErr != nil {
		return 0, f.stageErr
	}
	if !f.ended && !f.failed.Load() {
		if err := c.dispatch(true); err != nil {
			c.wait()
			return 0, err
		}
		if c.Format == CopyBinary && !f.header {
			c.wait()
			return 0, sqlerr.New(sqlerr.InvalidTextRep, "COPY %s: invalid COPY file header (COPY BINARY)", c.tbl.Name)
		}
	}
	c.wait()
	if err := c.stage(ctx, true); err != nil {
		return 0, err
	}
	if c.temp {
		recs := f.txRecs
		f.txRecs = nil
		var n int64
		for i, rec := range recs {
			k, err := c.s.insertTempRows(ctx, c.tbl, c.targets, rec)
			if err != nil {
				for _, r := range recs[i+1:] {
					r.Release()
				}
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	if c.s.tx != nil || len(c.tbl.Keys) > 0 || len(c.tbl.Dedup) > 0 {
		recs := f.txRecs
		f.txRecs = nil
		return c.s.writeRows(ctx, c.tbl.Name, recs)
	}
	if f.batch == nil {
		return 0, nil
	}
	return f.batch.Commit(ctx)
}

// Close stops the decoders and frees what they hold. The wire layer calls
// it however the COPY ends (done, failed, connection lost); it is safe to
// call more than once.
func (c *CopyIn) Close() {
	c.wait()
	f := &c.feed
	if f.batch != nil {
		f.batch.Abort() // a no-op once committed
		f.batch = nil
	}
	for _, d := range f.results {
		d.release()
	}
	f.results, f.pending = nil, nil
}

// binaryHeader returns the length of the binary COPY header at the start of
// data, 0 when it is not all there yet.
func (c *CopyIn) binaryHeader(data []byte, final bool) (int, error) {
	bad := sqlerr.New(sqlerr.InvalidTextRep, "COPY %s: invalid COPY file header (COPY BINARY)", c.tbl.Name)
	hl := len(binaryCopySignature) + 8
	if len(data) < hl {
		if final || !bytes.HasPrefix(binaryCopySignature, data[:min(len(data), len(binaryCopySignature))]) {
			return 0, bad
		}
		return 0, nil
	}
	if !bytes.HasPrefix(data, binaryCopySignature) {
		return 0, bad
	}
	ext := int(binary.BigEndian.Uint32(data[len(binaryCopySignature)+4:]))
	if len(data) < hl+ext { // ext is a uint32: never negative
		if final {
			return 0, bad
		}
		return 0, nil
	}
	return hl + ext, nil
}

// rowsEnd finds where the last complete row in data ends, how many rows
// that is, and whether an end marker (\. or the binary trailer) is among
// them. With final, a last row without a newline counts as complete.
func (c *CopyIn) rowsEnd(data []byte, final bool) (end, rows int, ended bool, err error) {
	switch c.Format {
	case CopyBinary:
		p := 0
		for p+2 <= len(data) {
			n := int(int16(binary.BigEndian.Uint16(data[p:])))
			if n == -1 {
				return p + 2, rows, true, nil
			}
			q, complete := p+2, true
			for range max(n, 0) {
				if q+4 > len(data) {
					complete = false
					break
				}
				l := int(int32(binary.BigEndian.Uint32(data[q:])))
				q += 4
				if l > 0 {
					if q+l > len(data) {
						complete = false
						break
					}
					q += l
				}
			}
			if !complete {
				break
			}
			p, rows = q, rows+1
		}
		if final {
			// The decoder reports a truncated row.
			return len(data), rows, false, nil
		}
		return p, rows, false, nil
	case CopyCSV:
		if bytes.IndexByte(data, c.opts.quote) < 0 {
			break // no quotes: lines are rows, as in the text format
		}
		inQuote, last := false, 0
		for i, ch := range data {
			switch ch {
			case c.opts.quote:
				inQuote = !inQuote
			case '\n':
				if !inQuote {
					last, rows = i+1, rows+1
				}
			}
		}
		if final && last < len(data) {
			return len(data), rows + 1, false, nil
		}
		return last, rows, false, nil
	}
	last := bytes.LastIndexByte(data, '\n') + 1
	rows = bytes.Count(data[:last], []byte{'\n'})
	if i := bytes.Index(data[:last], []byte("\\.\n")); i >= 0 && (i == 0 || data[i-1] == '\n') {
		ended = true
	} else if i := bytes.Index(data[:last], []byte("\\.\r\n")); i >= 0 && (i == 0 || data[i-1] == '\n') {
		ended = true
	}
	if final && last < len(data) {
		return len(data), rows + 1, ended || bytes.Equal(bytes.TrimRight(data[bytes.LastIndexByte(data, '\n')+1:], "\r"), []byte(`\.`)), nil
	}
	return last, rows, ended, nil
}

// release frees the records a decoder still holds.
func (d *chunkDecoder) release() {
	for _, r := range d.recs {
		r.Release()
	}
	d.recs = nil
	if d.cols != nil {
		d.cols.release()
		d.cols = nil
	}
}

// consumeSafely decodes a chunk, turning a panic of a value reader into
// the COPY's error: on a decoder goroutine nothing else would recover it,
// and one malformed field must not stop the server.
func consumeSafely(dec *chunkDecoder, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = sqlerr.New(sqlerr.InternalError, "COPY: a value could not be read (%v)", r)
		}
	}()
	return dec.consume(data)
}
