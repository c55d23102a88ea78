package delta

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
)

// Direct reads give every row group's column chunks as the reference
// reader (ReadDataFile) gives them — NULLs, NaN, extremes, a text column
// whose dictionary gives way to plain pages mid-chunk, several row groups
// — and a second read of a chunk comes from the cache.
func TestScanFileMatchesReader(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	every := everyTypeTable(t)
	logs, err := schema.New("logs", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "line", Type: schema.Text},
		{Name: "level", Type: schema.Text, NotNull: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	logRows := func(n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, logs.ArrowSchema())
		defer b.Release()
		for i := range n {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 400_000))
			if i%7 == 3 {
				b.Field(1).AppendNull()
			} else {
				// Unique lines: past dictionaryMaxBytes the chunk goes on plain.
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%06d %s", i, strings.Repeat("x", 90)))
			}
			b.Field(2).(*array.StringBuilder).Append([]string{"info", "warn", "error"}[i%3])
		}
		return b.NewRecordBatch()
	}
	// Nullable numbers without a NULL, random enough to be written plain:
	// pages the reader appends whole.
	metrics, err := schema.New("metrics", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "v", Type: schema.Float64},
		{Name: "w", Type: schema.Float32},
		{Name: "n", Type: schema.Int32},
	})
	if err != nil {
		t.Fatal(err)
	}
	metricRows := func(n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, metrics.ArrowSchema())
		defer b.Release()
		rng := rand.New(rand.NewPCG(3, 5))
		for i := range n {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_000))
			b.Field(1).(*array.Float64Builder).Append(rng.NormFloat64() * 1e6)
			b.Field(2).(*array.Float32Builder).Append(float32(rng.NormFloat64()))
			b.Field(3).(*array.Int32Builder).Append(rng.Int32())
		}
		return b.NewRecordBatch()
	}
	for _, tc := range []struct {
		t   schema.Table
		rec arrow.RecordBatch
	}{
		{every, everyTypeRows(every, 20_000)}, // 5.5 hours: several row groups
		{logs, logRows(20_000)},
		{metrics, metricRows(20_000)},
	} {
		add, err := WriteDataFile(ctx, store, tc.t, []arrow.RecordBatch{tc.rec})
		tc.rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		want, err := ReadDataFile(ctx, store, tc.t, add.Path)
		if err != nil {
			t.Fatal(err)
		}
		cache := NewScanCache(1<<20, 64<<20)
		f, err := cache.Open(store.LocalPath(add.Path))
		if err != nil {
			t.Fatal(err)
		}
		if f.Groups() != len(want) || f.Groups() < 2 {
			t.Fatalf("%s: %d row groups, the reader gave %d batches", tc.t.Name, f.Groups(), len(want))
		}
		for g, rec := range want {
			for c, col := range tc.t.Columns {
				ref := rec.Column(c)
				var got []string
				switch col.Type {
				case schema.Timestamptz, schema.Int64, schema.Int32, schema.Int16:
					ch, err := f.Ints(g, c)
					if err != nil {
						t.Fatal(err)
					}
					if again, _ := f.Ints(g, c); again != ch {
						t.Errorf("%s: row group %d: %s read twice from the file", tc.t.Name, g, col.Name)
					}
					for i, v := range ch.Values {
						got = append(got, nullOr(ch.Nulls, i, fmt.Sprint(v)))
					}
					if c == tc.t.TimeIndex {
						lo, hi, ok := f.IntBounds(g, c)
						if !ok || lo != slices.Min(ch.Values) || hi != slices.Max(ch.Values) {
							t.Errorf("%s: row group %d: time bounds %d..%d %v", tc.t.Name, g, lo, hi, ok)
						}
					}
				case schema.Float64, schema.Float32:
					ch, err := f.Floats(g, c)
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range ch.Values {
						got = append(got, nullOr(ch.Nulls, i, fmt.Sprint(v)))
					}
				case schema.Text:
					ch, err := f.Text(g, c)
					if err != nil {
						t.Fatal(err)
					}
					for _, code := range ch.codes {
						if code < 0 {
							got = append(got, "NULL")
						} else {
							got = append(got, string(ch.data[ch.offs[code]:ch.offs[code+1]]))
						}
					}
					// Match finds exactly the rows of a value.
					probe := []byte(got[len(got)/2])
					hits := ch.Match([][]byte{probe, []byte("absent")}, nil)
					for i, v := range got {
						if hits[i] != (v == string(probe) && !ref.IsNull(i)) {
							t.Fatalf("%s: row group %d: %s: row %d (%q) matched %v for %q", tc.t.Name, g, col.Name, i, v, hits[i], probe)
						}
					}
					var fromRuns []bool
					for _, run := range ch.Runs([][]byte{[]byte("absent"), probe}, nil) {
						for len(fromRuns) < int(run.Start) {
							fromRuns = append(fromRuns, false)
						}
						for range run.End - run.Start {
							fromRuns = append(fromRuns, true)
						}
					}
					for len(fromRuns) < len(hits) {
						fromRuns = append(fromRuns, false)
					}
					if !slices.Equal(fromRuns, hits) {
						t.Errorf("%s: row group %d: %s: runs and matches differ", tc.t.Name, g, col.Name)
					}
					lo, hi, ok := f.TextBounds(g, c)
					if !ok || string(lo) > string(probe) || string(hi) < string(probe) {
						t.Errorf("%s: row group %d: %s bounds %q..%q %v", tc.t.Name, g, col.Name, lo, hi, ok)
					}
				default:
					continue
				}
				if len(got) != ref.Len() {
					t.Fatalf("%s: row group %d: %s: %d rows, want %d", tc.t.Name, g, col.Name, len(got), ref.Len())
				}
				for i := range got {
					w := "NULL"
					if !ref.IsNull(i) {
						w = refValue(ref, i)
					}
					if got[i] != w {
						t.Fatalf("%s: row group %d: %s: row %d is %s, want %s", tc.t.Name, g, col.Name, i, got[i], w)
					}
				}
				if col.Type != schema.Text {
					checkRowsAt(t, f, store.LocalPath(add.Path), g, c, col.Type, got)
				}
			}
			rec.Release()
		}
		if cache.Bytes() == 0 {
			t.Errorf("%s: nothing cached", tc.t.Name)
		}
		f.Close()
	}
}

// checkRowsAt reads some rows of number column c of row group g with
// IntsAt or FloatsAt — decoding only those (a cache without the chunk,
// under 1/gatherShare of the rows, the first time), the whole chunk (past
// that, or the second time), and picking them from the chunk cached by f
// — and compares them with all, the whole chunk's values as the scan
// test renders them.
func checkRowsAt(t *testing.T, f *ScanFile, path string, g, c int, ty schema.Type, all []string) {
	t.Helper()
	for _, every := range []int{37, 5, 3} {
		var rows []int32
		for i := every / 2; i < len(all); i += every {
			rows = append(rows, int32(i))
		}
		freshCache := NewScanCache(1<<20, 64<<20)
		fresh, err := freshCache.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// The fresh cache's chunk is read in part (twice by one reader:
		// one statement's filter and output), then, by another reader,
		// whole and kept; f's is kept already.
		again, err := freshCache.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, sf := range []*ScanFile{fresh, fresh, again, f} {
			if n == 2 && every == 37 && freshCache.Bytes() != 0 {
				t.Fatalf("row group %d: column %d: a first statement's reads of a few rows kept the chunk", g, c)
			}
			var got []string
			if ty == schema.Float64 || ty == schema.Float32 {
				var dst FloatChunk
				if err := sf.FloatsAt(g, c, rows, &dst); err != nil {
					t.Fatal(err)
				}
				for k, v := range dst.Values {
					got = append(got, nullOr(dst.Nulls, k, fmt.Sprint(v)))
				}
			} else {
				var dst IntChunk
				if err := sf.IntsAt(g, c, rows, &dst); err != nil {
					t.Fatal(err)
				}
				for k, v := range dst.Values {
					got = append(got, nullOr(dst.Nulls, k, fmt.Sprint(v)))
				}
			}
			if len(got) != len(rows) {
				t.Fatalf("row group %d: column %d: %d values for %d rows", g, c, len(got), len(rows))
			}
			for k, r := range rows {
				if got[k] != all[r] {
					t.Fatalf("row group %d: column %d: every %d rows (read %d): row %d is %s, want %s", g, c, every, n, r, got[k], all[r])
				}
			}
		}
		if freshCache.Bytes() == 0 {
			t.Fatalf("row group %d: column %d: every %d rows: a second statement's read did not keep the chunk", g, c, every)
		}
		fresh.Close()
		again.Close()
	}
	// Rows not in ascending order, or past the chunk, are an error.
	var dst IntChunk
	var fdst FloatChunk
	for _, rows := range [][]int32{{5, 2}, {int32(len(all))}} {
		fresh, err := NewScanCache(1<<20, 64<<20).Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if ty == schema.Float64 || ty == schema.Float32 {
			err = fresh.FloatsAt(g, c, rows, &fdst)
		} else {
			err = fresh.IntsAt(g, c, rows, &dst)
		}
		if !errors.Is(err, errRows) {
			t.Errorf("row group %d: column %d: rows %v: %v, want errRows", g, c, rows, err)
		}
		fresh.Close()
	}
}

// nullOr is v, or NULL where nulls marks the row.
func nullOr(nulls []bool, i int, v string) string {
	if nulls != nil && nulls[i] {
		return "NULL"
	}
	return v
}

// refValue renders an Arrow value as the scan test renders chunks.
func refValue(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.Timestamp:
		return fmt.Sprint(int64(a.Value(i)))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.Int32:
		return fmt.Sprint(int64(a.Value(i)))
	case *array.Int16:
		return fmt.Sprint(int64(a.Value(i)))
	case *array.Float64:
		return fmt.Sprint(a.Value(i))
	case *array.Float32:
		return fmt.Sprint(float64(a.Value(i)))
	case *array.String:
		return a.Value(i)
	}
	return "?"
}

// The cache keeps decoded chunks within its byte budget, least recently
// used out first, and a chunk larger than the budget not at all.
func TestScanCacheBudget(t *testing.T) {
	c := NewScanCache(2, 100)
	c.putChunk(chunkKey{"a", 0, 0}, &IntChunk{}, 60)
	c.putChunk(chunkKey{"b", 0, 0}, &IntChunk{}, 30)
	if c.chunk(chunkKey{"a", 0, 0}) == nil { // a is now the most recent
		t.Fatal("a dropped")
	}
	c.putChunk(chunkKey{"c", 0, 0}, &IntChunk{}, 30)
	if c.chunk(chunkKey{"b", 0, 0}) != nil || c.chunk(chunkKey{"a", 0, 0}) == nil || c.chunk(chunkKey{"c", 0, 0}) == nil {
		t.Error("not the least recently used dropped")
	}
	c.putChunk(chunkKey{"d", 0, 0}, &IntChunk{}, 101)
	if c.chunk(chunkKey{"d", 0, 0}) != nil || c.Bytes() != 90 {
		t.Errorf("over budget: %d bytes", c.Bytes())
	}
}
