package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"tsdb/delta"
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
