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

// A file of tsdb's reaching across the cutoff (a compaction merged hours
// into one) is cut by storage too: rewritten without its expired rows,
// swapped in one commit, with no SQL engine and no WAL entry.
func TestRetentionCutsAFileAcrossTheCutoffWithoutTheEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{BucketDuration: 10 * time.Minute, RetentionInterval: -1, CompactInterval: -1}
	s := openWith(t, dir, opts)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Insert(ctx, "cpu", rows(tbl, now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-30*time.Minute), now.Add(-20*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Compact(ctx, "cpu"); err != nil || res.FilesAfter != 1 {
		t.Fatalf("compaction: %+v, %v; want one file", res, err)
	}
	if err := s.SetRetention(ctx, "cpu", time.Hour); err != nil {
		t.Fatal(err)
	}
	res, err := s.EnforceRetention(ctx, "cpu")
	if err != nil {
		t.Fatalf("retention without an engine: %v", err)
	}
	if res.Rows != 2 {
		t.Fatalf("retention dropped %d rows, want 2 (%+v)", res.Rows, res)
	}
	check := func(when string) {
		t.Helper()
		files, buffered := count(t, s)
		if files != 2 || buffered != 0 {
			t.Fatalf("%s: %d rows in files, %d buffered; want 2 and 0", when, files, buffered)
		}
		snap, err := s.Snapshot(ctx, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		cut := now.Add(-time.Hour).UnixMicro()
		for _, f := range snap.Files {
			if f.MinTime < cut-int64(10*time.Minute/time.Microsecond) {
				t.Fatalf("%s: file %s still starts at %v", when, f.Path, time.UnixMicro(f.MinTime))
			}
		}
	}
	check("after retention")
	s.crash()
	s = openWith(t, dir, opts)
	defer s.Close(ctx)
	check("after a crash and replay")
}

// What whole-file drops and cuts leave (another writer's file, one with a
// deletion vector, a bucket of another width) is deleted by position,
// logged as a transaction's deletes are: no SQL engine (this store has
// none), and a crash replays exactly those rows' deletion.
func TestExpiredRowsDeletedByPositionWithoutTheEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{BucketDuration: 10 * time.Minute, RetentionInterval: -1, CompactInterval: -1}
	s := openWith(t, dir, opts)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Insert(ctx, "cpu", rows(tbl, t0, t0.Add(time.Minute), t0.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// Buffered: one row before the cut in the flushed bucket, three after.
	if _, err := s.Insert(ctx, "cpu", rows(tbl, t0.Add(30*time.Second), t0.Add(11*time.Minute), t0.Add(12*time.Minute), t0.Add(13*time.Minute))); err != nil {
		t.Fatal(err)
	}
	n, err := s.deleteExpiredRows(ctx, "cpu", t0.Add(90*time.Second).UnixMicro())
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("deleted %d rows, want 3", n)
	}
	check := func(when string) {
		t.Helper()
		if files, buffered := count(t, s); files != 1 || buffered != 3 {
			t.Fatalf("%s: %d rows in files, %d buffered; want 1 and 3", when, files, buffered)
		}
		snap, err := s.Snapshot(ctx, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range snap.Files {
			if f.MinTime != t0.Add(2*time.Minute).UnixMicro() {
				t.Fatalf("%s: the file left starts at %v", when, time.UnixMicro(f.MinTime).UTC())
			}
		}
		for _, b := range snap.Batches {
			if b.Rec.NumRows() > 0 && b.MinTime < t0.Add(90*time.Second).UnixMicro() {
				t.Fatalf("%s: a buffered batch still starts at %v", when, time.UnixMicro(b.MinTime).UTC())
			}
		}
	}
	check("after the delete")
	s.crash()
	s = openWith(t, dir, opts)
	defer s.Close(ctx)
	check("after a crash and replay")
}
