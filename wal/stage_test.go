package wal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

func frames(ss ...string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, append(make([]byte, HeaderRoom), s...))
	}
	return out
}

// A stage's parts become entries only at Commit, numbered then: an Append
// made while the stage was open comes first. Aborted stages and stages cut
// short by a crash are never replayed, also when their ids are seen again.
func TestStage(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, w *WAL)
		want string // replay after reopening
		next uint64
	}{
		{"commit", func(t *testing.T, w *WAL) {
			st := w.Stage()
			if err := st.Write(ctx, frames("p0", "p1")); err != nil {
				t.Fatal(err)
			}
			if s, err := w.Append(ctx, [][]byte{[]byte("a")}); err != nil || s != 1 {
				t.Fatalf("append while staging: %d %v", s, err)
			}
			if err := st.Write(ctx, frames("p2")); err != nil {
				t.Fatal(err)
			}
			if first, err := st.Commit(ctx); err != nil || first != 2 {
				t.Fatalf("commit: %d %v", first, err)
			}
			if got, _ := replayAll(t, w); fmt.Sprint(got) != "[1=a 2=p0 3=p1 4=p2]" {
				t.Fatalf("replay before reopen: %v", got)
			}
		}, "[1=a 2=p0 3=p1 4=p2]", 5},
		{"abort", func(t *testing.T, w *WAL) {
			st := w.Stage()
			if err := st.Write(ctx, frames("p0", "p1")); err != nil {
				t.Fatal(err)
			}
			st.Abort()
			if _, err := st.Commit(ctx); err != ErrStageEnded {
				t.Fatalf("commit after abort: %v", err)
			}
			if _, err := w.Append(ctx, [][]byte{[]byte("a")}); err != nil {
				t.Fatal(err)
			}
		}, "[1=a]", 2},
		{"crash before commit", func(t *testing.T, w *WAL) {
			if _, err := w.Append(ctx, [][]byte{[]byte("a")}); err != nil {
				t.Fatal(err)
			}
			if err := w.Stage().Write(ctx, frames("p0", "p1", "p2")); err != nil {
				t.Fatal(err)
			}
		}, "[1=a]", 2},
		{"empty commit", func(t *testing.T, w *WAL) {
			if first, err := w.Stage().Commit(ctx); err != nil || first != 0 {
				t.Fatalf("empty commit: %d %v", first, err)
			}
		}, "[]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tt.run(t, w)
			w = reopen(t, w, Options{})
			got, bad := replayAll(t, w)
			if fmt.Sprint(got) != tt.want || len(bad) != 0 || w.NextSeq() != tt.next {
				t.Fatalf("after reopen: replay %v, corrupt %v, next %d; want %s, next %d", got, bad, w.NextSeq(), tt.want, tt.next)
			}
			// A new stage never claims parts left in the log: one part
			// committed is one entry.
			st := w.Stage()
			if err := st.Write(ctx, frames("new")); err != nil {
				t.Fatal(err)
			}
			first, err := st.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w = reopen(t, w, Options{})
			got, _ = replayAll(t, w)
			want := tt.want[:len(tt.want)-1] + fmt.Sprintf(" %d=new]", first)
			if tt.want == "[]" {
				want = fmt.Sprintf("[%d=new]", first)
			}
			if fmt.Sprint(got) != want {
				t.Fatalf("after a new stage: %v, want %s", got, want)
			}
		})
	}
}

// A stage that spans segments keeps them while it is open, even when every
// entry in them is deleted, and its entries replay from all of them.
func TestStageAcrossSegments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, dir, Options{SegmentBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stage()
	for i := range 5 {
		if err := st.Write(ctx, frames(fmt.Sprintf("part-%d-%080d", i, 0))); err != nil {
			t.Fatal(err)
		}
		s, err := w.Append(ctx, [][]byte{[]byte(fmt.Sprintf("a%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, []uint64{s}); err != nil {
			t.Fatal(err)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
	if len(segs) < 5 {
		t.Fatalf("%d segments, want one per part at least", len(segs))
	}
	first, err := st.Commit(ctx)
	if err != nil || first != 6 {
		t.Fatalf("commit: %d %v", first, err)
	}
	w = reopen(t, w, Options{SegmentBytes: 100})
	got, bad := replayAll(t, w)
	if len(got) != 5 || len(bad) != 0 || got[0][:9] != "6=part-0-" || got[4][:10] != "10=part-4-" {
		t.Fatalf("replay %v, corrupt %v", got, bad)
	}
	// Deleting the first entries frees the segments of their parts; the
	// commit, in a later segment, then names parts that are gone for a
	// reason the tombstones give: no damage, and the rest replays.
	if err := w.Delete(ctx, []uint64{6, 7}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix)); len(left) >= len(segs) {
		t.Fatalf("%d segments before deleting, %d after", len(segs), len(left))
	}
	w = reopen(t, w, Options{SegmentBytes: 100})
	got, bad = replayAll(t, w)
	if len(got) != 3 || len(bad) != 0 || got[0][:9] != "8=part-2-" {
		t.Fatalf("after deleting two entries: replay %v, corrupt %v", got, bad)
	}
	// Deleting the entries frees every segment but the last.
	if err := w.Delete(ctx, []uint64{8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix)); len(segs) != 1 {
		t.Fatalf("%d segments left after deleting everything", len(segs))
	}
}

// A staged write one of whose parts is damaged is dropped whole, and
// reported once.
func TestStageWithDamagedPart(t *testing.T) {
	ctx := context.Background()
	w := openWithA(t)
	st := w.Stage()
	if err := st.Write(ctx, frames("p0", "p1", "p2")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	damage(t, w, 3, 9) // the header of the second part
	w = reopen(t, w, Options{})
	got, bad := replayAll(t, w)
	if fmt.Sprint(got) != "[1=a]" || len(bad) != 2 {
		t.Fatalf("replay %v, corrupt %v; want only 1=a, the damaged bytes and the dropped stage reported", got, bad)
	}
}
