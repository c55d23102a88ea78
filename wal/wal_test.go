package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	garble(t, w, 3)
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

// A log whose directory is removed under it still closes: badger retries
// its memtable flush for as long as the directory is gone, and Close
// gives up with an error instead of waiting forever (a server could not
// stop).
func TestCloseAfterDirectoryRemoved(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Open(ctx, dir, Options{ReclaimInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, [][]byte{[]byte("unflushed")}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "directory was removed") {
			t.Fatalf("Close: %v, want the removed directory named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return after the log's directory was removed")
	}
}
