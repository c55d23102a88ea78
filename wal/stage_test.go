package wal

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
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
		{"crash after a batch was written", func(t *testing.T, w *WAL) {
			if _, err := w.Append(ctx, [][]byte{[]byte("a")}); err != nil {
				t.Fatal(err)
			}
			st := w.Stage()
			big := string(make([]byte, stageBatchBytes/2))
			if err := st.Write(ctx, frames(big, big, big)); err != nil {
				t.Fatal(err)
			}
			if err := st.wait(); err != nil || len(st.parts) != 3 {
				t.Fatalf("batch in flight: %d parts written, %v", len(st.parts), err)
			}
		}, "[1=a]", 2},
		{"commit of several batches", func(t *testing.T, w *WAL) {
			st := w.Stage()
			big := string(make([]byte, stageBatchBytes/3))
			for range 4 {
				if err := st.Write(ctx, frames(big)); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Write(ctx, frames("last")); err != nil {
				t.Fatal(err)
			}
			if first, err := st.Commit(ctx); err != nil || first != 1 {
				t.Fatalf("commit: %d %v", first, err)
			}
			if err := w.Delete(ctx, []uint64{1, 2, 3, 4}); err != nil {
				t.Fatal(err)
			}
		}, "[5=last]", 6},
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

// A stage reuses the buffers of a written batch for the next parts: every
// part of a stage of several batches, each of its own bytes and written
// from one frame the caller reuses, comes back as it was written.
func TestStageReusesBuffersSafely(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stage()
	const parts = 10
	size := stageBatchBytes / 3
	frame := make([]byte, HeaderRoom+size)
	for i := range parts {
		// Sizes vary a little, as a COPY's parts do.
		f := frame[:HeaderRoom+size-i*7]
		for j := HeaderRoom; j < len(f); j++ {
			f[j] = byte('a' + i)
		}
		if err := st.Write(ctx, [][]byte{f}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := st.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w = reopen(t, w, Options{})
	n := 0
	err = w.Replay(ctx, func(seq uint64, p []byte) error {
		i := int(seq - first)
		if want := bytes.Repeat([]byte{byte('a' + i)}, size-i*7); !bytes.Equal(p, want) {
			t.Errorf("entry %d: %d bytes starting %q, want %d bytes of %q", seq, len(p), p[:min(len(p), 4)], len(want), want[0])
		}
		n++
		return nil
	}, func(ce *CorruptionError) { t.Errorf("corrupt: %v", ce) })
	if err != nil || n != parts {
		t.Fatalf("replayed %d of %d parts: %v", n, parts, err)
	}
}

// Stages one after another (as a bulk loader's COPYs are) reuse the copies
// the earlier ones left, committed or aborted: the committed parts come
// back as written, and a later stage copies its parts into memory it does
// not allocate.
func TestStagesShareBuffers(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const parts = 6
	size := stageBatchBytes / 3
	frame := make([]byte, HeaderRoom+size)
	type committed struct {
		first uint64
		stage int
	}
	var done []committed
	var allocated uint64
	// A collection empties sync.Pools: none may run while this counts.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for s, commit := range []bool{true, false, true, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st := w.Stage()
		for i := range parts {
			f := frame[:HeaderRoom+size-i*7]
			for j := HeaderRoom; j < len(f); j++ {
				f[j] = byte('a' + s*parts + i)
			}
			if err := st.Write(ctx, [][]byte{f}); err != nil {
				t.Fatal(err)
			}
		}
		if !commit {
			st.Abort()
			continue
		}
		first, err := st.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated = after.TotalAlloc - before.TotalAlloc
		done = append(done, committed{first, s})
	}
	// The last stage copies 6 parts of 2.8 MB into buffers the earlier
	// ones left; what it allocates is badger's (it encodes each write
	// into a buffer of its own: about three parts' worth here, since a
	// stage's parts go into transactions of one value-log file each; one
	// make test run went 1% past two). Copies of the parts would add all
	// six.
	if allocated > uint64(parts*size*3/4) {
		t.Errorf("the last stage allocated %d bytes; its parts are %d bytes", allocated, parts*size)
	}
	w = reopen(t, w, Options{})
	n := 0
	err = w.Replay(ctx, func(seq uint64, p []byte) error {
		s, i := -1, 0
		for _, c := range done {
			if seq >= c.first && seq < c.first+parts {
				s, i = c.stage, int(seq-c.first)
			}
		}
		if s < 0 {
			t.Fatalf("entry %d is no committed stage's", seq)
		}
		want := bytes.Repeat([]byte{byte('a' + s*parts + i)}, size-i*7)
		if !bytes.Equal(p, want) {
			t.Errorf("entry %d: %d bytes starting %q, want %d bytes of %q", seq, len(p), p[:min(len(p), 4)], len(want), want[0])
		}
		n++
		return nil
	}, func(ce *CorruptionError) { t.Errorf("corrupt: %v", ce) })
	if err != nil || n != 3*parts {
		t.Fatalf("replayed %d of %d parts: %v", n, 3*parts, err)
	}
}
