package ingest

import (
	"context"
	"fmt"
	"time"

	"tsdb/membuffer"
	"tsdb/wal"
)

// replay re-applies WAL entries that no Delta commit holds yet. Entries that
// cannot be read are reported, quarantined by the WAL and skipped.
func (s *Store) replay(ctx context.Context) error {
	start := time.Now()
	var stale []uint64
	replayed, corrupt, rows := 0, 0, int64(0)
	lastLog := start
	err := s.wal.Replay(ctx, func(seq uint64, p []byte) error {
		if entryKind(p) == kindDML {
			return s.replayDML(ctx, seq, p, &stale)
		}
		e, body, err := decodeHeader(p)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		ts := s.tables[e.table]
		if ts == nil || ts.sch().ID != e.tableID {
			stale = append(stale, seq) // the table was dropped
			return nil
		}
		if v, ok := ts.published.Txns[s.appID(e.key)]; ok && uint64(v) >= seq {
			stale = append(stale, seq) // already flushed to Delta
			return nil
		}
		rec, err := decodeRecord(body)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		if err := checkSchema(ts.sch(), rec); err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		lo, hi := timeBounds(rec, ts.sch().TimeIndex)
		s.buf.Append(e.table, membuffer.Batch{Seq: seq, Key: e.key, Rec: rec, MinTime: lo, MaxTime: hi, WALBytes: int64(len(p))}, s.opts.Now())
		s.walLag.Add(int64(len(p)))
		replayed++
		rows += rec.NumRows()
		if time.Since(lastLog) >= 2*time.Second {
			lastLog = time.Now()
			s.logger.Info("replaying wal", "entries", replayed, "rows", rows, "rows_per_sec", int64(float64(rows)/time.Since(start).Seconds()))
		}
		return nil
	}, func(ce *wal.CorruptionError) {
		corrupt++
		s.logger.Error("wal entry cannot be replayed; quarantined and skipped", "seq", ce.Seq, "err", ce.Err)
	})
	if err != nil {
		return fmt.Errorf("ingest: replay: %w", err)
	}
	if len(stale) > 0 {
		if err := s.wal.Delete(ctx, stale); err != nil {
			return fmt.Errorf("ingest: drop flushed wal entries: %w", err)
		}
	}
	for _, ts := range s.tables {
		s.dropObsoleteDML(ctx, ts)
	}
	d := time.Since(start)
	s.metrics.replaySeconds.Set(d.Seconds())
	s.metrics.walLag.Set(float64(s.walLag.Load()))
	s.logger.Info("wal replayed", "entries", replayed, "rows", rows, "already_flushed", len(stale), "corrupt", corrupt,
		"duration", d.Round(time.Millisecond).String(), "rows_per_sec", int64(float64(rows)/max(d.Seconds(), 1e-9)))
	return nil
}

// replayDML re-applies a logged DELETE/UPDATE in its place among the
// inserts: to the replayed buffered rows, and to the Delta files unless
// the table's dml txn shows that part was committed.
func (s *Store) replayDML(ctx context.Context, seq uint64, p []byte, stale *[]uint64) error {
	e, err := decodeDMLEntry(p)
	if err != nil {
		return &wal.CorruptionError{Seq: seq, Err: err}
	}
	ts := s.tables[e.table]
	if ts == nil || ts.sch().ID != e.tableID {
		*stale = append(*stale, seq)
		return nil
	}
	if s.opts.CompileDML == nil {
		return fmt.Errorf("wal entry %d is a %s but no DML compiler is configured", seq, e.op)
	}
	dml, err := s.opts.CompileDML(ctx, ts.sch(), e.sql)
	if err != nil {
		return fmt.Errorf("wal entry %d: compile %s: %w", seq, e.op, err)
	}
	if _, err := s.applyDML(ctx, ts, seq, e.op, e.sql, dml, true); err != nil {
		return fmt.Errorf("wal entry %d: replay %s: %w", seq, e.op, err)
	}
	ts.addPendingDML(seq)
	return nil
}
