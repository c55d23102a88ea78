// Package arrowutil holds the few Arrow record operations tsdb needs on the
// column types it stores: building a record from chosen rows of others, and
// widening a record written before columns were added.
package arrowutil

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowRef names row Row of record Rec in a list of records.
type RowRef struct {
	Rec, Row int
}

// Take builds one record with the schema sch from the referenced rows, in
// the order given. All records must have schema sch's column types.
func Take(sch *arrow.Schema, recs []arrow.RecordBatch, rows []RowRef) (arrow.RecordBatch, error) {
	return take(sch, recs, len(rows), func(_, i int) RowRef { return rows[i] })
}

// TakeEach is Take with the row chosen per column: row i of column c of
// the result is pick(c, i), for n rows (a point merged from the values of
// several rows).
func TakeEach(sch *arrow.Schema, recs []arrow.RecordBatch, n int, pick func(col, i int) RowRef) (arrow.RecordBatch, error) {
	return take(sch, recs, n, pick)
}

func take(sch *arrow.Schema, recs []arrow.RecordBatch, n int, pick func(col, i int) RowRef) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sch.NumFields())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	srcs := make([]arrow.Array, len(recs))
	for ci, f := range sch.Fields() {
		for i, r := range recs {
			srcs[i] = r.Column(ci)
		}
		col, err := takeColumn(f.Type, srcs, n, func(i int) RowRef { return pick(ci, i) })
		if err != nil {
			release()
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		cols[ci] = col
	}
	out := array.NewRecordBatch(sch, cols, int64(n))
	release()
	return out, nil
}

// takeColumn builds one column of n rows from srcs. The column types a
// flush moves by the million (numbers, times, text) are gathered straight
// from the sources' value buffers into the new array's, one type switch
// per column instead of one per value (a flush sorting 300,000 rows of 21
// columns spent most of its time in the per-value switch); the rest go
// through a builder.
func takeColumn(dt arrow.DataType, srcs []arrow.Array, n int, pick func(i int) RowRef) (arrow.Array, error) {
	for _, s := range srcs {
		if !arrow.TypeEqual(s.DataType(), dt) {
			return nil, fmt.Errorf("a record holds %s, want %s", s.DataType(), dt)
		}
	}
	switch dt.ID() {
	case arrow.TIMESTAMP:
		return takeFixed(dt, srcs, n, pick, func(a arrow.Array) []arrow.Timestamp { return a.(*array.Timestamp).TimestampValues() }, arrow.TimestampTraits.CastToBytes)
	case arrow.INT64:
		return takeFixed(dt, srcs, n, pick, func(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() }, arrow.Int64Traits.CastToBytes)
	case arrow.INT32:
		return takeFixed(dt, srcs, n, pick, func(a arrow.Array) []int32 { return a.(*array.Int32).Int32Values() }, arrow.Int32Traits.CastToBytes)
	case arrow.FLOAT64:
		return takeFixed(dt, srcs, n, pick, func(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() }, arrow.Float64Traits.CastToBytes)
	case arrow.STRING:
		return takeStrings(srcs, n, pick)
	}
	bld := array.NewBuilder(memory.DefaultAllocator, dt)
	defer bld.Release()
	bld.Reserve(n)
	for i := range n {
		r := pick(i)
		if err := AppendValue(bld, srcs[r.Rec], r.Row); err != nil {
			return nil, err
		}
	}
	return bld.NewArray(), nil
}

// validity is the null bitmap of a column being gathered: nil while every
// value is valid.
type validity struct {
	bits  []byte
	nulls int
}

func (v *validity) setNull(i, n int) {
	if v.bits == nil {
		v.bits = make([]byte, bitutil.BytesForBits(int64(n)))
		for j := range v.bits {
			v.bits[j] = 0xff
		}
	}
	bitutil.ClearBit(v.bits, i)
	v.nulls++
}

func (v *validity) buffer() *memory.Buffer {
	if v.bits == nil {
		return nil
	}
	return memory.NewBufferBytes(v.bits)
}

func anyNulls(srcs []arrow.Array) bool {
	for _, s := range srcs {
		if s.NullN() > 0 {
			return true
		}
	}
	return false
}

// takeFixed gathers a fixed-width column through each source's values.
func takeFixed[T any](dt arrow.DataType, srcs []arrow.Array, n int, pick func(int) RowRef, values func(arrow.Array) []T, bytes func([]T) []byte) (arrow.Array, error) {
	raw := make([][]T, len(srcs))
	for i, s := range srcs {
		raw[i] = values(s)
	}
	out := make([]T, n)
	var v validity
	nulls := anyNulls(srcs)
	for i := range out {
		r := pick(i)
		if nulls && srcs[r.Rec].IsNull(r.Row) {
			v.setNull(i, n)
			continue
		}
		out[i] = raw[r.Rec][r.Row]
	}
	data := array.NewData(dt, n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(bytes(out))}, nil, v.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// takeStrings gathers a text column: offsets and bytes, sized first.
func takeStrings(srcs []arrow.Array, n int, pick func(int) RowRef) (arrow.Array, error) {
	strs := make([]*array.String, len(srcs))
	for i, s := range srcs {
		strs[i] = s.(*array.String)
	}
	nulls := anyNulls(srcs)
	size := 0
	for i := range n {
		r := pick(i)
		size += strs[r.Rec].ValueLen(r.Row)
	}
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("%d bytes of text exceed a column's 2 GiB", size)
	}
	offsets := make([]int32, n+1)
	body := make([]byte, 0, size)
	var v validity
	for i := range n {
		r := pick(i)
		if nulls && strs[r.Rec].IsNull(r.Row) {
			v.setNull(i, n)
		} else {
			body = append(body, strs[r.Rec].Value(r.Row)...)
		}
		offsets[i+1] = int32(len(body))
	}
	data := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes(body)}, nil, v.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// CopyRows is a record of its own holding rows [from, to) of rec: copied
// column by column, not value by value, and holding no reference to rec's
// buffers (a slice would keep all of them alive and counted).
func CopyRows(rec arrow.RecordBatch, from, to int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		part := array.NewSlice(c, int64(from), int64(to))
		var err error
		cols[i], err = array.Concatenate([]arrow.Array{part}, memory.DefaultAllocator)
		part.Release()
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("column %s: %w", rec.ColumnName(i), err)
		}
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(to-from))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// AppendValue copies row r of src into bld; both must have the same type.
func AppendValue(bld array.Builder, src arrow.Array, r int) error {
	if src.IsNull(r) {
		bld.AppendNull()
		return nil
	}
	switch b := bld.(type) {
	case *array.TimestampBuilder:
		b.Append(src.(*array.Timestamp).Value(r))
	case *array.Int64Builder:
		b.Append(src.(*array.Int64).Value(r))
	case *array.Int32Builder:
		b.Append(src.(*array.Int32).Value(r))
	case *array.Int16Builder:
		b.Append(src.(*array.Int16).Value(r))
	case *array.Float64Builder:
		b.Append(src.(*array.Float64).Value(r))
	case *array.Float32Builder:
		b.Append(src.(*array.Float32).Value(r))
	case *array.BooleanBuilder:
		b.Append(src.(*array.Boolean).Value(r))
	case *array.StringBuilder:
		b.Append(src.(*array.String).Value(r))
	case *array.MonthDayNanoIntervalBuilder:
		b.Append(src.(*array.MonthDayNanoInterval).Value(r))
	case *array.Date32Builder:
		b.Append(src.(*array.Date32).Value(r))
	case *array.Decimal128Builder:
		b.Append(src.(*array.Decimal128).Value(r))
	case *array.BinaryBuilder:
		b.Append(src.(*array.Binary).Value(r))
	default:
		return fmt.Errorf("unsupported arrow type %s", src.DataType())
	}
	return nil
}

// Pad widens rec to sch by appending all-NULL columns for the trailing
// fields rec lacks: a table's columns are only ever appended (ALTER TABLE
// ADD COLUMN), so a record written before holds a prefix of them. A record
// as wide as sch is returned as it is, with a new reference.
func Pad(sch *arrow.Schema, rec arrow.RecordBatch) arrow.RecordBatch {
	have := int(rec.NumCols())
	if have >= sch.NumFields() {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, sch.NumFields())
	for i := 0; i < have; i++ {
		cols[i] = rec.Column(i)
	}
	n := int(rec.NumRows())
	for i := have; i < sch.NumFields(); i++ {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, sch.Field(i).Type, n)
		defer cols[i].Release()
	}
	return array.NewRecordBatch(sch, cols, int64(n))
}

// ReleaseAll releases every record.
func ReleaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
