package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// Buffers from slabs are 64-byte aligned, zeroed, apart from each other,
// and a slab starts at a huge page boundary; a buffer too large for a
// slab gets its own; Reallocate keeps the bytes.
func TestCopySlabs(t *testing.T) {
	var a copySlabs
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	var prev []byte
	for i, size := range []int{1, 100, 4096, 1 << 20, 3 << 20, 64} {
		b := a.Allocate(size)
		if len(b) != size || addr(b)%64 != 0 {
			t.Fatalf("allocation %d of %d bytes: len %d, address %#x", i, size, len(b), addr(b))
		}
		for j, c := range b {
			if c != 0 {
				t.Fatalf("allocation %d: byte %d is %d", i, j, c)
			}
		}
		for j := range b {
			b[j] = 0xff
		}
		if prev != nil && prev[len(prev)-1] != 0xff {
			t.Fatalf("allocation %d overwrote the one before", i)
		}
		prev = b
	}
	if addr(a.slab)%hugePageBytes != 0 {
		t.Errorf("slab at %#x, not on a huge page boundary", addr(a.slab))
	}
	if big := a.Allocate(copySlabBytes); addr(big)%hugePageBytes != 0 || len(big) != copySlabBytes {
		t.Errorf("a slab-sized buffer at %#x, %d bytes", addr(big), len(big))
	}
	b := a.Allocate(10)
	copy(b, "0123456789")
	if got := string(a.Reallocate(5000, b)[:10]); got != "0123456789" {
		t.Errorf("reallocated: %q", got)
	}
}

// A COPY whose columns come from slabs gives what one with the Go
// allocator's buffers gives, NULLs (whose values builders leave unwritten)
// included, in every format.
func TestCopyIntoSlabs(t *testing.T) {
	e := newEnv(t)
	var csv strings.Builder
	for i := range 20_000 {
		host, v, n := fmt.Sprintf("host_%d", i%37), fmt.Sprint(float64(i)/8), fmt.Sprint(i)
		switch i % 5 {
		case 1:
			host = ""
		case 2:
			v = ""
		case 3:
			n = ""
		}
		fmt.Fprintf(&csv, "2026-01-01 %02d:%02d:%02d+00,%s,%s,%s\n", i/3600%24, i/60%60, i%60, host, v, n)
	}
	data := []byte(csv.String())
	for _, tc := range []struct {
		table string
		after int64
	}{{"plain", 1 << 40}, {"slabs", 1}} {
		e.must(fmt.Sprintf("CREATE TABLE %s (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT)", tc.table))
		ctx := context.Background()
		var ci *CopyIn
		if err := e.s.Execute(ctx, "COPY "+tc.table+" FROM STDIN WITH (FORMAT csv)", func(r *Result) error {
			ci = r.CopyIn
			return nil
		}); err != nil || ci == nil {
			t.Fatal(err)
		}
		ci.feed.chunkBytes, ci.feed.slabsAfter = 64<<10, tc.after
		for rest := data; len(rest) > 0; {
			k := min(32<<10, len(rest))
			if err := ci.Write(append([]byte(nil), rest[:k]...)); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if n, err := ci.Finish(ctx); err != nil || n != 20_000 {
			t.Fatalf("%s: COPY %d rows, %v", tc.table, n, err)
		}
		if tc.after == 1 && ci.feed.slabs.slab == nil {
			t.Fatal("the COPY did not use slabs")
		}
	}
	q := "SELECT count(*), count(host), count(v), count(n), sum(v), sum(n), string_agg(DISTINCT host, ',' ORDER BY host) FROM %s"
	plain, slabs := e.rows(fmt.Sprintf(q, "plain")), e.rows(fmt.Sprintf(q, "slabs"))
	if plain != slabs || !strings.HasPrefix(plain, "20000|16000|16000|16000|") {
		t.Fatalf("plain %q, slabs %q", plain, slabs)
	}
	diff := e.rows("SELECT count(*) FROM ((SELECT * FROM plain EXCEPT ALL SELECT * FROM slabs) UNION ALL (SELECT * FROM slabs EXCEPT ALL SELECT * FROM plain)) d")
	if diff != "0" {
		t.Fatalf("%s rows differ", diff)
	}
}
