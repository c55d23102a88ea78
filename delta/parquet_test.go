package delta

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"tsdb/internal/schema"
)

// TestDataFileEncodings pins down how a data file stores each kind of
// column: snappy everywhere, a dictionary where it makes the values
// smaller (tags, repeated gauge values, the time column) and plain values
// where it would not (random-walk floats, unique strings). Queries decode
// what is written here, so a writer default that changes under an arrow-go
// upgrade shows up as a failure rather than as slower queries.
func TestDataFileEncodings(t *testing.T) {
	sch, err := schema.New("m", []schema.Column{
		{Name: "time", Type: schema.Timestamptz},
		{Name: "host", Type: schema.Text},
		{Name: "msg", Type: schema.Text},
		{Name: "usage", Type: schema.Float64},
		{Name: "state", Type: schema.Float64},
		{Name: "count", Type: schema.Int64},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 20 hosts × 360 times within one hour: one row group, and in file
	// order (hour, host, time) every host's times repeat those of the
	// host before it.
	rng := rand.New(rand.NewPCG(1, 2))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
	defer b.Release()
	for h := range 20 {
		for i := range 360 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 10_000_000))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host_%d", h))
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("request %d took %.6f s", rng.Int64(), rng.Float64()))
			b.Field(3).(*array.Float64Builder).Append(rng.Float64() * 100)
			b.Field(4).(*array.Float64Builder).Append(float64(i % 3))
			b.Field(5).(*array.Int64Builder).Append(int64(h*360 + i))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	path, meta := writeOneFile(t, sch, rec)
	if !strings.HasSuffix(path, ".snappy.parquet") {
		t.Errorf("data file %s: want the codec in its name", path)
	}
	if n := meta.NumRowGroups(); n != 1 {
		t.Fatalf("%d row groups, want 1", n)
	}
	rg := meta.RowGroup(0)
	for i, tc := range []struct {
		column string
		dict   bool
	}{
		{"time", true},   // 360 distinct times among 7,200 rows
		{"host", true},   // 20 distinct tags
		{"msg", false},   // every line distinct
		{"usage", false}, // random floats
		{"state", true},  // three values
		{"count", false}, // every value distinct
	} {
		t.Run(tc.column, func(t *testing.T) {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.PathInSchema().String(); got != tc.column {
				t.Fatalf("column %d is %s, want %s", i, got, tc.column)
			}
			if cc.Compression() != compress.Codecs.Snappy {
				t.Errorf("compression %s, want snappy", cc.Compression())
			}
			if dict := dictEncoded(cc); dict != tc.dict {
				t.Errorf("dictionary-encoded %v (encodings %v), want %v", dict, cc.Encodings(), tc.dict)
			}
		})
	}
}

// TestEventTimesArePlain: a time column whose values are all distinct (an
// event or log table) drops its dictionary like any other column.
func TestEventTimesArePlain(t *testing.T) {
	sch, err := schema.New("events", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "msg", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
	defer b.Release()
	for i := range 5000 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 700_000)) // 0.7 s apart
		b.Field(1).(*array.StringBuilder).Append("login")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, meta := writeOneFile(t, sch, rec)
	rg := meta.RowGroup(0)
	for i, want := range []bool{false, true} {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := dictEncoded(cc); got != want {
			t.Errorf("%s: dictionary %v, want %v", cc.PathInSchema(), got, want)
		}
	}
}

// TestMergeRewritesOlderFiles merges files as versions before snappy wrote
// them (zstd, a dictionary on every column) with one of today's: the
// merged file has the same rows as one sorted write and today's layout.
func TestMergeRewritesOlderFiles(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var files []File
	for f := range 3 {
		var rows []testRow
		for step := range 300 {
			for h := range 10 {
				rows = append(rows, testRow{int64(f)*600*second + int64(step)*2*second, fmt.Sprintf("host_%02d", h), rng.Float64()})
			}
		}
		rec := testRows(sch, rows)
		add := Add{}
		if f < 2 {
			add = writeZstdFile(t, store, sch, rec)
		} else {
			var err error
			if add, err = WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec}); err != nil {
				t.Fatal(err)
			}
		}
		rec.Release()
		files = append(files, File{Add: add, MinTime: int64(f) * 600 * second})
	}
	if cc, err := fileMeta(t, store, files[0].Path).RowGroup(0).ColumnChunk(2); err != nil || cc.Compression() != compress.Codecs.Zstd || !cc.HasDictionaryPage() {
		t.Fatalf("the older file is not as older versions wrote it (%v)", err)
	}
	merged, err := MergeDataFiles(ctx, store, sch, files)
	if err != nil {
		t.Fatal(err)
	}
	got, want := fileRows(t, store, sch, merged.Path), fileRows(t, store, sch, sortedWrite(t, store, sch, files).Path)
	if len(got) != 9000 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the merge has %d rows, one sorted write %d; they differ", len(got), len(want))
	}
	md := fileMeta(t, store, merged.Path)
	for i := 0; i < md.NumRowGroups(); i++ {
		cc, err := md.RowGroup(i).ColumnChunk(2)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Compression() != compress.Codecs.Snappy || dictEncoded(cc) {
			t.Errorf("row group %d: v is %s, dictionary %v; want snappy, plain", i, cc.Compression(), dictEncoded(cc))
		}
	}
}

// writeOneFile writes rec as a data file into a fresh store and returns
// its path and footer.
func writeOneFile(t *testing.T, sch schema.Table, rec arrow.RecordBatch) (string, *metadata.FileMetaData) {
	t.Helper()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	add, err := WriteDataFile(context.Background(), store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return add.Path, fileMeta(t, store, add.Path)
}

// dictEncoded reports whether a column chunk stores any of its values
// through a dictionary.
func dictEncoded(cc *metadata.ColumnChunkMetaData) bool {
	if cc.HasDictionaryPage() {
		return true
	}
	for _, e := range cc.Encodings() {
		if e == parquet.Encodings.RLEDict || e == parquet.Encodings.PlainDict {
			return true
		}
	}
	return false
}

// writeZstdFile writes rec in file order the way tsdb did before snappy
// and before parquet-go: with arrow-go, zstd, and a dictionary on every
// column however large.
func writeZstdFile(t *testing.T, store Store, sch schema.Table, rec arrow.RecordBatch) Add {
	t.Helper()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithStats(true), parquet.WithDictionaryDefault(true), parquet.WithVersion(parquet.V2_6))
	data := arrowGoFileByHour(t, sch, rec, props)
	path := fmt.Sprintf("part-00000-old%d.zstd.parquet", rand.Int())
	if err := store.Put(context.Background(), path, data); err != nil {
		t.Fatal(err)
	}
	return Add{Path: path, Size: int64(len(data)), DataChange: true}
}

// arrowGoFileByHour sorts rec in file order and writes it with arrow-go's
// pqarrow, a row group per hour at most, as tsdb wrote data files before
// parquet-go.
func arrowGoFileByHour(tb testing.TB, sch schema.Table, rec arrow.RecordBatch, props *parquet.WriterProperties) []byte {
	tb.Helper()
	sorted, err := sortedRecord(sch, []arrow.RecordBatch{rec})
	if err != nil {
		tb.Fatal(err)
	}
	defer sorted.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sch.ArrowSchema(), &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := newRowKeys(sch, sorted)
	if err != nil {
		tb.Fatal(err)
	}
	for start, n := 0, int(sorted.NumRows()); start < n; {
		end := start + 1
		for end < n && keys.key(end).hour == keys.key(start).hour {
			end++
		}
		part := sorted.NewSlice(int64(start), int64(end))
		if err := w.Write(part); err != nil {
			tb.Fatal(err)
		}
		part.Release()
		start = end
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// dictionaryPays keeps a dictionary for repeated values (tags, the times
// of an hour) and gives it up for values that are nearly all distinct,
// whether that shows at once or only past its first sample.
func TestDictionaryPays(t *testing.T) {
	floats := func(n int, f func(i int) float64) arrow.Array {
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		defer b.Release()
		for i := range n {
			b.Append(f(i))
		}
		return b.NewArray()
	}
	strs := func(n int, f func(i int) string) arrow.Array {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		for i := range n {
			if i%7 == 0 {
				b.AppendNull()
				continue
			}
			b.Append(f(i))
		}
		return b.NewArray()
	}
	for _, tc := range []struct {
		name string
		a    arrow.Array
		want bool
	}{
		{"distinct floats", floats(100_000, func(i int) float64 { return float64(i) * 1.37 }), false},
		{"floats of 100 values", floats(100_000, func(i int) float64 { return float64(i % 100) }), true},
		{"a distinct sample, then repeats", floats(100_000, func(i int) float64 { return float64(min(i, 5000)) }), false},
		{"repeats, then distinct past half", floats(100_000, func(i int) float64 {
			if i < 40_000 {
				return 1
			}
			return float64(i)
		}), false},
		{"repeats, then distinct below half", floats(100_000, func(i int) float64 {
			if i < 80_000 {
				return float64(i % 10)
			}
			return float64(i)
		}), true},
		{"host names", strs(50_000, func(i int) string { return fmt.Sprintf("host_%d", i/360) }), true},
		{"log lines", strs(50_000, func(i int) string { return fmt.Sprintf("request %d took %d ms", i, i%97) }), false},
		{"all NULL", strs(1, nil), false},
	} {
		if got := dictionaryPays(tc.a); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		tc.a.Release()
	}
}
