package arrowutil

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestTakeReordersAcrossRecordsAndKeepsNulls(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	mk := func(ts []int64, ss []string) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := range ts {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts[i]))
			if ss[i] == "" {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(ss[i])
			}
			b.Field(2).(*array.BooleanBuilder).Append(i%2 == 0)
		}
		return b.NewRecordBatch()
	}
	r0 := mk([]int64{10, 20}, []string{"a", ""})
	r1 := mk([]int64{5}, []string{"c"})
	out, err := Take(sch, []arrow.RecordBatch{r0, r1}, []RowRef{{1, 0}, {0, 1}, {0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	ts := out.Column(0).(*array.Timestamp)
	ss := out.Column(1).(*array.String)
	if out.NumRows() != 3 || ts.Value(0) != 5 || ts.Value(1) != 20 || ts.Value(2) != 10 {
		t.Fatalf("times %v", ts)
	}
	if ss.Value(0) != "c" || !ss.IsNull(1) || ss.Value(2) != "a" {
		t.Fatalf("strings %v", ss)
	}
}

// Take gathers every stored column type as a builder fed value by value
// would: from records with and without NULLs, from slices of records
// (whose values start at an offset), by rows picked per column.
func TestTakeMatchesAppendValue(t *testing.T) {
	types := []arrow.DataType{
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int16,
		arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
		arrow.FixedWidthTypes.Date32, &arrow.Decimal128Type{Precision: 20, Scale: 3},
		arrow.FixedWidthTypes.MonthDayNanoInterval,
	}
	var fields []arrow.Field
	for i, dt := range types {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: dt, Nullable: true})
	}
	sch := arrow.NewSchema(fields, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(rows int, nullEvery int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		defer b.Release()
		for r := range rows {
			for c := range types {
				if nullEvery > 0 && (r+c)%nullEvery == 0 {
					b.Field(c).AppendNull()
					continue
				}
				v := rng.IntN(1000) - 500
				switch fb := b.Field(c).(type) {
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(v))
				case *array.Int64Builder:
					fb.Append(int64(v) << 40)
				case *array.Int32Builder:
					fb.Append(int32(v))
				case *array.Int16Builder:
					fb.Append(int16(v))
				case *array.Float64Builder:
					fb.Append(float64(v) / 7)
				case *array.Float32Builder:
					fb.Append(float32(v) / 3)
				case *array.BooleanBuilder:
					fb.Append(v%2 == 0)
				case *array.StringBuilder:
					fb.Append(fmt.Sprintf("host_%d%s", v, string(make([]byte, rng.IntN(5)))))
				case *array.BinaryBuilder:
					fb.Append([]byte{byte(v), byte(r)})
				case *array.Date32Builder:
					fb.Append(arrow.Date32(v))
				case *array.Decimal128Builder:
					fb.Append(decimal128FromInt(int64(v)))
				case *array.MonthDayNanoIntervalBuilder:
					fb.Append(arrow.MonthDayNanoInterval{Months: int32(v), Days: 1, Nanoseconds: int64(r)})
				}
			}
		}
		return b.NewRecordBatch()
	}
	whole := mk(40, 0)
	defer whole.Release()
	withNulls := mk(50, 3)
	defer withNulls.Release()
	recs := []arrow.RecordBatch{whole, withNulls.NewSlice(7, 45), whole.NewSlice(13, 14)}
	defer recs[1].Release()
	defer recs[2].Release()

	const n = 300
	picks := make([][]RowRef, len(types))
	for c := range picks {
		for range n {
			ri := rng.IntN(len(recs))
			picks[c] = append(picks[c], RowRef{Rec: ri, Row: rng.IntN(int(recs[ri].NumRows()))})
		}
	}
	for _, tc := range []struct {
		name string
		pick func(c, i int) RowRef
	}{
		{"same rows for every column", func(_, i int) RowRef { return picks[0][i] }},
		{"rows per column", func(c, i int) RowRef { return picks[c][i] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := TakeEach(sch, recs, n, tc.pick)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			for c, dt := range types {
				want := array.NewBuilder(memory.DefaultAllocator, dt)
				for i := range n {
					r := tc.pick(c, i)
					if err := AppendValue(want, recs[r.Rec].Column(c), r.Row); err != nil {
						t.Fatal(err)
					}
				}
				w := want.NewArray()
				if !array.Equal(w, out.Column(c)) {
					t.Errorf("column %s: got %v\nwant %v", dt, out.Column(c), w)
				}
				if out.Column(c).NullN() != w.NullN() {
					t.Errorf("column %s: %d NULLs, want %d", dt, out.Column(c).NullN(), w.NullN())
				}
				w.Release()
				want.Release()
			}
		})
	}
}

func TestAppendValueRejectsUnknownTypes(t *testing.T) {
	b := array.NewBuilder(memory.DefaultAllocator, arrow.BinaryTypes.LargeString)
	src := array.NewLargeStringBuilder(memory.DefaultAllocator)
	src.Append("x")
	if err := AppendValue(b, src.NewArray(), 0); err == nil {
		t.Fatal("large string accepted")
	}
}

// CopyRows gives a compact record of the rows asked for: values, NULLs and
// booleans' bits at the right offsets, and no tie to the source's buffers.
func TestCopyRows(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 10 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		if i%3 == 0 {
			b.Field(1).AppendNull()
			b.Field(3).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(string(rune('a' + i)))
			b.Field(3).(*array.Float64Builder).Append(float64(i) / 2)
		}
		b.Field(2).(*array.BooleanBuilder).Append(i%2 == 0)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, tc := range []struct{ from, to int }{{0, 10}, {3, 7}, {9, 10}, {4, 4}} {
		out, err := CopyRows(rec, tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if int(out.NumRows()) != tc.to-tc.from {
			t.Fatalf("[%d,%d): %d rows", tc.from, tc.to, out.NumRows())
		}
		for i := 0; i < tc.to-tc.from; i++ {
			for c := range 4 {
				want, got := rec.Column(c).ValueStr(tc.from+i), out.Column(c).ValueStr(i)
				if want != got {
					t.Fatalf("[%d,%d) row %d column %d: %s, want %s", tc.from, tc.to, i, c, got, want)
				}
			}
		}
		if s := out.Column(1).(*array.String); tc.to > tc.from && s.Data().Offset() != 0 {
			t.Fatalf("a slice, not a copy: offset %d", s.Data().Offset())
		}
		out.Release()
	}
}

func decimal128FromInt(v int64) decimal128.Num { return decimal128.FromI64(v) }
