package ingest

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/schema"
	"tsdb/wal"
)

// Batch is one statement whose rows arrive over time: a COPY. Add puts
// each slice of rows in the WAL as it comes (written, not yet synced), so
// that the disk works while the client is still sending; Commit makes all
// of them durable and visible at once, as InsertBatches of every slice
// would. Abort, a failed Add, or a crash before Commit leaves nothing.
//
// Memory is admitted at Commit, for the whole batch, as for one INSERT:
// reserving it slice by slice would let two large COPYs each hold half of
// --memory-limit and wait for each other until --write-timeout, since a
// flush cannot free a reservation.
//
// A Batch is used by one goroutine.
type Batch struct {
	s     *Store
	ts    *tableState
	t     schema.Table
	stage *wal.Stage
	rows  encoded // the slices added so far, merged (their frames are recycled)
	err   error   // a failed Add: the batch cannot commit
	ended bool
}

// errBatchEnded is returned by a Batch used after Commit or Abort.
var errBatchEnded = errors.New("ingest: batch already committed or aborted")

// BeginBatch starts a Batch of rows for table name.
func (s *Store) BeginBatch(name string) (*Batch, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
	}
	if err := ts.writeBlock(); err != nil {
		return nil, err
	}
	if t := ts.sch(); len(t.Keys) > 0 || len(t.Dedup) > 0 {
		return nil, keyedError(t)
	}
	return &Batch{s: s, ts: ts, t: ts.sch(), stage: s.wal.Stage()}, nil
}

// Add validates recs and writes them to the WAL as part of the batch; the
// whole batch must fit under --memory-limit. The store keeps the records.
// After an error the batch can only be aborted.
func (b *Batch) Add(ctx context.Context, recs []arrow.RecordBatch) error {
	if b.ended {
		return errBatchEnded
	}
	if b.err != nil {
		return b.err
	}
	err := b.add(ctx, recs)
	if err != nil {
		b.err = err
	}
	return err
}

func (b *Batch) add(ctx context.Context, recs []arrow.RecordBatch) error {
	s := b.s
	if err := b.tableGone(); err != nil {
		return err
	}
	e, err := s.encode(b.t, recs, formSplit)
	if err != nil {
		return err
	}
	defer s.recycle(e)
	if e.rows == 0 {
		return nil
	}
	if err := s.tooLarge(b.rows.need + e.need); err != nil {
		return err
	}
	if err := b.stage.Write(ctx, e.payloads); err != nil {
		return s.storageError(err)
	}
	b.rows.merge(e)
	return nil
}

// Commit waits for room in the MemBuffer, makes the batch's rows durable
// and visible, and returns how many there are.
func (b *Batch) Commit(ctx context.Context) (int64, error) {
	if b.ended {
		return 0, errBatchEnded
	}
	if b.err != nil || len(b.rows.parts) == 0 {
		b.Abort()
		return 0, b.err
	}
	release, err := b.ts.holdPlain(b.t)
	if err != nil {
		b.Abort()
		return 0, err
	}
	defer release()
	n, err := b.s.commit(ctx, b.ts, b.t, &b.rows, func(ctx context.Context) (uint64, error) {
		if err := b.tableGone(); err != nil {
			return 0, err
		}
		b.ended = true // the stage is spent, whatever its commit says
		return b.stage.Commit(ctx)
	})
	if err != nil {
		if b.ended {
			b.releaseRecords()
		} else {
			b.Abort()
		}
		return 0, err
	}
	return n, nil
}

// tableGone fails a batch whose table was dropped while its rows streamed
// in: the MemBuffer would skip them silently, and the statement report
// them written.
func (b *Batch) tableGone() error {
	if b.ts.isDropped() {
		return errorf(KindNoSuchTable, "relation %q was dropped during the statement", b.t.Name)
	}
	return nil
}

// Abort drops the batch. It is a no-op after Commit.
func (b *Batch) Abort() {
	if b.ended {
		return
	}
	b.ended = true
	b.stage.Abort()
	b.releaseRecords()
}

func (b *Batch) releaseRecords() {
	for _, p := range b.rows.parts {
		p.rec.Release()
	}
	b.rows.parts = nil
}
