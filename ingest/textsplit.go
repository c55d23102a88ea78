package ingest

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A compressed WAL entry (COPY's, kindRowsSplit) writes each text column
// as its bytes and its rows' lengths instead of Arrow's String layout,
// whose offset per row (an int32 that grows with every row) LZ4 cannot
// shrink: 40 of the 133 bytes a TSBS row took in the WAL, for 10 tag
// columns. The lengths of tag values repeat and compress to a byte or
// less a row. Writing fewer WAL pages matters here more than anywhere:
// every page badger writes through its memory-mapped value log costs a
// fault and, at the next sync, a TLB shootdown (docs/benchmarks.md).
//
// The entry holds two records of the same rows, each an Arrow IPC stream:
//
//   - the columns: every column as it is, but a text column as Binary
//     with the column's validity and bytes and offsets 0, T, T, …, T (all
//     of its T bytes in the first row; the repeated T compress to nothing);
//   - the lengths: an Int32 column of each text column's row lengths, in
//     column order.
//
// Replay decodes the columns into the memory they will live in (huge-page
// slabs, which are never freed piecemeal) and the lengths into ordinary
// memory, and sums the lengths up over the Binary column's offsets, in
// place: those become the String column's offsets, so nothing decoded
// into a slab is left dead in it.

// splitTextKey marks, in a field's metadata, a text column written as its
// bytes.
const splitTextKey = "tsdb.wal.text"

// splitText returns rec's columns and lengths records (see above); the
// buffers it makes come from mem. The caller releases both; cols holds
// rec's buffers too.
func splitText(rec arrow.RecordBatch, mem memory.Allocator) (cols, lengths arrow.RecordBatch) {
	n := int(rec.NumRows())
	for _, c := range rec.Columns() {
		if c.Len() != n {
			// Arrow lets columns run past their record: only the
			// record's rows are written.
			rec = rec.NewSlice(0, int64(n))
			defer rec.Release()
			break
		}
	}
	sch := rec.Schema()
	var fields, lenFields []arrow.Field
	var arrs, lenArrs []arrow.Array
	defer func() {
		for _, a := range append(arrs, lenArrs...) {
			a.Release()
		}
	}()
	for i, f := range sch.Fields() {
		a, ok := rec.Column(i).(*array.String)
		if !ok {
			c := rec.Column(i)
			c.Retain()
			fields, arrs = append(fields, f), append(arrs, c)
			continue
		}
		offs := a.ValueOffsets()
		vals := a.ValueBytes() // the rows' bytes, whatever a's offset
		lb := memory.NewResizableBuffer(mem)
		lb.Resize(4 * n)
		ob := memory.NewResizableBuffer(mem)
		ob.Resize(4 * (n + 1))
		l, o := arrow.Int32Traits.CastFromBytes(lb.Bytes()), arrow.Int32Traits.CastFromBytes(ob.Bytes())
		total := int32(len(vals))
		o[0] = 0
		for r := range n {
			l[r] = offs[r+1] - offs[r]
			o[r+1] = total
		}
		ld := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, lb}, nil, 0, 0)
		lenFields = append(lenFields, arrow.Field{Name: f.Name, Type: arrow.PrimitiveTypes.Int32})
		lenArrs = append(lenArrs, array.MakeFromData(ld))
		ld.Release()
		lb.Release()

		// Offsets and bytes start at row 0: so must the validity.
		data := a.Data()
		valid := data.Buffers()[0]
		if data.Offset() != 0 {
			valid = rebasedValidity(a, mem)
		}
		bd := array.NewData(arrow.BinaryTypes.Binary, n, []*memory.Buffer{valid, ob, memory.NewBufferBytes(vals)}, nil, a.NullN(), 0)
		if data.Offset() != 0 && valid != nil {
			valid.Release() // bd holds it
		}
		ob.Release()
		fields = append(fields, arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.Binary, Nullable: f.Nullable, Metadata: withKey(f.Metadata, splitTextKey, "bytes")})
		arrs = append(arrs, array.MakeFromData(bd))
		bd.Release()
	}
	md := sch.Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), arrs, int64(n)),
		array.NewRecordBatch(arrow.NewSchema(lenFields, nil), lenArrs, int64(n))
}

// rebasedValidity is a's validity bitmap from its first row, in a buffer
// of mem's; nil without NULLs.
func rebasedValidity(a arrow.Array, mem memory.Allocator) *memory.Buffer {
	if a.NullN() == 0 {
		return nil
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(a.Len()))))
	bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), a.Len(), b.Bytes(), 0)
	return b
}

// errSplitText is a text column written as its bytes whose lengths do
// not fit them.
var errSplitText = errors.New("text column's lengths do not fit its bytes")

// joinText undoes splitText on the decoded records: each text column's
// offsets are summed up from its lengths over its Binary column's offsets
// buffer. cols and lengths are released; the record returned is the
// caller's.
func joinText(cols, lengths arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer cols.Release()
	defer lengths.Release()
	sch := cols.Schema()
	n := int(cols.NumRows())
	var fields []arrow.Field
	var arrs []arrow.Array
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	next := 0 // the next column of lengths
	for i, f := range sch.Fields() {
		if v, _ := f.Metadata.GetValue(splitTextKey); v == "" {
			c := cols.Column(i)
			c.Retain()
			fields, arrs = append(fields, f), append(arrs, c)
			continue
		}
		b, ok := cols.Column(i).(*array.Binary)
		if !ok || b.Len() != n || next >= int(lengths.NumCols()) || int(lengths.NumRows()) != n {
			return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
		}
		l, ok := lengths.Column(next).(*array.Int32)
		next++
		if !ok || l.Len() != n || l.NullN() != 0 || b.Data().Offset() != 0 {
			return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
		}
		// Checked here, not trusted to Arrow's reader: the offsets start
		// at 0 and the bytes hold the last.
		data := b.Data()
		offs, vals := data.Buffers()[1], data.Buffers()[2]
		if offs == nil || offs.Len() < 4*(n+1) {
			return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
		}
		all := arrow.Int32Traits.CastFromBytes(offs.Bytes())[:n+1]
		total := int64(all[n])
		if all[0] != 0 || total < 0 || vals == nil && total > 0 || vals != nil && total > int64(vals.Len()) {
			return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
		}
		// The Binary column's offsets become the String column's: this
		// record owns what its IPC reader decoded.
		o := all[1:]
		sum := int64(0)
		for r, x := range l.Int32Values() {
			sum += int64(x)
			if x < 0 || sum > total {
				return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
			}
			o[r] = int32(sum)
		}
		if sum != total {
			return nil, fmt.Errorf("column %s: %w", f.Name, errSplitText)
		}
		sd := array.NewData(arrow.BinaryTypes.String, n, data.Buffers(), nil, b.NullN(), 0)
		fields = append(fields, arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: f.Nullable, Metadata: withoutKey(f.Metadata, splitTextKey)})
		arrs = append(arrs, array.MakeFromData(sd))
		sd.Release()
	}
	if next != int(lengths.NumCols()) {
		return nil, fmt.Errorf("%d lengths for %d text columns: %w", lengths.NumCols(), next, errSplitText)
	}
	md := sch.Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), arrs, int64(n)), nil
}

// withKey is md with key set to value.
func withKey(md arrow.Metadata, key, value string) arrow.Metadata {
	keys, values := append([]string{}, md.Keys()...), append([]string{}, md.Values()...)
	return arrow.NewMetadata(append(keys, key), append(values, value))
}

// withoutKey is md without key (no metadata at all when nothing else is
// left, as the field had before withKey).
func withoutKey(md arrow.Metadata, key string) arrow.Metadata {
	var keys, values []string
	for i, k := range md.Keys() {
		if k != key {
			keys, values = append(keys, k), append(values, md.Values()[i])
		}
	}
	if len(keys) == 0 {
		return arrow.Metadata{}
	}
	return arrow.NewMetadata(keys, values)
}
