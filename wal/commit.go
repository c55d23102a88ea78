package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// request is one operation waiting for the commit loop.
type request struct {
	op      op
	frames  [][]byte // opAppend, opPart: HeaderRoom bytes, then the payload
	deletes []uint64 // opDelete
	stage   *Stage   // opPart, opCommit, opAbort
	first   uint64   // assigned sequence; opMark: the sequence to reach
	err     error
	done    chan struct{}
}

// op is what a request writes.
type op int

const (
	opAppend op = iota // entries
	opPart             // parts of a stage
	opCommit           // a stage's last parts and its commit record
	opAbort            // deletion of an aborted stage's parts
	opDelete           // deletion of entries
	opMark             // the next sequence, raised to first
)

// entries is how many sequences the request takes.
func (r *request) entries() int {
	switch r.op {
	case opAppend:
		return len(r.frames)
	case opCommit:
		return len(r.stage.parts) + len(r.frames)
	}
	return 0
}

// payloadBytes is the callers' payload in r, without the header room.
func (r *request) payloadBytes() int {
	n := 0
	for _, f := range r.frames {
		n += len(f) - HeaderRoom
	}
	return n
}

func (w *WAL) submit(ctx context.Context, req *request) (uint64, error) {
	if len(req.frames) > maxParts {
		return 0, fmt.Errorf("wal: at most %d entries per append", maxParts)
	}
	// Checksums are computed here, by each writer, not in the commit
	// loop: on two cores writers would otherwise checksum one after
	// another.
	for _, f := range req.frames {
		binary.BigEndian.PutUint32(f, crc32Checksum(f[HeaderRoom:]))
	}
	req.done = make(chan struct{})
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	select {
	case w.requests <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-w.stop:
		return 0, ErrClosed
	}
	// Once queued the outcome is decided by the commit loop: waiting for it
	// (not for ctx) keeps "acknowledged" and "durable" the same thing.
	select {
	case <-req.done:
		return req.first, req.err
	case <-w.commitDone:
		// The loop stopped; it finished every request it took.
		select {
		case <-req.done:
			return req.first, req.err
		default:
			return 0, ErrClosed
		}
	}
}

// maxGroupBytes bounds the payload bytes committed together.
const maxGroupBytes = 8 << 20

// commitLoop takes every queued request, assigns sequences in queue order,
// writes them in one badger transaction (one sync) and wakes the writers.
// While a group is being written, the next one queues up.
func (w *WAL) commitLoop() {
	defer close(w.commitDone)
	var broken error // a commit failed: nothing more is written
	for {
		var first *request
		select {
		case first = <-w.requests:
		case <-w.stop:
			// Fail what is still queued: nothing of it was written.
			for {
				select {
				case r := <-w.requests:
					r.err = ErrClosed
					close(r.done)
				default:
					return
				}
			}
		}
		group := []*request{first}
		size := first.payloadBytes()
	drain:
		for size < maxGroupBytes {
			select {
			case r := <-w.requests:
				group = append(group, r)
				size += r.payloadBytes()
			default:
				break drain
			}
		}
		broken = w.commitGroup(group, broken)
	}
}

// groupWrite is what the index learns once a transaction is committed.
type groupWrite struct {
	reqs    []*request
	deleted []uint64 // live entries deleted
	commits []uint64 // commit records deleted with their last part
}

// commitGroup writes a group of requests and returns the error that stops
// all later writes, if any. Each request lands in exactly one badger
// transaction; a request that does not fit with the others gets a
// transaction of its own.
func (w *WAL) commitGroup(group []*request, broken error) error {
	start := time.Now()
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	for _, r := range group {
		if r.op == opMark && w.next.Load() < r.first {
			w.next.Store(r.first)
		}
		if n := r.entries(); n > 0 {
			r.first = w.next.Add(uint64(n)) - uint64(n)
		}
	}
	if broken != nil {
		w.finish(group, broken)
		return broken
	}
	txn := w.db.NewTransaction(true)
	g := &groupWrite{}
	t := newTxnState()
	commit := func() error {
		err := txn.Set(nextSeqKey, u64(w.next.Load()))
		if err == nil {
			err = txn.Set(nextStageKey, u64(w.nextStage.Load()))
		}
		if err == nil {
			err = txn.Commit()
			w.metrics.fsyncs.Inc()
		} else {
			txn.Discard()
		}
		if err == nil {
			w.apply(g)
		}
		w.finish(g.reqs, err)
		g = &groupWrite{}
		t = newTxnState()
		txn = w.db.NewTransaction(true)
		return err
	}
	// redo starts the transaction again with the requests added so far:
	// the one being added may have left part of itself in it.
	redo := func() error {
		txn.Discard()
		txn = w.db.NewTransaction(true)
		pending := g.reqs
		g = &groupWrite{}
		t = newTxnState()
		for _, p := range pending {
			if err := w.add(txn, p, g, t); err != nil {
				return fmt.Errorf("re-adding a request that fitted before: %w", err)
			}
		}
		return nil
	}
	for _, r := range group {
		err := w.add(txn, r, g, t)
		if errors.Is(err, badger.ErrTxnTooBig) && len(g.reqs) > 0 {
			// Commit what fits so far, then try r alone.
			if err := redo(); err != nil {
				return w.fail(txn, group, err)
			}
			if err := commit(); err != nil {
				return w.fail(txn, group, err)
			}
			err = w.add(txn, r, g, t)
		}
		if err != nil {
			if errors.Is(err, badger.ErrTxnTooBig) {
				err = &TooLargeError{Bytes: r.payloadBytes()}
			}
			// The transaction may hold part of r: drop it and add the
			// others again.
			if err := redo(); err != nil {
				return w.fail(txn, group, err)
			}
			w.finish([]*request{r}, err)
			continue
		}
		g.reqs = append(g.reqs, r)
	}
	if len(g.reqs) > 0 {
		if err := commit(); err != nil {
			return w.fail(txn, group, err)
		}
	}
	txn.Discard()
	w.metrics.groupSize.Observe(float64(len(group)))
	w.metrics.latency.Observe(time.Since(start).Seconds())
	return nil
}

// fail ends every request of the group not yet ended with err, which from
// now on fails every write: after a failed sync the kernel may have
// dropped the dirty pages, and a later sync would report success for data
// that is not there.
func (w *WAL) fail(txn *badger.Txn, group []*request, err error) error {
	txn.Discard()
	var open []*request
	for _, r := range group {
		select {
		case <-r.done:
		default:
			open = append(open, r)
		}
	}
	broken := fmt.Errorf("an earlier WAL write failed: %w", err)
	w.finish(open, err)
	w.logger.Error("wal: a write failed; the WAL accepts no more writes until restart", "err", err)
	return broken
}

// finish ends the requests with err.
func (w *WAL) finish(reqs []*request, err error) {
	for _, r := range reqs {
		n := r.entries()
		switch {
		case err != nil && n > 0:
			r.err = fmt.Errorf("wal: append entries %d..%d: %w", r.first, r.first+uint64(n)-1, err)
		case err != nil:
			r.err = fmt.Errorf("wal: %w", err)
		default:
			w.metrics.appends.Add(float64(n))
			w.metrics.bytes.Add(float64(r.payloadBytes()))
		}
		if err != nil {
			w.metrics.failures.Inc()
		}
		close(r.done)
	}
}

// txnState is what the requests already in a transaction delete, so that
// a second deletion of an entry in the same group is not counted twice.
type txnState struct {
	deleting   map[uint64]bool // entries
	partsGone  map[uint64]int  // parts, by stage
	commitGone map[uint64]bool // commit records, by stage
}

func newTxnState() *txnState {
	return &txnState{deleting: map[uint64]bool{}, partsGone: map[uint64]int{}, commitGone: map[uint64]bool{}}
}

// add puts request r's keys into txn and records in g what the index
// learns once txn commits.
func (w *WAL) add(txn *badger.Txn, r *request, g *groupWrite, t *txnState) error {
	switch r.op {
	case opAppend:
		for i, f := range r.frames {
			if err := putFrame(txn, entryKey(r.first+uint64(i)), f); err != nil {
				return err
			}
		}
	case opPart:
		for i, f := range r.frames {
			if err := putFrame(txn, partKey(r.stage.id, uint32(len(r.stage.parts)+i)), f); err != nil {
				return err
			}
		}
	case opCommit:
		// The stage's last parts come with its commit record.
		for i, f := range r.frames {
			if err := putFrame(txn, partKey(r.stage.id, uint32(len(r.stage.parts)+i)), f); err != nil {
				return err
			}
		}
		return txn.Set(commitKey(r.stage.id), commitValue(r.first, uint32(len(r.stage.parts)+len(r.frames))))
	case opAbort:
		for i, p := range r.stage.parts {
			if err := deleteFrame(txn, partKey(r.stage.id, uint32(i)), p.chunks); err != nil {
				return err
			}
		}
	case opDelete:
		w.mu.Lock()
		defer w.mu.Unlock()
		var stages []uint64 // whose parts this request deletes
		for _, seq := range r.deletes {
			l, ok := w.live[seq]
			if !ok || t.deleting[seq] {
				continue
			}
			if err := deleteFrame(txn, l.key(seq), l.chunks); err != nil {
				return err
			}
			t.deleting[seq] = true
			g.deleted = append(g.deleted, seq)
			if l.stage != 0 {
				if t.partsGone[l.stage] == 0 {
					stages = append(stages, l.stage)
				}
				t.partsGone[l.stage]++
			}
		}
		// A commit record goes with the last of its parts.
		for _, stage := range stages {
			if c := w.commits[stage]; c != nil && c.live == t.partsGone[stage] && !t.commitGone[stage] {
				if err := txn.Delete(commitKey(stage)); err != nil {
					return err
				}
				t.commitGone[stage] = true
				g.commits = append(g.commits, stage)
			}
		}
	}
	return nil
}

// apply updates the index after a committed transaction.
func (w *WAL) apply(g *groupWrite) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range g.reqs {
		switch r.op {
		case opAppend:
			for i, f := range r.frames {
				w.live[r.first+uint64(i)] = loc{chunks: chunks(f), size: int64(len(f))}
			}
		case opPart:
			for _, f := range r.frames {
				r.stage.parts = append(r.stage.parts, partInfo{size: int64(len(f)), chunks: chunks(f)})
			}
		case opCommit:
			for _, f := range r.frames {
				r.stage.parts = append(r.stage.parts, partInfo{size: int64(len(f)), chunks: chunks(f)})
			}
			for i, p := range r.stage.parts {
				w.live[r.first+uint64(i)] = loc{stage: r.stage.id, part: uint32(i), chunks: p.chunks, size: p.size}
			}
			w.commits[r.stage.id] = &commit{first: r.first, live: len(r.stage.parts)}
		case opAbort:
			for _, p := range r.stage.parts {
				w.deletedBytes += p.size
			}
		}
	}
	for _, seq := range g.deleted {
		l := w.live[seq]
		delete(w.live, seq)
		w.deletedBytes += l.size
		if c := w.commits[l.stage]; l.stage != 0 && c != nil {
			c.live--
		}
	}
	for _, stage := range g.commits {
		delete(w.commits, stage)
	}
	w.metrics.deletes.Add(float64(len(g.deleted)))
	if w.deletedBytes >= w.db.Opts().ValueLogFileSize {
		// A file's worth is garbage: give it back now rather than at
		// the next tick, so that the disk follows a flush closely.
		select {
		case w.reclaimNow <- struct{}{}:
		default:
		}
	}
}
