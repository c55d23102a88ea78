package ingest

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/membuffer"
)

// A record is split into one part per bucket, every row in the part of
// its bucket, in the record's order: records in one bucket, in runs of
// buckets (copied by range), with a bucket's rows apart and over more
// buckets than runs are kept for (both picked row by row).
func TestSplitByBucket(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	const minute = int64(60_000_000)
	many := make([]int64, 100)
	for i := range many {
		many[i] = int64(i) * minute
	}
	s := &Store{opts: Options{BucketDuration: time.Minute}}
	for _, tc := range []struct {
		name  string
		times []int64
		parts int
	}{
		{"one bucket", []int64{1, 2, 3}, 1},
		{"runs", []int64{1, minute, minute + 1, 2 * minute, 3*minute - 1}, 3},
		{"runs before 1970", []int64{-minute - 1, -1, 0, 1}, 3},
		{"a bucket's rows apart", []int64{1, minute, 2}, 2},
		{"more buckets than runs are kept for", many, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
			for i, v := range tc.times {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
				b.Field(1).(*array.Float64Builder).Append(float64(i))
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			parts, err := s.splitByBucket(tbl, rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != tc.parts {
				t.Fatalf("%d parts, want %d", len(parts), tc.parts)
			}
			seen := map[float64]bool{}
			for _, p := range parts {
				ts := p.rec.Column(0).(*array.Timestamp)
				vs := p.rec.Column(1).(*array.Float64)
				for i := 0; i < ts.Len(); i++ {
					v := int64(ts.Value(i))
					if k := membuffer.BucketKey(v, time.Minute); k != p.key || v < p.lo || v > p.hi {
						t.Fatalf("time %d in part %v [%d, %d]", v, p.key, p.lo, p.hi)
					}
					if tc.times[int(vs.Value(i))] != v || (i > 0 && vs.Value(i) <= vs.Value(i-1)) {
						t.Fatalf("part %v: row %d is %v at %d, out of the record's order", p.key, i, vs.Value(i), v)
					}
					seen[vs.Value(i)] = true
				}
			}
			if len(seen) != len(tc.times) {
				t.Fatalf("%d of %d rows in the parts", len(seen), len(tc.times))
			}
		})
	}
}
