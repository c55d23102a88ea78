package lineproto

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// Points into rows: each point's tags and fields slotted by column of its
// table, checked against the column's type, appended to Arrow builders.

// columnType maps a field kind to a column type.
func columnType(kind byte) schema.Type {
	switch kind {
	case 'i':
		return schema.Int64
	case 'b':
		return schema.Bool
	case 's':
		return schema.Text
	}
	return schema.Float64
}

// rowBuilder turns points into rows of one table: the columns are found
// by name once per table, and one point's values are slotted by column
// without allocating.
type rowBuilder struct {
	tbl   schema.Table
	index map[string]int // column name → position
	field []*Field       // the point's field by column (the last, if it repeats a key)
	set   []bool         // which columns the point has
	// The last point slotted and where its tags and fields went: a
	// point with the same keys goes to the same columns.
	last             *Point
	tagCol, fieldCol []int
}

func newRowBuilder(tbl schema.Table) *rowBuilder {
	rb := &rowBuilder{tbl: tbl, index: make(map[string]int, len(tbl.Columns)),
		field: make([]*Field, len(tbl.Columns)), set: make([]bool, len(tbl.Columns))}
	for i, c := range tbl.Columns {
		rb.index[c.Name] = i
	}
	return rb
}

// slot places p's values by column, or says why p cannot be a row of the
// table.
func (rb *rowBuilder) slot(p *Point) error {
	tbl := rb.tbl
	clear(rb.set)
	clear(rb.field)
	rb.set[tbl.TimeIndex] = true
	same := rb.last != nil && sameKeys(p, rb.last)
	if !same {
		rb.last = nil
		rb.tagCol, rb.fieldCol = rb.tagCol[:0], rb.fieldCol[:0]
	}
	for j, t := range p.Tags {
		var i int
		if same {
			i = rb.tagCol[j]
		} else {
			var ok bool
			if i, ok = rb.index[t.Key]; !ok || tbl.Columns[i].Type != schema.Text {
				return unknownColumn(p.Line, tbl, t.Key, "text")
			}
			rb.tagCol = append(rb.tagCol, i)
		}
		rb.set[i] = true
	}
	for j := range p.Fields {
		f := &p.Fields[j]
		var i int
		if same {
			i = rb.fieldCol[j]
		} else {
			var ok bool
			if i, ok = rb.index[f.Key]; !ok {
				return unknownColumn(p.Line, tbl, f.Key, columnType(f.Kind).String())
			}
			rb.fieldCol = append(rb.fieldCol, i)
		}
		if err := fits(tbl.Columns[i], *f); err != nil {
			// The client's fault: InfluxDB answers a field type
			// conflict with 400.
			return sqlerr.Wrap(sqlerr.DatatypeMismatch, fmt.Errorf("line %d: %s.%s: %w", p.Line, tbl.Name, tbl.Columns[i].Name, err))
		}
		rb.field[i], rb.set[i] = f, true
	}
	for i, c := range tbl.Columns {
		if c.NotNull && !rb.set[i] {
			return sqlerr.New(sqlerr.NotNullViolation, "line %d: %s: column %q is NOT NULL and the line has no value for it", p.Line, tbl.Name, c.Name)
		}
	}
	rb.last = p
	return nil
}

// build converts points into a record with the table's columns; the
// points that do not fit are left out, each with its reason.
func build(tbl schema.Table, pts []Point) (rec arrow.RecordBatch, kept []Point, rejected []string) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	bld.Reserve(len(pts))
	rb := newRowBuilder(tbl)
	all := true // every point so far is kept: kept is pts[:j]
	for j := 0; j < len(pts); {
		p := &pts[j]
		if err := rb.slot(p); err != nil {
			if all {
				kept, all = append(make([]Point, 0, len(pts)), pts[:j]...), false
			}
			rejected = append(rejected, err.Error())
			j++
			continue
		}
		// The points after p with its keys (one key shape) go where p's
		// values go, and fit their columns as p's do where a column
		// takes a kind of value rather than a range: they are appended
		// column by column.
		end := j + 1
		if p.keys != nil && rb.kindsDecide() {
			for end < len(pts) && pts[end].keys == p.keys {
				end++
			}
		}
		if !all {
			kept = append(kept, pts[j:end]...)
		}
		rb.appendRun(bld, pts[j:end])
		j = end
	}
	if all {
		kept = pts
	}
	return bld.NewRecordBatch(), kept, rejected
}

// kindsDecide reports whether the kinds of the last slotted point's
// fields alone decide that its values fit their columns: every column but
// int4 and int2, which take only integers within their range.
func (rb *rowBuilder) kindsDecide() bool {
	for _, i := range rb.fieldCol {
		if t := rb.tbl.Columns[i].Type; t == schema.Int32 || t == schema.Int16 {
			return false
		}
	}
	return true
}

// appendRun appends points with the keys of the last slotted point, which
// is run[0], whose values fit, column by column: the time, each tag, each field, NULL in
// the columns they lack.
func (rb *rowBuilder) appendRun(bld *array.RecordBuilder, run []Point) {
	tbl := rb.tbl
	tb := bld.Field(tbl.TimeIndex).(*array.TimestampBuilder)
	for k := range run {
		tb.Append(arrow.Timestamp(run[k].Micros))
	}
	for j, i := range rb.tagCol {
		sb := bld.Field(i).(*array.StringBuilder)
		n := 0
		for k := range run {
			n += len(run[k].Tags[j].Value)
		}
		sb.ReserveData(n)
		for k := range run {
			sb.Append(run[k].Tags[j].Value)
		}
	}
	for j, i := range rb.fieldCol {
		if rb.field[i] != &run[0].Fields[j] {
			continue // a key the point repeats: its last value counts
		}
		b := bld.Field(i)
		switch bb := b.(type) {
		case *array.Float64Builder:
			for k := range run {
				bb.Append(floatOf(&run[k].Fields[j]))
			}
		default:
			for k := range run {
				appendField(b, &run[k].Fields[j])
			}
		}
	}
	for i := range tbl.Columns {
		if !rb.set[i] {
			bld.Field(i).AppendNulls(len(run))
		}
	}
}

// floatOf is a field's value as a double: a float, or an integer.
func floatOf(f *Field) float64 {
	if f.Kind == 'i' {
		return float64(f.I)
	}
	return f.F
}

func unknownColumn(line int, tbl schema.Table, name, ty string) error {
	return sqlerr.New(sqlerr.DatatypeMismatch, "line %d: table %s has a column %q, but not of type %s", line, tbl.Name, name, ty)
}

// fits reports why a field's value cannot go into column c, if it cannot.
func fits(c schema.Column, f Field) error {
	switch c.Type {
	case schema.Float64, schema.Float32:
		if f.Kind != 'f' && f.Kind != 'i' {
			return errors.New("expects a number")
		}
	case schema.Int64:
		if f.Kind != 'i' {
			return errors.New("expects an integer (write 3i)")
		}
	case schema.Int32:
		if f.Kind != 'i' || f.I != int64(int32(f.I)) {
			return errors.New("expects an integer within int4")
		}
	case schema.Int16:
		if f.Kind != 'i' || f.I != int64(int16(f.I)) {
			return errors.New("expects an integer within int2")
		}
	case schema.Bool:
		if f.Kind != 'b' {
			return errors.New("expects a boolean")
		}
	case schema.Text:
		if f.Kind != 's' {
			return errors.New("expects a string")
		}
	default:
		return fmt.Errorf("cannot take line-protocol values (type %s)", c.Type)
	}
	return nil
}

// appendField appends a field's value that fits the builder's column.
func appendField(b array.Builder, f *Field) {
	switch bb := b.(type) {
	case *array.Float64Builder:
		bb.Append(floatOf(f))
	case *array.Float32Builder:
		bb.Append(float32(floatOf(f)))
	case *array.Int64Builder:
		bb.Append(f.I)
	case *array.Int32Builder:
		bb.Append(int32(f.I))
	case *array.Int16Builder:
		bb.Append(int16(f.I))
	case *array.BooleanBuilder:
		bb.Append(f.B)
	case *array.StringBuilder:
		bb.Append(f.S)
	}
}
