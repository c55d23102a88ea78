package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/membuffer"
)

// textRecord is n rows of a time, a text column with NULLs and empty
// strings, a text column NULL throughout, a double and a text column
// with field metadata.
func textRecord(n int) arrow.RecordBatch {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "gone", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		switch i % 4 {
		case 0:
			b.Field(1).AppendNull()
		case 1:
			b.Field(1).(*array.StringBuilder).Append("")
		default:
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host_%d", i%13))
		}
		b.Field(2).AppendNull()
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("ünïcode %d", i))
	}
	return b.NewRecordBatch()
}

// A split entry decodes to the record it was made from — values, NULLs,
// field names, types, nullability and metadata — whatever the record's
// offset into its buffers, and a plain entry still decodes as before.
func TestSplitTextEntries(t *testing.T) {
	full := textRecord(1000)
	defer full.Release()
	sliced := full.NewSlice(13, 990) // columns starting at a bit offset
	defer sliced.Release()
	empty := full.NewSlice(0, 0)
	defer empty.Release()
	// Arrow lets columns run past their record: a split entry keeps the
	// record's rows (a plain one, as Arrow's IPC writer does, the columns
	// whole).
	long := array.NewRecordBatch(full.Schema(), full.Columns(), 600)
	defer long.Release()
	longSplit := full.NewSlice(0, 600)
	defer longSplit.Release()
	var bufs, scratch compressBuffers
	for _, tc := range []struct {
		name           string
		rec, wantSplit arrow.RecordBatch
	}{{"full", full, full}, {"sliced", sliced, sliced}, {"empty", empty, empty}, {"long", long, longSplit}} {
		for _, lz4 := range []*compressBuffers{&bufs, nil} {
			t.Run(fmt.Sprintf("%s/lz4=%v", tc.name, lz4 != nil), func(t *testing.T) {
				want := tc.rec
				if lz4 != nil {
					want = tc.wantSplit
				}
				var buf bytes.Buffer
				p, err := encodeEntryFramed(&buf, entry{table: "t", tableID: "id", key: membuffer.Key{Start: 1, End: 2}, rec: tc.rec}, 0, lz4)
				if err != nil {
					t.Fatal(err)
				}
				e, body, err := decodeHeader(p)
				if err != nil {
					t.Fatal(err)
				}
				if e.split != (lz4 != nil) {
					t.Fatalf("split %v", e.split)
				}
				got, err := decodeRecord(body, e.split, memory.DefaultAllocator, &scratch)
				if err != nil {
					t.Fatal(err)
				}
				defer got.Release()
				if !got.Schema().Equal(want.Schema()) {
					t.Fatalf("schema\n%v\nwant\n%v", got.Schema(), want.Schema())
				}
				for i, f := range got.Schema().Fields() {
					if !f.Metadata.Equal(want.Schema().Field(i).Metadata) {
						t.Errorf("%s: metadata %v, want %v", f.Name, f.Metadata, want.Schema().Field(i).Metadata)
					}
				}
				if !array.RecordEqual(got, want) {
					t.Fatal("decoded record differs from the encoded one")
				}
				for _, c := range []int{1, 2, 4} {
					if err := got.Column(c).(*array.String).ValidateFull(); err != nil {
						t.Fatalf("column %d: %v", c, err)
					}
				}
			})
		}
	}
}

// A split entry whose lengths do not fit its bytes, or whose body is cut
// short, is an error, never a panic or a wrong column.
func TestSplitTextDamage(t *testing.T) {
	rec := textRecord(100)
	defer rec.Release()
	var bufs compressBuffers
	cols, lengths := splitText(rec, &bufs)
	defer cols.Release()
	defer lengths.Release()
	// Lengths one byte too long for the first text column.
	bad := func() arrow.RecordBatch {
		b := array.NewInt32Builder(memory.DefaultAllocator)
		defer b.Release()
		l := lengths.Column(0).(*array.Int32).Int32Values()
		b.AppendValues(l, nil)
		vals := b.NewInt32Array()
		vals.Int32Values()[len(l)-1]++
		arrs := []arrow.Array{vals}
		for i := 1; i < int(lengths.NumCols()); i++ {
			arrs = append(arrs, lengths.Column(i))
		}
		defer vals.Release()
		return array.NewRecordBatch(lengths.Schema(), arrs, lengths.NumRows())
	}
	// Lengths of more rows than the record's, the extra ones zero.
	more := func() arrow.RecordBatch {
		b := array.NewInt32Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(lengths.Column(0).(*array.Int32).Int32Values(), nil)
		b.AppendValues(make([]int32, 50), nil)
		vals := b.NewInt32Array()
		defer vals.Release()
		arrs := []arrow.Array{vals}
		for i := 1; i < int(lengths.NumCols()); i++ {
			arrs = append(arrs, lengths.Column(i))
		}
		return array.NewRecordBatch(lengths.Schema(), arrs, lengths.NumRows())
	}
	for name, ls := range map[string]func() arrow.RecordBatch{
		"long":  bad,
		"more":  more,
		"fewer": func() arrow.RecordBatch { return lengths.NewSlice(0, 0) },
		"none": func() arrow.RecordBatch {
			return array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, lengths.NumRows())
		},
	} {
		cols.Retain()
		if _, err := joinText(cols, ls()); !errors.Is(err, errSplitText) {
			t.Errorf("%s: %v, want errSplitText", name, err)
		}
	}
	// Bytes whose first offset lies past the last.
	{
		one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.BinaryTypes.Binary, Nullable: true,
			Metadata: arrow.NewMetadata([]string{splitTextKey}, []string{"bytes"})}}, nil),
			[]arrow.Array{array.MakeFromData(array.NewData(arrow.BinaryTypes.Binary, 2, []*memory.Buffer{nil,
				memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{5, 3, 3})), memory.NewBufferBytes([]byte("abc"))}, nil, 0, 0))}, 2)
		b := array.NewInt32Builder(memory.DefaultAllocator)
		b.AppendValues([]int32{0, 3}, nil)
		l := b.NewInt32Array()
		b.Release()
		ls := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{l}, 2)
		l.Release()
		if _, err := joinText(one, ls); !errors.Is(err, errSplitText) {
			t.Errorf("offsets 5, 3, 3: %v, want errSplitText", err)
		}
	}
	var buf bytes.Buffer
	p, err := encodeEntryFramed(&buf, entry{table: "t", tableID: "id", rec: rec}, 0, &bufs)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := decodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	// (Past the last record only the stream's 8-byte end marker is left,
	// which a reader does not need: the WAL's checksum covers the entry.)
	for _, cut := range []int{0, 3, 4, 40, len(body) / 2, len(body) - 12} {
		if rec, err := decodeRecord(body[:cut], true, memory.DefaultAllocator, &bufs); err == nil {
			rec.Release()
			t.Errorf("body cut to %d of %d bytes decoded", cut, len(body))
		}
	}
}
