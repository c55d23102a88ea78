package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/slabs"
	"tsdb/membuffer"
	"tsdb/wal"
)

// replay re-applies WAL entries that no Delta commit holds yet. Entries that
// cannot be read are reported, quarantined by the WAL and skipped.
func (s *Store) replay(ctx context.Context) error {
	start := time.Now()
	var stale []uint64
	replayed, corrupt, held, rows := 0, 0, 0, int64(0)
	lastLog := start
	// The records replayed stay buffered until their buckets are flushed,
	// like a large COPY's: their columns are cut from huge-page slabs
	// (tsdb/internal/slabs), which fault a replay's memory in 2 MiB at a
	// time instead of 4 KiB.
	var cols slabs.Allocator
	// Split entries' text lengths live only until their offsets are
	// summed up: recycled, not fresh memory for every entry.
	var lengths compressBuffers
	// The rows of kindFileRows entries whose commit did not land, by
	// table, until the deletes entry after them writes them into the
	// commit that rewrites its files, as the live path does: buffered
	// instead, a second crash before their flush would find that commit
	// landed and skip them.
	fileRows := map[string]*heldFileRows{}
	err := s.wal.Replay(ctx, func(seq uint64, p []byte) error {
		switch entryKind(p) {
		case kindDML:
			return s.replayTextDML(seq, p, &stale, &held)
		case kindDeletes:
			return s.replayDeletes(ctx, seq, p, &stale, &held, fileRows)
		}
		e, body, err := decodeHeader(p)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		ts := s.tables[e.table]
		if ts == nil || ts.sch().ID != e.tableID {
			if s.unavailable[e.table] != nil {
				// Its table cannot be read now: kept, neither applied
				// nor deleted, for the start after the log is fixed.
				held++
				return nil
			}
			stale = append(stale, seq) // the table was dropped
			return nil
		}
		if v, ok := ts.published.Txns[s.appID(e.key)]; ok && uint64(v) >= seq {
			stale = append(stale, seq) // already flushed to Delta
			return nil
		}
		if e.fileRows && s.fileRowsLanded(ts.published, seq) {
			// Written into a data file by the commit of the deletes
			// entry after it, which landed.
			stale = append(stale, seq)
			return nil
		}
		rec, err := decodeRecord(body, e.split, &cols, &lengths)
		if err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		if err := checkSchema(ts.sch(), rec); err != nil {
			return &wal.CorruptionError{Seq: seq, Err: err}
		}
		if e.fileRows {
			h := fileRows[e.table]
			if h == nil {
				h = &heldFileRows{}
				fileRows[e.table] = h
			}
			h.recs, h.seqs = append(h.recs, rec), append(h.seqs, seq)
			return nil
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
	for table, h := range fileRows {
		// The entries of one append are replayed whole: a deletes entry
		// follows its rows. Kept, not applied, if one did not.
		s.logger.Error("wal entries of an UPDATE's new rows without the deletes entry after them; kept, not applied", "table", table, "seqs", h.seqs)
		held += len(h.seqs)
	}
	if len(stale) > 0 {
		if err := s.wal.Delete(ctx, stale); err != nil {
			return fmt.Errorf("ingest: drop flushed wal entries: %w", err)
		}
	}
	// No entry a bucket txn covers is left in the WAL now: every txn
	// published so far is settled (txnExpired).
	for _, ts := range s.tables {
		ts.settle(ts.published.Txns)
		s.dropObsoleteDML(ctx, ts)
	}
	d := time.Since(start)
	s.metrics.replaySeconds.Set(d.Seconds())
	s.metrics.walLag.Set(float64(s.walLag.Load()))
	s.metrics.heldEntries.Set(float64(held))
	if held > 0 {
		// Kept entries keep their disk space, and the value-log files
		// they lie in, until the table is fixed or dropped.
		s.logger.Error("wal entries of unavailable tables kept, not applied: they are replayed at the start after the tables' logs are fixed; until then they keep their space in the WAL, so fix the tables or DROP them soon",
			"entries", held, "tables", len(s.unavailable))
	}
	s.logger.Info("wal replayed", "entries", replayed, "rows", rows, "already_flushed", len(stale), "corrupt", corrupt,
		"duration", d.Round(time.Millisecond).String(), "rows_per_sec", int64(float64(rows)/max(d.Seconds(), 1e-9)))
	return nil
}

// replayTextDML meets a DELETE or UPDATE logged as SQL text (kind 2), as
// tsdb releases before effect logging wrote them. This version does not
// evaluate SQL at replay, so it cannot redo one: when the table's dml txn
// shows the statement reached the files and none of the table's rows
// before it is still unflushed, there is nothing left to redo and the
// entry goes; otherwise the table is taken out of service with a
// TextDMLError, its entries kept, rather than served without the
// statement. Other tables replay and serve as usual.
func (s *Store) replayTextDML(seq uint64, p []byte, stale *[]uint64, held *int) error {
	e, err := decodeDMLEntry(p)
	if err != nil {
		return &wal.CorruptionError{Seq: seq, Err: err}
	}
	ts := s.replayTable(seq, e.table, e.tableID, stale, held)
	if ts == nil {
		return nil
	}
	batches, _ := s.buf.Snapshot(e.table)
	if v, ok := ts.published.Txns[s.dmlAppID()]; ok && uint64(v) >= seq && len(batches) == 0 {
		*stale = append(*stale, seq)
		return nil
	}
	s.outOfService(ts, &UnavailableError{Table: e.table, File: "wal", Err: &TextDMLError{Seq: seq, Op: e.op}, Whole: true}, held)
	*held++
	return nil
}

// outOfService takes a table replay cannot bring back as it was out of
// service until a start that can: its buffered rows are dropped (their
// entries stay in the WAL, counted in held), later entries of it are held
// as they come, and every statement on it gets ue. Other tables replay and
// serve as usual.
func (s *Store) outOfService(ts *tableState, ue *UnavailableError, held *int) {
	name := ts.sch().Name
	batches, _ := s.buf.Snapshot(name)
	for _, b := range batches {
		s.walLag.Add(-b.WALBytes)
	}
	*held += len(batches)
	s.buf.DropTable(name)
	s.mu.Lock()
	delete(s.tables, name)
	s.markUnavailable(ue)
	s.mu.Unlock()
}

// heldFileRows are a table's kindFileRows records replay holds for the
// deletes entry after them, and their WAL sequences.
type heldFileRows struct {
	recs []arrow.RecordBatch
	seqs []uint64
}

// replayTable is the table a logged DELETE/UPDATE or a transaction's
// deletes entry names, or nil when the entry is to be skipped: stale (its
// table is gone, or is another table of the same name now) or held (its
// table is unavailable until repaired).
func (s *Store) replayTable(seq uint64, table, tableID string, stale *[]uint64, held *int) *tableState {
	ts := s.tables[table]
	if ts != nil && ts.sch().ID == tableID {
		return ts
	}
	if s.unavailable[table] != nil {
		*held++
	} else {
		*stale = append(*stale, seq)
	}
	return nil
}
