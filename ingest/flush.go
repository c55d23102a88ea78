package ingest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/internal/fault"
	"tsdb/membuffer"
)

// maxBackoff bounds the wait before a failed table flush is retried.
const maxBackoff = 30 * time.Second

// flushLoop decides, every FlushInterval or when a writer is waiting for
// memory, which buckets to flush, and flushes each table in a goroutine of
// its own (at most FlushConcurrency at once): tables make progress
// independently, and a slow or failing table does not hold up the others.
// Failed flushes are logged, counted and retried with backoff; their rows
// stay in the WAL and the MemBuffer and stay queryable.
func (s *Store) flushLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flushWG.Wait()
			return
		case <-t.C:
		case <-s.kick:
		}
		// A kick and the cancellation may be ready at once, and select
		// picks either: no flush starts once Close has begun.
		if ctx.Err() != nil {
			s.flushWG.Wait()
			return
		}
		s.scheduleFlushes(ctx)
	}
}

// kickFlusher wakes the flush loop without waiting for its ticker.
func (s *Store) kickFlusher() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Store) scheduleFlushes(ctx context.Context) {
	now := s.opts.Now()
	pressured := s.pressurePicks()
	for _, ts := range s.states() {
		if ctx.Err() != nil {
			return
		}
		if !ts.readyToFlush(now) {
			continue
		}
		pick := s.pickFunc(ts, now, pressured[ts.sch().Name])
		if pick == nil {
			continue
		}
		select {
		case s.flushSem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			<-s.flushSem
			return
		}
		if !ts.flushing.CompareAndSwap(false, true) {
			<-s.flushSem
			continue
		}
		s.flushWG.Add(1)
		go func() {
			defer s.flushWG.Done()
			defer func() { <-s.flushSem }()
			defer ts.flushing.Store(false)
			err := s.flushTable(ctx, ts, pick, false)
			ts.recordOutcome(err, s.opts.Now(), s.opts.FlushInterval)
			if err != nil && ctx.Err() == nil {
				s.logger.Error("flush failed; rows stay in the WAL and MemBuffer, will retry", "table", ts.sch().Name, "err", err, "retry_in", ts.backoff().String())
			}
			s.reclaimWAL(ctx)
		}()
	}
}

func (s *Store) states() []*tableState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*tableState, 0, len(s.tables))
	for _, t := range s.tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sch().Name < out[j].sch().Name })
	return out
}

// readyToFlush reports whether the scheduler may start a flush of the table:
// none running and no backoff pending.
func (ts *tableState) readyToFlush(now time.Time) bool {
	ts.schedMu.Lock()
	defer ts.schedMu.Unlock()
	return !ts.flushing.Load() && !now.Before(ts.retryAt)
}

func (ts *tableState) recordOutcome(err error, now time.Time, interval time.Duration) {
	ts.schedMu.Lock()
	defer ts.schedMu.Unlock()
	if err == nil {
		ts.failures, ts.retryAt = 0, time.Time{}
		return
	}
	ts.failures++
	d := interval << min(ts.failures, 16)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	ts.retryAt = now.Add(d)
}

func (ts *tableState) backoff() time.Duration {
	ts.schedMu.Lock()
	defer ts.schedMu.Unlock()
	return time.Until(ts.retryAt).Round(time.Millisecond)
}

// pressurePicks chooses, when the MemBuffer and what writers bring to it
// are above its soft limit, the buckets to flush to get back under it:
// largest first, open buckets included (writes all going to one open
// bucket must not grow it forever). What writers bring counts, admitted
// or waiting (the gate's demand): a statement of 60% of the hard limit,
// over a MemBuffer holding 60%, waits for room that only a flush below the
// soft limit makes. Flushing stops once the MemBuffer is back under 80% of
// the soft limit and that demand fits under the hard one: a large waiter
// gets room, not an empty MemBuffer of small files.
func (s *Store) pressurePicks() map[string]map[membuffer.Key]bool {
	s.gate.mu.Lock()
	demand := s.gate.reserved + s.gate.wanted
	s.gate.mu.Unlock()
	used := s.buf.Bytes()
	if s.opts.SoftMemoryLimit <= 0 || used+demand <= s.opts.SoftMemoryLimit {
		return nil
	}
	var all []membuffer.BucketInfo
	for _, name := range s.buf.Tables() {
		for _, b := range s.buf.Buckets(name) {
			if !b.Sealed {
				all = append(all, b)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Bytes != all[j].Bytes {
			return all[i].Bytes > all[j].Bytes
		}
		return all[i].Created.Before(all[j].Created)
	})
	// Drain to 80% of the soft limit so that flushes do not start for
	// every few rows at the threshold.
	target := s.opts.SoftMemoryLimit * 8 / 10
	picks := map[string]map[membuffer.Key]bool{}
	for _, b := range all {
		if used <= target && used+demand <= s.opts.MemoryLimit {
			break
		}
		if picks[b.Table] == nil {
			picks[b.Table] = map[membuffer.Key]bool{}
		}
		picks[b.Table][b.Key] = true
		used -= b.Bytes
		s.metrics.pressureFlushes.Inc()
	}
	return picks
}

// pickFunc returns which open buckets of the table to seal now, or nil if
// none (and no earlier sealed bucket waits for a retry):
//   - a bucket whose time window has passed and that had no writes for
//     IdleFlush, except tiny ones (below SmallFileBytes), which are held
//     back until together they reach SmallFileBytes or the oldest has
//     waited LateMergeDelay, and are then merged into one file;
//   - a bucket that grew past MaxBucketBytes, open or not;
//   - the buckets chosen for memory pressure.
func (s *Store) pickFunc(ts *tableState, now time.Time, pressured map[membuffer.Key]bool) func(membuffer.BucketInfo) bool {
	nowMicros := now.UnixMicro()
	idle := func(b membuffer.BucketInfo) bool {
		return b.Key.End <= nowMicros && now.Sub(b.LastWrite) >= s.opts.IdleFlush
	}
	var tinyBytes int64
	releaseTiny, due := false, false
	for _, b := range s.buf.Buckets(ts.sch().Name) {
		if b.Sealed {
			due = true // a failed flush to retry
			continue
		}
		switch {
		case b.Bytes >= s.opts.MaxBucketBytes || pressured[b.Key]:
			due = true
		case idle(b) && b.Bytes >= s.opts.SmallFileBytes:
			due = true
		case idle(b):
			tinyBytes += b.Bytes
			if now.Sub(b.Created) >= s.opts.LateMergeDelay {
				releaseTiny = true
			}
		}
	}
	if tinyBytes >= s.opts.SmallFileBytes {
		releaseTiny = true
	}
	if !due && !(releaseTiny && tinyBytes > 0) {
		return nil
	}
	return func(b membuffer.BucketInfo) bool {
		switch {
		case b.Bytes >= s.opts.MaxBucketBytes || pressured[b.Key]:
			return true
		case idle(b) && b.Bytes >= s.opts.SmallFileBytes:
			return true
		case idle(b):
			return releaseTiny
		}
		return false
	}
}

// Checkpoint flushes every buffered row of every table to Delta, tables in
// parallel, and returns when all are durable (or the first errors).
func (s *Store) Checkpoint(ctx context.Context) error {
	all := func(membuffer.BucketInfo) bool { return true }
	states := s.states()
	errs := make([]error, len(states))
	sem := make(chan struct{}, s.opts.FlushConcurrency)
	done := make(chan struct{})
	for i, ts := range states {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem; done <- struct{}{} }()
			errs[i] = s.flushTable(ctx, ts, all, true)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("table %s: %w", ts.sch().Name, errs[i])
			}
		}()
	}
	for range states {
		<-done
	}
	s.reclaimWAL(ctx)
	return errors.Join(errs...)
}

// reclaimWAL gives back the WAL's disk space of what the flushes deleted
// once a value-log file's worth is garbage. Called after a flush, outside
// the table's locks: no statement waits for it.
func (s *Store) reclaimWAL(ctx context.Context) {
	if err := s.wal.ReclaimIfDue(ctx); err != nil && ctx.Err() == nil {
		s.logger.Warn("cannot reclaim the WAL's disk space of flushed entries; the WAL retries", "err", err)
	}
}

// flushTable seals the picked buckets and flushes every sealed bucket of the
// table, oldest first: big buckets one file each, small ones merged into a
// file together. It stops at the first failure, so that for every bucket key
// the flushed WAL sequences stay a prefix (see sequencer).
//
// A transaction that deleted rows of the table holds its lock until it
// ends: the flusher then skips the table (wait false) rather than stall
// its slot, and CHECKPOINT waits until ctx ends.
func (s *Store) flushTable(ctx context.Context, ts *tableState, pick func(membuffer.BucketInfo) bool, wait bool) error {
	if !wait {
		if !ts.flushMu.TryLock() {
			return nil
		}
	} else if err := ts.flushMu.LockContext(ctx); err != nil {
		return mapCanceled(ctx, err)
	}
	defer ts.flushMu.Unlock()
	if ts.isDropped() {
		return nil
	}
	for _, group := range s.groupSealed(s.buf.Seal(ts.sch().Name, pick)) {
		if err := s.flushGroup(ctx, ts, group); err != nil {
			s.metrics.flushErrors.Inc()
			s.noteDiskFull(err)
			return err
		}
	}
	return nil
}

// groupSealed puts each bucket of at least SmallFileBytes in a group of its
// own and merges the small ones (up to MaxBucketBytes a file). Groups are
// ordered by their oldest bucket, which keeps every key's instances in
// order: an older instance of a key is never in a later group than a newer
// one.
func (s *Store) groupSealed(sealed []*membuffer.Sealed) [][]*membuffer.Sealed {
	type group struct {
		first   int
		members []*membuffer.Sealed
		bytes   int64
	}
	var groups []*group
	var small *group
	for i, sb := range sealed {
		if sb.Bytes() >= s.opts.SmallFileBytes {
			groups = append(groups, &group{first: i, members: []*membuffer.Sealed{sb}})
			continue
		}
		if small == nil || small.bytes+sb.Bytes() > s.opts.MaxBucketBytes {
			small = &group{first: i}
			groups = append(groups, small)
		}
		small.members = append(small.members, sb)
		small.bytes += sb.Bytes()
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].first < groups[j].first })
	out := make([][]*membuffer.Sealed, len(groups))
	for i, g := range groups {
		out[i] = g.members
	}
	return out
}

// flushGroup writes sealed buckets as one Parquet file (in file order) and
// commits it with one txn action per bucket key (appId per bucket, version =
// the largest WAL sequence of that key in the file). Only after the commit is
// durable are the rows released from memory and their WAL entries deleted.
func (s *Store) flushGroup(ctx context.Context, ts *tableState, group []*membuffer.Sealed) error {
	start := time.Now()
	name := ts.sch().Name
	var recs []arrow.RecordBatch
	var rows int64
	versions := map[string]int64{}
	var seqs []uint64
	var walBytes int64
	for _, sb := range group {
		for _, b := range sb.Batches {
			recs = append(recs, b.Rec)
			rows += b.Rec.NumRows()
		}
		id := s.appID(sb.Key)
		versions[id] = max(versions[id], int64(sb.MaxSeq()))
		seqs = append(seqs, sb.Seqs()...)
		walBytes += sb.WALBytes()
	}
	if err := s.faults.Hit(fault.FlushWrite, name); err != nil {
		return err
	}
	store := ts.delta.Store()
	// Batches emptied by DELETE still carry their WAL entries: a group
	// without rows commits only its txns.
	var add delta.Add
	if rows > 0 {
		var err error
		if add, err = delta.WriteDataFile(ctx, store, ts.sch(), recs); err != nil {
			return err
		}
	}
	actions := make([]delta.Action, 0, len(versions)+1)
	ids := make([]string, 0, len(versions))
	for id := range versions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		actions = append(actions, delta.Action{Txn: &delta.Txn{AppID: id, Version: versions[id], LastUpdated: time.Now().UnixMilli()}})
	}
	if rows > 0 {
		actions = append(actions, delta.Action{Add: &add})
	}
	s.faults.Hit(fault.FlushAfterParquet, name)
	if err := s.faults.Hit(fault.FlushCommit, name); err != nil {
		if add.Path != "" {
			store.Delete(ctx, add.Path)
		}
		return err
	}
	snap, err := ts.delta.Commit(ctx, "WRITE", actions)
	if errors.Is(err, delta.ErrTxnAlreadyCommitted) {
		// An earlier attempt committed but failed afterwards: the rows are
		// in Delta already; the file just written is not needed.
		if add.Path != "" {
			if derr := store.Delete(ctx, add.Path); derr != nil {
				s.logger.Warn("cannot remove unneeded data file", "path", add.Path, "err", derr)
			}
		}
		snap, err = ts.delta.Snapshot(), nil
	}
	if err != nil {
		// Only a refused commit's file can go: after another error the
		// commit may have landed, and VACUUM deletes the file once it is
		// an old orphan.
		if add.Path != "" && delta.Refused(err) {
			if derr := store.Delete(ctx, add.Path); derr != nil {
				s.logger.Warn("cannot remove data file of failed commit", "path", add.Path, "err", derr)
			}
		}
		return err
	}
	s.faults.Hit(fault.FlushAfterCommit, name)
	ts.mu.Lock()
	ts.publish(snap)
	for _, sb := range group {
		s.buf.Release(sb)
	}
	ts.mu.Unlock()
	s.gate.notify()
	if err := s.wal.Delete(ctx, seqs); err != nil {
		// Harmless for correctness: replay skips entries the txn covers,
		// as long as the txn is kept (txnExpired).
		s.walDeleteFailed.Store(true)
		s.logger.Warn("cannot delete flushed wal entries; replay will skip them", "table", name, "err", err)
	} else {
		ts.settle(versions)
		s.walLag.Add(-walBytes)
		s.metrics.walLag.Set(float64(s.walLag.Load()))
		s.gate.notify()
	}
	s.faults.Hit(fault.FlushAfterWALDrop, name)
	s.dropObsoleteDML(ctx, ts)
	s.metrics.flushes.Inc()
	s.metrics.flushedRows.Add(float64(rows))
	s.metrics.flushedBytes.Add(float64(add.Size))
	s.metrics.flushSeconds.Observe(time.Since(start).Seconds())
	s.logger.Debug("flushed", "table", name, "buckets", len(group), "rows", rows, "file", add.Path, "bytes", add.Size, "version", snap.Version)
	return nil
}
