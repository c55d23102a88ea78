package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tsdb/internal/schema"
	"tsdb/membuffer"
)

func openWith(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	o.DataDir = dir
	if o.BucketDuration == 0 {
		o.BucketDuration = time.Hour
	}
	if o.IdleFlush == 0 {
		o.IdleFlush = time.Hour
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 5 * time.Millisecond
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tableB(b *testing.B, s *Store) schema.Table {
	b.Helper()
	tbl, err := schema.New("cpu", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Int64}, {Name: "pad", Type: schema.Text}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateTable(context.Background(), tbl, false); err != nil {
		b.Fatal(err)
	}
	tbl, _ = s.Table("cpu")
	return tbl
}

func table(t *testing.T, s *Store, name string) schema.Table {
	t.Helper()
	tbl, err := schema.New(name, []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Int64}, {Name: "pad", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(context.Background(), tbl, false); err != nil {
		t.Fatal(err)
	}
	tbl, _ = s.Table(name)
	return tbl
}

// batchAt builds n rows at times ts, ts+1µs, … with a padding column of
// padBytes per row.
func batchAt(tbl schema.Table, ts time.Time, n, padBytes int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	pad := strings.Repeat("x", padBytes)
	for i := 0; i < n; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro() + int64(i)))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.StringBuilder).Append(pad)
	}
	return b.NewRecordBatch()
}

func files(t *testing.T, s *Store, name string) int {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return len(snap.Files)
}

func rowsIn(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range snap.Files {
		n += f.NumRecords
	}
	for _, b := range snap.Batches {
		n += b.Rec.NumRows()
	}
	return n
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The open bucket is cut into a file once it passes MaxBucketBytes and keeps
// accepting rows.
func TestMaxBucketBytesCutsOpenBucket(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, t.TempDir(), Options{MaxBucketBytes: 64 << 10, SmallFileBytes: 1})
	defer s.Close(ctx)
	tbl := table(t, s, "cpu")
	now := time.Now()
	// Two rounds of about 120 KiB each, each waited for: written at once,
	// all 20 batches could be one bucket by the flush loop's next tick,
	// and so one file (the test failed that way on a loaded machine).
	for round := 1; round <= 2; round++ {
		for i := 0; i < 10; i++ {
			if _, err := s.Insert(ctx, "cpu", batchAt(tbl, now, 100, 100)); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "a size flush of the open bucket", func() bool { return files(t, s, "cpu") >= round })
	}
	if n := rowsIn(t, s, "cpu"); n != 2000 {
		t.Fatalf("%d rows, want 2000", n)
	}
}

// Tiny idle buckets are held back, then merged into one file.
func TestTinyBucketsAreMergedIntoOneFile(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, t.TempDir(), Options{BucketDuration: time.Minute, IdleFlush: time.Millisecond, SmallFileBytes: 1 << 20, LateMergeDelay: 300 * time.Millisecond})
	defer s.Close(ctx)
	tbl := table(t, s, "cpu")
	past := time.Now().Add(-24 * time.Hour)
	for i := 0; i < 5; i++ {
		if _, err := s.Insert(ctx, "cpu", batchAt(tbl, past.Add(time.Duration(i)*time.Hour), 3, 1)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := files(t, s, "cpu"); n != 0 {
		t.Fatalf("tiny buckets flushed before the merge delay: %d files", n)
	}
	eventually(t, "merged flush", func() bool { return files(t, s, "cpu") > 0 })
	if n := files(t, s, "cpu"); n != 1 {
		t.Fatalf("%d files for 5 tiny buckets, want 1", n)
	}
	snap, _ := s.Snapshot(context.Background(), "cpu")
	if len(snap.Batches) != 0 || snap.Files[0].NumRecords != 15 {
		t.Fatalf("merged file holds %d rows, %d batches left", snap.Files[0].NumRecords, len(snap.Batches))
	}
	// Each bucket's txn is in the commit: a crash now replays nothing.
	dir := filepath.Dir(filepath.Dir(snap.FilePaths[0]))
	s.crash()
	s = openWith(t, filepath.Dir(dir), Options{})
	defer s.Close(ctx)
	if n := rowsIn(t, s, "cpu"); n != 15 {
		t.Fatalf("after restart %d rows, want 15", n)
	}
}

// Above the soft limit the largest buckets are flushed, open ones included.
func TestPressureFlushesOpenBucket(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, t.TempDir(), Options{MemoryLimit: 8 << 20, SoftMemoryLimit: 256 << 10})
	defer s.Close(ctx)
	tbl := table(t, s, "cpu")
	for i := 0; i < 10; i++ {
		if _, err := s.Insert(ctx, "cpu", batchAt(tbl, time.Now(), 100, 500)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "pressure flush", func() bool { return s.BufferedBytes() <= 256<<10 })
	if files(t, s, "cpu") == 0 || testutil.ToFloat64(s.metrics.pressureFlushes) == 0 {
		t.Fatal("no pressure flush recorded")
	}
}

// Small buckets are merged, large ones get a file each, and an older
// instance of a bucket key is never flushed after a newer one.
func TestGroupSealedKeepsKeyOrder(t *testing.T) {
	s := &Store{opts: Options{SmallFileBytes: 1000, MaxBucketBytes: 1 << 20}}
	tbl, _ := schema.New("t", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Int64}, {Name: "pad", Type: schema.Text}})
	buf := membuffer.New(nil)
	k1, k2, k3 := membuffer.Key{Start: 0, End: 10}, membuffer.Key{Start: 10, End: 20}, membuffer.Key{Start: 20, End: 30}
	now := time.Now()
	buf.Append("t", membuffer.Batch{Seq: 1, Key: k1, Rec: batchAt(tbl, now, 1, 1)}, now)    // small
	buf.Append("t", membuffer.Batch{Seq: 2, Key: k2, Rec: batchAt(tbl, now, 10, 500)}, now) // large
	buf.Append("t", membuffer.Batch{Seq: 3, Key: k3, Rec: batchAt(tbl, now, 1, 1)}, now)    // small
	buf.Seal("t", func(membuffer.BucketInfo) bool { return true })
	buf.Append("t", membuffer.Batch{Seq: 4, Key: k1, Rec: batchAt(tbl, now, 10, 500)}, now) // k1 again, large
	groups := s.groupSealed(buf.Seal("t", func(membuffer.BucketInfo) bool { return true }))
	var got []string
	for _, g := range groups {
		var seqs []uint64
		for _, sb := range g {
			seqs = append(seqs, sb.Seqs()...)
		}
		got = append(got, fmt.Sprint(seqs))
	}
	if want := "[[1 3] [2] [4]]"; fmt.Sprint(got) != want {
		t.Fatalf("groups %v, want %s", got, want)
	}
}

// A large waiting writer makes the pressure flush free room for it, not
// empty the MemBuffer: flushing stops once the waiter fits under the hard
// limit (and the MemBuffer is under 80% of the soft one).
func TestPressureFlushFreesWhatWaitersNeed(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, t.TempDir(), Options{MemoryLimit: 1 << 20, SoftMemoryLimit: 512 << 10, FlushInterval: time.Hour})
	defer s.Close(ctx)
	tbl := table(t, s, "cpu")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for h := range 6 {
		if _, err := s.Insert(ctx, "cpu", batchAt(tbl, base.Add(time.Duration(h)*time.Hour), 100, 700)); err != nil {
			t.Fatal(err)
		}
	}
	buf := s.buf.Bytes()
	if buf >= s.opts.SoftMemoryLimit || buf < 300<<10 {
		t.Fatalf("setup: %d buffered bytes", buf)
	}
	if picks := s.pressurePicks(); picks != nil {
		t.Fatalf("below the soft limit and nobody waiting: picks %v", picks)
	}
	const wanted = 700 << 10
	s.gate.mu.Lock()
	s.gate.wanted += wanted
	s.gate.mu.Unlock()
	picks := s.pressurePicks()
	s.gate.mu.Lock()
	s.gate.wanted -= wanted
	s.gate.mu.Unlock()
	freed, n := int64(0), 0
	for _, b := range s.buf.Buckets("cpu") {
		if picks["cpu"][b.Key] {
			freed += b.Bytes
			n++
		}
	}
	if n == 0 || buf-freed+wanted > s.opts.MemoryLimit {
		t.Fatalf("%d of 6 buckets picked, freeing %d of %d bytes: the waiter of %d does not fit under %d", n, freed, buf, wanted, s.opts.MemoryLimit)
	}
	if n == 6 {
		t.Fatalf("every bucket picked for a waiter that needed %d of %d buffered bytes", buf+wanted-s.opts.MemoryLimit, buf)
	}
}
