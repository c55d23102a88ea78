package ingest

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// compressBuffers is the Arrow allocator of the buffers Arrow's IPC writer
// compresses a WAL entry's columns into. The writer copies them into the
// entry's frame and frees them before Write returns, so they can be
// reused at once. Fresh ones would each be new memory until the
// collector next runs, and while a load grows the heap the collector runs
// seldom: a COPY of 8.64M rows faulted in 500 MB more (127,000 pages,
// each 10-15 µs on the project's machine) with the Go allocator's.
//
// Buffers of at least compressBufMin bytes are kept by power-of-two size
// class; smaller ones are the Go allocator's. Memory handed out is not
// zeroed: the writer writes every byte it keeps (its length prefix, then
// the compressed or the plain bytes) and cuts the buffer to that.
type compressBuffers struct {
	pools [64]sync.Pool // by log2 of the capacity; holding *[]byte
}

// compressBufMin is the smallest buffer compressBuffers recycles. A COPY
// part is about a MiB of input, so a column's buffer is tens of KiB.
const compressBufMin = 4 << 10

var _ memory.Allocator = (*compressBuffers)(nil)

// class is the size class of a buffer of n bytes: n rounded up to a power
// of two, as its log2.
func bufClass(n int) int { return bits.Len(uint(n - 1)) }

// Allocate returns a buffer of size bytes.
func (a *compressBuffers) Allocate(size int) []byte {
	if size < compressBufMin {
		return make([]byte, size)
	}
	c := bufClass(size)
	if p, _ := a.pools[c].Get().(*[]byte); p != nil {
		return (*p)[:size]
	}
	return make([]byte, size, 1<<c)
}

// Reallocate returns a buffer of size bytes holding b's bytes (as far as
// they fit), and frees b when it is not that buffer.
func (a *compressBuffers) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free keeps b for reuse when it is one of this allocator's size classes.
func (a *compressBuffers) Free(b []byte) {
	c := cap(b)
	if c < compressBufMin || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	a.pools[bufClass(c)].Put(&b)
}
