package planner

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

// copySlabs is the Arrow allocator of a large COPY's column builders. The
// rows a COPY decodes stay in the MemBuffer until their bucket is flushed,
// so every byte of their columns is memory the process has not touched
// before, and a first touch costs a page fault per 4 KiB page: 10-15 µs
// each on the project's machine, a quarter of an 8.64M-row load's CPU. The
// buffers are carved from slabs of copySlabBytes, aligned to and advised
// as transparent huge pages, where the kernel allows them (madvise mode):
// one fault maps 2 MiB.
//
// A slab is ordinary Go memory: the buffers cut from it keep it alive,
// and it is collected when the last of them is. Nothing is freed or
// reused by hand, so a buffer is zeroed as make gives it (the builders
// leave the values of NULL rows unwritten) and a slice of it can be held
// for as long as anyone likes. What it costs: a slab outlives its
// first records as long as its last ones, and the last slab of a COPY is
// partly empty; so only COPYs of more than copySlabAfter bytes use slabs,
// and a small one keeps the Go allocator's exact buffers.
type copySlabs struct {
	mu   sync.Mutex
	slab []byte // the slab buffers are cut from
	off  int    // the next free byte of slab
}

const (
	// hugePageBytes is the size of a transparent huge page on amd64 and
	// arm64 (with 4 KiB base pages).
	hugePageBytes = 2 << 20
	// copySlabBytes is the size of a slab: four huge pages.
	copySlabBytes = 8 << 20
	// copySlabAfter is how many input bytes a COPY takes before its
	// columns go to slabs.
	copySlabAfter = 16 << 20
)

var _ memory.Allocator = (*copySlabs)(nil)

// Allocate returns size zeroed bytes, 64-byte aligned as Arrow wants.
func (a *copySlabs) Allocate(size int) []byte {
	n := (size + 63) &^ 63
	if n > copySlabBytes/4 {
		// A buffer this large is a slab of its own.
		return hugeSlab(n)[:size]
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.off+n > len(a.slab) {
		a.slab, a.off = hugeSlab(copySlabBytes), 0
	}
	b := a.slab[a.off : a.off+size : a.off+n]
	a.off += n
	return b
}

// Reallocate returns size bytes starting with b's.
func (a *copySlabs) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

// Free does nothing: the collector frees a slab when no buffer of it is
// left.
func (a *copySlabs) Free([]byte) {}

// hugeSlab returns n zeroed bytes starting at a huge page boundary,
// advised as huge pages. The bytes before the boundary are never touched,
// so they cost address space, not memory.
func hugeSlab(n int) []byte {
	raw := make([]byte, n+hugePageBytes)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	off := int((p+hugePageBytes-1)&^(hugePageBytes-1) - p)
	s := raw[off : off+n : off+n]
	// Best effort: without transparent huge pages (or with them always
	// on) this changes nothing.
	_ = unix.Madvise(s, unix.MADV_HUGEPAGE)
	return s
}
