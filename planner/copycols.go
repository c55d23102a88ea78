package planner

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
)

// copyColumns builds the columns of one COPY record at a time. Text,
// double precision and the table's time column are written straight into
// buffers of the allocator; other types go through Arrow's builders.
//
// Why not Arrow's builders for all: a builder zeroes every buffer it
// reserves, which the allocator (Go's or the COPY's slabs) has already
// zeroed, and appends a text value in four calls that each check capacity
// and write a validity bit. For the 20 text and float columns of a TSBS
// row that was a fifth of a COPY's server CPU. Here a value is a copy and
// a store, and a column gets a validity bitmap only once it has a NULL
// (Arrow allows none when no value is NULL).
//
// Every row appends exactly one value (or NULL) to every column, between
// newRow and endRow.
type copyColumns struct {
	alloc  memory.Allocator
	schema *arrow.Schema
	cols   []copyColumn
	n      int // rows ended
	cap    int // rows the buffers hold
	// full is set once a text column holds textLimit bytes
	// (copyRecordTextBytes but in tests): the record is cut before the
	// next row, so that its offsets, 32 bits as Arrow's strings have
	// them, cannot overflow.
	full      bool
	textLimit int
}

const (
	// maxTextValueBytes is the longest text value a COPY takes: as
	// PostgreSQL's, a value must fit in 1 GB.
	maxTextValueBytes = 1<<30 - 1
	// copyRecordTextBytes is how many bytes a text column of one record
	// may hold before the record is cut: with one value of at most
	// maxTextValueBytes more, still within 32-bit offsets.
	copyRecordTextBytes = 1 << 30
)

// copyColumn is one column under construction.
type copyColumn struct {
	kind  copyColumnKind
	words []uint64 // colFloat64, colTime: the values' bits, a row each
	offs  []int32  // colText: cap+1 offsets into data
	data  []byte   // colText: the values' bytes; offs[n] are used
	valid []byte   // the validity bitmap, nil while no row is NULL
	nulls int
	b     array.Builder // colBuilder
}

type copyColumnKind uint8

const (
	colBuilder copyColumnKind = iota // an Arrow builder
	colFloat64
	colText
	colTime // micros, the time column's
)

// newCopyColumns prepares the columns of tbl's Arrow schema; direct is
// false for input whose values are not text (binary COPY), which goes
// through Arrow's builders.
func newCopyColumns(alloc memory.Allocator, tbl *schema.Table, direct bool) *copyColumns {
	cc := &copyColumns{alloc: alloc, schema: tbl.ArrowSchema(), cols: make([]copyColumn, len(tbl.Columns)), textLimit: copyRecordTextBytes}
	for ci, col := range tbl.Columns {
		f := cc.schema.Field(ci)
		switch {
		case direct && col.Type == schema.Text && f.Type.ID() == arrow.STRING:
			cc.cols[ci].kind = colText
		case direct && col.Type == schema.Float64 && f.Type.ID() == arrow.FLOAT64:
			cc.cols[ci].kind = colFloat64
		case direct && ci == tbl.TimeIndex:
			// The time column is a timestamp: micros in 8 bytes.
			cc.cols[ci].kind = colTime
		default:
			cc.cols[ci].b = array.NewBuilder(alloc, f.Type)
		}
	}
	return cc
}

// len is how many rows the columns hold.
func (cc *copyColumns) len() int { return cc.n }

// reserve sizes empty columns for rows, text columns for sixteenths(ci)
// sixteenths of a byte a row but never more than maxText bytes (what is
// left of the input: the estimate comes from other rows, and a few long
// values before many short ones would reserve gigabytes).
func (cc *copyColumns) reserve(rows int, sixteenths func(ci int) int, maxText int) {
	cc.cap = rows
	for ci := range cc.cols {
		c := &cc.cols[ci]
		switch c.kind {
		case colBuilder:
			c.b.Reserve(rows)
			if sb, ok := c.b.(*array.StringBuilder); ok {
				sb.ReserveData(textReserve(rows, sixteenths(ci), maxText))
			}
		case colFloat64, colTime:
			c.words = allocWords(cc.alloc, rows)
		case colText:
			c.offs = allocOffsets(cc.alloc, rows+1)
			c.data = cc.alloc.Allocate(textReserve(rows, sixteenths(ci), maxText))
		}
	}
}

// textReserve is how many bytes to reserve for rows text values at an
// estimate of sixteenths of a byte each (0: none yet), at most maxText:
// an eighth more than the estimate, since values' lengths vary from
// record to record and growing copies the column; without one (the
// COPY's first records), 16 bytes a row.
func textReserve(rows, sixteenths, maxText int) int {
	if sixteenths <= 0 {
		sixteenths = 16 * 16
	}
	return min(rows*sixteenths*9/128, maxText) + 64
}

// newRow makes room for one more row.
func (cc *copyColumns) newRow() {
	if cc.n < cc.cap {
		return
	}
	rows := max(2*cc.cap, 64)
	for ci := range cc.cols {
		c := &cc.cols[ci]
		switch c.kind {
		case colFloat64, colTime:
			w := allocWords(cc.alloc, rows)
			copy(w, c.words[:cc.n])
			c.words = w
		case colText:
			o := allocOffsets(cc.alloc, rows+1)
			copy(o, c.offs[:cc.n+1])
			c.offs = o
		}
		if c.valid != nil {
			v := cc.alloc.Allocate(int(bitutil.BytesForBits(int64(rows))))
			copy(v, c.valid)
			c.valid = v
		}
	}
	cc.cap = rows
}

// endRow ends the row every column has a value of.
func (cc *copyColumns) endRow() { cc.n++ }

// builder is column ci's Arrow builder (a colBuilder column).
func (cc *copyColumns) builder(ci int) array.Builder { return cc.cols[ci].b }

// kind is how column ci takes its values: appendText, appendFloat or
// appendTime, or through its builder (colBuilder).
func (cc *copyColumns) kind(ci int) copyColumnKind { return cc.cols[ci].kind }

// appendNull appends NULL to column ci.
func (cc *copyColumns) appendNull(ci int) {
	c := &cc.cols[ci]
	if c.kind == colBuilder {
		c.b.AppendNull()
		return
	}
	if c.valid == nil {
		// The first NULL: every row before it was valid.
		c.valid = cc.alloc.Allocate(int(bitutil.BytesForBits(int64(cc.cap))))
		bitutil.SetBitsTo(c.valid, 0, int64(cc.n), true)
	}
	c.nulls++
	if c.kind == colText {
		c.offs[cc.n+1] = c.offs[cc.n]
	}
	// The values of a NULL row stay as the allocator gave them: zero.
}

// appendFloat appends v to the colFloat64 column ci.
func (cc *copyColumns) appendFloat(ci int, v float64) {
	c := &cc.cols[ci]
	c.words[cc.n] = *(*uint64)(unsafe.Pointer(&v))
	if c.valid != nil {
		bitutil.SetBit(c.valid, cc.n)
	}
}

// appendTime appends the time us (micros) to the colTime column ci.
func (cc *copyColumns) appendTime(ci int, us int64) {
	c := &cc.cols[ci]
	c.words[cc.n] = uint64(us)
	if c.valid != nil {
		bitutil.SetBit(c.valid, cc.n)
	}
}

// appendText appends a copy of s to the colText column ci.
func (cc *copyColumns) appendText(ci int, s string) {
	c := &cc.cols[ci]
	end := int(c.offs[cc.n])
	if end+len(s) > len(c.data) {
		// Half as much again: the old bytes stay in the allocator's
		// slab, unused, for as long as the slab lives.
		c.data = cc.alloc.Reallocate(max(min(len(c.data)*3/2, 2*cc.textLimit), end+len(s)), c.data)
	}
	copy(c.data[end:], s)
	c.offs[cc.n+1] = int32(end + len(s))
	if end+len(s) >= cc.textLimit {
		cc.full = true
	}
	if c.valid != nil {
		bitutil.SetBit(c.valid, cc.n)
	}
}

// textBytes is how many bytes text column ci holds (0 for other types).
func (cc *copyColumns) textBytes(ci int) int {
	c := &cc.cols[ci]
	if c.kind == colText {
		return int(c.offs[cc.n])
	}
	if sb, ok := c.b.(*array.StringBuilder); ok {
		return sb.DataLen()
	}
	return 0
}

// record turns the rows into a record and empties the columns; reserve
// must size them again before the next row.
func (cc *copyColumns) record() arrow.RecordBatch {
	n := cc.n
	arrs := make([]arrow.Array, len(cc.cols))
	for ci := range cc.cols {
		c := &cc.cols[ci]
		if c.kind == colBuilder {
			arrs[ci] = c.b.NewArray()
			continue
		}
		var valid *memory.Buffer
		if c.nulls > 0 {
			valid = memory.NewBufferBytes(c.valid[:bitutil.BytesForBits(int64(n))])
		}
		var bufs []*memory.Buffer
		if c.kind == colText {
			offs := c.offs[:n+1]
			bufs = []*memory.Buffer{valid,
				memory.NewBufferBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(offs))), 4*len(offs))),
				memory.NewBufferBytes(c.data[:offs[n]])}
		} else {
			bufs = []*memory.Buffer{valid,
				memory.NewBufferBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.words))), 8*n))}
		}
		data := array.NewData(cc.schema.Field(ci).Type, n, bufs, nil, c.nulls, 0)
		arrs[ci] = array.MakeFromData(data)
		data.Release()
		*c = copyColumn{kind: c.kind}
	}
	rec := array.NewRecordBatch(cc.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	cc.n, cc.cap, cc.full = 0, 0, false
	return rec
}

// release frees what the builder columns hold.
func (cc *copyColumns) release() {
	for ci := range cc.cols {
		if b := cc.cols[ci].b; b != nil {
			b.Release()
			cc.cols[ci].b = nil
		}
	}
}

// allocWords allocates n 8-byte words from alloc. Its buffers are at
// least 8-byte aligned (Go's and the slabs' are 64-byte aligned).
func allocWords(alloc memory.Allocator, n int) []uint64 {
	b := alloc.Allocate(8 * max(n, 1))
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// allocOffsets allocates n int32 offsets from alloc, zeroed.
func allocOffsets(alloc memory.Allocator, n int) []int32 {
	b := alloc.Allocate(4 * max(n, 1))
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
