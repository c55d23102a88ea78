package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/membuffer"
)

// flushLoop flushes buckets whose time window has passed and that had no
// writes for IdleFlush, until Close. Failed flushes are logged and retried on
// the next tick: their rows stay in the WAL and the MemBuffer.
func (s *Store) flushLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			now := s.opts.Now()
			nowMicros := now.UnixMicro()
			pick := func(b membuffer.BucketInfo) bool {
				return b.Key.End <= nowMicros && now.Sub(b.LastWrite) >= s.opts.IdleFlush
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-s.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if err := s.flushAll(ctx, pick); err != nil && ctx.Err() == nil {
				s.logger.Error("flush failed; will retry", "err", err)
			}
			cancel()
		}
	}
}

// Checkpoint flushes every buffered row of every table to Delta.
func (s *Store) Checkpoint(ctx context.Context) error {
	return s.flushAll(ctx, func(membuffer.BucketInfo) bool { return true })
}

func (s *Store) flushAll(ctx context.Context, pick func(membuffer.BucketInfo) bool) error {
	s.mu.RLock()
	states := make([]*tableState, 0, len(s.tables))
	for _, t := range s.tables {
		states = append(states, t)
	}
	s.mu.RUnlock()
	var errs []error
	for _, ts := range states {
		if err := s.flushTable(ctx, ts, pick); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushTable seals the picked buckets and flushes every sealed bucket of the
// table, oldest first. It stops at the first failure so that a bucket key's
// flushed WAL sequences stay a prefix (see sequencer).
func (s *Store) flushTable(ctx context.Context, ts *tableState, pick func(membuffer.BucketInfo) bool) error {
	ts.flushMu.Lock()
	defer ts.flushMu.Unlock()
	if ts.dropped {
		return nil
	}
	name := ts.schema.Name
	for _, sb := range s.buf.Seal(name, pick) {
		if err := s.flushBucket(ctx, ts, sb); err != nil {
			s.metrics.flushErrors.Inc()
			return fmt.Errorf("flush %s bucket %d..%d: %w", name, sb.Key.Start, sb.Key.End, err)
		}
	}
	return nil
}

// flushBucket writes one sealed bucket as one time-sorted Parquet file and
// commits it together with a txn action (appId per bucket, version = the
// largest WAL sequence in it). Only after the commit is durable are the
// bucket's rows released from memory and its WAL entries deleted.
func (s *Store) flushBucket(ctx context.Context, ts *tableState, sb *membuffer.Sealed) error {
	start := time.Now()
	recs := make([]arrow.RecordBatch, len(sb.Batches))
	var rows int64
	for i, b := range sb.Batches {
		recs[i] = b.Rec
		rows += b.Rec.NumRows()
	}
	store := ts.delta.Store()
	add, err := delta.WriteDataFile(ctx, store, ts.schema, recs)
	if err != nil {
		return err
	}
	txn := &delta.Txn{AppID: appID(sb.Key), Version: int64(sb.MaxSeq()), LastUpdated: time.Now().UnixMilli()}
	snap, err := ts.delta.Commit(ctx, "WRITE", []delta.Action{{Txn: txn}, {Add: &add}})
	if errors.Is(err, delta.ErrTxnAlreadyCommitted) {
		// An earlier attempt committed but failed afterwards: the rows are
		// in Delta already; the file just written is not needed.
		if derr := store.Delete(ctx, add.Path); derr != nil {
			s.logger.Warn("cannot remove unneeded data file", "path", add.Path, "err", derr)
		}
		snap, err = ts.delta.Snapshot(), nil
	}
	if err != nil {
		if derr := store.Delete(ctx, add.Path); derr != nil {
			s.logger.Warn("cannot remove data file of failed commit", "path", add.Path, "err", derr)
		}
		return err
	}
	ts.mu.Lock()
	ts.published = snap
	s.buf.Release(sb)
	ts.mu.Unlock()
	if err := s.wal.Delete(ctx, sb.Seqs()); err != nil {
		// Harmless for correctness: replay skips entries the txn covers.
		s.logger.Warn("cannot delete flushed wal entries", "table", ts.schema.Name, "err", err)
	}
	s.metrics.flushes.Inc()
	s.metrics.flushedRows.Add(float64(rows))
	s.metrics.flushSeconds.Observe(time.Since(start).Seconds())
	s.logger.Debug("bucket flushed", "table", ts.schema.Name, "bucket_start", time.UnixMicro(sb.Key.Start).UTC(), "rows", rows, "file", add.Path, "version", snap.Version)
	return nil
}
