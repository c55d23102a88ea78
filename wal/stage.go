package wal

import (
	"context"
	"errors"
	"fmt"
)

// A Stage is a batch of entries written ahead of their commit, for a
// write too large to hold back until its end (a COPY). Each Write puts its
// payloads in the log as parts, without waiting for a sync, while the
// caller goes on producing the next ones; Commit then makes every part
// durable and turns them into consecutive entries at once, as one Append
// of all of them would. Until Commit nothing of the stage is an entry: a
// crash or Abort leaves its parts in the log as garbage that Open ignores
// and truncation removes.
//
// Why: a 864,000-row COPY is 165 MB of WAL. Written at the end, its write
// and sync took half a second after the last row arrived; written as the
// rows are decoded, the disk works while the client is still sending.
//
// A Stage is used by one goroutine at a time.
type Stage struct {
	w     *WAL
	id    uint64     // in the parts' headers; unique in the log
	locs  []entryLoc // of the parts written, in order; each pins its segment
	err   error      // a Write failed: the stage cannot commit
	ended bool       // committed or aborted
}

// ErrStageEnded is returned by a Stage used after Commit or Abort.
var ErrStageEnded = errors.New("wal: stage already committed or aborted")

// Stage starts a staged batch of entries.
func (w *WAL) Stage() *Stage {
	return &Stage{w: w, id: w.nextStage.Add(1) - 1}
}

// Write adds frames (each with HeaderRoom reserved bytes in front, as for
// AppendFramed) as the stage's next parts. It returns once they are
// written, not synced; the frames may then be reused.
func (st *Stage) Write(ctx context.Context, frames [][]byte) error {
	switch {
	case st.ended:
		return ErrStageEnded
	case st.err != nil:
		return st.err
	case len(frames) == 0:
		return nil
	case len(st.locs)+len(frames) > maxParts:
		return fmt.Errorf("wal: a stage holds at most %d parts", maxParts)
	}
	for _, f := range frames {
		if len(f) < HeaderRoom {
			return errors.New("wal: frame shorter than its header")
		}
	}
	if _, err := st.w.submit(ctx, &request{op: opPart, payloads: frames, framed: true, stage: st}); err != nil {
		st.err = err
		return err
	}
	return nil
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
	if st.err != nil {
		st.Abort()
		return 0, st.err
	}
	if len(st.locs) == 0 {
		st.ended = true
		return 0, nil
	}
	first, err := st.w.submit(ctx, &request{op: opCommit, stage: st})
	if err != nil {
		st.Abort()
		return first, err
	}
	st.ended = true
	return first, nil
}

// Abort gives up the stage: its parts are never replayed, and the
// segments they lie in may be removed. It is a no-op after Commit.
func (st *Stage) Abort() {
	if st.ended {
		return
	}
	st.ended = true
	w := st.w
	w.mu.Lock()
	for _, l := range st.locs {
		l.seg.live--
	}
	st.locs = nil
	w.mu.Unlock()
	if err := w.dropDeadSegments(); err != nil {
		w.logger.Error("wal: removing segments whose entries are all deleted", "err", err)
	}
}
