package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
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

// groupBytes bounds the payload bytes committed together: a value-log
// file's size, at most 8 MiB. Badger maps a value-log file at twice its
// size and moves to the next file only between transactions; a
// transaction that runs past the mapping makes badger remap the file for
// every value beyond it (measured with 4 MiB files and 8 MiB groups: a
// fifth of a staged COPY's WAL time went to remapping and the writeback
// it forces).
func groupBytes(vlogBytes int64) int {
	return int(min(vlogBytes, 8<<20))
}

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
		for size < w.groupBytes {
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
	reqs    []*request       // completed in the transaction
	from    map[*request]int // the first of a request's items in it
	deleted []uint64         // live entries deleted
	commits []uint64         // commit records deleted with their last part
}

func newGroupWrite() *groupWrite { return &groupWrite{from: map[*request]int{}} }

// complete records that r's items from `from` on are in the transaction.
func (g *groupWrite) complete(r *request, from int) {
	g.reqs = append(g.reqs, r)
	g.from[r] = from
}

// splittable reports whether r may be spread over several transactions:
// parts, aborts and deletions need no atomicity (a commit record is
// written, or deleted, with or after the last of its parts).
func (r *request) splittable() bool {
	switch r.op {
	case opPart, opCommit, opAbort, opDelete:
		return true
	}
	return false
}

// commitGroup writes a group of requests and returns the error that stops
// all later writes, if any. An append lands in exactly one badger
// transaction (a request that does not fit with the others gets one of
// its own); parts, aborts and deletions, which need no atomicity, are
// split across transactions where badger's size limit demands it.
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
	// Every transaction starts with the next sequence and stage id, so
	// that the requests can never leave them no room. Both are final
	// here: sequences were assigned above, and every stage of the group
	// was created before its request was queued.
	newTxn := func() (*badger.Txn, error) {
		txn := w.db.NewTransaction(true)
		err := txn.Set(nextSeqKey, u64(w.next.Load()))
		if err == nil {
			err = txn.Set(nextStageKey, u64(w.nextStage.Load()))
		}
		if err != nil {
			txn.Discard()
			return nil, err
		}
		return txn, nil
	}
	txn, err := newTxn()
	if err != nil {
		w.finish(group, err)
		return nil
	}
	g := newGroupWrite()
	t := newTxnState()
	// commit commits the transaction, applies what it holds to the index,
	// ends the requests completed in it and starts the next one.
	commit := func() error {
		err := txn.Commit()
		w.metrics.fsyncs.Inc()
		if msg := w.syncFailed.Swap(nil); msg != nil && err == nil {
			// The transaction is in badger but perhaps not on disk:
			// not acknowledged, and nothing more is written (see fail).
			err = fmt.Errorf("badger could not sync its value log: %s", strings.TrimSpace(*msg))
		}
		if err == nil {
			w.apply(g)
		}
		w.finish(g.reqs, err)
		g, t = newGroupWrite(), newTxnState()
		if err != nil {
			return err
		}
		txn, err = newTxn()
		return err
	}
	// redo starts the transaction again with the requests completed in
	// it so far: the one being added may have left part of itself in it.
	redo := func() error {
		txn.Discard()
		var err error
		if txn, err = newTxn(); err != nil {
			return err
		}
		done := g
		g, t = newGroupWrite(), newTxnState()
		for _, p := range done.reqs {
			if _, err := w.add(txn, p, done.from[p], g, t); err != nil {
				return fmt.Errorf("re-adding a request that fitted before: %w", err)
			}
			g.complete(p, done.from[p])
		}
		return nil
	}
	for _, r := range group {
		from := 0 // r's items before it are committed
		for {
			pos, err := w.add(txn, r, from, g, t)
			if err == nil {
				g.complete(r, from)
				break
			}
			tooBig := errors.Is(err, badger.ErrTxnTooBig) || errors.Is(err, errTxnFull)
			switch {
			case tooBig && r.splittable() && pos > from:
				// Commit what fits, r's first items with it, and go on
				// with the rest of r in the next transaction.
				if err := commit(); err != nil {
					return w.fail(txn, group, err)
				}
				from = pos
				continue
			case tooBig && len(g.reqs) > 0:
				// Commit the others without r, then try r again.
				if err := redo(); err != nil {
					return w.fail(txn, group, err)
				}
				if err := commit(); err != nil {
					return w.fail(txn, group, err)
				}
				continue
			case tooBig:
				err = &TooLargeError{Bytes: r.payloadBytes()}
			}
			// r cannot be written: drop what it put in the transaction.
			if err := redo(); err != nil {
				return w.fail(txn, group, err)
			}
			w.finish([]*request{r}, err)
			break
		}
	}
	if len(g.reqs) > 0 || len(g.deleted) > 0 {
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
	if txn != nil {
		txn.Discard()
	}
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
	bytes      int             // frames' bytes put in the transaction
}

// errTxnFull stops a splittable request at a frame that would take its
// transaction past groupBytes: the rest goes into the next transaction.
var errTxnFull = errors.New("wal: transaction full")

func newTxnState() *txnState {
	return &txnState{deleting: map[uint64]bool{}, partsGone: map[uint64]int{}, commitGone: map[uint64]bool{}}
}

// add puts request r's keys into txn and records in g what the index
// learns once txn commits.
func (w *WAL) add(txn *badger.Txn, r *request, from int, g *groupWrite, t *txnState) (int, error) {
	switch r.op {
	case opAppend:
		for i, f := range r.frames {
			if err := putFrame(txn, entryKey(r.first+uint64(i)), f, w.chunkBytes); err != nil {
				return 0, err
			}
			t.bytes += len(f)
		}
		return len(r.frames), nil
	case opPart, opCommit:
		for i := from; i < len(r.frames); i++ {
			// A stage's parts are split across transactions of at most
			// groupBytes, so that one stays inside badger's mapping of
			// the value-log file (see groupBytes).
			if t.bytes > 0 && t.bytes+len(r.frames[i]) > w.groupBytes {
				return i, errTxnFull
			}
			if err := putFrame(txn, partKey(r.stage.id, uint32(len(r.stage.parts)+i)), r.frames[i], w.chunkBytes); err != nil {
				return i, err
			}
			t.bytes += len(r.frames[i])
		}
		if r.op == opCommit {
			// The stage's last parts come with (or before) its commit
			// record.
			if err := txn.Set(commitKey(r.stage.id), commitValue(r.first, uint32(len(r.stage.parts)+len(r.frames)))); err != nil {
				return len(r.frames), err
			}
			return len(r.frames) + 1, nil
		}
		return len(r.frames), nil
	case opAbort:
		for i := from; i < len(r.stage.parts); i++ {
			if err := deleteFrame(txn, partKey(r.stage.id, uint32(i)), r.stage.parts[i].chunks); err != nil {
				return i, err
			}
		}
		return len(r.stage.parts), nil
	case opDelete:
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := from; i < len(r.deletes); i++ {
			seq := r.deletes[i]
			l, ok := w.live[seq]
			if !ok || t.deleting[seq] {
				continue
			}
			// An entry's keys and, with the last of its stage's parts,
			// the stage's commit record are one item: all in this
			// transaction, or all again in the next.
			if err := deleteFrame(txn, l.key(seq), l.chunks); err != nil {
				return i, err
			}
			last := false
			if l.stage != 0 {
				c := w.commits[l.stage]
				last = c != nil && c.live == t.partsGone[l.stage]+1 && !t.commitGone[l.stage]
				if last {
					if err := txn.Delete(commitKey(l.stage)); err != nil {
						return i, err
					}
				}
				t.partsGone[l.stage]++
				if last {
					t.commitGone[l.stage] = true
					g.commits = append(g.commits, l.stage)
				}
			}
			t.deleting[seq] = true
			g.deleted = append(g.deleted, seq)
		}
		return len(r.deletes), nil
	}
	return 0, nil
}

// apply updates the index after a committed transaction.
func (w *WAL) apply(g *groupWrite) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range g.reqs {
		switch r.op {
		case opAppend:
			for i, f := range r.frames {
				w.live[r.first+uint64(i)] = loc{chunks: chunks(f, w.chunkBytes), size: int64(len(f))}
			}
		case opPart:
			for _, f := range r.frames {
				r.stage.parts = append(r.stage.parts, partInfo{size: int64(len(f)), chunks: chunks(f, w.chunkBytes)})
			}
		case opCommit:
			for _, f := range r.frames {
				r.stage.parts = append(r.stage.parts, partInfo{size: int64(len(f)), chunks: chunks(f, w.chunkBytes)})
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
	if w.deletedBytes >= w.vlogBytes {
		// A file's worth is garbage: give it back now rather than at
		// the next tick, so that the disk follows a flush closely.
		select {
		case w.reclaimNow <- struct{}{}:
		default:
		}
	}
}
