// Package fault injects failures at named points of tsdb's write path, so
// that tests can crash the real binary between "Parquet written", "Delta
// commit written" and "WAL entries deleted", or make a flush fail or stall.
// It is switched on only by the TSDB_FAULTS environment variable (see
// Parse); an Injector that is nil does nothing.
package fault

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// Parse reads a spec such as
//
//	flush.after-commit=crash,flush.commit=error:3,flush.write=delay:500ms,flush.after-parquet=crash@2
//
// point=action[:count|:duration][@skip]. A point may name one table:
// flush.commit/cpu. An empty spec returns nil (no faults).
func Parse(spec string) (*Injector, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	in := &Injector{rules: map[string]*rule{}}
	for _, part := range strings.Split(spec, ",") {
		name, act, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("fault %q: want point=action", part)
		}
		r := &rule{left: -1}
		if a, skip, ok := strings.Cut(act, "@"); ok {
			n, err := strconv.Atoi(skip)
			if err != nil {
				return nil, fmt.Errorf("fault %q: bad skip count", part)
			}
			act, r.skip = a, n
		}
		a, arg, hasArg := strings.Cut(act, ":")
		r.action = a
		switch a {
		case "crash":
			r.left = 1
		case "error":
			if hasArg {
				n, err := strconv.Atoi(arg)
				if err != nil {
					return nil, fmt.Errorf("fault %q: bad count", part)
				}
				r.left = n
			}
		case "delay":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return nil, fmt.Errorf("fault %q: bad duration", part)
			}
			r.delay = d
		default:
			return nil, fmt.Errorf("fault %q: unknown action %q (crash, error, delay)", part, a)
		}
		in.rules[name] = r
	}
	return in, nil
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
