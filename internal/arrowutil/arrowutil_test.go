package arrowutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
