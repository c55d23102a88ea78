package ingest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/delta"
	"tsdb/internal/schema"
	"tsdb/wal"
)

// values lists the v column of every row of the table, sorted.
func values(t *testing.T, s *Store) []int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Snapshot(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := s.state("cpu")
	var out []int64
	for _, f := range snap.Files {
		recs, err := readFile(ctx, ts, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out = append(out, r.Column(1).(*array.Int64).Int64Values()...)
		}
	}
	for _, b := range snap.Batches {
		out = append(out, b.Rec.Column(1).(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

func readFile(ctx context.Context, ts *tableState, path string) ([]arrow.RecordBatch, error) {
	return delta.ReadDataFile(ctx, ts.delta.Store(), ts.sch(), path)
}

// A transaction's commit deletes rows named by place — in a data file and
// in a buffered batch — and inserts others, in one WAL append; a crash
// after it replays exactly that, and a crash before it leaves nothing.
func TestCommitTxDeletesByPlaceAndReplays(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// rows() numbers v from 0: the file holds 0,1,2, the batch 0,1.
	if _, err := s.Insert(ctx, "cpu", rows(tbl, base, base.Add(time.Second), base.Add(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(3*time.Second), base.Add(4*time.Second))); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 1 || len(snap.Batches) != 1 {
		t.Fatalf("%d files, %d batches", len(snap.Files), len(snap.Batches))
	}
	added := rows(tbl, base.Add(5*time.Second), base.Add(6*time.Second), base.Add(7*time.Second))
	part := TxTable{Table: "cpu", TableID: tbl.ID, Inserts: []arrow.RecordBatch{added},
		FileDeletes:  map[string][]int64{snap.Files[0].Path: {0, 2}},
		BatchDeletes: map[uint64][]int64{snap.Batches[0].Seq: {1}}}
	if err := s.CommitTx(ctx, 7, []TxTable{part}); err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 0, 1, 1, 2}
	if got := values(t, s); !slices.Equal(got, want) {
		t.Fatalf("after commit: %v, want %v", got, want)
	}
	s.crash()
	s = openStore(t, dir)
	if got := values(t, s); !slices.Equal(got, want) {
		t.Fatalf("after crash and replay: %v, want %v", got, want)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	s.crash()
	s = openStore(t, dir)
	defer s.Close(ctx)
	if got := values(t, s); !slices.Equal(got, want) {
		t.Fatalf("after flush and restart: %v, want %v", got, want)
	}
}

// A table dropped and created anew since the transaction wrote it fails
// the commit with 40001, and nothing lands.
func TestCommitTxRefusesAReplacedTable(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close(ctx)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	part := TxTable{Table: "cpu", TableID: "not-this-one", Inserts: []arrow.RecordBatch{rows(tbl, time.Now())}}
	if err := s.CommitTx(ctx, 1, []TxTable{part}); KindOf(err) != KindConflict {
		t.Fatalf("commit: %v, want 40001", err)
	}
	if got := values(t, s); len(got) != 0 {
		t.Fatalf("rows after the refused commit: %v", got)
	}
}

// Two transactions that each hold one table's lock and want the other's:
// the second to wait is told at once (40P01), the first gets the lock
// when the second gives up.
func TestLockTableFindsDeadlocks(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close(ctx)
	for _, name := range []string{"a", "b"} {
		tbl := cpuTable(t)
		tbl.Name = name
		if _, err := s.CreateTable(ctx, tbl, false); err != nil {
			t.Fatal(err)
		}
	}
	_, unlockA, err := s.LockTable(ctx, 1, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, unlockB, err := s.LockTable(ctx, 2, "b")
	if err != nil {
		t.Fatal(err)
	}
	if held, _, err := s.LockTable(ctx, 1, "a"); err != nil || !held {
		t.Fatalf("a lock the transaction holds: held %v, %v", held, err)
	}
	got := make(chan error, 1)
	go func() {
		_, unlock, err := s.LockTable(ctx, 1, "b") // waits for 2
		if err == nil {
			unlock()
		}
		got <- err
	}()
	// Wait until transaction 1 is waiting.
	for deadline := time.Now().Add(5 * time.Second); ; {
		s.locks.mu.Lock()
		waiting := s.locks.waits[1] != nil
		s.locks.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("transaction 1 does not wait")
		}
		time.Sleep(time.Millisecond)
	}
	_, _, err = s.LockTable(ctx, 2, "a")
	if KindOf(err) != KindDeadlock {
		t.Fatalf("the closing wait: %v, want 40P01", err)
	}
	unlockB()
	if err := <-got; err != nil {
		t.Fatalf("the first waiter: %v", err)
	}
	unlockA()
	// A wait its context ends is a cancel, not a hang.
	_, unlockA, _ = s.LockTable(ctx, 3, "a")
	defer unlockA()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := s.LockTable(cctx, 4, "a"); KindOf(err) != KindCanceled {
		t.Fatalf("a wait that times out: %v, want 57014", err)
	}
}

// The new versions of rows an UPDATE changed in a data file (FileInserts)
// land in a file of the commit that rewrites it: other readers of the
// table never see a row missing. After a crash they are in the table
// once, whether that commit landed (their WAL entries are skipped) or not
// (they are buffered, and the file loses the old versions at replay).
func TestFileInsertsLandWithTheirCommit(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) (string, *Store, schema.Table, TxTable) {
		dir := t.TempDir()
		s := openStore(t, dir)
		tbl := cpuTable(t)
		if _, err := s.CreateTable(ctx, tbl, false); err != nil {
			t.Fatal(err)
		}
		// The file holds v 0, 1, 2; rows 1 and 2 become 10 and 20.
		if _, err := s.Insert(ctx, "cpu", rows(tbl, base, base.Add(time.Second), base.Add(2*time.Second))); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Snapshot(ctx, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
		for i, v := range []int64{10, 20} {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i+1) * time.Second).UnixMicro()))
			b.Field(1).(*array.Int64Builder).Append(v)
		}
		part := TxTable{Table: "cpu", TableID: tbl.ID, FileInserts: []arrow.RecordBatch{b.NewRecordBatch()},
			FileDeletes: map[string][]int64{snap.Files[0].Path: {1, 2}}}
		return dir, s, tbl, part
	}
	want := []int64{0, 10, 20}

	t.Run("landed", func(t *testing.T) {
		dir, s, tbl, part := setup(t)
		// A row buffered before the commit keeps its entries in the WAL
		// until it is flushed: the replay meets them.
		if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		want := []int64{0, 0, 10, 20}
		if err := s.CommitTx(ctx, 7, []TxTable{part}); err != nil {
			t.Fatal(err)
		}
		snap, _ := s.Snapshot(ctx, "cpu")
		if len(snap.Batches) != 1 {
			t.Fatalf("%d batches buffered: the new versions belong in files", len(snap.Batches))
		}
		if got := values(t, s); !slices.Equal(got, want) {
			t.Fatalf("after commit: %v, want %v", got, want)
		}
		s.crash()
		s = openStore(t, dir)
		defer s.Close(ctx)
		if got := values(t, s); !slices.Equal(got, want) {
			t.Fatalf("after crash and replay: %v, want %v", got, want)
		}
	})

	t.Run("logged, not committed", func(t *testing.T) {
		dir, s, _, part := setup(t)
		// What CommitTx appends, then a crash before its Delta commit.
		tbl, ok := s.Table("cpu")
		if !ok {
			t.Fatal("no table cpu")
		}
		e, err := s.encode(tbl, part.FileInserts, formFileRows)
		if err != nil {
			t.Fatal(err)
		}
		payloads := append(e.payloads, encodeDeletesEntry(wal.HeaderRoom, deletesEntry{table: "cpu", tableID: tbl.ID, files: part.FileDeletes}))
		if _, err := s.wal.AppendFramed(ctx, payloads); err != nil {
			t.Fatal(err)
		}
		s.crash()
		s = openStore(t, dir)
		if got := values(t, s); !slices.Equal(got, want) {
			t.Fatalf("after crash and replay: %v, want %v", got, want)
		}
		// The replay wrote the new versions into its rewrite commit, as
		// the live path does: a second crash before any flush keeps them.
		if snap, _ := s.Snapshot(ctx, "cpu"); len(snap.Batches) != 0 {
			t.Fatalf("%d batches buffered after replay: the new versions belong in files", len(snap.Batches))
		}
		s.crash()
		s = openStore(t, dir)
		defer s.Close(ctx)
		if got := values(t, s); !slices.Equal(got, want) {
			t.Fatalf("after a second crash: %v, want %v", got, want)
		}
	})
}

// A deletes entry's empty row list is every row of the file: logged so (a
// count of 0, no row numbers), it takes the file out of the table unread,
// live and when a replay applies it.
func TestDeletesOfWholeFiles(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, 20 * time.Minute} {
		if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(at), base.Add(at+time.Second))); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.Snapshot(ctx, "cpu")
	if err != nil || len(snap.Files) != 2 {
		t.Fatalf("%d files, %v", len(snap.Files), err)
	}
	tbl, _ = s.Table("cpu")
	e := deletesEntry{table: "cpu", tableID: tbl.ID, files: map[string][]int64{snap.Files[0].Path: {}}}
	if got, err := decodeDeletesEntry(encodeDeletesEntry(0, e)); err != nil || len(got.files) != 1 || len(got.files[snap.Files[0].Path]) != 0 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	// Logged, then a crash before it was applied: the replay applies it.
	if _, err := s.wal.AppendFramed(ctx, [][]byte{encodeDeletesEntry(wal.HeaderRoom, e)}); err != nil {
		t.Fatal(err)
	}
	s.crash()
	s = openStore(t, dir)
	defer s.Close(ctx)
	after, err := s.Snapshot(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Files) != 1 || after.Files[0].Path != snap.Files[1].Path {
		t.Fatalf("after replay: files %v, want only %s", after.Files, snap.Files[1].Path)
	}
	if got := values(t, s); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("after replay: %v", got)
	}
}
