package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// gcDiscardRatio is the share of a value-log file that must be garbage
// before badger rewrites it. A WAL is deleted roughly in the order it was
// written, so most files turn wholly garbage and cost only their removal.
const gcDiscardRatio = 0.5

// reclaimLoop reclaims the disk space of deleted entries every interval,
// and as soon as a value-log file's worth was deleted, until ctx (the
// WAL's, cancelled by Close) ends.
func (w *WAL) reclaimLoop(ctx context.Context, interval time.Duration) {
	defer close(w.reclaimDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.reclaimNow:
		}
		if err := w.Reclaim(ctx); err != nil && ctx.Err() == nil {
			w.logger.Warn("wal: reclaiming disk space of deleted entries failed; retrying", "err", err)
		}
	}
}

// ReclaimIfDue reclaims now when a value-log file's worth of entries was
// deleted since the last reclaim, and returns once the space is back; a
// reclaim the loop is running is waited for. The flusher calls it after a
// flush's deletion, outside its table's locks: the WAL's disk then
// follows what is unflushed (at most twice it over a simulated day,
// TestDiskFollowsUnflushed) instead of lagging by the loop's interval.
func (w *WAL) ReclaimIfDue(ctx context.Context) error {
	w.reclaimMu.Lock()
	defer w.reclaimMu.Unlock()
	w.mu.Lock()
	due := w.deletedBytes >= w.vlogBytes
	w.mu.Unlock()
	if !due {
		return nil
	}
	return w.reclaim(ctx)
}

// Reclaim gives back the disk space of entries deleted since the last
// call. Badger learns that a value is garbage only when compaction meets
// its deletion, and its memtable, holding only keys and pointers, would
// take days of WAL traffic to fill and flush; so Reclaim flushes the
// memtable (through DropPrefix of a marker key, badger's only call that
// does), waits briefly for level 0 to be compacted, and runs value-log GC
// while it finds files worth rewriting.
func (w *WAL) Reclaim(ctx context.Context) error {
	w.reclaimMu.Lock()
	defer w.reclaimMu.Unlock()
	return w.reclaim(ctx)
}

// reclaim is Reclaim with reclaimMu held. What it could not finish stays
// counted, so that the next reclaim runs.
func (w *WAL) reclaim(ctx context.Context) (err error) {
	w.mu.Lock()
	deleted, closed := w.deletedBytes, w.closed
	w.deletedBytes = 0
	w.mu.Unlock()
	defer func() { w.metrics.diskBytes.Set(float64(w.diskUsage())) }()
	if deleted == 0 || closed {
		return nil
	}
	defer func() {
		if err != nil {
			w.mu.Lock()
			w.deletedBytes += deleted
			w.mu.Unlock()
		}
	}()
	if err := w.flushMemtable(); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if lv := w.db.Levels(); len(lv) == 0 || lv[0].NumTables == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	for ctx.Err() == nil {
		err := w.db.RunValueLogGC(gcDiscardRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wal: value-log GC: %w", err)
		}
		w.metrics.reclaimed.Inc()
	}
	return ctx.Err()
}

// flushMemtable writes badger's memtable to level 0. The commit loop
// waits meanwhile: DropPrefix refuses concurrent writes instead of
// queueing them.
func (w *WAL) flushMemtable() error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if err := w.db.Update(func(txn *badger.Txn) error { return txn.Set(flushMarkerKey, nil) }); err != nil {
		return fmt.Errorf("wal: flush memtable: %w", err)
	}
	if err := w.db.DropPrefix(flushMarkerKey); err != nil {
		return fmt.Errorf("wal: flush memtable: %w", err)
	}
	return nil
}

// diskUsage is the space the log's files take: allocated blocks, since
// badger's files are created sparse at their full size.
func (w *WAL) diskUsage() int64 {
	return DiskUsage(w.dir)
}

// DiskUsage returns the bytes allocated to the files in dir, without its
// subdirectories (the quarantine).
func DiskUsage(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
	}
	return n
}
