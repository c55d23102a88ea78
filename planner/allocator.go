package planner

// The engine's allocator. DuckDB's Linux builds allocate through their
// own jemalloc, configured to hand memory it no longer uses back to the
// kernel after about a second (its dirty and muzzy decay). A query that
// streams a large result frees and allocates a chunk's vectors thousands of
// times a second, so with a one-second decay jemalloc keeps giving pages
// back (madvise, which interrupts every other core to flush its TLB) and
// faulting them in again, a page at a time. On the project's machine a
// page fault costs 10-15 µs. Measured on high-cpu-all at 1,000 hosts
// (460,714 rows of 21 columns, compacted files): 740 ms of server CPU a
// statement with the one-second decay, 550 ms with five seconds, 540 ms
// with ten. Five seconds is the decay later DuckDB releases chose
// themselves; the memory it keeps is what a statement used in the last
// few seconds, which the engine's memory_limit already bounds.

/*
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>

// duckdb_je_mallctl is jemalloc's mallctl inside libduckdb; weak, so that a
// libduckdb built without jemalloc links and the tuning is skipped.
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

static int tsdb_je_present(void) { return duckdb_je_mallctl != NULL; }

static int tsdb_je_set_ssize(const char *name, ssize_t v) {
	return duckdb_je_mallctl(name, NULL, NULL, &v, sizeof(v));
}

static int tsdb_je_get_ssize(const char *name, ssize_t *v) {
	size_t n = sizeof(*v);
	return duckdb_je_mallctl(name, v, &n, NULL, 0);
}

static int tsdb_je_get_uint(const char *name, unsigned *v) {
	size_t n = sizeof(*v);
	return duckdb_je_mallctl(name, v, &n, NULL, 0);
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// engineAllocatorDecay is how long the engine's allocator keeps memory it
// freed before giving it back to the kernel (see the comment above).
const engineAllocatorDecay = 5 * time.Second

// setAllocatorDecay sets the decay of the engine's jemalloc: the default of
// arenas made from now on, and that of every arena that exists. ok is false
// when libduckdb has no jemalloc (nothing to tune).
func setAllocatorDecay(d time.Duration) (ok bool, err error) {
	if C.tsdb_je_present() == 0 {
		return false, nil
	}
	ms := C.ssize_t(d.Milliseconds())
	set := func(name string) error {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		if rc := C.tsdb_je_set_ssize(cs, ms); rc != 0 {
			return fmt.Errorf("planner: engine allocator %s: mallctl error %d", name, int(rc))
		}
		return nil
	}
	for _, name := range []string{"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"} {
		if err := set(name); err != nil {
			return true, err
		}
	}
	n, err := allocatorArenas()
	if err != nil {
		return true, err
	}
	for i := range n {
		for _, kind := range []string{"dirty", "muzzy"} {
			// An arena no thread has used yet does not exist (EFAULT): it
			// takes the default set above when it is made.
			_ = set(fmt.Sprintf("arena.%d.%s_decay_ms", i, kind))
		}
	}
	return true, nil
}

// allocatorArenas is how many arenas the engine's jemalloc may have.
func allocatorArenas() (int, error) {
	cs := C.CString("arenas.narenas")
	defer C.free(unsafe.Pointer(cs))
	var n C.unsigned
	if rc := C.tsdb_je_get_uint(cs, &n); rc != 0 {
		return 0, fmt.Errorf("planner: engine allocator arenas.narenas: mallctl error %d", int(rc))
	}
	return int(n), nil
}

// allocatorDecay reads a decay setting of the engine's jemalloc (such as
// "arenas.dirty_decay_ms" or "arena.0.muzzy_decay_ms").
func allocatorDecay(name string) (time.Duration, error) {
	if C.tsdb_je_present() == 0 {
		return 0, fmt.Errorf("planner: engine allocator: no jemalloc")
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var v C.ssize_t
	if rc := C.tsdb_je_get_ssize(cs, &v); rc != 0 {
		return 0, fmt.Errorf("planner: engine allocator %s: mallctl error %d", name, int(rc))
	}
	return time.Duration(v) * time.Millisecond, nil
}
