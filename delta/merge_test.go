package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"tsdb/internal/schema"
)

const (
	second = int64(1_000_000)
	hour   = 3600 * second
)

// testRow is a row of testTable; host "NULL" is a NULL host.
type testRow struct {
	time int64
	host string
	v    float64
}

func testRows(sch schema.Table, rows []testRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.time))
		if r.host == "NULL" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.host)
		}
		b.Field(2).(*array.Float64Builder).Append(r.v)
	}
	return b.NewRecordBatch()
}

// fileRows reads a data file's rows, in file order, as "time|host|v".
func fileRows(t *testing.T, store Store, sch schema.Table, path string) []string {
	t.Helper()
	recs, err := ReadDataFile(context.Background(), store, sch, path)
	if err != nil {
		t.Fatal(err)
	}
	out := rowsOf(recs...)
	for _, r := range recs {
		r.Release()
	}
	return out
}

// sortedWrite writes the rows of files as one file sorted at once, the
// inputs taken in the merge's order (mergeRank), so that equal keys keep
// the order a merge gives them.
func sortedWrite(t *testing.T, store Store, sch schema.Table, files []File) Add {
	t.Helper()
	ordered := slices.Clone(files)
	slices.SortStableFunc(ordered, mergeRank)
	var all []arrow.RecordBatch
	for _, f := range ordered {
		recs, err := ReadDataFile(context.Background(), store, sch, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	whole, err := WriteDataFile(context.Background(), store, sch, all)
	if err != nil {
		t.Fatal(err)
	}
	return whole
}

// fileMeta reads a data file's Parquet footer.
func fileMeta(t *testing.T, store Store, path string) *metadata.FileMetaData {
	t.Helper()
	pf := arrowGoFile(t, store, path)
	defer pf.Close()
	return pf.MetaData()
}

// Rows are written in file order: hour, then host (NULL first), then time;
// equal keys keep their order. A table without a TEXT column is in time
// order.
func TestFileOrder(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	timeOnly, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		rows []testRow
		want []int // indexes into rows
	}{
		{"hour, then host, then time",
			[]testRow{{hour + 5*second, "b", 0}, {9 * second, "b", 1}, {1 * second, "c", 2}, {5 * second, "a", 3}, {hour + second, "a", 4}},
			[]int{3, 1, 2, 4, 0}},
		{"NULL hosts first within their hour",
			[]testRow{{5 * second, "a", 0}, {9 * second, "NULL", 1}, {hour, "NULL", 2}, {hour - 1, "a", 3}},
			[]int{1, 0, 3, 2}},
		{"equal keys keep their order",
			[]testRow{{7 * second, "h", 0}, {7 * second, "h", 1}, {3 * second, "h", 2}, {7 * second, "h", 3}},
			[]int{2, 0, 1, 3}},
		{"times before 1970 floor to their hour",
			[]testRow{{-second, "a", 0}, {-3599 * second, "b", 1}, {-3601 * second, "z", 2}},
			[]int{2, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, tc.rows)})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, rowText(sch, tc.rows[i]))
			}
			if got := fileRows(t, store, sch, add.Path); !slices.Equal(got, want) {
				t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	t.Run("no TEXT column: time order", func(t *testing.T) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, timeOnly.ArrowSchema())
		for i, ts := range []int64{hour + 1, 5, hour, 2} {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
			b.Field(1).(*array.Float64Builder).Append(float64(i))
		}
		add, err := WriteDataFile(ctx, store, timeOnly, []arrow.RecordBatch{b.NewRecordBatch()})
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, r := range fileRows(t, store, timeOnly, add.Path) {
			vs = append(vs, r[strings.LastIndex(r, "|")+1:])
		}
		if got := strings.Join(vs, ","); got != "3,1,2,0" {
			t.Fatalf("values in file order %s, want 3,1,2,0", got)
		}
	})
}

// rowText renders a row as fileRows does.
func rowText(sch schema.Table, r testRow) string {
	rec := testRows(sch, []testRow{r})
	defer rec.Release()
	return rowsOf(rec)[0]
}

// MergeDataFiles gives the same rows in the same order, and the same stats,
// as sorting all its inputs at once: consecutive flushed buckets of the
// same hours, overlapping late files, NULL hosts, equal keys in different
// files, files without stats (full range). Output row groups are full.
func TestMergeDataFiles(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var parts [][]testRow
	// Twelve ten-minute buckets of 20 hosts, one row per 3 s (4,000 rows
	// each): two hours, six files per hour.
	for f := range 12 {
		var rows []testRow
		for step := range 200 {
			for h := range 20 {
				rows = append(rows, testRow{int64(f)*600*second + int64(step)*3*second, fmt.Sprintf("host_%02d", h), rng.Float64()})
			}
		}
		parts = append(parts, rows)
	}
	// Late rows over both hours, NULL hosts, and copies of keys that
	// other files hold.
	for range 3 {
		var rows []testRow
		for range 300 {
			host := fmt.Sprintf("host_%02d", rng.IntN(25))
			if rng.IntN(10) == 0 {
				host = "NULL"
			}
			rows = append(rows, testRow{rng.Int64N(2*hour/second/3) * 3 * second, host, rng.Float64()})
		}
		parts = append(parts, rows)
	}
	var files []File
	for i, rows := range parts {
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, rows)})
		if err != nil {
			t.Fatal(err)
		}
		f := File{Add: add, MinTime: math.MaxInt64}
		for _, r := range rows {
			f.MinTime = min(f.MinTime, r.time)
		}
		if i%5 == 4 {
			f.MinTime = math.MinInt64 // no stats
		}
		files = append(files, f)
	}
	whole := sortedWrite(t, store, sch, files)
	merged, err := MergeDataFiles(ctx, store, sch, files)
	if err != nil {
		t.Fatal(err)
	}
	var ms, ws Stats
	if err := json.Unmarshal([]byte(merged.Stats), &ms); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(whole.Stats), &ws); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ms) != fmt.Sprint(ws) {
		t.Fatalf("stats of the merge %+v, of one write %+v", ms, ws)
	}
	got, want := fileRows(t, store, sch, merged.Path), fileRows(t, store, sch, whole.Path)
	if len(got) != 12*4000+900 || !slices.Equal(got, want) {
		t.Fatalf("the merge has %d rows, one write %d; they differ", len(got), len(want))
	}
	// Row groups are full but for the last of each hour.
	md := fileMeta(t, store, merged.Path)
	for i := 0; i < md.NumRowGroups(); i++ {
		n := md.RowGroup(i).NumRows()
		if n > rowGroupRows {
			t.Errorf("row group %d of %d has %d rows", i, md.NumRowGroups(), n)
		}
	}
	if want := (2*hour/(3*second)*20 + 900 + rowGroupRows - 1) / rowGroupRows; md.NumRowGroups() > int(want)+2 {
		t.Errorf("%d row groups for %d rows: not full", md.NumRowGroups(), len(got))
	}
}

// Files not in file order are refused with ErrUnsorted and leave nothing
// behind: the caller sorts them in memory instead.
func TestMergeDataFilesRefusesUnsortedInput(t *testing.T) {
	ctx := context.Background()
	raw := func(t *testing.T, store Store, sch schema.Table, rows []testRow) Add {
		var buf bytes.Buffer
		w := newFileWriter(sch, &buf)
		if err := w.writeRowGroup(testRows(sch, rows)); err != nil {
			t.Fatal(err)
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		return putTestFile(t, store, buf.Bytes())
	}
	tests := []struct {
		name  string
		files func(t *testing.T, store Store, sch schema.Table) []File
	}{
		{"rows out of time order", func(t *testing.T, store Store, sch schema.Table) []File {
			return []File{{Add: raw(t, store, sch, []testRow{{2 * second, "a", 0}, {second, "a", 1}}), MinTime: math.MinInt64}}
		}},
		{"time order with hosts interleaved (files before clustering)", func(t *testing.T, store Store, sch schema.Table) []File {
			return []File{{Add: raw(t, store, sch, []testRow{{second, "b", 0}, {2 * second, "a", 1}}), MinTime: math.MinInt64}}
		}},
		{"a file whose rows start before its MinTime", func(t *testing.T, store Store, sch schema.Table) []File {
			a, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, []testRow{{second, "a", 0}, {second, "b", 1}})})
			if err != nil {
				t.Fatal(err)
			}
			b, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, []testRow{{2 * second, "a", 2}})})
			if err != nil {
				t.Fatal(err)
			}
			return []File{{Add: a, MinTime: second}, {Add: b, MinTime: 2 * hour}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, sch, _ := createTestTable(t)
			files := tc.files(t, store, sch)
			before, _ := store.ListData(ctx)
			if _, err := MergeDataFiles(ctx, store, sch, files); !errors.Is(err, ErrUnsorted) {
				t.Fatalf("merge: %v, want ErrUnsorted", err)
			}
			if after, _ := store.ListData(ctx); len(after) != len(before) {
				t.Fatalf("a refused merge left a file: %d files, were %d", len(after), len(before))
			}
		})
	}
}

// A merge of flushed ten-minute files of 100 hosts over two hours gives
// row groups that each hold one hour and a narrow range of hosts, so a
// reader looking for one host in one hour reads at most two of the hour's
// five groups; time order alone would make it read all of them.
func TestMergedRowGroupsPruneByHost(t *testing.T) {
	ctx := context.Background()
	store, sch, _ := createTestTable(t)
	var files []File
	for f := range 12 {
		var rows []testRow
		for step := range 60 {
			for h := range 100 {
				rows = append(rows, testRow{int64(f)*600*second + int64(step)*10*second, fmt.Sprintf("host_%03d", h), float64(step)})
			}
		}
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, rows)})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Add: add, MinTime: int64(f) * 600 * second})
	}
	merged, err := MergeDataFiles(ctx, store, sch, files)
	if err != nil {
		t.Fatal(err)
	}
	md := fileMeta(t, store, merged.Path)
	if md.NumRowGroups() != 10 {
		t.Errorf("%d row groups, want 10 (36,000 rows per hour)", md.NumRowGroups())
	}
	read := map[int64]int{} // hour → row groups a reader of host_042 reads
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		stats := func(col int) metadata.TypedStatistics {
			cc, err := rg.ColumnChunk(col)
			if err != nil {
				t.Fatal(err)
			}
			s, err := cc.Statistics()
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		ts, hs := stats(0), stats(1)
		lo, hi := ts.(*metadata.Int64Statistics).Min(), ts.(*metadata.Int64Statistics).Max()
		if lo/hour != hi/hour {
			t.Errorf("row group %d spans hours %d to %d", i, lo/hour, hi/hour)
		}
		hmin, hmax := string(hs.(*metadata.ByteArrayStatistics).Min()), string(hs.(*metadata.ByteArrayStatistics).Max())
		if hmin <= "host_042" && "host_042" <= hmax {
			read[lo/hour]++
		}
	}
	if read[0] < 1 || read[0] > 2 || read[1] < 1 || read[1] > 2 {
		t.Errorf("a reader of host_042 reads %v row groups per hour, want 1 or 2", read)
	}
}

// Files written before the table had a TEXT column (ordered by time) read
// with NULL in it once a column is added, which sorts first: they are in
// file order for the wider table, and merge with newer files without a
// sort in memory.
func TestMergeDataFilesAcrossAddedClusterColumn(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := schema.New("m", append(slices.Clone(before.Columns), schema.Column{Name: "host", Type: schema.Text}))
	if err != nil {
		t.Fatal(err)
	}
	old := array.NewRecordBuilder(memory.DefaultAllocator, before.ArrowSchema())
	for i, ts := range []int64{hour + 5*second, 3 * second, 2 * hour} {
		old.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		old.Field(1).(*array.Float64Builder).Append(float64(i))
	}
	oldAdd, err := WriteDataFile(ctx, store, before, []arrow.RecordBatch{old.NewRecordBatch()})
	if err != nil {
		t.Fatal(err)
	}
	nw := array.NewRecordBuilder(memory.DefaultAllocator, after.ArrowSchema())
	for i, r := range []testRow{{hour, "b", 10}, {4 * second, "a", 11}, {hour + 5*second, "a", 12}} {
		nw.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.time))
		nw.Field(1).(*array.Float64Builder).Append(float64(i + 10))
		nw.Field(2).(*array.StringBuilder).Append(r.host)
	}
	newAdd, err := WriteDataFile(ctx, store, after, []arrow.RecordBatch{nw.NewRecordBatch()})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergeDataFiles(ctx, store, after, []File{{Add: oldAdd, MinTime: 3 * second}, {Add: newAdd, MinTime: 4 * second}})
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	var vs []string
	for _, r := range fileRows(t, store, after, merged.Path) {
		f := strings.Split(r, "|")
		vs = append(vs, f[len(f)-2]+"/"+f[len(f)-1])
	}
	// Hour 0: NULL (old row at 3 s), then a; hour 1: NULL (old 1h+5s),
	// a, b; hour 2: NULL.
	if got, want := strings.Join(vs, " "), "1/(null) 11/a 0/(null) 12/a 10/b 2/(null)"; got != want {
		t.Fatalf("merged rows (v/host) %s, want %s", got, want)
	}
}

// A table's cluster column is kept in its Delta configuration: it survives
// reopening, and it decides the order of data files.
func TestClusterColumnPersistsAndOrders(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "cpu", Type: schema.Text}, {Name: "host", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	sch.Cluster = "host"
	if _, err := Create(ctx, store, sch, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(ctx, store, "m")
	if err != nil {
		t.Fatal(err)
	}
	got := tbl.Snapshot().Schema
	if got.Cluster != "host" || got.ClusterIndex() != 2 {
		t.Fatalf("reopened: Cluster %q, index %d", got.Cluster, got.ClusterIndex())
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, got.ArrowSchema())
	for _, r := range []struct {
		t         int64
		cpu, host string
	}{{1, "cpu0", "b"}, {2, "cpu1", "a"}, {3, "cpu0", "a"}} {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t))
		b.Field(1).(*array.StringBuilder).Append(r.cpu)
		b.Field(2).(*array.StringBuilder).Append(r.host)
	}
	add, err := WriteDataFile(ctx, store, got, []arrow.RecordBatch{b.NewRecordBatch()})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range fileRows(t, store, got, add.Path) {
		f := strings.Split(r, "|")
		order = append(order, f[len(f)-2]+"/"+f[len(f)-1])
	}
	if strings.Join(order, " ") != "cpu1/a cpu0/a cpu0/b" {
		t.Fatalf("rows by host: %v", order)
	}
	if _, err := tbl.SetConfiguration(ctx, "SET TBLPROPERTIES", map[string]string{ClusterKey: ""}); err != nil {
		t.Fatal(err)
	}
	if got := tbl.Snapshot().Schema; got.Cluster != "" || got.ClusterIndex() != 1 {
		t.Fatalf("after reset: Cluster %q, index %d", got.Cluster, got.ClusterIndex())
	}
}

// MergeDataFiles equals sorting all its inputs at once, on random inputs:
// up to six files of up to 10,000 rows (more than a batch), times over a
// few hours around 1970 (so negative ones too), NULL hosts, equal keys,
// empty files and files without stats.
func TestMergeDataFilesMatchesSortOnRandomInputs(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(25) {
		store, sch, _ := createTestTable(t)
		rng := rand.New(rand.NewPCG(seed, 99))
		var files []File
		for range 1 + rng.IntN(6) {
			from := (rng.Int64N(6) - 3) * hour
			span := 1 + rng.Int64N(2*hour)
			rows := make([]testRow, rng.IntN(10_001))
			minTime := int64(math.MaxInt64)
			for i := range rows {
				host := fmt.Sprintf("h%02d", rng.IntN(30))
				if rng.IntN(20) == 0 {
					host = "NULL"
				}
				rows[i] = testRow{from + rng.Int64N(span)/second*second, host, float64(i)}
				minTime = min(minTime, rows[i].time)
			}
			add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{testRows(sch, rows)})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 || rng.IntN(4) == 0 {
				minTime = math.MinInt64 // no stats
			}
			files = append(files, File{Add: add, MinTime: minTime})
		}
		merged, err := MergeDataFiles(ctx, store, sch, files)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		whole := sortedWrite(t, store, sch, files)
		if got, want := fileRows(t, store, sch, merged.Path), fileRows(t, store, sch, whole.Path); !slices.Equal(got, want) {
			t.Fatalf("seed %d: the merge (%d rows) differs from one sorted write (%d rows)", seed, len(got), len(want))
		}
		if merged.Stats != whole.Stats {
			t.Fatalf("seed %d: stats %s, one write %s", seed, merged.Stats, whole.Stats)
		}
	}
}
