package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
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
		var se *sqlerr.Error
		if errors.As(err, &se) && se.Code == sqlerr.OutOfMemory {
			break
		}
		if err != nil || i > 100 {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if _, n := count(t, s); n != 0 {
		t.Fatalf("%d rows visible", n)
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
