package delta

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"tsdb/internal/schema"
)

// tsbsTable is the TSBS cpu table: time, ten tags, ten float metrics.
func tsbsTable(b *testing.B) schema.Table {
	cols := []schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}}
	for _, tag := range []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"} {
		cols = append(cols, schema.Column{Name: tag, Type: schema.Text})
	}
	for _, m := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
		cols = append(cols, schema.Column{Name: m, Type: schema.Float64})
	}
	sch, err := schema.New("cpu", cols)
	if err != nil {
		b.Fatal(err)
	}
	return sch
}

// tsbsBucket makes one flushed bucket of TSBS cpu rows: hosts rows every
// 10 s over minutes, starting at minute start of the day, in the order
// they arrive (by time, then host), metrics as random walks.
func tsbsBucket(sch schema.Table, hosts, start, minutes int, rng *rand.Rand) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
	defer bld.Release()
	walk := make([]float64, hosts*10)
	for s := range minutes * 6 {
		t := int64(start*60+s*10) * 1_000_000
		for h := range hosts {
			bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t))
			tags := []string{fmt.Sprintf("host_%d", h), fmt.Sprintf("region-%d", h%9), fmt.Sprintf("dc-%d", h%27), fmt.Sprint(h % 100),
				"Ubuntu16.04LTS", "x86", fmt.Sprintf("team-%d", h%4), fmt.Sprint(h % 20), fmt.Sprint(h % 2), "production"}
			for i, v := range tags {
				bld.Field(1 + i).(*array.StringBuilder).Append(v)
			}
			for m := range 10 {
				w := &walk[h*10+m]
				*w = min(100, max(0, *w+rng.Float64()*2-1))
				bld.Field(11 + m).(*array.Float64Builder).Append(*w)
			}
		}
	}
	return bld.NewRecordBatch()
}

// arrowGoDataFile writes rec as tsdb wrote data files before parquet-go
// (their Delta statistics included):
// arrow-go's pqarrow, snappy, a dictionary on every column dropped where
// it does not pay, row groups of at most rowGroupRows rows of one hour.
func arrowGoDataFile(b *testing.B, sch schema.Table, rec arrow.RecordBatch) []byte {
	// The statistics of the Delta add action were computed beside the file.
	if _, err := encodeStats(statsOf(sch, rec)); err != nil {
		b.Fatal(err)
	}
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithStats(true), parquet.WithDictionaryDefault(true), parquet.WithVersion(parquet.V2_6)}
	for _, c := range sch.Columns {
		opts = append(opts, parquet.WithDictionaryCostFallbackFor(c.Name, true))
	}
	return arrowGoFileByHour(b, sch, rec, parquet.NewWriterProperties(opts...))
}

// BenchmarkDataFiles measures the data files of the bench's TSBS rows (100
// hosts, 21 columns) as parquet-go writes them against arrow-go's pqarrow,
// the writer before it, in the same run: a flush of one 10-minute bucket
// (6,000 rows) and of one hour, a compaction of six 10-minute files into
// one, and reading a file back for a rewrite. It reports rows/s, the
// Arrow bytes consumed per second and file bytes per row.
func BenchmarkDataFiles(b *testing.B) {
	ctx := context.Background()
	sch := tsbsTable(b)
	rng := rand.New(rand.NewPCG(1, 2))
	var buckets []arrow.RecordBatch
	for i := range 6 {
		buckets = append(buckets, tsbsBucket(sch, 100, 10*i, 10, rng))
	}
	hour := tsbsBucket(sch, 100, 0, 60, rand.New(rand.NewPCG(1, 2)))
	arrowBytes := func(recs ...arrow.RecordBatch) (n int64) {
		for _, r := range recs {
			for _, c := range r.Columns() {
				for _, buf := range c.Data().Buffers() {
					if buf != nil {
						n += int64(buf.Len())
					}
				}
			}
		}
		return n
	}
	report := func(b *testing.B, rows, in, fileBytes int64) {
		secs := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(rows)/secs, "rows/s")
		b.ReportMetric(float64(in)/secs/1e6, "arrow-MB/s")
		b.ReportMetric(float64(fileBytes)/float64(rows), "file-bytes/row")
	}
	for _, tc := range []struct {
		name string
		rec  arrow.RecordBatch
	}{{"10min", buckets[0]}, {"hour", hour}} {
		b.Run("flush-"+tc.name+"/parquet-go", func(b *testing.B) {
			store := benchStore(b)
			var size int64
			for range b.N {
				add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{tc.rec})
				if err != nil {
					b.Fatal(err)
				}
				size = add.Size
			}
			report(b, tc.rec.NumRows(), arrowBytes(tc.rec), size)
		})
		b.Run("flush-"+tc.name+"/arrow-go", func(b *testing.B) {
			store := benchStore(b)
			var size int64
			for range b.N {
				data := arrowGoDataFile(b, sch, tc.rec)
				if err := store.Put(ctx, fmt.Sprintf("part-%d.parquet", rng.Int()), data); err != nil {
					b.Fatal(err)
				}
				size = int64(len(data))
			}
			report(b, tc.rec.NumRows(), arrowBytes(tc.rec), size)
		})
	}
	for _, writer := range []string{"parquet-go", "arrow-go"} {
		store := benchStore(b)
		var files []File
		var rows int64
		for i, rec := range buckets {
			var add Add
			if writer == "parquet-go" {
				var err error
				if add, err = WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec}); err != nil {
					b.Fatal(err)
				}
			} else {
				add = Add{Path: fmt.Sprintf("part-%d.parquet", i)}
				if err := store.Put(ctx, add.Path, arrowGoDataFile(b, sch, rec)); err != nil {
					b.Fatal(err)
				}
			}
			files = append(files, File{Add: add, MinTime: int64(i) * 600 * 1_000_000})
			rows += rec.NumRows()
		}
		b.Run("compact-6x10min/"+writer+"-files", func(b *testing.B) {
			var size int64
			for range b.N {
				add, err := MergeDataFiles(ctx, store, sch, files)
				if err != nil {
					b.Fatal(err)
				}
				size = add.Size
			}
			report(b, rows, arrowBytes(buckets...), size)
		})
		b.Run("read-10min/"+writer+"-file/arrow-go-reader", func(b *testing.B) {
			// As openDataFile read before parquet-go: the file's bytes in
			// memory, pqarrow's record reader, batches of rowGroupRows.
			for range b.N {
				data, err := store.Get(ctx, files[0].Path)
				if err != nil {
					b.Fatal(err)
				}
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				rr, err := fr.GetRecordReader(ctx, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				for rr.Next() {
				}
				rr.Release()
				pf.Close()
			}
			report(b, buckets[0].NumRows(), arrowBytes(buckets[0]), 0)
		})
		b.Run("read-10min/"+writer+"-file/parquet-go-reader", func(b *testing.B) {
			for range b.N {
				recs, err := ReadDataFile(ctx, store, sch, files[0].Path)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					r.Release()
				}
			}
			report(b, buckets[0].NumRows(), arrowBytes(buckets[0]), 0)
		})
	}
}
