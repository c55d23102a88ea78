// Package fault injects failures at named points of tsdb's write path, so
// that tests can crash the real binary between "Parquet written", "Delta
// commit written" and "WAL entries deleted", or make a flush fail or stall.
// Injection exists in test builds only (build tag faults: make test builds
// bin/tsdb-faults for the tests that need it); in the shipped binary Parse
// refuses every spec, so no Injector exists, and a nil Injector does
// nothing.
package fault

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Points of the write path.
const (
	FlushWrite        = "flush.write"          // before a bucket's Parquet file is written
	FlushAfterParquet = "flush.after-parquet"  // Parquet durable, Delta commit not yet written
	FlushCommit       = "flush.commit"         // before the Delta commit
	FlushAfterCommit  = "flush.after-commit"   // commit durable, MemBuffer and WAL untouched
	FlushAfterWALDrop = "flush.after-wal-drop" // WAL entries deleted

	CompactAfterWrite  = "compact.after-write"  // merged file durable, its commit not yet written
	CompactAfterCommit = "compact.after-commit" // merge committed, not yet published to readers

	TxCommit = "tx.commit" // before a transaction's rewrite of a table's files commits
)

// ErrInjected is returned by points whose action is "error".
var ErrInjected = errors.New("injected fault")

type rule struct {
	action string // crash, error, delay
	left   int    // hits that still trigger; <0 forever
	skip   int    // hits to let pass first
	delay  time.Duration
}

// Injector holds the rules of a test run. It is safe for concurrent use.
type Injector struct {
	mu    sync.Mutex
	rules map[string]*rule
}

// Hit passes point for table: it may kill the process with SIGKILL (as
// kill -9 would), return ErrInjected, or sleep.
func (in *Injector) Hit(point, table string) error {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	r := in.rules[point+"/"+table]
	if r == nil {
		r = in.rules[point]
	}
	if r == nil || r.left == 0 {
		in.mu.Unlock()
		return nil
	}
	if r.skip > 0 {
		r.skip--
		in.mu.Unlock()
		return nil
	}
	if r.left > 0 {
		r.left--
	}
	action, delay := r.action, r.delay
	in.mu.Unlock()
	switch action {
	case "crash":
		fmt.Fprintf(os.Stderr, "fault: crashing at %s (table %s)\n", point, table)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; wait for it
	case "error":
		return fmt.Errorf("%s: %w", point, ErrInjected)
	case "delay":
		time.Sleep(delay)
	}
	return nil
}
