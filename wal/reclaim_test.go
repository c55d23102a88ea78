package wal

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// Deleting entries gives their disk space back: after appends and
// deletions in log order, the log's files shrink to about what is live.
func TestReclaimFollowsDeletes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{ReclaimInterval: -1, ValueLogFileBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	payload := make([]byte, 256<<10)
	var seqs []uint64
	const live = 8 // entries kept at the end: 2 MiB
	var peak int64
	for round := 0; round < 8; round++ {
		for range 16 {
			s, err := w.Append(ctx, [][]byte{payload})
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, s)
		}
		if err := w.Delete(ctx, seqs[:len(seqs)-live]); err != nil {
			t.Fatal(err)
		}
		seqs = seqs[len(seqs)-live:]
		if err := w.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, w.DiskBytes())
	}
	written := int64(8*16) * int64(len(payload))
	liveBytes := int64(live) * int64(len(payload))
	// The bound: what is live, the value-log file being written, and one
	// file not yet rewritten (discard ratio below one half), plus the LSM.
	if d := w.DiskBytes(); d > liveBytes+3*(8<<20) {
		t.Fatalf("%d MiB on disk for %d MiB live after %d MiB written", d>>20, liveBytes>>20, written>>20)
	}
	t.Logf("written %d MiB, live %d MiB, on disk %.1f MiB (peak %.1f)", written>>20, liveBytes>>20, float64(w.DiskBytes())/(1<<20), float64(peak)/(1<<20))
	if got, _ := replayAll(t, w); len(got) != live {
		t.Fatalf("replayed %d entries, want %d", len(got), live)
	}
}

// Entries of a staged write are deleted one by one; the commit record goes
// with the last, and what is left replays under its sequences.
func TestStagedEntriesDeletedInParts(t *testing.T) {
	ctx := context.Background()
	w := openWithA(t)
	st := w.Stage()
	if err := st.Write(ctx, frames("p0", "p1", "p2")); err != nil {
		t.Fatal(err)
	}
	if first, err := st.Commit(ctx); err != nil || first != 2 {
		t.Fatalf("commit: %d %v", first, err)
	}
	if err := w.Delete(ctx, []uint64{3}); err != nil {
		t.Fatal(err)
	}
	w = reopen(t, w, Options{})
	if got, _ := replayAll(t, w); fmt.Sprint(got) != "[1=a 2=p0 4=p2]" {
		t.Fatalf("after deleting one part: %v", got)
	}
	if err := w.Delete(ctx, []uint64{2, 4, 4}); err != nil {
		t.Fatal(err)
	}
	if n := len(w.commits); n != 0 {
		t.Fatalf("%d commit records left after every part was deleted", n)
	}
	w = reopen(t, w, Options{})
	if got, _ := replayAll(t, w); fmt.Sprint(got) != "[1=a]" || len(w.commits) != 0 {
		t.Fatalf("after deleting every part: %v, %d commits", got, len(w.commits))
	}
}

// A payload larger than a chunk is stored in chunks and reads back whole;
// a deletion takes every chunk, and a damaged chunk is caught by the
// payload's checksum.
func TestLargeEntriesAreChunked(t *testing.T) {
	ctx := context.Background()
	w := openWithA(t)
	chunkBytes := w.chunkBytes
	large := make([]byte, 2*chunkBytes+123)
	for i := range large {
		large[i] = byte(i * 31)
	}
	seq, err := w.Append(ctx, [][]byte{large})
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stage()
	if err := st.Write(ctx, [][]byte{append(make([]byte, HeaderRoom), large[:chunkBytes+1]...)}); err != nil {
		t.Fatal(err)
	}
	part, err := st.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w = reopen(t, w, Options{})
	if l := w.live[seq]; l.chunks != 3 {
		t.Fatalf("entry of %d bytes in %d chunks, want 3", len(large), l.chunks)
	}
	sizes := map[uint64]int{}
	err = w.Replay(ctx, func(s uint64, p []byte) error {
		sizes[s] = len(p)
		if s == seq && !bytes.Equal(p, large) || s == part && !bytes.Equal(p, large[:chunkBytes+1]) {
			t.Errorf("entry %d does not read back as written", s)
		}
		return nil
	}, nil)
	if err != nil || sizes[seq] != len(large) || sizes[part] != chunkBytes+1 {
		t.Fatalf("replay: %v %v", sizes, err)
	}
	// Damage the last chunk of the entry.
	err = w.db.Update(func(txn *badger.Txn) error {
		return txn.Set(chunkKey(entryKey(seq), 2), []byte("garbage"))
	})
	if err != nil {
		t.Fatal(err)
	}
	got, bad := replayAll(t, w)
	if len(got) != 2 || len(bad) != 1 || bad[0].Seq != seq {
		t.Fatalf("after damage: %d replayed, corrupt %v", len(got), bad)
	}
	if err := w.Delete(ctx, []uint64{part}); err != nil {
		t.Fatal(err)
	}
	keys := 0
	err = w.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); k[0] == prefixEntry || k[0] == prefixPart || k[0] == prefixCommit {
				keys++
			}
		}
		return nil
	})
	if err != nil || keys != 1 {
		t.Fatalf("%d keys left, want only entry 1's (%v)", keys, err)
	}
}

// After deleting a value-log file's worth, ReclaimIfDue gives the space
// back before it returns, without the reclaim loop; with less deleted it
// does nothing.
func TestReclaimIfDue(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{ReclaimInterval: -1, ValueLogFileBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	payload := make([]byte, 256<<10)
	var seqs []uint64
	for range 128 { // 32 MiB: four files
		s, err := w.Append(ctx, [][]byte{payload})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	before := w.DiskBytes()
	if err := w.Delete(ctx, seqs[:4]); err != nil { // 1 MiB
		t.Fatal(err)
	}
	if err := w.ReclaimIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	if w.deletedBytes == 0 {
		t.Fatal("a reclaim ran for less than a value-log file deleted")
	}
	if err := w.Delete(ctx, seqs[4:]); err != nil {
		t.Fatal(err)
	}
	if err := w.ReclaimIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	if after := w.DiskBytes(); after > before/2 {
		t.Fatalf("%d MiB on disk right after deleting everything (%d MiB before)", after>>20, before>>20)
	}
}

// The WAL's disk follows what is unflushed: over hours of appends, each
// hour deleted half-way through the next (a time bucket and its flush),
// the log's files never take more than twice the bytes not yet deleted,
// sampled after every append and deletion, with the default file size and
// no reclaim loop: ReclaimIfDue after each deletion, as the flusher calls
// it, keeps the bound.
func TestDiskFollowsUnflushed(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{ReclaimInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// An hour of 100 hosts' rows: 36 entries of 1,000 rows at about 190
	// bytes a row.
	payload := make([]byte, 190_000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	const perHour = 36
	var prev, cur []uint64
	var unflushed int64
	worst := 0.0
	for h := range 8 {
		for i := range perHour {
			seq, err := w.Append(ctx, [][]byte{payload})
			if err != nil {
				t.Fatal(err)
			}
			cur = append(cur, seq)
			unflushed += int64(len(payload))
			if i == perHour/2 && len(prev) > 0 {
				if err := w.Delete(ctx, prev); err != nil {
					t.Fatal(err)
				}
				if err := w.ReclaimIfDue(ctx); err != nil {
					t.Fatal(err)
				}
				unflushed -= int64(len(prev)) * int64(len(payload))
				prev = nil
			}
			if h == 0 {
				continue // nothing deleted yet: the first file fills
			}
			r := float64(w.DiskBytes()) / float64(unflushed)
			worst = max(worst, r)
			if r > 2 {
				t.Fatalf("hour %d, entry %d: %.1f MiB on disk for %.1f MiB unflushed (%.2f×)", h, i,
					float64(w.DiskBytes())/(1<<20), float64(unflushed)/(1<<20), r)
			}
		}
		prev, cur = cur, nil
	}
	t.Logf("disk/unflushed at most %.2f", worst)
}

// A log written with larger value-log files (and so larger chunks, as
// before 4 MiB files were the default) opens with today's: an entry's
// chunks are counted from its keys, not from a chunk size.
func TestChunksOfLargerFilesReadBack(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{ReclaimInterval: -1, ValueLogFileBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	large := make([]byte, 6<<20) // two chunks of 16 MiB files' 4 MiB
	for i := range large {
		large[i] = byte(i * 13)
	}
	seq, err := w.Append(ctx, [][]byte{large})
	if err != nil {
		t.Fatal(err)
	}
	w = reopen(t, w, Options{ReclaimInterval: -1})
	if w.chunkBytes != 1<<20 {
		t.Fatalf("reopened with %d-byte chunks, want the default 1 MiB", w.chunkBytes)
	}
	if l := w.live[seq]; l.chunks != 2 {
		t.Fatalf("entry in %d chunks after reopening, want the 2 it was written in", l.chunks)
	}
	var back []byte
	if err := w.Replay(ctx, func(_ uint64, p []byte) error { back = append([]byte(nil), p...); return nil }, nil); err != nil || !bytes.Equal(back, large) {
		t.Fatalf("entry does not read back as written (%d bytes, %v)", len(back), err)
	}
	if err := w.Delete(ctx, []uint64{seq}); err != nil {
		t.Fatal(err)
	}
	w = reopen(t, w, Options{ReclaimInterval: -1})
	if got, _ := replayAll(t, w); len(got) != 0 {
		t.Fatalf("deleted entry replayed: %v", got)
	}
}
