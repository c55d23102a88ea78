package membuffer

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestBucketKeyFloors(t *testing.T) {
	tests := []struct {
		micros int64
		d      time.Duration
		want   Key
	}{
		{0, time.Second, Key{0, 1_000_000}},
		{999_999, time.Second, Key{0, 1_000_000}},
		{1_000_000, time.Second, Key{1_000_000, 2_000_000}},
		{-1, time.Second, Key{-1_000_000, 0}},
		{-1_000_000, time.Second, Key{-1_000_000, 0}},
		{-1_000_001, time.Second, Key{-2_000_000, -1_000_000}},
	}
	for _, tt := range tests {
		if got := BucketKey(tt.micros, tt.d); got != tt.want {
			t.Errorf("BucketKey(%d, %v) = %v, want %v", tt.micros, tt.d, got, tt.want)
		}
	}
}

func rec(n int) arrow.RecordBatch {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 0; i < n; i++ {
		b.Append(int64(i))
	}
	arr := b.NewArray()
	s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(s, []arrow.Array{arr}, int64(n))
}

func TestSealKeepsBatchesVisibleUntilRelease(t *testing.T) {
	b := New(nil)
	now := time.Now()
	k1, k2 := Key{0, 10}, Key{10, 20}
	b.Append("t", Batch{Seq: 1, Key: k1, Rec: rec(2)}, now)
	b.Append("t", Batch{Seq: 2, Key: k2, Rec: rec(3)}, now)
	sealed := b.Seal("t", func(i BucketInfo) bool { return i.Key == k1 })
	if len(sealed) != 1 || sealed[0].Key != k1 || sealed[0].MaxSeq() != 1 {
		t.Fatalf("sealed %+v", sealed)
	}
	// A late row for the sealed key goes to a new instance of the bucket.
	b.Append("t", Batch{Seq: 3, Key: k1, Rec: rec(1)}, now)
	if got := len(first(b.Snapshot("t"))); got != 3 {
		t.Fatalf("snapshot has %d batches before release, want 3", got)
	}
	b.Release(sealed[0])
	snap, _ := b.Snapshot("t")
	if len(snap) != 2 || snap[0].Seq != 2 || snap[1].Seq != 3 {
		t.Fatalf("snapshot after release: %+v", snap)
	}
	// Sealing everything returns buckets oldest first.
	all := b.Seal("t", func(BucketInfo) bool { return true })
	if len(all) != 2 || all[0].Key != k2 || all[1].Key != k1 {
		t.Fatalf("seal all: %+v", all)
	}
	for _, s := range all {
		b.Release(s)
	}
	if b.Bytes() != 0 || len(b.Tables()) != 0 {
		t.Fatalf("buffer not empty: %d bytes, tables %v", b.Bytes(), b.Tables())
	}
}

func TestUnreleasedSealedBucketIsReturnedAgain(t *testing.T) {
	b := New(nil)
	b.Append("t", Batch{Seq: 1, Key: Key{0, 10}, Rec: rec(1)}, time.Now())
	first := b.Seal("t", func(BucketInfo) bool { return true })
	again := b.Seal("t", func(BucketInfo) bool { return false })
	if len(first) != 1 || len(again) != 1 || again[0].MaxSeq() != 1 {
		t.Fatalf("a failed flush's bucket must be offered again: %v %v", first, again)
	}
}

func first(b []Batch, _ uint64) []Batch { return b }
