//go:build faults

package ingest

// Tests that inject faults: make test runs them (-tags faults).

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"tsdb/internal/fault"
)

// At the hard limit writers wait, then get 53200; the refused statement
// leaves nothing behind, and earlier rows stay queryable.
func TestBackpressureRefusesWithoutTrace(t *testing.T) {
	ctx := context.Background()
	faults, err := fault.Parse("flush.write=error")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openWith(t, dir, Options{MemoryLimit: 200 << 10, SoftMemoryLimit: 100 << 10, WriteTimeout: 100 * time.Millisecond, Faults: faults})
	tbl := table(t, s, "cpu")
	var accepted int64
	var refused error
	for i := 0; i < 100 && refused == nil; i++ {
		n, err := s.Insert(ctx, "cpu", batchAt(tbl, time.Now(), 100, 100))
		accepted += n
		refused = err
	}
	if KindOf(refused) != KindOutOfMemory {
		t.Fatalf("writes past the limit: %v", refused)
	}
	if ok, why := s.AcceptingWrites(); ok || why == "" {
		t.Fatal("store says it accepts writes at the hard limit")
	}
	if n := rowsIn(t, s, "cpu"); n != accepted {
		t.Fatalf("%d rows visible, %d accepted", n, accepted)
	}
	if testutil.ToFloat64(s.metrics.rejections) == 0 || testutil.ToFloat64(s.metrics.flushErrors) == 0 {
		t.Fatal("rejection or flush error not counted")
	}
	s.crash()
	s = openWith(t, dir, Options{})
	defer s.Close(ctx)
	if n := rowsIn(t, s, "cpu"); n != accepted {
		t.Fatalf("after restart %d rows, %d accepted: the refused write reached the WAL", n, accepted)
	}
}

// A table whose flushes fail does not keep the others from flushing; its
// rows stay buffered and visible.
func TestFailingTableDoesNotStallOthers(t *testing.T) {
	ctx := context.Background()
	faults, err := fault.Parse("flush.commit/bad=error")
	if err != nil {
		t.Fatal(err)
	}
	s := openWith(t, t.TempDir(), Options{IdleFlush: time.Millisecond, SmallFileBytes: 1, Faults: faults})
	defer s.crash()
	for _, name := range []string{"bad", "good"} {
		tbl := table(t, s, name)
		if _, err := s.Insert(ctx, name, batchAt(tbl, time.Now().Add(-3*time.Hour), 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "flush of the good table", func() bool { return files(t, s, "good") == 1 })
	eventually(t, "failed flushes of the bad table counted", func() bool { return testutil.ToFloat64(s.metrics.flushErrors) >= 2 })
	if files(t, s, "bad") != 0 || rowsIn(t, s, "bad") != 10 {
		t.Fatalf("bad table: %d files, %d rows", files(t, s, "bad"), rowsIn(t, s, "bad"))
	}
	if err := s.Checkpoint(ctx); err == nil {
		t.Fatal("CHECKPOINT reported success while a table failed to flush")
	}
}
