package wal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

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
	var got []string
	if err := w.Replay(ctx, func(seq uint64, p []byte) error {
		got = append(got, fmt.Sprintf("%d=%s", seq, p))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "[1=a 3=c]"; fmt.Sprint(got) != want {
		t.Fatalf("replay = %v, want %v", got, want)
	}
}

func TestConcurrentAppendsGetDistinctSequences(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const writers, each = 8, 20
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				s, err := w.Append(ctx, [][]byte{[]byte("x")})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[s] {
					t.Errorf("sequence %d handed out twice", s)
				}
				seen[s] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	n := 0
	var last uint64
	if err := w.Replay(ctx, func(seq uint64, p []byte) error {
		if seq <= last {
			t.Errorf("replay out of order: %d after %d", seq, last)
		}
		last = seq
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("replayed %d entries, want %d", n, writers*each)
	}
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
