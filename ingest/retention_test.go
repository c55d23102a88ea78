package ingest

import (
	"context"
	"testing"
	"time"
)

// Buffered rows past the retention are cut without the SQL engine (the
// store here has no DML compiler): their buckets are flushed and the
// files dropped whole, durably — a crash and replay bring none back.
func TestRetentionCutsBufferedRowsWithoutTheEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openWith(t, dir, Options{BucketDuration: 10 * time.Minute, RetentionInterval: -1, CompactInterval: -1})
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRetention(ctx, "cpu", time.Hour); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Insert(ctx, "cpu", rows(tbl, now.Add(-3*time.Hour), now.Add(-3*time.Hour+time.Second), now.Add(-2*time.Hour), now)); err != nil {
		t.Fatal(err)
	}
	res, err := s.EnforceRetention(ctx, "cpu")
	if err != nil {
		t.Fatalf("retention without an engine: %v", err)
	}
	if res.Rows != 3 {
		t.Fatalf("retention dropped %d rows, want 3 (%+v)", res.Rows, res)
	}
	files, buffered := count(t, s)
	if files != 0 || buffered != 1 {
		t.Fatalf("after retention: %d rows in files, %d buffered; want 0 and 1", files, buffered)
	}
	s.crash()
	s = openWith(t, dir, Options{BucketDuration: 10 * time.Minute, RetentionInterval: -1, CompactInterval: -1})
	defer s.Close(ctx)
	if files, buffered := count(t, s); files != 0 || buffered != 1 {
		t.Fatalf("after a crash and replay: %d rows in files, %d buffered; want 0 and 1", files, buffered)
	}
}
