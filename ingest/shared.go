package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tsdb/delta"
	"tsdb/membuffer"
)

// Several tsdb processes may write to the same tables on shared storage,
// each with its own WAL. Each names its Delta txn actions with its own
// writer id: a txn says which of *this* WAL's entries a commit holds, and a
// second writer's bucket with the same time range must not look flushed
// because the first writer flushed its own rows of that range.

// writerIDFile holds the writer id in the data directory, beside the WAL
// whose entries the id's txns count.
const writerIDFile = "writer-id"

// loadWriterID reads the data directory's writer id, making one for a new
// directory. A directory from before writer ids (a WAL but no id file)
// keeps the unqualified appIds its tables already hold, so its replay
// still recognises what is flushed.
func loadWriterID(dataDir string) (string, error) {
	p := filepath.Join(dataDir, writerIDFile)
	b, err := os.ReadFile(p)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("ingest: read writer id: %w", err)
	}
	id := ""
	if _, err := os.Stat(filepath.Join(dataDir, "wal")); errors.Is(err, fs.ErrNotExist) {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return "", fmt.Errorf("ingest: writer id: %w", err)
		}
		id = hex.EncodeToString(r[:])
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("ingest: write writer id: %w", err)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("ingest: write writer id: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("ingest: write writer id: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("ingest: write writer id: %w", err)
	}
	return id, nil
}

// appPrefix starts every txn appId of this writer.
func (s *Store) appPrefix() string {
	if s.writer == "" {
		return "tsdb-"
	}
	return "tsdb-" + s.writer + "-"
}

// appID names the txn that records how far this writer's entries of one
// bucket are flushed.
func (s *Store) appID(k membuffer.Key) string {
	return fmt.Sprintf("%sbucket-%d-%d", s.appPrefix(), k.Start, k.End)
}

// dmlAppID names the txn that records this writer's newest DELETE/UPDATE
// applied to the files (so that replay does not apply it twice).
func (s *Store) dmlAppID() string { return s.appPrefix() + "dml" }

// undoneAppID names the txn that records the deletes entry whose rewrite
// of the table's files was taken back after its transaction failed
// (rewrite.revert): the dml txn, which only grows, still covers it.
func (s *Store) undoneAppID() string { return s.appPrefix() + "dml-undone" }

// rewriteLanded reports whether the table's files hold the rewrite of the
// deletes entry seq: the dml txn reached it and it was not taken back.
func (s *Store) rewriteLanded(snap *delta.Snapshot, seq uint64) bool {
	v, ok := snap.Txns[s.dmlAppID()]
	if !ok || uint64(v) < seq {
		return false
	}
	u, undone := snap.Txns[s.undoneAppID()]
	return !undone || uint64(u) != seq
}

// fileRowsLanded reports whether an UPDATE's new rows logged at seq (a
// kindFileRows entry) are in the table's files: the deletes entry after
// them landed. Once a rewrite after seq was taken back, they are kept for
// their deletes entry to decide (rewriteLanded), which ignores them when
// its rewrite landed.
func (s *Store) fileRowsLanded(snap *delta.Snapshot, seq uint64) bool {
	v, ok := snap.Txns[s.dmlAppID()]
	if !ok || uint64(v) < seq {
		return false
	}
	u, undone := snap.Txns[s.undoneAppID()]
	return !undone || uint64(u) < seq
}

// ownsAppID tells this writer's txns from other writers'.
func (s *Store) ownsAppID(id string) bool {
	if s.writer == "" {
		// Legacy ids have no writer part; another writer's id has one.
		return id == "tsdb-dml" || id == "tsdb-dml-undone" || strings.HasPrefix(id, "tsdb-bucket-")
	}
	return strings.HasPrefix(id, s.appPrefix())
}

// refresher is the service that reads other writers' commits and tables
// every RefreshInterval.
func (s *Store) refresher() periodic {
	every := s.opts.RefreshInterval
	if every == 0 {
		// Local directories too: another engine (Spark, delta-rs, a
		// VACUUM of theirs) may commit to a table tsdb serves. A round
		// costs a directory listing and one read per table.
		every = 2 * time.Second
	}
	return periodic{every: every, fn: func(ctx context.Context) {
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("reading other writers' commits failed; retrying", "err", err)
		}
	}}
}

// Refresh makes what other writers committed visible: new commits of known
// tables and tables created elsewhere.
func (s *Store) Refresh(ctx context.Context) error {
	names, err := s.root.Tables(ctx)
	if err != nil {
		return fmt.Errorf("ingest: refresh: %w", err)
	}
	var errs []error
	for _, name := range names {
		s.mu.RLock()
		ts, known := s.tables[name]
		skip := s.dropping[name]
		s.mu.RUnlock()
		if skip {
			continue
		}
		if !known {
			if s.Unavailable(name) != nil {
				continue // replaying its kept WAL entries needs a restart
			}
			if err := s.adoptTable(ctx, name); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := s.refreshTable(ctx, ts); err != nil {
			errs = append(errs, fmt.Errorf("ingest: refresh %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// refreshTable publishes a table's newer commits. It holds the flush lock:
// this writer's own commits are published by the flush or DML that made
// them, together with the release of the buffered rows they hold, and a
// refresh slipping in between would show those rows twice.
func (s *Store) refreshTable(ctx context.Context, ts *tableState) error {
	// Held by a transaction until it ends: the next refresh publishes.
	if !ts.flushMu.TryLock() {
		return nil
	}
	defer ts.flushMu.Unlock()
	if ts.isDropped() {
		return nil
	}
	snap, _, err := ts.delta.Poll(ctx)
	if ue := logDamage(ts.sch().Name, err); ue != nil {
		ts.mu.Lock()
		first := ts.logDamage == nil
		ts.logDamage = ue
		ts.mu.Unlock()
		if first {
			s.logger.Error("table unavailable: a newer commit of its Delta log cannot be read; other tables work", "table", ue.Table, "file", ue.File, "err", ue.Err)
			s.mu.Lock()
			s.updateDamageMetrics()
			s.mu.Unlock()
		}
		return err
	}
	if err != nil {
		return err
	}
	ts.mu.Lock()
	healed := ts.logDamage != nil
	ts.logDamage = nil
	if snap.Version > ts.published.Version {
		ts.publish(snap)
	}
	ts.mu.Unlock()
	if healed {
		s.logger.Info("table readable again: its Delta log reads whole", "table", ts.sch().Name)
		s.mu.Lock()
		s.updateDamageMetrics()
		s.mu.Unlock()
	}
	return nil
}

// adoptTable opens a table another writer created.
func (s *Store) adoptTable(ctx context.Context, name string) error {
	ts, err := s.openTable(ctx, name)
	if errors.Is(err, delta.ErrNotATable) {
		return nil // being created, or not a table
	}
	if ue := logDamage(name, err); ue != nil {
		s.mu.Lock()
		if _, ok := s.tables[name]; !ok && !s.dropping[name] {
			s.markUnavailable(ue)
		}
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: open table %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tables[name]; ok || s.dropping[name] {
		return nil
	}
	s.tables[name] = ts
	s.logger.Info("table created by another writer", "table", name, "version", ts.published.Version)
	return nil
}

// txnExpired is the txn expiry of this writer's tables (delta.TxnExpiry):
// a bucket's txn tells replay which of the bucket's WAL entries are
// flushed already, so it is needed only while such entries may still be
// in the WAL. Replay at start deletes every flushed entry, and each flush
// deletes its entries after its commit (settle records both): a settled
// txn of this writer's buckets can go, unless a WAL delete failed since
// the start (walDeleteFailed), and except the newest, which
// keeps the WAL's sequence above every flushed version (belt and braces
// with the WAL's own high-water mark). Other writers' txns and the DML
// txn stay.
func (s *Store) txnExpired(ts *tableState, app string, version int64, all map[string]int64) bool {
	prefix := s.appPrefix() + "bucket-"
	if !strings.HasPrefix(app, prefix) || s.walDeleteFailed.Load() {
		return false
	}
	// Settled: its flush deleted the entries it covers (or replay did).
	// A flush whose commit this checkpoint holds may not have yet.
	ts.settledMu.Lock()
	settled := ts.settled[app] >= version
	ts.settledMu.Unlock()
	if !settled {
		return false
	}
	for other, v := range all {
		if strings.HasPrefix(other, prefix) && (v > version || (v == version && other > app)) {
			return true // not the newest of this writer's buckets
		}
	}
	return false
}

// settle records that the WAL entries the given txns of the table (app →
// version; app IDs name buckets, not tables) cover are deleted: those
// txns may expire (txnExpired).
func (ts *tableState) settle(versions map[string]int64) {
	ts.settledMu.Lock()
	defer ts.settledMu.Unlock()
	if ts.settled == nil {
		ts.settled = map[string]int64{}
	}
	for app, v := range versions {
		ts.settled[app] = max(ts.settled[app], v)
	}
}
