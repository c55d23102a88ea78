//go:build faults

package ingest

// Tests that inject faults: make test runs them (-tags faults).

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"tsdb/delta"
	"tsdb/internal/fault"
	"tsdb/internal/schema"
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

// When a transaction's rewrite of one table fails to commit after
// another table's landed, the landed one is taken back: the failed
// transaction changes no table, also after a restart.
func TestCommitTxRevertsLandedTables(t *testing.T) {
	ctx := context.Background()
	faults, err := fault.Parse("tx.commit/other=error")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openWith(t, dir, Options{BucketDuration: 10 * time.Minute, Faults: faults})
	tbl, other := createTwoTables(t, s)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tb := range []schema.Table{tbl, other} {
		insertFlushed(t, s, tb, base, base.Add(time.Second))
	}
	var parts []TxTable
	for _, tb := range []string{"cpu", "other"} {
		ts, err := s.state(tb)
		if err != nil {
			t.Fatal(err)
		}
		snap := ts.delta.Snapshot()
		parts = append(parts, TxTable{Table: tb, TableID: ts.sch().ID, FileDeletes: map[string][]int64{snap.Files[0].Path: {0}}})
	}
	cts, _ := s.state("cpu")
	before := cts.delta.Snapshot()
	if err := s.CommitTx(ctx, 9, parts); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("commit: %v, want the injected failure", err)
	}
	after := cts.delta.Snapshot()
	if after.Version != before.Version+2 {
		t.Fatalf("the first table's log at version %d, want %d: its rewrite and the revert", after.Version, before.Version+2)
	}
	paths := func(snap *delta.Snapshot) []string {
		var out []string
		for _, f := range snap.Files {
			out = append(out, f.Path)
		}
		return out
	}
	if !slices.Equal(paths(after), paths(before)) {
		t.Fatalf("the first table's log holds %v after the revert, %v before", paths(after), paths(before))
	}
	// Taken back as such: a replay of the entries would redo the rewrite.
	if u, ok := after.Txns[s.undoneAppID()]; !ok || s.rewriteLanded(after, uint64(u)) {
		t.Fatalf("the revert is not recorded (%v)", after.Txns)
	}
	s.crash()
	s = openWith(t, dir, Options{BucketDuration: 10 * time.Minute})
	defer s.Close(ctx)
	if got := values(t, s); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("the first table's rows after a restart: %v", got)
	}
	snap, err := s.Snapshot(ctx, "other")
	if err != nil || len(snap.Files) != 1 || snap.Files[0].NumRecords != 2 {
		t.Fatalf("the other table after a restart: %v", err)
	}
}
