package wal

import (
	"context"
	"errors"
	"testing"
)

// Badger caps a transaction (13,106 keys, or about 1.26 MB counting
// values under 1 KiB in full, with an 8 MiB memtable). Requests near or
// over the cap neither stop the WAL nor fail where they need no
// atomicity.
func TestTransactionSizeLimits(t *testing.T) {
	ctx := context.Background()
	small := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, HeaderRoom+size)
		}
		return out
	}
	tests := []struct {
		name string
		run  func(t *testing.T, w *WAL) int // entries expected live
	}{
		{"an append that fills the transaction", func(t *testing.T, w *WAL) int {
			n := 0
			for _, count := range []int{13105, 13104, 1100, 1200} {
				_, err := w.AppendFramed(ctx, small(count, 1100))
				var tl *TooLargeError
				switch {
				case err == nil:
					n += count
				case !errors.As(err, &tl):
					t.Fatalf("append of %d frames: %v, want success or a TooLargeError", count, err)
				}
			}
			// The WAL still takes writes.
			if _, err := w.Append(ctx, [][]byte{[]byte("after")}); err != nil {
				t.Fatalf("append after a large one: %v", err)
			}
			return n + 1
		}},
		{"a deletion of 20,000 entries", func(t *testing.T, w *WAL) int {
			first, err := w.AppendFramed(ctx, small(10000, 1))
			if err != nil {
				t.Fatal(err)
			}
			second, err := w.AppendFramed(ctx, small(10000, 1))
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for i := range uint64(10000) {
				seqs = append(seqs, first+i, second+i)
			}
			if err := w.Delete(ctx, seqs); err != nil {
				t.Fatalf("delete of 20,000 entries: %v", err)
			}
			return 0
		}},
		{"a COPY of 9,000 small parts", func(t *testing.T, w *WAL) int {
			st := w.Stage()
			for range 9 {
				if err := st.Write(ctx, small(1000, 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Commit(ctx); err != nil {
				t.Fatalf("commit of 9,000 parts: %v", err)
			}
			return 9000
		}},
		{"an aborted COPY of 20,000 parts", func(t *testing.T, w *WAL) int {
			st := w.Stage()
			for range 20 {
				if err := st.Write(ctx, small(1000, 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.wait(); err != nil {
				t.Fatal(err)
			}
			st.Abort()
			return 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Open(ctx, t.TempDir(), Options{ReclaimInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.run(t, w)
			w = reopen(t, w, Options{ReclaimInterval: -1})
			got, bad := replayAll(t, w)
			if len(got) != want || len(bad) != 0 {
				t.Fatalf("after reopen: %d entries, %d corrupt; want %d", len(got), len(bad), want)
			}
			// Nothing a crash would have to clean is left either.
			if n := len(w.commits); want == 0 && n != 0 {
				t.Fatalf("%d commit records left", n)
			}
		})
	}
}
