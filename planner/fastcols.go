package planner

// The direct path's rows mode (fastscan.go) reads the rows it keeps column
// by column, a row group at a time as the wire asks for them, into chunks
// in the engine's vector layout: the session encodes them as it encodes
// the engine's own chunks, with no Go value per cell, while the client
// decodes the chunk before. Collected whole as [][]any, a 46,000-row
// result of 21 columns (high-cpu-all) cost more than the engine's query.

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"tsdb/delta"
)

// outColumn is one result column of the rows mode as it is collected.
// Its buffers are reused from chunk to chunk: a chunk is valid only until
// the next is read.
type outColumn struct {
	kind Kind
	ints []int64   // integer and time kinds
	flts []float64 // float kinds
	strs []byte    // KindString: duckdb_string_t per row, 16 bytes
	text []byte    // KindString: the bytes of values longer than 12
	// mask is DuckDB's validity mask, a bit per row set for a valid one;
	// the vector has it only when hasNull.
	mask    []uint64
	hasNull bool
	n       int
	// the narrow kinds' values, as vector lays them out
	f32 []float32
	i32 []int32
	i16 []int16
}

// null appends a NULL.
func (c *outColumn) null() {
	c.hasNull = true
	if c.n%64 == 0 {
		c.mask = append(c.mask, 0)
	}
	c.n++
	switch c.kind {
	case KindString:
		var slot [16]byte
		c.strs = append(c.strs, slot[:]...)
	case KindFloat64, KindFloat32:
		c.flts = append(c.flts, 0)
	default:
		c.ints = append(c.ints, 0)
	}
}

func (c *outColumn) valid() {
	if c.n%64 == 0 {
		c.mask = append(c.mask, 0)
	}
	c.mask[c.n/64] |= 1 << (c.n % 64)
	c.n++
}

func (c *outColumn) addInt(v int64) {
	c.ints = append(c.ints, v)
	c.valid()
}

func (c *outColumn) addFloat(v float64) {
	c.flts = append(c.flts, v)
	c.valid()
}

// addText appends a string as duckdb_string_t: a uint32 length, then up
// to 12 bytes inline, or a 4-byte prefix and (here, until vector makes it
// a pointer) the value's offset in text.
func (c *outColumn) addText(v []byte) {
	var slot [16]byte
	binary.LittleEndian.PutUint32(slot[:4], uint32(len(v)))
	if len(v) <= 12 {
		copy(slot[4:], v)
	} else {
		copy(slot[4:8], v)
		binary.LittleEndian.PutUint64(slot[8:], uint64(len(c.text)))
		c.text = append(c.text, v...)
	}
	c.strs = append(c.strs, slot[:]...)
	c.valid()
}

func (c *outColumn) addString(v string) {
	c.addText(unsafe.Slice(unsafe.StringData(v), len(v)))
}

// vector lays the column out as the engine's vector of its kind, in
// memory the column holds until its next reset.
func (c *outColumn) vector() Vector {
	v := Vector{kind: c.kind}
	if c.hasNull {
		v.valid = &c.mask[0]
	}
	if c.n == 0 {
		return v
	}
	switch c.kind {
	case KindFloat64:
		v.data = unsafe.Pointer(&c.flts[0])
	case KindFloat32:
		c.f32 = narrow(c.f32, c.flts)
		v.data = unsafe.Pointer(&c.f32[0])
	case KindInt32:
		c.i32 = narrow(c.i32, c.ints)
		v.data = unsafe.Pointer(&c.i32[0])
	case KindInt16:
		c.i16 = narrow(c.i16, c.ints)
		v.data = unsafe.Pointer(&c.i16[0])
	case KindString:
		if len(c.text) > 0 {
			// The offsets of long values become pointers, now that text
			// has stopped growing.
			for at := 0; at < len(c.strs); at += 16 {
				if binary.LittleEndian.Uint32(c.strs[at:]) > 12 {
					off := binary.LittleEndian.Uint64(c.strs[at+8:])
					*(**byte)(unsafe.Pointer(&c.strs[at+8])) = &c.text[off]
				}
			}
		}
		v.data = unsafe.Pointer(&c.strs[0])
	default: // KindInt64 and the time kinds
		v.data = unsafe.Pointer(&c.ints[0])
	}
	return v
}

// narrow is src converted to the narrower type of dst, in dst's memory.
func narrow[D float32 | int32 | int16, S float64 | int64](dst []D, src []S) []D {
	dst = dst[:0]
	for _, x := range src {
		dst = append(dst, D(x))
	}
	return dst
}

// reset empties the column for the next chunk, keeping its memory.
func (c *outColumn) reset() {
	c.ints, c.flts, c.strs, c.text = c.ints[:0], c.flts[:0], c.strs[:0], c.text[:0]
	c.mask, c.hasNull, c.n = c.mask[:0], false, 0
}

// streamRows are the rows mode's result: a chunk per row group of the
// files the query keeps rows of, read as the wire asks for it, then one
// of the buffered rows it keeps (read before the query answered). It owns
// the files' handles.
type streamRows struct {
	ctx     context.Context
	g       *fastGroups
	pending []pendingRows
	files   []*delta.ScanFile
	cols    []outColumn // the file rows being read
	tail    []outColumn // the buffered rows, sent last
	// sent holds the columns of the chunk last returned: its vectors
	// point into their text without the collector seeing it.
	sent  []outColumn
	chunk Chunk
	err   error
	row   int
	vals  []any
}

// NextChunk implements ChunkRows.
func (r *streamRows) NextChunk() (*Chunk, bool) {
	for len(r.pending) > 0 {
		if err := r.ctx.Err(); err != nil {
			r.err, r.pending = err, nil
			return nil, false
		}
		p := r.pending[0]
		r.pending = r.pending[1:]
		for i := range r.cols {
			r.cols[i].reset()
		}
		r.g.cols, r.g.kept, r.g.nOut = r.cols, p.kept, 0
		if err := r.g.fileRows(p.f, p.rg, p.n); err != nil {
			r.err, r.pending = err, nil
			return nil, false
		}
		if r.g.decline {
			// The statistics bounded every time column (fastAggregate):
			// a file whose values lie outside them is damaged.
			r.err, r.pending = fmt.Errorf("planner: %s: a time outside its row group's statistics", p.f.Path()), nil
			return nil, false
		}
		if r.cols[0].n > 0 {
			r.setChunk(r.cols)
			return &r.chunk, true
		}
	}
	if tail := r.tail; tail != nil {
		r.tail, r.sent = nil, tail
		if tail[0].n > 0 {
			r.setChunk(tail)
			return &r.chunk, true
		}
	}
	return nil, false
}

func (r *streamRows) setChunk(cols []outColumn) {
	r.chunk.n = cols[0].n
	if r.chunk.cols == nil {
		r.chunk.cols = make([]Vector, len(cols))
	}
	for i := range cols {
		r.chunk.cols[i] = cols[i].vector()
	}
}

// Next implements Rows.
func (r *streamRows) Next() bool {
	r.row++
	if r.row < r.chunk.n {
		return true
	}
	if _, ok := r.NextChunk(); !ok {
		r.chunk.n = 0
		return false
	}
	r.row = 0
	return true
}

// Values implements Rows.
func (r *streamRows) Values() []any {
	if r.vals == nil {
		r.vals = make([]any, len(r.chunk.cols))
	}
	for i := range r.chunk.cols {
		r.vals[i] = r.chunk.cols[i].Value(r.row)
	}
	return r.vals
}

// Err implements Rows.
func (r *streamRows) Err() error { return r.err }

// Close implements Rows.
func (r *streamRows) Close() error {
	for _, f := range r.files {
		f.Close()
	}
	r.files, r.pending, r.cols, r.tail, r.sent = nil, nil, nil, nil, nil
	return nil
}
