package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
)

// A Batch's rows are invisible until Commit, all visible after it, and
// survive a crash then; an aborted batch, or one cut short by a crash,
// leaves nothing, before or after a restart. A later write is unaffected.
func TestBatch(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		end    func(t *testing.T, b *Batch)
		want   int64 // rows after the end and after a crash
		commit bool
	}{
		{"commit", func(t *testing.T, b *Batch) {
			if n, err := b.Commit(ctx); err != nil || n != 5 {
				t.Fatalf("commit: %d %v", n, err)
			}
		}, 5, true},
		{"abort", func(t *testing.T, b *Batch) { b.Abort() }, 0, false},
		{"crash", func(t *testing.T, b *Batch) {}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			tbl, b := beginCPUBatch(t, s)
			// Three buckets over two slices.
			if err := b.Add(ctx, []arrow.RecordBatch{rows(tbl, base, base.Add(time.Minute))}); err != nil {
				t.Fatal(err)
			}
			if err := b.Add(ctx, []arrow.RecordBatch{rows(tbl, base.Add(time.Hour), base.Add(2*time.Hour), base.Add(2*time.Hour+time.Second))}); err != nil {
				t.Fatal(err)
			}
			if _, n := count(t, s); n != 0 {
				t.Fatalf("%d rows visible before the batch ends", n)
			}
			tt.end(t, b)
			if _, n := count(t, s); n != tt.want {
				t.Fatalf("%d rows visible after the batch ended, want %d", n, tt.want)
			}
			if err := b.Add(ctx, []arrow.RecordBatch{rows(tbl, base)}); tt.commit && !errors.Is(err, errBatchEnded) {
				t.Fatalf("add after commit: %v", err)
			}
			if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(3*time.Hour))); err != nil {
				t.Fatal(err)
			}
			s.crash()
			s = openStore(t, dir)
			defer s.Close(ctx)
			if _, n := count(t, s); n != tt.want+1 {
				t.Fatalf("after a crash: %d rows, want %d", n, tt.want+1)
			}
		})
	}
}

// A batch as a whole must fit under the memory limit, like one statement.
func TestBatchOverMemoryLimit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{DataDir: t.TempDir(), BucketDuration: 10 * time.Minute, IdleFlush: time.Hour, MemoryLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	tbl, b := beginCPUBatch(t, s)
	defer b.Abort()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for i := range 1000 {
		times = append(times, base.Add(time.Duration(i)*time.Millisecond))
	}
	for i := 0; ; i++ {
		err := b.Add(ctx, []arrow.RecordBatch{rows(tbl, times...)})
		if KindOf(err) == KindTooLarge {
			break
		}
		if err != nil || i > 100 {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if _, n := count(t, s); n != 0 {
		t.Fatalf("%d rows visible", n)
	}
	// One INSERT as large gets the same answer, not 53200: waiting would
	// not make it fit.
	many := make([]time.Time, 20000)
	for i := range many {
		many[i] = base.Add(time.Duration(i) * time.Millisecond)
	}
	if _, err := s.Insert(ctx, "cpu", rows(tbl, many...)); KindOf(err) != KindTooLarge {
		t.Fatalf("INSERT over the memory limit: %v, want 54000", err)
	}
	if _, n := count(t, s); n != 0 {
		t.Fatalf("%d rows visible after the refused INSERT", n)
	}
}

// beginCPUBatch creates the cpu table in s and begins a batch for it.
func beginCPUBatch(t *testing.T, s *Store) (schema.Table, *Batch) {
	t.Helper()
	tbl := cpuTable(t)
	if _, err := s.CreateTable(context.Background(), tbl, false); err != nil {
		t.Fatal(err)
	}
	b, err := s.BeginBatch("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return tbl, b
}

// Two batches that each take more than half of --memory-limit both commit:
// memory is admitted at Commit, when a flush can make room for the second.
// Reserved while streaming, each would hold its half and wait for the
// other until the write timeout.
func TestConcurrentBatchesOverHalfTheLimit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{DataDir: t.TempDir(), BucketDuration: 10 * time.Minute, IdleFlush: time.Hour,
		MemoryLimit: 1 << 20, WriteTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	tbl, a := beginCPUBatch(t, s)
	b, err := s.BeginBatch("cpu")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	slice := func(from int) []arrow.RecordBatch {
		var times []time.Time
		for i := range 40_000 {
			times = append(times, base.Add(time.Duration(from+i)*time.Millisecond))
		}
		return []arrow.RecordBatch{rows(tbl, times...)}
	}
	if err := a.Add(ctx, slice(0)); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(ctx, slice(40_000)); err != nil {
		t.Fatal(err)
	}
	if a.rows.need <= s.opts.MemoryLimit/2 || b.rows.need <= s.opts.MemoryLimit/2 {
		t.Fatalf("batches of %d and %d bytes do not each take over half of %d", a.rows.need, b.rows.need, s.opts.MemoryLimit)
	}
	for _, x := range []*Batch{a, b} {
		if n, err := x.Commit(ctx); err != nil || n != 40_000 {
			t.Fatalf("commit: %d %v", n, err)
		}
	}
	if f, buf := count(t, s); int64(f)+buf != 80_000 {
		t.Fatalf("%d rows in files and %d buffered, want 80,000", f, buf)
	}
}

// A table dropped while a batch streams fails the batch with 42P01, and a
// table of the same name created meanwhile gets none of its rows. A batch
// whose Add failed cannot commit the slices that were staged.
func TestBatchFailures(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// spoil breaks the batch after its first slice was added.
		spoil func(t *testing.T, s *Store, tbl schema.Table, b *Batch)
		kind  Kind // of the Commit error; KindNone for any error
	}{
		{"dropped", func(t *testing.T, s *Store, tbl schema.Table, _ *Batch) {
			if _, err := s.DropTable(ctx, "cpu", false); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateTable(ctx, tbl, false); err != nil {
				t.Fatal(err)
			}
		}, KindNoSuchTable},
		{"failed add", func(t *testing.T, _ *Store, _ schema.Table, b *Batch) {
			other, err := schema.New("other", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Text}})
			if err != nil {
				t.Fatal(err)
			}
			bld := array.NewRecordBuilder(memory.DefaultAllocator, other.ArrowSchema())
			bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.UnixMicro()))
			bld.Field(1).(*array.StringBuilder).Append("x")
			if err := b.Add(ctx, []arrow.RecordBatch{bld.NewRecordBatch()}); err == nil {
				t.Fatal("a record of another shape was taken")
			}
		}, KindNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, t.TempDir())
			defer s.Close(ctx)
			tbl, b := beginCPUBatch(t, s)
			if err := b.Add(ctx, []arrow.RecordBatch{rows(tbl, base)}); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, s, tbl, b)
			_, err := b.Commit(ctx)
			if err == nil || tc.kind != KindNone && KindOf(err) != tc.kind {
				t.Fatalf("commit: %v, want an error of kind %d", err, tc.kind)
			}
			if _, n := count(t, s); n != 0 {
				t.Fatalf("%d rows visible", n)
			}
		})
	}
}
