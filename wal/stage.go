package wal

import (
	"context"
	"errors"
	"fmt"
)

// A Stage is a batch of entries written ahead of their commit, for a
// write too large to hold back until its end (a COPY). Write hands the
// payloads to the log as parts while the caller goes on producing the
// next ones; Commit then turns every part into consecutive entries at
// once, as one Append of all of them would, with one small commit record.
// Until Commit nothing of the stage is an entry: a crash or Abort leaves
// its parts in the log as garbage that Open deletes.
//
// Why: a 864,000-row COPY is 165 MB of WAL. Written at the end, its write
// and sync took half a second after the last row arrived; written as the
// rows are decoded, the disk works while the client is still sending.
//
// Every badger write is synced, so parts are gathered into batches of
// stageBatchBytes, and each batch is written by a goroutine of the stage
// while the caller fills the next: one sync per batch instead of one per
// part, and the caller waits for the disk only when it is a whole batch
// ahead.
//
// A Stage is used by one goroutine at a time.
type Stage struct {
	w     *WAL
	id    uint64     // in the parts' keys; unique in the log
	parts []partInfo // written, in order (owned by the commit loop until the write in flight ends)

	n            int      // parts handed to Write
	pending      [][]byte // parts gathered for the next batch (copies)
	pendingBytes int
	flight       chan error // the batch being written, if any; receives its outcome
	flightBufs   [][]byte   // the copies of the batch in flight
	spare        [][]byte   // copies of written batches, for the next copies
	err          error      // a write failed: the stage cannot commit
	ended        bool       // committed or aborted
}

// stageBatchBytes is how many bytes of parts a stage gathers before it
// writes them.
const stageBatchBytes = 8 << 20

// partInfo is what the index needs of a part.
type partInfo struct {
	size   int64
	chunks uint32
}

// ErrStageEnded is returned by a Stage used after Commit or Abort.
var ErrStageEnded = errors.New("wal: stage already committed or aborted")

// Stage starts a staged batch of entries.
func (w *WAL) Stage() *Stage {
	return &Stage{w: w, id: w.nextStage.Add(1) - 1}
}

// Write adds frames (each with HeaderRoom reserved bytes in front, as for
// AppendFramed) as the stage's next parts. The WAL keeps copies: the
// frames may be reused when it returns. A failed write of an earlier
// batch is returned here or by Commit.
func (st *Stage) Write(ctx context.Context, frames [][]byte) error {
	switch {
	case st.ended:
		return ErrStageEnded
	case st.err != nil:
		return st.err
	case len(frames) == 0:
		return nil
	case st.n+len(frames) > maxParts:
		return fmt.Errorf("wal: a stage holds at most %d parts", maxParts)
	}
	if err := checkFrames(frames); err != nil {
		return err
	}
	st.n += len(frames)
	for _, f := range frames {
		st.pending = append(st.pending, st.copyFrame(f))
		st.pendingBytes += len(f)
	}
	if st.pendingBytes < stageBatchBytes {
		return nil
	}
	// One batch in flight at a time: wait for the previous one, then
	// hand this one over.
	if err := st.wait(); err != nil {
		return err
	}
	batch := st.pending
	st.pending, st.pendingBytes = nil, 0
	st.flight, st.flightBufs = make(chan error, 1), batch
	go func(done chan<- error) {
		_, err := st.w.submit(ctx, &request{op: opPart, frames: batch, stage: st})
		done <- err
	}(st.flight)
	return nil
}

// copyFrame copies f into a spare buffer that holds it, or a new one.
//
// Why: a COPY's parts are copied here at the rate the input arrives
// (165 MB for 864,000 rows), and the copies are garbage once their batch
// is written. While the MemBuffer grows the heap, collections are rare
// and each new copy lands on pages the process has not touched yet: the
// kernel faults in and zeroes every one, which cost more than the copy
// itself (a tenth of a COPY's CPU on a machine whose page faults trap
// to the hypervisor). Reusing the written batch's buffers keeps the
// copies on pages already mapped.
func (st *Stage) copyFrame(f []byte) []byte {
	for i := len(st.spare) - 1; i >= 0; i-- {
		if b := st.spare[i]; cap(b) >= len(f) {
			st.spare[i] = st.spare[len(st.spare)-1]
			st.spare = st.spare[:len(st.spare)-1]
			return append(b[:0], f...)
		}
	}
	if p, _ := st.w.frameBufs.Get().(*[]byte); p != nil && cap(*p) >= len(f) {
		return append((*p)[:0], f...)
	}
	// Room for a somewhat larger part next time: parts are about the
	// same size, not exactly.
	return append(make([]byte, 0, len(f)+len(f)/8), f...)
}

// keep leaves copies the log no longer reads to later stages.
func (st *Stage) keep(bufs [][]byte) {
	for _, b := range bufs {
		st.w.frameBufs.Put(&b)
	}
}

// wait waits for the batch in flight, if any, and returns the stage's
// error. Once it is written its buffers are the spare ones: the log keeps
// nothing of them (the index records sizes only). Spare buffers no part
// fitted since the last batch go to the WAL's pool, so the stage holds at
// most two batches, however long the COPY.
func (st *Stage) wait() error {
	if st.flight != nil {
		if err := <-st.flight; err != nil && st.err == nil {
			st.err = err
		}
		st.flight = nil
		st.keep(st.spare)
		st.spare, st.flightBufs = st.flightBufs, nil
	}
	return st.err
}

// Commit makes the stage's parts durable as consecutive entries and
// returns the sequence of the first, like Append: either all are durable
// when it returns nil, or none is visible, and a non-zero sequence is
// returned whenever sequences were assigned, also with an error. A stage
// without parts commits nothing and returns 0.
func (st *Stage) Commit(ctx context.Context) (uint64, error) {
	if st.ended {
		return 0, ErrStageEnded
	}
	if err := st.wait(); err != nil {
		st.Abort()
		return 0, err
	}
	if st.n == 0 {
		st.ended = true
		return 0, nil
	}
	// The last parts and the commit record go in one transaction.
	first, err := st.w.submit(ctx, &request{op: opCommit, frames: st.pending, stage: st})
	// The commit has written (or failed to write) the last parts: no
	// copy is read again.
	st.keep(st.pending)
	st.keep(st.spare)
	st.pending, st.spare = nil, nil
	if err != nil {
		st.Abort()
		return first, err
	}
	st.ended = true
	return first, nil
}

// Abort gives up the stage: its parts are deleted and never replayed. It
// is a no-op after Commit. A deletion that fails leaves the parts to the
// next Open, which deletes parts no commit claims.
func (st *Stage) Abort() {
	if st.ended {
		return
	}
	st.wait()
	st.ended = true
	st.keep(st.pending)
	st.keep(st.spare)
	st.pending, st.spare = nil, nil
	if len(st.parts) == 0 {
		return
	}
	if _, err := st.w.submit(context.Background(), &request{op: opAbort, stage: st}); err != nil && !errors.Is(err, ErrClosed) {
		st.w.logger.Warn("wal: deleting the parts of an aborted write failed; the next start deletes them", "stage", st.id, "err", err)
	}
}
