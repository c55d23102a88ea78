package delta

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkCompactionMemory merges 48 flushed ten-minute files of 20,000
// rows of 100 hosts (a compaction's typical input: consecutive buckets) by
// merging them a batch at a time (MergeDataFiles) and by sorting them
// together in memory (ReadDataFile + WriteDataFile), and reports the peak
// Go heap of each.
func BenchmarkCompactionMemory(b *testing.B) {
	ctx := context.Background()
	store := benchStore(b)
	sch := testTable(&testing.T{})
	var files []File
	var paths []string
	for f := range 48 {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sch.ArrowSchema())
		for i := range 20000 {
			bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp((int64(f)*600 + int64(i/100)*3) * 1_000_000))
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", i%100))
			bld.Field(2).(*array.Float64Builder).Append(float64(i) / 7)
		}
		rec := bld.NewRecordBatch()
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{rec})
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, add.Path)
		files = append(files, File{Add: add, MinTime: int64(f) * 600 * 1_000_000})
	}
	peak := func(fn func()) uint64 {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var max atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > max.Load() {
					max.Store(m.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		fn()
		close(stop)
		wg.Wait()
		if max.Load() < base.HeapAlloc {
			return 0
		}
		return max.Load() - base.HeapAlloc
	}
	// Collect often, so that the heap tracks what is live, not garbage.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	for _, mode := range []string{"streamed", "in-memory"} {
		b.Run(mode, func(b *testing.B) {
			var worst uint64
			for range b.N {
				worst = max(worst, peak(func() {
					var err error
					if mode == "streamed" {
						_, err = MergeDataFiles(ctx, store, sch, files)
					} else {
						var recs []arrow.RecordBatch
						for _, p := range paths {
							r, rerr := ReadDataFile(ctx, store, sch, p)
							if rerr != nil {
								b.Fatal(rerr)
							}
							recs = append(recs, r...)
						}
						_, err = WriteDataFile(ctx, store, sch, recs)
					}
					if err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MiB")
		})
	}
}
