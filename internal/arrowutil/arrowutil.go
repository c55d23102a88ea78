// Package arrowutil holds the few Arrow record operations tsdb needs on the
// column types it stores: building a record from chosen rows of others, and
// widening a record written before columns were added.
package arrowutil

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowRef names row Row of record Rec in a list of records.
type RowRef struct {
	Rec, Row int
}

// Take builds one record with the schema sch from the referenced rows, in
// the order given. All records must have schema sch's column types.
func Take(sch *arrow.Schema, recs []arrow.RecordBatch, rows []RowRef) (arrow.RecordBatch, error) {
	return TakeEach(sch, recs, len(rows), func(_, i int) RowRef { return rows[i] })
}

// TakeEach is Take with the row chosen per column: row i of column c of
// the result is pick(c, i), for n rows (a point merged from the values of
// several rows).
func TakeEach(sch *arrow.Schema, recs []arrow.RecordBatch, n int, pick func(col, i int) RowRef) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sch.NumFields())
	for ci, f := range sch.Fields() {
		bld := array.NewBuilder(memory.DefaultAllocator, f.Type)
		bld.Reserve(n)
		for i := range n {
			r := pick(ci, i)
			if err := AppendValue(bld, recs[r.Rec].Column(ci), r.Row); err != nil {
				bld.Release()
				for _, c := range cols[:ci] {
					c.Release()
				}
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		cols[ci] = bld.NewArray()
		bld.Release()
	}
	return array.NewRecordBatch(sch, cols, int64(n)), nil
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
