package ingest

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
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
	s       *Store
	ts      *tableState
	t       schema.Table
	stage   *wal.Stage
	parts   []part
	sizes   []int64
	need    int64 // MemBuffer bytes the rows take
	largest int64
	rows    int64
	err     error // a failed Add: the batch cannot commit
	ended   bool
}

// errBatchEnded is returned by a Batch used after Commit or Abort.
var errBatchEnded = errors.New("ingest: batch already committed or aborted")

// BeginBatch starts a Batch of rows for table name.
func (s *Store) BeginBatch(name string) (*Batch, error) {
	ts, err := s.state(name)
	if err != nil {
		return nil, err
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
	e, err := s.encode(b.t, recs)
	if err != nil {
		return err
	}
	defer s.recycle(e)
	if e.rows == 0 {
		return nil
	}
	if b.need+e.need > s.opts.MemoryLimit {
		// 54000 as for COPY input over the limit: this statement can
		// never fit, retrying does not help.
		return sqlerr.New("54000", "this statement needs more than --memory-limit %s in memory: split it into smaller statements", mib(s.opts.MemoryLimit))
	}
	b.need += e.need
	if err := b.stage.Write(ctx, e.payloads); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	b.parts = append(b.parts, e.parts...)
	b.sizes = append(b.sizes, e.sizes...)
	b.largest = max(b.largest, e.largest)
	b.rows += e.rows
	return nil
}

// Commit waits for room in the MemBuffer, makes the batch's rows durable
// and visible, and returns how many there are.
func (b *Batch) Commit(ctx context.Context) (int64, error) {
	if b.ended {
		return 0, errBatchEnded
	}
	fail := func(err error) (int64, error) {
		b.Abort()
		return 0, err
	}
	if b.err != nil || len(b.parts) == 0 {
		return fail(b.err)
	}
	release, err := b.s.admit(ctx, b.need)
	if err != nil {
		return fail(err)
	}
	defer release()
	if err := b.tableGone(); err != nil {
		return fail(err)
	}
	b.ended = true
	first, err := b.stage.Commit(ctx)
	if err := b.s.applyAppended(b.ts, b.t, first, err, b.parts, b.sizes); err != nil {
		b.releaseRecords()
		return 0, err
	}
	b.s.inserted(b.largest, b.rows)
	return b.rows, nil
}

// tableGone fails a batch whose table was dropped while its rows streamed
// in: the MemBuffer would skip them silently, and the statement report
// them written.
func (b *Batch) tableGone() error {
	if b.ts.isDropped() {
		return sqlerr.New(sqlerr.UndefinedTable, "relation %q was dropped during the statement", b.t.Name)
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
	for _, p := range b.parts {
		p.rec.Release()
	}
	b.parts = nil
}
