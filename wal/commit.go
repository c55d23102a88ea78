package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"tsdb/internal/fsutil"
)

// request is one operation waiting for the commit loop.
type request struct {
	op       op
	payloads [][]byte // opAppend, opPart
	crcs     []uint32 // of the payloads (without header room), by submit
	framed   bool     // payloads start with HeaderRoom reserved bytes
	deletes  []uint64 // opDelete
	stage    *Stage   // opPart, opCommit
	first    uint64
	err      error
	done     chan struct{}
}

// op is what a request writes.
type op int

const (
	opAppend op = iota // entries
	opPart             // parts of a stage, not synced
	opCommit           // a stage's commit record
	opDelete           // a tombstone
	opMark             // a next-sequence marker, raising next to first
)

// entries is how many sequences the request takes.
func (r *request) entries() int {
	switch r.op {
	case opAppend:
		return len(r.payloads)
	case opCommit:
		return len(r.stage.locs)
	}
	return 0
}

// newSegment starts a segment named by the next sequence and makes it the
// one written. Called by Open and the commit loop.
func (w *WAL) newSegment() error {
	// Named by the next sequence, or one past the previous segment's name
	// when no entry was appended since (stage parts take no sequence).
	first := w.next.Load()
	w.mu.Lock()
	if n := len(w.segs); n > 0 {
		first = max(first, w.segs[n-1].first+1)
	}
	w.mu.Unlock()
	if w.cur != nil && w.unsynced {
		// Stage parts written last to the old segment are synced by no
		// later commit, which syncs only the segment it lands in.
		if err := unix.Fdatasync(int(w.cur.Fd())); err != nil {
			w.broken = fmt.Errorf("fdatasync %s failed: %w", w.cur.Name(), err)
			return w.broken
		}
		w.unsynced = false
	}
	s := &segment{first: first, path: filepath.Join(w.dir, segmentName(first))}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("wal: new segment: %w", err)
	}
	// The segment's name records the next sequence, so it must survive a
	// crash with the directory entry.
	if err := syncDir(w.dir); err != nil {
		f.Close()
		os.Remove(s.path) // else the next try finds the name taken
		return err
	}
	if w.cur != nil {
		w.cur.Close()
	}
	w.cur, w.curSize = f, 0
	w.mu.Lock()
	w.segs = append(w.segs, s)
	w.mu.Unlock()
	w.metrics.segments.Inc()
	return nil
}

func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: sync directory: %w", err)
	}
	return nil
}

func (w *WAL) submit(ctx context.Context, req *request) (uint64, error) {
	if len(req.payloads) > maxParts {
		return 0, fmt.Errorf("wal: at most %d entries per append", maxParts)
	}
	// Payloads are checksummed here, by each writer, not in the commit
	// loop: the loop lays out a group under w.mu, which every writer takes
	// on the way in, and on two cores writers would checksum one after
	// another.
	if len(req.payloads) > 0 {
		req.crcs = make([]uint32, len(req.payloads))
	}
	for i, p := range req.payloads {
		p = p[req.room():]
		if n := len(p); n > math.MaxUint32 {
			return 0, &TooLargeError{Bytes: n}
		}
		req.crcs[i] = crc32Checksum(p)
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
// writes them with one write and one fdatasync and wakes the writers.
// While a group is being synced, the next one queues up.
func (w *WAL) commitLoop() {
	defer close(w.commitDone)
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
		size := requestBytes(first)
	drain:
		for size < maxGroupBytes {
			select {
			case r := <-w.requests:
				group = append(group, r)
				size += requestBytes(r)
			default:
				break drain
			}
		}
		w.commitGroup(group)
	}
}

// requestBytes is what r brings to a group: payloads and tombstones.
func requestBytes(r *request) int {
	return r.payloadBytes() + 8*len(r.deletes)
}

// payloadBytes is the callers' payload in r, without reserved room.
func (r *request) payloadBytes() int {
	n := 0
	for _, p := range r.payloads {
		n += len(p) - r.room()
	}
	return n
}

// room is the header room reserved in front of each of r's payloads.
func (r *request) room() int {
	if r.framed {
		return HeaderRoom
	}
	return 0
}

// commitGroup writes a group of requests as one write and, unless the group
// is only stage parts, one sync; then the index learns what is now in the
// log and the writers are woken.
func (w *WAL) commitGroup(group []*request) {
	start := time.Now()
	err := w.broken
	if err == nil && w.curSize >= w.segmentBytes {
		if w.burned {
			// Sequences handed to a group whose write failed are in no
			// segment: a mark in this one says they were skipped, not
			// lost, or Open would report them as a gap (see gaps).
			err = w.write([][]byte{record(recNextSeq, w.next.Load(), nil)}, true)
			w.burned = err != nil
		}
		// Before sequences are assigned: a segment is named by the first
		// sequence it may hold.
		if err == nil {
			err = w.newSegment()
		}
	}
	for _, r := range group {
		if r.op == opMark && w.next.Load() < r.first {
			// Only this loop moves next: a marker raises it here.
			w.next.Store(r.first)
		}
		if n := r.entries(); n > 0 {
			r.first = w.next.Add(uint64(n)) - uint64(n)
		}
	}
	if err == nil {
		g := w.encodeGroup(group)
		if len(g.iov) > 0 {
			err = w.write(g.iov, g.sync)
			if g.sync {
				w.metrics.fsyncs.Inc()
			}
		}
		if err == nil {
			w.applyGroup(group, g)
		}
	}
	for _, r := range group {
		switch n := r.entries(); {
		case err != nil && n > 0:
			w.burned = true
			r.err = fmt.Errorf("wal: append entries %d..%d: %w", r.first, r.first+uint64(n)-1, err)
		case err != nil:
			r.err = fmt.Errorf("wal: %w", err)
		case n > 0:
			// Written past any sequences burned before: the segment's
			// largest sequence covers them.
			w.burned = false
			fallthrough
		default:
			w.metrics.appends.Add(float64(n))
			w.metrics.bytes.Add(float64(r.payloadBytes()))
		}
		if err != nil {
			w.metrics.failures.Inc()
		}
		close(r.done)
	}
	w.metrics.groupSize.Observe(float64(len(group)))
	w.metrics.latency.Observe(time.Since(start).Seconds())
}

// groupWrite is what a group puts in the current segment, and what the
// index learns once it is there.
type groupWrite struct {
	iov     [][]byte
	sync    bool                  // false when the group is only stage parts
	added   map[uint64]entryLoc   // entries appended
	parts   map[*Stage][]entryLoc // stage parts written, in order
	deleted []uint64              // live entries the tombstones delete
}

// encodeGroup lays the group's records out after the current end of the
// segment.
func (w *WAL) encodeGroup(group []*request) *groupWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := &groupWrite{}
	seg := w.segs[len(w.segs)-1]
	off := w.curSize
	var seen map[uint64]bool // deleted by an earlier request of the group
	add := func(rec []byte) {
		g.iov = append(g.iov, rec)
		off += int64(len(rec))
	}
	for _, r := range group {
		g.sync = g.sync || r.op != opPart
		switch r.op {
		case opAppend, opPart:
			for i, p := range r.payloads {
				typ, aux, seq := recEntry, uint32(len(r.payloads)-1-i), r.first+uint64(i)
				if r.op == opPart {
					typ, aux, seq = recPart, uint32(len(r.stage.locs)+len(g.parts[r.stage])), r.stage.id
				}
				// A frame carries its header room: written whole, no copy.
				frame := p
				var hdr []byte
				if r.framed {
					hdr, p = frame[:HeaderRoom], frame[HeaderRoom:]
				} else {
					hdr = make([]byte, headerSize)
				}
				putHeader(hdr, typ, aux, seq, uint32(len(p)), r.crcs[i])
				loc := entryLoc{seg: seg, off: off + headerSize, n: uint32(len(p)), crc: r.crcs[i]}
				if r.framed {
					add(frame)
				} else {
					add(hdr)
					add(p)
				}
				if r.op == opPart {
					if g.parts == nil {
						g.parts = map[*Stage][]entryLoc{}
					}
					g.parts[r.stage] = append(g.parts[r.stage], loc)
				} else {
					if g.added == nil {
						g.added = map[uint64]entryLoc{}
					}
					g.added[seq] = loc
				}
			}
		case opCommit:
			var p [12]byte
			binary.BigEndian.PutUint64(p[:], r.stage.id)
			binary.BigEndian.PutUint32(p[8:], uint32(len(r.stage.locs)))
			add(record(recCommit, r.first, p[:]))
		case opMark:
			add(record(recNextSeq, w.next.Load(), nil))
		case opDelete:
			var p []byte
			for _, seq := range r.deletes {
				if _, ok := w.live[seq]; ok && !seen[seq] {
					if seen == nil {
						seen = map[uint64]bool{}
					}
					seen[seq] = true
					p = binary.BigEndian.AppendUint64(p, seq)
					g.deleted = append(g.deleted, seq)
				}
			}
			if len(p) > 0 {
				add(record(recTombstone, 0, p))
			}
		}
	}
	return g
}

// applyGroup updates the index after the group's write.
func (w *WAL) applyGroup(group []*request, g *groupWrite) {
	w.mu.Lock()
	for seq, loc := range g.added {
		w.setLive(seq, loc, false)
	}
	for st, ls := range g.parts {
		// A stage's parts keep their segments until it commits or
		// aborts: the commit record may land in a later segment.
		for _, l := range ls {
			l.seg.live++
		}
		st.locs = append(st.locs, ls...)
	}
	for _, r := range group {
		if r.op == opCommit {
			// The parts' pins become the entries' live counts.
			for i, l := range r.stage.locs {
				w.setLive(r.first+uint64(i), l, true)
			}
			r.stage.locs = nil
		}
	}
	for _, seq := range g.deleted {
		w.dropLive(seq)
	}
	w.mu.Unlock()
	if len(g.deleted) > 0 {
		w.metrics.deletes.Add(float64(len(g.deleted)))
		if err := w.dropDeadSegments(); err != nil {
			w.logger.Error("wal: removing segments whose entries are all deleted", "err", err)
		}
	}
}

// write appends the buffers to the current segment and syncs it. On a
// failed write the segment is cut back to where the group began, so that
// the next group does not follow a partial one. After a failed sync
// nothing more is written: the kernel may have dropped the dirty pages
// and a later sync would report success for data that is not there.
func (w *WAL) write(iov [][]byte, sync bool) error {
	start := w.curSize
	fd := int(w.cur.Fd())
	for len(iov) > 0 {
		batch := iov[:min(len(iov), 1024)] // IOV_MAX
		n, err := unix.Writev(fd, batch)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			if terr := w.cur.Truncate(start); terr != nil {
				w.broken = fmt.Errorf("write failed (%w) and the segment could not be cut back: %v", err, terr)
			}
			w.curSize = start
			return fmt.Errorf("write %s: %w", w.cur.Name(), err)
		}
		w.curSize += int64(n)
		// Drop what was written, including part of a buffer.
		for n > 0 && len(iov) > 0 {
			if n >= len(iov[0]) {
				n -= len(iov[0])
				iov = iov[1:]
				continue
			}
			iov[0] = iov[0][n:]
			n = 0
		}
	}
	if !sync {
		// Stage parts need no sync yet, but their commit will: start
		// writing them back now so that the commit's sync has little
		// left to wait for.
		if err := unix.SyncFileRange(fd, start, w.curSize-start, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			w.logger.Debug("wal: sync_file_range", "err", err)
		}
		w.unsynced = true
		return nil
	}
	if err := unix.Fdatasync(fd); err != nil {
		w.broken = fmt.Errorf("fdatasync %s failed: %w", w.cur.Name(), err)
		return w.broken
	}
	w.unsynced = false
	return nil
}

// dropDeadSegments removes segments from the front of the log while they
// hold no live entry. Only the front: a segment's tombstones may be all
// that keeps entries of older segments deleted.
func (w *WAL) dropDeadSegments() error {
	// One drop at a time, unlinking in log order: a later segment must
	// not go before an earlier one, whose deleted entries its tombstones
	// may be all that keeps deleted.
	w.dropMu.Lock()
	defer w.dropMu.Unlock()
	w.mu.Lock()
	var drop []*segment
	for len(w.segs) > 1 && w.segs[0].live == 0 {
		drop = append(drop, w.segs[0])
		w.segs = w.segs[1:]
	}
	w.mu.Unlock()
	if len(drop) == 0 {
		return nil
	}
	for _, s := range drop {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("wal: remove segment: %w", err)
		}
		w.metrics.segments.Dec()
	}
	return syncDir(w.dir)
}
