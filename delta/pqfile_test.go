package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"tsdb/internal/schema"
)

// everyTypeTable has a column of every type tsdb stores, nullable except
// time.
func everyTypeTable(t *testing.T) schema.Table {
	t.Helper()
	sch, err := schema.New("every", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "host", Type: schema.Text},
		{Name: "ntz", Type: schema.Timestamp, NTZ: true},
		{Name: "i64", Type: schema.Int64},
		{Name: "i32", Type: schema.Int32},
		{Name: "i16", Type: schema.Int16},
		{Name: "f64", Type: schema.Float64},
		{Name: "f32", Type: schema.Float32},
		{Name: "b", Type: schema.Bool},
		{Name: "d", Type: schema.Date},
		{Name: "n5", Type: schema.Decimal, Digits: 5, Scale: 2},
		{Name: "n15", Type: schema.Decimal, Digits: 15, Scale: 3},
		{Name: "n38", Type: schema.Decimal, Digits: 38, Scale: 4},
		{Name: "raw", Type: schema.Bytea},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// everyTypeRows makes n rows in file order; every fifth row is NULL in
// every nullable column, and the values reach the types' extremes.
func everyTypeRows(sch schema.Table, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
	defer b.Release()
	ints := []int64{0, -1, math.MaxInt64, math.MinInt64, 42}
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.5, 1e300}
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_000))
		if i%5 == 4 {
			for c := 1; c < len(sch.Columns); c++ {
				b.Field(c).AppendNull()
			}
			continue
		}
		k := ints[i%len(ints)]
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-with-a-name-longer-than-sixteen-bytes-%03d", i/50))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(k / 1000))
		b.Field(3).(*array.Int64Builder).Append(k)
		b.Field(4).(*array.Int32Builder).Append(int32(k >> 32))
		b.Field(5).(*array.Int16Builder).Append(int16(k >> 48))
		b.Field(6).(*array.Float64Builder).Append(floats[i%len(floats)])
		b.Field(7).(*array.Float32Builder).Append(float32(floats[(i+1)%len(floats)]))
		b.Field(8).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(9).(*array.Date32Builder).Append(arrow.Date32(int32(k >> 40)))
		b.Field(10).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i%199999) - 99999))
		b.Field(11).(*array.Decimal128Builder).Append(decimal128.FromI64(k / 10000))
		big := decimal128.FromI64(k).Mul(decimal128.FromI64(1_000_000_007))
		b.Field(12).(*array.Decimal128Builder).Append(big)
		b.Field(13).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 0xff})
	}
	return b.NewRecordBatch()
}

// rowsOf renders records row by row.
func rowsOf(recs ...arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			row := make([]string, r.NumCols())
			for c := range row {
				row[c] = r.Column(c).ValueStr(i)
			}
			out = append(out, strings.Join(row, "|"))
		}
	}
	return out
}

// Every type comes back exactly from a file written with parquet-go, and
// arrow-go, a Parquet implementation of its own, reads the same rows.
func TestDataFileEveryTypeRoundTrip(t *testing.T) {
	ctx := context.Background()
	sch := everyTypeTable(t)
	rec := everyTypeRows(sch, 3*rowGroupRows/2)
	defer rec.Release()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := sortedRecord(sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer sorted.Release()
	want := rowsOf(sorted)
	recs, err := ReadDataFile(ctx, store, sch, add.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(recs...); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read back %d rows, wrote %d; first row %q, want %q", len(got), len(want), first(got), first(want))
	}
	for _, r := range recs {
		r.Release()
	}

	pf := arrowGoFile(t, store, add.Path)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	var viaArrow []string
	for tr.Next() {
		viaArrow = append(viaArrow, rowsOf(tr.RecordBatch())...)
	}
	if strings.Join(viaArrow, "\n") != strings.Join(want, "\n") {
		t.Fatalf("arrow-go reads %d rows, first %q; want %q", len(viaArrow), first(viaArrow), first(want))
	}
}

func first(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0]
}

// Files tsdb wrote with arrow-go before it wrote them with parquet-go (the
// decimals as fixed-length byte arrays of their minimal width) read
// exactly, and merge with today's files.
func TestReadArrowGoDataFile(t *testing.T) {
	ctx := context.Background()
	sch := everyTypeTable(t)
	unsorted := everyTypeRows(sch, 500)
	defer unsorted.Release()
	rec, err := sortedRecord(sch, []arrow.RecordBatch{unsorted})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(true),
		parquet.WithDictionaryDefault(true), parquet.WithVersion(parquet.V2_6))
	w, err := pqarrow.NewFileWriter(sch.ArrowSchema(), &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	old := putTestFile(t, store, buf.Bytes())
	recs, err := ReadDataFile(ctx, store, sch, old.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(recs...), rowsOf(rec); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read back %d rows of %d; first %q, want %q", len(got), len(want), first(got), first(want))
	}
	for _, r := range recs {
		r.Release()
	}
	later := everyTypeRows(sch, 10)
	defer later.Release()
	next, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{later})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergeDataFiles(ctx, store, sch, []File{{Add: old}, {Add: next}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fileRows(t, store, sch, merged.Path); len(got) != 510 {
		t.Fatalf("merged %d rows, want 510", len(got))
	}
}

// A file whose column is stored as another type than the table's is
// refused, not misread.
func TestReadDataFileRefusesOtherTypes(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	rec := testRows(sch, []testRow{{second, "a", 1}})
	defer rec.Release()
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	other := sch
	other.Columns = append([]schema.Column(nil), sch.Columns...)
	other.Columns[2].Type = schema.Int64
	if _, err := ReadDataFile(ctx, store, other, add.Path); err == nil || !strings.Contains(err.Error(), "stored as") {
		t.Fatalf("read a double column as bigint: %v", err)
	}
}

// Readers learn from the footer what the engine can use: exact string
// statistics, the sort order of every row group and a bloom filter on the
// cluster column that rules out hosts a row group does not hold. Checked
// with arrow-go's reader, not the writer's own.
func TestDataFileFooter(t *testing.T) {
	sch := everyTypeTable(t)
	rec := everyTypeRows(sch, 2*rowGroupRows)
	defer rec.Release()
	_, md := writeOneFile(t, sch, rec)
	// created_by names the library that wrote the file: readers key their
	// workarounds for writers' known bugs on it.
	if got := md.GetCreatedBy(); !strings.Contains(got, "parquet-go/parquet-go") {
		t.Errorf("created_by %q", got)
	}
	if md.NumRowGroups() < 2 {
		t.Fatalf("%d row groups", md.NumRowGroups())
	}
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		sc := rg.SortingColumns()
		if len(sc) != 2 || sc[0].ColumnIdx != 1 || sc[0].Descending || !sc[0].NullsFirst || sc[1].ColumnIdx != 0 || sc[1].Descending {
			t.Errorf("row group %d: sorting columns %+v, want host NULLS FIRST, time", g, sc)
		}
		cc, err := rg.ColumnChunk(1)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			t.Fatalf("row group %d: host has no min/max (%v)", g, err)
		}
		minV := string(st.EncodeMin())
		maxV := string(st.EncodeMax())
		if len(minV) < 40 || len(maxV) < 40 || minV > maxV {
			t.Errorf("row group %d: host min %q max %q: truncated or inverted", g, minV, maxV)
		}
	}
}

// The bloom filter on the cluster column holds every host of its row
// group and rules out nearly every other.
func TestClusterBloomFilter(t *testing.T) {
	ctx := context.Background()
	sch := everyTypeTable(t)
	rec := everyTypeRows(sch, 3000) // within an hour: one row group
	defer rec.Release()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	pf := arrowGoFile(t, store, add.Path)
	defer pf.Close()
	present := map[string]bool{}
	hosts := rec.Column(1).(*array.String)
	for i := range hosts.Len() {
		if hosts.IsValid(i) {
			present[hosts.Value(i)] = true
		}
	}
	rgf, err := pf.GetBloomFilterReader().RowGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := rgf.GetColumnBloomFilter(1)
	if err != nil || bf == nil {
		t.Fatalf("no bloom filter on the cluster column: %v", err)
	}
	check := (&metadata.TypedBloomFilter[parquet.ByteArray]{BloomFilter: bf}).Check
	for h := range present {
		if !check(parquet.ByteArray(h)) {
			t.Fatalf("the filter rules out %q, which the row group holds", h)
		}
	}
	false_ := 0
	for i := range 1000 {
		if check(parquet.ByteArray(fmt.Sprintf("absent-host-%d", i))) {
			false_++
		}
	}
	if false_ > 50 {
		t.Errorf("%d of 1,000 absent hosts pass the filter", false_)
	}
	if other, err := rgf.GetColumnBloomFilter(3); err == nil && other != nil {
		t.Errorf("column i64 has a bloom filter: only the cluster column needs one")
	}
}

// putTestFile stores a Parquet file made by a test as a data file.
func putTestFile(t *testing.T, store Store, data []byte) Add {
	t.Helper()
	out, err := createDataFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(data); err != nil {
		out.abort()
		t.Fatal(err)
	}
	add, err := out.commit(context.Background(), store, "")
	if err != nil {
		t.Fatal(err)
	}
	if add.Size != int64(len(data)) || add.Tags[ChecksumTag] != checksum(data) {
		t.Fatalf("add %+v: size or checksum is not the file's", add)
	}
	return add
}

// arrowGoFile opens a data file with arrow-go's Parquet reader, an
// implementation independent of the writer's.
func arrowGoFile(t *testing.T, store Store, path string) *file.Reader {
	t.Helper()
	data, err := store.Get(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// CutDataFile keeps the rows at or after the cut, in file order with their
// statistics, and refuses a file whose rows are not in file order rather
// than write row groups its sorting_columns would misdescribe.
func TestCutDataFile(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	var rows []testRow
	for i := range 3 * 360 { // three hours, 10 s apart, two hosts
		rows = append(rows, testRow{int64(i) * 10 * second, []string{"b", "a"}[i%2], float64(i)})
	}
	rec := testRows(sch, rows)
	defer rec.Release()
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	cut := int64(90 * 60 * second) // half-way through the second hour
	cutAdd, kept, err := CutDataFile(ctx, store, sch, add.Path, cut)
	if err != nil || kept != 3*360-540 {
		t.Fatalf("cut: kept %d, %v; want %d", kept, err, 3*360-540)
	}
	got := fileRows(t, store, sch, cutAdd.Path)
	all := fileRows(t, store, sch, add.Path)
	var want []string
	for _, r := range all {
		if ts := r[:strings.Index(r, "|")]; ts >= "1970-01-01T01:30:00Z" {
			want = append(want, r)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cut file has %d rows, want the %d at or after the cut in file order", len(got), len(want))
	}
	var st Stats
	if err := json.Unmarshal([]byte(cutAdd.Stats), &st); err != nil || st.NumRecords != kept || st.MinValues["time"] != "1970-01-01T01:30:00.000Z" {
		t.Fatalf("stats %+v, %v", st, err)
	}
	if _, kept, err := CutDataFile(ctx, store, sch, add.Path, 4*3600*second); err != nil || kept != 0 {
		t.Fatalf("a cut after every row: kept %d, %v", kept, err)
	}

	var buf bytes.Buffer
	w := newFileWriter(sch, &buf)
	unsorted := testRows(sch, []testRow{{second, "b", 0}, {2 * second, "a", 1}})
	defer unsorted.Release()
	if err := w.writeRowGroup(unsorted); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	old := putTestFile(t, store, buf.Bytes())
	if _, _, err := CutDataFile(ctx, store, sch, old.Path, 0); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("cutting a file out of file order: %v, want ErrUnsorted", err)
	}
}
