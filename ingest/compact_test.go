package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tsdb/delta"
)

func TestCompactGroups(t *testing.T) {
	const target = 100
	f := func(name string, lo, hi, size int64) delta.File {
		return delta.File{Add: delta.Add{Path: name, Size: size}, MinTime: lo, MaxTime: hi}
	}
	tests := []struct {
		name  string
		files []delta.File
		want  string
	}{
		{"adjacent small files merge", []delta.File{f("c", 20, 29, 10), f("a", 0, 9, 10), f("b", 10, 19, 10)}, "[a b c]"},
		{"a run stops at the target", []delta.File{f("a", 0, 9, 20), f("b", 10, 19, 20), f("c", 20, 29, 20), f("d", 30, 39, 20), f("e", 40, 49, 20), f("g", 50, 59, 20)}, "[a b c d e] "},
		{"a large file splits runs", []delta.File{f("a", 0, 9, 10), f("b", 10, 19, 10), f("big", 20, 29, 90), f("c", 30, 39, 10), f("d", 40, 49, 10)}, "[a b] [c d]"},
		{"a lone small file stays", []delta.File{f("a", 0, 9, 10), f("big", 10, 19, 90)}, ""},
		{"overlapping files join whatever their size", []delta.File{f("a", 0, 50, 10), f("big", 10, 19, 90), f("b", 60, 69, 10)}, "[a big]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []string
			for _, g := range compactGroups(tt.files, target) {
				var names []string
				for _, f := range g {
					names = append(names, f.Path)
				}
				parts = append(parts, fmt.Sprint(names))
			}
			got := strings.Join(parts, " ")
			if strings.TrimSpace(got) != strings.TrimSpace(tt.want) {
				t.Fatalf("groups = %q, want %q", got, tt.want)
			}
		})
	}
}

// tableRows reads every row of the table's files: time and value, sorted.
func tableRows(t *testing.T, s *Store) []string {
	t.Helper()
	ts, err := s.state("cpu")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range ts.delta.Snapshot().Files {
		recs, err := delta.ReadDataFile(context.Background(), ts.delta.Store(), ts.sch(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			tc, vc := r.Column(0).(*array.Timestamp), r.Column(1).(*array.Int64)
			for i := 0; i < int(r.NumRows()); i++ {
				out = append(out, fmt.Sprintf("%d/%d", tc.Value(i), vc.Value(i)))
			}
			r.Release()
		}
	}
	sort.Strings(out)
	return out
}

// Twelve flushed buckets become one file with the same rows; the table's
// txns survive, and a restart neither loses nor repeats a row.
func TestCompactMergesSmallFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		at := base.Add(time.Duration(i) * 10 * time.Minute)
		if _, err := s.Insert(ctx, "cpu", rows(tbl, at, at.Add(time.Second), at.Add(2*time.Second))); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := tableRows(t, s)
	ts, _ := s.state("cpu")
	txns := fmt.Sprint(ts.delta.Snapshot().Txns)
	res, err := s.Compact(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesBefore != 12 || res.FilesAfter != 1 || res.Merged != 12 || res.Written != 1 {
		t.Fatalf("compaction: %+v", res)
	}
	// Flushed buckets follow each other in time: streamed, one file at a time.
	if n := testutil.ToFloat64(s.metrics.streamedMerges); n != 1 {
		t.Fatalf("%v streamed merges, want 1", n)
	}
	if after := tableRows(t, s); fmt.Sprint(after) != fmt.Sprint(before) || len(after) != 36 {
		t.Fatalf("rows after compaction: %d, before %d", len(after), len(before))
	}
	snap := ts.delta.Snapshot()
	if fmt.Sprint(snap.Txns) != txns {
		t.Fatalf("txns changed: %v, were %s", snap.Txns, txns)
	}
	if f := snap.Files[0]; f.MinTime != base.UnixMicro() || f.NumRecords != 36 {
		t.Fatalf("merged file stats: %+v", f)
	}
	// The commit removes without changing data (dataChange false).
	log, err := os.ReadFile(filepath.Join(dir, "tables", "cpu", "_delta_log", fmt.Sprintf("%020d.json", snap.Version)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(log), `"remove"`) != 12 || strings.Contains(string(log), `"dataChange":true`) {
		t.Fatalf("compaction commit:\n%s", log)
	}
	// Nothing left to merge.
	if res, err := s.Compact(ctx, "cpu"); err != nil || res.Written != 0 {
		t.Fatalf("second compaction: %+v, %v", res, err)
	}
	s.Close(ctx)
	s = openStore(t, dir)
	defer s.Close(ctx)
	if after := tableRows(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("rows after restart: %d, want %d", len(after), len(before))
	}
	if _, buffered := count(t, s); buffered != 0 {
		t.Fatalf("replay re-buffered %d flushed rows", buffered)
	}
}

// A merge whose input a DELETE/UPDATE removed meanwhile is dropped.
func TestCompactionYieldsToDML(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close(ctx)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Insert(ctx, "cpu", rows(tbl, base)); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.state("cpu")
	live := ts.delta.Snapshot().Files[0]
	gone := delta.File{Add: delta.Add{Path: "part-gone.parquet"}}
	ok, err := s.commitCompaction(ctx, ts, []delta.File{live, gone}, delta.Add{Path: "part-new.parquet", PartitionValues: map[string]string{}})
	if err != nil || ok {
		t.Fatalf("commit over a removed file: %v, %v", ok, err)
	}
	if files := ts.delta.Snapshot().Files; len(files) != 1 || files[0].Path != live.Path {
		t.Fatalf("table changed: %v", files)
	}
}

// The background compactor merges on its own, and Close stops it.
func TestBackgroundCompaction(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{DataDir: t.TempDir(), BucketDuration: 10 * time.Minute, IdleFlush: time.Hour, CompactInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(time.Duration(i)*10*time.Minute))); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ts, _ := s.state("cpu")
	deadline := time.Now().Add(10 * time.Second)
	for len(ts.delta.Snapshot().Files) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("background compaction left %d files", len(ts.delta.Snapshot().Files))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.bg.done:
	default:
		t.Fatal("a background service (the compactor among them) still runs after Close")
	}
}
