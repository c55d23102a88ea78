// Package slabs is an Arrow allocator that cuts buffers from large slabs
// of memory advised as transparent huge pages, for columns that are kept
// a long time once made: a COPY's rows and the rows a WAL replay brings
// back, which stay in the MemBuffer until their bucket is flushed.
//
// Such columns are memory the process has not touched before, and the
// first touch of every 4 KiB page faults: 10-15 µs each on the project's
// machine, a quarter of an 8.64M-row COPY's CPU. A fault on a huge page
// maps 2 MiB at once. Where the kernel gives huge pages only on request
// (transparent_hugepage=madvise) the slabs ask for them; where it gives
// them always or never, the advice changes nothing.
//
// A slab is ordinary Go memory: the buffers cut from it keep it alive,
// and the collector frees it when the last of them is gone. Nothing is
// freed or reused by hand, so a buffer is zeroed as make gives it (Arrow's
// builders leave the values of NULL rows unwritten) and stays valid for as
// long as anyone holds a slice of it. What that costs: a slab outlives its
// first buffers as long as its last ones, and the last slab is partly
// empty, so callers use slabs only for columns that come in bulk and live
// about as long as each other.
package slabs

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

const (
	// HugePageBytes is the size of a transparent huge page on amd64 and
	// arm64 with 4 KiB base pages.
	HugePageBytes = 2 << 20
	// SlabBytes is the size of a slab: four huge pages.
	SlabBytes = 8 << 20
)

// Allocator cuts Arrow buffers from slabs. Its zero value is ready; it is
// safe for concurrent use.
type Allocator struct {
	mu    sync.Mutex
	slab  []byte // the slab buffers are cut from
	off   int    // the next free byte of slab
	slabs int    // slabs made
}

var _ memory.Allocator = (*Allocator)(nil)

// Allocate returns size zeroed bytes, 64-byte aligned as Arrow wants.
func (a *Allocator) Allocate(size int) []byte {
	n := (size + 63) &^ 63
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > SlabBytes/4 {
		// A buffer this large is a slab of its own.
		a.slabs++
		return hugeSlab(n)[:size]
	}
	if a.off+n > len(a.slab) {
		a.slab, a.off = hugeSlab(SlabBytes), 0
		a.slabs++
	}
	b := a.slab[a.off : a.off+size : a.off+n]
	a.off += n
	return b
}

// Reallocate returns size bytes starting with b's.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

// Free does nothing: the collector frees a slab when no buffer of it is
// left.
func (a *Allocator) Free([]byte) {}

// Slabs is how many slabs the allocator has made.
func (a *Allocator) Slabs() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slabs
}

// hugeSlab returns n zeroed bytes starting at a huge page boundary,
// advised as huge pages. The bytes before the boundary are never touched,
// so they cost address space, not memory.
func hugeSlab(n int) []byte {
	raw := make([]byte, n+HugePageBytes)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	off := int((p+HugePageBytes-1)&^(HugePageBytes-1) - p)
	s := raw[off : off+n : off+n]
	// Best effort: an error (no huge page support) changes nothing else.
	_ = unix.Madvise(s, unix.MADV_HUGEPAGE)
	return s
}
