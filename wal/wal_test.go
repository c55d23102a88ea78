package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func replayAll(t *testing.T, w *WAL) ([]string, []*CorruptionError) {
	t.Helper()
	var got []string
	var bad []*CorruptionError
	err := w.Replay(context.Background(), func(seq uint64, p []byte) error {
		got = append(got, fmt.Sprintf("%d=%s", seq, p))
		return nil
	}, func(ce *CorruptionError) { bad = append(bad, ce) })
	if err != nil {
		t.Fatal(err)
	}
	return got, bad
}

// reopen closes w and opens its directory again; the new WAL is closed
// when the test ends.
func reopen(t *testing.T, w *WAL, opts Options) *WAL {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := Open(context.Background(), w.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestAppendReplayDeleteAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.Append(ctx, [][]byte{[]byte("a"), []byte("b")})
	if err != nil || first != 1 {
		t.Fatalf("first append: seq %d, %v", first, err)
	}
	second, err := w.Append(ctx, [][]byte{[]byte("c")})
	if err != nil || second != 3 {
		t.Fatalf("second append: seq %d, %v", second, err)
	}
	if err := w.Delete(ctx, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.NextSeq(); got != 4 {
		t.Fatalf("next seq after reopen = %d, want 4", got)
	}
	if got, _ := replayAll(t, w); fmt.Sprint(got) != "[1=a 3=c]" {
		t.Fatalf("replay = %v", got)
	}
}

// Sequences never go back, also when every entry was deleted before a
// restart: a reused sequence would look already flushed.
func TestSequencesSurviveDeletingEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.Append(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, []uint64{first, first + 1, first + 2}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.NextSeq(); got != 4 {
		t.Fatalf("next sequence after deleting everything = %d, want 4", got)
	}
	if err := w.EnsureNextSeq(100); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if s, err := w.Append(ctx, [][]byte{[]byte("d")}); err != nil || s != 100 {
		t.Fatalf("append after EnsureNextSeq(100): %d %v", s, err)
	}
}

// Concurrent appends share fsyncs, get distinct sequences, and replay in order.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	w, err := Open(ctx, t.TempDir(), Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const writers, each = 32, 20
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				s, err := w.Append(ctx, [][]byte{[]byte("x"), []byte("y")})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seqs = append(seqs, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, s := range seqs {
		if s != uint64(1+2*i) {
			t.Fatalf("sequences %v are not consecutive pairs", seqs[:i+1])
		}
	}
	got, _ := replayAll(t, w)
	if len(got) != 2*writers*each {
		t.Fatalf("replayed %d entries, want %d", len(got), 2*writers*each)
	}
	fsyncs := testutil.ToFloat64(w.metrics.fsyncs)
	if fsyncs >= writers*each {
		t.Fatalf("%v fsyncs for %d appends: no group commit", fsyncs, writers*each)
	}
	t.Logf("%d appends, %v fsyncs", writers*each, fsyncs)
}

func TestAppendAfterCloseFails(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := w.Append(ctx, [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

// An entry whose checksum does not match is reported with its sequence,
// quarantined and skipped; the entries around it are replayed.
func TestCorruptEntryIsQuarantined(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"a", "b", "c"} {
		if _, err := w.Append(ctx, [][]byte{[]byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	// Garble entry 2's payload behind the WAL's back.
	damage(t, w, 2, headerSize)
	got, bad := replayAll(t, w)
	if fmt.Sprint(got) != "[1=a 3=c]" || len(bad) != 1 || bad[0].Seq != 2 {
		t.Fatalf("replay %v, corrupt %v", got, bad)
	}
	got, bad = replayAll(t, w)
	if fmt.Sprint(got) != "[1=a 3=c]" || len(bad) != 0 {
		t.Fatalf("second replay %v, corrupt %v: quarantined entry came back", got, bad)
	}
	if b, err := os.ReadFile(filepath.Join(w.dir, quarantineDir, fmt.Sprintf("%020d", 2))); err != nil || len(b) != 1 {
		t.Fatalf("quarantined entry: %q %v", b, err)
	}
	w.Close()
	w, err = Open(ctx, w.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=a 3=c]" || len(bad) != 0 {
		t.Fatalf("replay after reopen %v, corrupt %v: quarantined entry came back", got, bad)
	}
}

// A damaged header (whose length cannot be trusted) is reported with its
// segment and offset; the reader finds the next intact record and replays
// everything after the damage.
func TestDamagedHeaderIsSkipped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "bb", "c"} {
		if _, err := w.Append(ctx, [][]byte{[]byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	damage(t, w, 2, 9) // the length field
	at := w.live[2].off - headerSize
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, bad := replayAll(t, w)
	if fmt.Sprint(got) != "[1=a 3=c]" || len(bad) != 1 || bad[0].Seq != 0 || bad[0].Offset != at || bad[0].Segment != segmentName(1) {
		t.Fatalf("replay %v, corrupt %v (want offset %d)", got, bad, at)
	}
	if s, err := w.Append(ctx, [][]byte{[]byte("d")}); err != nil || s != 4 {
		t.Fatalf("append after damage: %d %v", s, err)
	}
}

// Writing moves on to a new segment file once one is full; segments are
// removed from the front once every entry in them is deleted, and the
// rest replays across them.
func TestSegmentsRotateAndDrop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	w, err := Open(ctx, dir, Options{SegmentBytes: 200, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 100)
	for i := 0; i < 10; i++ {
		if _, err := w.Append(ctx, [][]byte{payload}); err != nil {
			t.Fatal(err)
		}
	}
	segs := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
		return len(m)
	}
	if n := segs(); n < 4 {
		t.Fatalf("%d segments for 10 entries of 124 bytes in 200-byte segments", n)
	}
	first, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
	// Deleting entries of a later segment frees nothing: older ones are alive.
	if err := w.Delete(ctx, []uint64{9, 10}); err != nil {
		t.Fatal(err)
	}
	for _, f := range first {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a segment behind a live one was removed: %v", err)
		}
	}
	before := segs()
	if err := w.Delete(ctx, []uint64{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	after := segs()
	if after >= before {
		t.Fatalf("segments %d → %d: none removed after deleting the oldest entries", before, after)
	}
	if g := testutil.ToFloat64(w.metrics.segments); int(g) != after {
		t.Fatalf("segments gauge %v, files %d", g, after)
	}
	w = reopen(t, w, Options{SegmentBytes: 200})
	got, bad := replayAll(t, w)
	var seqs []string
	for _, g := range got {
		seqs = append(seqs, g[:strings.Index(g, "=")])
	}
	if fmt.Sprint(seqs) != "[6 7 8]" || len(bad) != 0 {
		t.Fatalf("replay %v, corrupt %v", seqs, bad)
	}
	if w.NextSeq() != 11 {
		t.Fatalf("next sequence %d, want 11", w.NextSeq())
	}
}

// A data directory from the badger WAL is converted on open: the same
// entries under the same sequences, quarantined ones kept aside, the next
// sequence kept, and badger's files gone.
func TestBadgerWALIsConverted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true))
	if err != nil {
		t.Fatal(err)
	}
	val := func(p string) []byte {
		v := binary.BigEndian.AppendUint32(nil, crc32Checksum([]byte(p)))
		return append(v, p...)
	}
	key := func(prefix byte, seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefix}, seq) }
	err = db.Update(func(txn *badger.Txn) error {
		for _, kv := range []struct {
			k, v []byte
		}{
			{key('e', 3), val("three")},
			{key('e', 5), val("five")},
			{key('e', 6), []byte("\x00\x00\x00\x00bad")},
			{key('q', 4), val("four")},
			{[]byte("m/next"), binary.BigEndian.AppendUint64(nil, 9)},
		} {
			if err := txn.Set(kv.k, kv.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, bad := replayAll(t, w)
	if fmt.Sprint(got) != "[3=three 5=five]" || len(bad) != 0 || w.NextSeq() != 9 {
		t.Fatalf("converted replay %v, corrupt %v, next %d", got, bad, w.NextSeq())
	}
	w.Close()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "["+segmentName(1)+" "+quarantineDir+"]" {
		t.Fatalf("files after conversion: %v", names)
	}
	q, _ := os.ReadDir(filepath.Join(dir, quarantineDir))
	if len(q) != 2 {
		t.Fatalf("quarantined %d entries, want 2 (the bad one and the one badger had quarantined)", len(q))
	}
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, _ := replayAll(t, w); fmt.Sprint(got) != "[3=three 5=five]" {
		t.Fatalf("replay after second open %v", got)
	}
	if s, err := w.Append(ctx, [][]byte{[]byte("nine")}); err != nil || s != 9 {
		t.Fatalf("append after conversion: %d %v", s, err)
	}
}

// The entries of one Append land together or not at all: a write cut
// after its first entries replays none of them.
func TestTornMultiEntryAppend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, [][]byte{[]byte("c"), []byte("d"), []byte("e")}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	seg := filepath.Join(dir, segmentName(1))
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()-3); err != nil { // into entry 5
		t.Fatal(err)
	}
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=a 2=b]" || len(bad) != 0 {
		t.Fatalf("replay %v, corrupt %v; want the first append only", got, bad)
	}
	if s, err := w.Append(ctx, [][]byte{[]byte("f")}); err != nil || s != 3 {
		t.Fatalf("append after the cut: %d %v", s, err)
	}
}

// A crash can leave the last write of the log torn. The WAL opens, cuts
// the torn tail and keeps every intact entry before it.
func TestTornTailIsDropped(t *testing.T) {
	ctx := context.Background()
	for _, cut := range []int{1, 3, headerSize, headerSize + 5} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				if _, err := w.Append(ctx, [][]byte{[]byte(fmt.Sprintf("entry-%d", i))}); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
			if len(segs) != 1 {
				t.Fatalf("segments %v", segs)
			}
			fi, err := os.Stat(segs[0])
			if err != nil {
				t.Fatal(err)
			}
			// The last record is a header and 7 bytes of payload.
			if err := os.Truncate(segs[0], fi.Size()-int64(cut)); err != nil {
				t.Fatal(err)
			}
			w2, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatalf("open after torn tail: %v", err)
			}
			defer w2.Close()
			got, bad := replayAll(t, w2)
			if len(got) != 9 || got[8] != "9=entry-8" || len(bad) != 0 {
				t.Fatalf("replay after torn tail: %v, corrupt %v", got, bad)
			}
			// New appends continue after the surviving entries, and replay.
			if s, err := w2.Append(ctx, [][]byte{[]byte("new")}); err != nil || s != 10 {
				t.Fatalf("append after recovery: %d %v", s, err)
			}
			w2.Close()
			w3, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w3.Close()
			if got, bad := replayAll(t, w3); len(got) != 10 || got[9] != "10=new" || len(bad) != 0 {
				t.Fatalf("replay after recovery and append: %v, corrupt %v", got, bad)
			}
		})
	}
}

// damage flips a byte of entry seq's record, at off from the start of its
// header (0 damages the header checksum, headerSize the payload).
func damage(t *testing.T, w *WAL, seq uint64, off int64) {
	t.Helper()
	w.mu.Lock()
	loc, ok := w.live[seq]
	w.mu.Unlock()
	if !ok {
		t.Fatalf("entry %d is not in the log", seq)
	}
	f, err := os.OpenFile(loc.seg.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	at := loc.off - headerSize + off
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCorruptionErrorUnwraps(t *testing.T) {
	cause := errors.New("bad crc")
	var err error = &CorruptionError{Dir: "d", Seq: 7, Err: cause}
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Seq != 7 || !errors.Is(err, cause) {
		t.Fatalf("corruption error does not carry its seq and cause: %v", err)
	}
}

// Framed and plain appends read back the same: the frame's reserved room
// becomes the checksum header, and a damaged framed entry is caught.
func TestAppendFramed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(s string) []byte { return append(make([]byte, HeaderRoom), s...) }
	if _, err := w.Append(ctx, [][]byte{[]byte("plain")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFramed(ctx, [][]byte{frame("x"), frame("framed")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFramed(ctx, [][]byte{{1}}); err == nil {
		t.Fatal("a frame without room for the header was taken")
	}
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=plain 2=x 3=framed]" || len(bad) != 0 {
		t.Fatalf("replay = %v, corrupt %v", got, bad)
	}
	// Flip a payload byte of entry 3 behind the WAL's back.
	damage(t, w, 3, headerSize+2)
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=plain 2=x]" || len(bad) != 1 || bad[0].Seq != 3 {
		t.Fatalf("after damage: replay = %v, corrupt %v", got, bad)
	}
	w.Close()
}

// openWithA opens a WAL in a new directory and appends entry 1 = "a"; it
// is closed when the test ends.
func openWithA(t *testing.T) *WAL {
	t.Helper()
	w, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if _, err := w.Append(context.Background(), [][]byte{[]byte("a")}); err != nil {
		t.Fatal(err)
	}
	return w
}

// Entries appended after Open replay with those Open found.
func TestReplayAfterAppendsSinceOpen(t *testing.T) {
	ctx := context.Background()
	w := openWithA(t)
	w = reopen(t, w, Options{})
	if _, err := w.Append(ctx, [][]byte{[]byte("b"), []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=a 2=b 3=c]" || len(bad) != 0 {
		t.Fatalf("replay %v, corrupt %v", got, bad)
	}
}

// A sequence found twice at Open (here, a segment copied under a later
// name) is counted once, in the segment that holds the copy replayed: its
// tombstone then frees the earlier segment, which is removed.
func TestDuplicateSequenceIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, [][]byte{[]byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, segmentName(1))
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(2)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, _ := replayAll(t, w); fmt.Sprint(got) != "[1=a]" {
		t.Fatalf("replay = %v", got)
	}
	if err := w.Delete(ctx, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the first segment, whose only entry is deleted, is still there: %v", err)
	}
}

// TestGapsOfDeletedSegments: a segment deleted or emptied from the middle
// of the log leaves sequences no segment holds; Open reports them.
func TestGapsOfDeletedSegments(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	w, err := Open(ctx, dir, Options{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := w.Append(ctx, [][]byte{make([]byte, 200)}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 4 {
		t.Fatalf("%d segments, %v", len(segs), err)
	}
	w, err = Open(ctx, dir, Options{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if g := w.Gaps(); len(g) != 0 {
		t.Fatalf("gaps in an intact log: %v", g)
	}
	w.Close()
	// Delete the second segment, empty the third.
	os.Remove(segs[1].path)
	os.Truncate(segs[2].path, 0)
	w, err = Open(ctx, dir, Options{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := w.Gaps()
	if len(g) != 2 || g[0].First != segs[1].first || g[0].Last != segs[2].first-1 || g[1].First != segs[2].first || g[1].Last != segs[3].first-1 {
		t.Fatalf("gaps %+v; want %d..%d and %d..%d", g, segs[1].first, segs[2].first-1, segs[2].first, segs[3].first-1)
	}
}
