package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/delta"
	"tsdb/internal/otherwriter"
	"tsdb/internal/schema"
	"tsdb/wal"
)

// A DELETE/UPDATE an earlier release logged as SQL text (kind 2) is
// dropped when the table's dml txn shows it reached the files and none of
// the table's rows before it is unflushed: there is nothing to redo. With
// rows before it still in the WAL, which it should have changed, the table
// is out of service instead (TextDMLError), its entries kept.
func TestTextDMLEntryReplay(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		committed   bool // the dml txn is at the entry's sequence
		rowsBefore  bool // a row inserted after the flush, before the entry
		unavailable bool
		kept        int // entries the WAL keeps
	}{
		{"done in the files", true, false, false, 0},
		{"not in the files", false, false, true, 1},
		{"rows before it unflushed", true, true, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openStore(t, dir)
			tbl := cpuTable(t)
			if _, err := s.CreateTable(ctx, tbl, false); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Insert(ctx, "cpu", rows(tbl, base, base.Add(time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := s.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.rowsBefore {
				if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(2*time.Minute))); err != nil {
					t.Fatal(err)
				}
			}
			// The earlier release committed the statement's rewrite with
			// the dml txn at the entry's sequence: the next one.
			next := s.wal.NextSeq()
			ts, err := s.state("cpu")
			if err != nil {
				t.Fatal(err)
			}
			id := ts.sch().ID
			if tc.committed {
				if _, err := ts.delta.Commit(ctx, "DELETE", []delta.Action{{Txn: &delta.Txn{AppID: s.dmlAppID(), Version: int64(next)}}}); err != nil {
					t.Fatal(err)
				}
			}
			s.crash()

			entry := []byte{entryVersion, kindDML}
			for _, f := range []string{"cpu", id, "DELETE", "DELETE FROM cpu WHERE v = 0"} {
				entry = binary.AppendUvarint(entry, uint64(len(f)))
				entry = append(entry, f...)
			}
			w, err := wal.Open(ctx, filepath.Join(dir, "wal"), wal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if seq, err := w.Append(ctx, [][]byte{entry}); err != nil || seq != next {
				t.Fatalf("legacy entry at %d (%v), want %d", seq, err, next)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			s = openStore(t, dir)
			_, err = s.Snapshot(ctx, "cpu")
			var td *TextDMLError
			if tc.unavailable != errors.As(err, &td) {
				t.Fatalf("snapshot after the start: %v (unavailable: want %v)", err, tc.unavailable)
			}
			if !tc.unavailable {
				if f, b := count(t, s); f != 2 || b != 0 {
					t.Fatalf("%d rows in files, %d buffered; want 2 and 0", f, b)
				}
			} else if td.Seq != next || td.Op != "DELETE" {
				t.Fatalf("error names entry %d %s, want %d DELETE", td.Seq, td.Op, next)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// What the WAL still holds: the entry, and the row before it.
			w, err = wal.Open(ctx, filepath.Join(dir, "wal"), wal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var kept []uint64
			if err := w.Replay(ctx, func(seq uint64, _ []byte) error { kept = append(kept, seq); return nil }, nil); err != nil {
				t.Fatal(err)
			}
			if len(kept) != tc.kept {
				t.Fatalf("WAL keeps entries %v, want %d", kept, tc.kept)
			}
		})
	}
}

// A logged deletion of rows of another writer's file that cannot be
// rewritten without changing a value (here a number stored as text) keeps
// the table out of service at replay, its entries kept, instead of
// failing the start; other tables open as usual.
func TestUnrewritableForeignFileAtReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	_, other := createTwoTables(t, s)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Insert(ctx, "other", rows(other, base)); err != nil {
		t.Fatal(err)
	}
	ts, err := s.state("cpu")
	if err != nil {
		t.Fatal(err)
	}
	name := addTextNumbersFile(t, ts, base)
	id := ts.sch().ID
	s.crash()

	// The entry a DELETE of the file's second row logged before a crash.
	lw, err := wal.Open(ctx, filepath.Join(dir, "wal"), wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := lw.AppendFramed(ctx, [][]byte{encodeDeletesEntry(wal.HeaderRoom, deletesEntry{table: "cpu", tableID: id, files: map[string][]int64{name: {1}}})})
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}

	for start := range 2 {
		s = openStore(t, dir)
		_, err := s.Snapshot(ctx, "cpu")
		var ue *UnavailableError
		var fe *delta.ForeignFileError
		if !errors.As(err, &ue) || !errors.As(err, &fe) || ue.File != name || !strings.Contains(err.Error(), fmt.Sprintf("WAL entry %d", seq)) {
			t.Fatalf("start %d: snapshot of the table: %v, want it out of service naming the file and the entry", start, err)
		}
		snap, err := s.Snapshot(ctx, "other")
		if err != nil || len(snap.Batches) != 1 {
			t.Fatalf("start %d: the other table: %v, %d buffered batches, want 1", start, err, len(snap.Batches))
		}
		s.crash()
	}
}

// addTextNumbersFile commits to ts's table a file of another writer that
// holds two rows at base with v stored as text (which storage does not
// rewrite), and returns its path.
func addTextNumbersFile(t *testing.T, ts *tableState, base time.Time) string {
	t.Helper()
	ctx := context.Background()
	store := ts.delta.Store()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(base.UnixMicro()), arrow.Timestamp(base.UnixMicro() + 1)}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"1", "2"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	const name = "part-00000-other-writer.parquet"
	otherwriter.WriteFile(t, store.LocalPath(name), rec, false)
	info, err := os.Stat(store.LocalPath(name))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := ts.delta.Commit(ctx, "WRITE", []delta.Action{{Add: &delta.Add{Path: name, Size: info.Size(), ModificationTime: info.ModTime().UnixMilli(),
		DataChange: true, Stats: `{"numRecords":2}`}}})
	if err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	ts.publish(snap)
	ts.mu.Unlock()
	return name
}

// A transaction over two tables whose second table's files cannot be
// rewritten fails before the first table's rewrite commits: every
// table's files are prepared before any commit lands.
func TestCommitTxPreparesEveryTableFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close(ctx)
	tbl, _ := createTwoTables(t, s)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertFlushed(t, s, tbl, base, base.Add(time.Second))
	ots, err := s.state("other")
	if err != nil {
		t.Fatal(err)
	}
	foreign := addTextNumbersFile(t, ots, base)
	cpuSnap, err := s.Snapshot(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	cts, _ := s.state("cpu")
	before := cts.delta.Snapshot().Version
	parts := []TxTable{
		{Table: "cpu", TableID: cts.sch().ID, FileDeletes: map[string][]int64{cpuSnap.Files[0].Path: {0}}},
		{Table: "other", TableID: ots.sch().ID, FileDeletes: map[string][]int64{foreign: {0}}},
	}
	err = s.CommitTx(ctx, 9, parts)
	var fe *delta.ForeignFileError
	if !errors.As(err, &fe) || KindOf(err) != KindUnsupported {
		t.Fatalf("commit: %v, want the other table's file refused", err)
	}
	if v := cts.delta.Snapshot().Version; v != before {
		t.Fatalf("the first table's log moved from version %d to %d: its part committed", before, v)
	}
	if got := values(t, s); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("the first table's rows after the failed commit: %v", got)
	}
}

// createTwoTables creates cpu and other, of the same columns, in s.
func createTwoTables(t *testing.T, s *Store) (cpu, other schema.Table) {
	t.Helper()
	cpu = cpuTable(t)
	other, err := schema.New("other", cpu.Columns)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []schema.Table{cpu, other} {
		if _, err := s.CreateTable(context.Background(), tbl, false); err != nil {
			t.Fatal(err)
		}
	}
	return cpu, other
}

// insertFlushed inserts rows of tbl at times and checkpoints, so that
// they lie in the table's files.
func insertFlushed(t *testing.T, s *Store, tbl schema.Table, times ...time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Insert(ctx, tbl.Name, rows(tbl, times...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
}

// Whether replay takes a rewrite as landed: the dml txn must reach the
// entry, and a rewrite taken back (the undone txn at its deletes entry)
// is not; an UPDATE's new rows before a taken-back rewrite are kept for
// their deletes entry to decide.
func TestRewriteLanded(t *testing.T) {
	s := &Store{}
	snap := func(dml, undone int64) *delta.Snapshot {
		txns := map[string]int64{}
		if dml > 0 {
			txns[s.dmlAppID()] = dml
		}
		if undone > 0 {
			txns[s.undoneAppID()] = undone
		}
		return &delta.Snapshot{Txns: txns}
	}
	for _, tc := range []struct {
		dml, undone   int64
		seq           uint64
		landed, files bool // rewriteLanded, fileRowsLanded
	}{
		{0, 0, 5, false, false},
		{4, 0, 5, false, false},
		{5, 0, 5, true, true},
		{9, 0, 5, true, true},
		{9, 9, 5, true, false}, // an older entry; a later rewrite was taken back
		{9, 5, 5, false, false},
		{9, 5, 3, true, false}, // taken back after this entry's rewrite landed: the new rows are kept, then ignored
		{9, 5, 4, true, false},
		{9, 7, 6, true, false}, // new rows before the taken-back deletes entry 7
	} {
		if got := s.rewriteLanded(snap(tc.dml, tc.undone), tc.seq); got != tc.landed {
			t.Errorf("dml %d, undone %d: rewrite of %d landed = %v, want %v", tc.dml, tc.undone, tc.seq, got, tc.landed)
		}
		if got := s.fileRowsLanded(snap(tc.dml, tc.undone), tc.seq); got != tc.files {
			t.Errorf("dml %d, undone %d: new rows at %d landed = %v, want %v", tc.dml, tc.undone, tc.seq, got, tc.files)
		}
	}
}

// A revert never adds back a file that is gone (a VACUUM without
// deleted-file retention may delete it between the two commits): the
// rewrite stays and nothing is committed.
func TestRevertKeepsARewriteWhoseFileIsGone(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close(ctx)
	tbl, _ := createTwoTables(t, s)
	insertFlushed(t, s, tbl, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ts, err := s.state("cpu")
	if err != nil {
		t.Fatal(err)
	}
	before := ts.delta.Snapshot().Version
	rw := &rewrite{s: s, ts: ts, seq: 7, removed: []delta.Add{{Path: "part-gone.parquet", Size: 10}}}
	rw.revert(ctx)
	if v := ts.delta.Snapshot().Version; v != before {
		t.Fatalf("a revert naming a missing file committed: version %d, was %d", v, before)
	}
}
