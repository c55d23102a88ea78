package slabs

import (
	"testing"
	"unsafe"
)

// Buffers are 64-byte aligned, zeroed and apart from each other, slabs
// start at a huge page boundary, a buffer too large for a slab gets its
// own, and Reallocate keeps the bytes.
func TestAllocator(t *testing.T) {
	var a Allocator
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	var prev []byte
	for i, size := range []int{1, 100, 4096, 1 << 20, 3 << 20, 64, SlabBytes} {
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
		if size > SlabBytes/4 && addr(b)%HugePageBytes != 0 {
			t.Errorf("a buffer of %d bytes at %#x, not on a huge page boundary", size, addr(b))
		}
		prev = b
	}
	if addr(a.slab)%HugePageBytes != 0 {
		t.Errorf("slab at %#x, not on a huge page boundary", addr(a.slab))
	}
	// One slab for the small buffers, one each for 3 MiB and SlabBytes
	// (1 MiB fits the shared one).
	if n := a.Slabs(); n != 3 {
		t.Errorf("%d slabs, want 3", n)
	}
	b := a.Allocate(10)
	copy(b, "0123456789")
	if got := string(a.Reallocate(5000, b)[:10]); got != "0123456789" {
		t.Errorf("reallocated: %q", got)
	}
}
