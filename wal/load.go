package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// loadState is what Open carries from one segment to the next.
type loadState struct {
	parts    map[uint64]map[uint32]entryLoc // stage parts not yet committed, by stage and index
	maxStage uint64
	// incomplete are commits some of whose parts were not found. That is
	// damage unless the missing entries were deleted (their segments are
	// then gone, legitimately), which only tombstones read later tell.
	incomplete []incompleteCommit
	deleted    map[uint64]bool // every sequence a tombstone names
}

type incompleteCommit struct {
	first   uint64
	n       uint32
	stage   uint64
	missing []uint64
	segment string
	off     int64
}

// resolve drops the entries of commits that lack parts no tombstone
// explains: a staged write is replayed whole or not at all.
func (w *WAL) resolve(st *loadState) {
	for _, c := range st.incomplete {
		lost := 0
		for _, seq := range c.missing {
			if !st.deleted[seq] {
				lost++
			}
		}
		if lost == 0 {
			continue
		}
		w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Seq: c.first, Segment: c.segment, Offset: c.off,
			Err: fmt.Errorf("%d of the %d parts of staged write %d are missing; its entries %d..%d are dropped", lost, c.n, c.stage, c.first, c.first+uint64(c.n)-1)})
		for i := range uint64(c.n) {
			w.dropLive(c.first + i)
		}
	}
}

// load reads segment s into the index and returns the next sequence it
// implies. The last segment's damaged tail is cut off.
func (w *WAL) load(s *segment, last bool, st *loadState) (uint64, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return 0, fmt.Errorf("wal: read segment: %w", err)
	}
	recs, damaged, tailAt := scan(data)
	name := filepath.Base(s.path)
	next := uint64(0)
	// The entries of one Append are written together and counted down in
	// their headers (aux: entries after this one): they become live when
	// the last one is read, so that a write cut short is not replayed in
	// part.
	var call []scannedRecord
	dropCall := func() {
		if len(call) > 0 {
			w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Seq: call[0].seq, Segment: name, Offset: call[0].off,
				Err: fmt.Errorf("only %d entries of a write are intact; they are dropped", len(call))})
		}
		call = nil
	}
	s.records = len(recs)
	for _, r := range recs {
		switch r.typ {
		case recEntry:
			s.maxSeq = max(s.maxSeq, r.seq)
		case recNextSeq:
			// A mark raises the next sequence: the ones below were
			// skipped, not written.
			if r.seq > 0 {
				s.maxSeq = max(s.maxSeq, r.seq-1)
			}
		case recCommit:
			if r.payloadOK && r.length == 12 {
				s.maxSeq = max(s.maxSeq, r.seq+uint64(binary.BigEndian.Uint32(data[r.off+headerSize+8:]))-1)
			}
		}
		if len(call) > 0 && (r.typ != recEntry || r.aux != call[len(call)-1].aux-1 || r.seq != call[len(call)-1].seq+1) {
			dropCall()
		}
		switch r.typ {
		case recEntry:
			call = append(call, r)
			if r.aux != 0 {
				continue
			}
			for _, e := range call {
				w.setLive(e.seq, entryLoc{seg: s, off: e.off + headerSize, n: e.length, crc: e.payloadCRC}, false)
				next = max(next, e.seq+1)
			}
			call = nil
		case recTombstone:
			for _, seq := range r.tombs {
				st.deleted[seq] = true
				w.dropLive(seq)
			}
		case recNextSeq:
			next = max(next, r.seq)
		case recPart:
			st.maxStage = max(st.maxStage, r.seq)
			if st.parts[r.seq] == nil {
				st.parts[r.seq] = map[uint32]entryLoc{}
			}
			st.parts[r.seq][r.aux] = entryLoc{seg: s, off: r.off + headerSize, n: r.length, crc: r.payloadCRC}
		case recCommit:
			if !r.payloadOK || r.length != 12 {
				w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Seq: r.seq, Segment: name, Offset: r.off,
					Err: errors.New("the commit record of a staged write is damaged; its entries are lost")})
				continue
			}
			p := data[r.off+headerSize:]
			stage, n := binary.BigEndian.Uint64(p), binary.BigEndian.Uint32(p[8:])
			parts := st.parts[stage]
			delete(st.parts, stage)
			var missing []uint64
			for i := range n {
				loc, ok := parts[i]
				if !ok {
					missing = append(missing, r.seq+uint64(i))
					continue
				}
				w.setLive(r.seq+uint64(i), loc, false)
			}
			if len(missing) > 0 {
				st.incomplete = append(st.incomplete, incompleteCommit{first: r.seq, n: n, stage: stage, missing: missing, segment: name, off: r.off})
			}
			next = max(next, r.seq+uint64(n))
		}
	}
	if len(call) > 0 && last {
		// The log ends in the middle of a write: cut it like a torn tail.
		tailAt, call = call[0].off, nil
	}
	dropCall()
	for _, d := range damaged {
		w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Segment: name, Offset: d.off,
			Err: fmt.Errorf("%d damaged bytes skipped", d.n)})
	}
	if tailAt < int64(len(data)) {
		if !last {
			w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Segment: name, Offset: tailAt,
				Err: fmt.Errorf("the last %d bytes are damaged", int64(len(data))-tailAt)})
			return next, nil
		}
		// Only the last write can be torn, and it was not acknowledged:
		// the sync that would have acknowledged it did not return.
		w.logger.Warn("wal: dropping a torn write at the end of the log", "segment", name, "offset", tailAt, "bytes", int64(len(data))-tailAt)
		if err := os.Truncate(s.path, tailAt); err != nil {
			return 0, fmt.Errorf("wal: cut torn tail: %w", err)
		}
	}
	return next, nil
}

// SeqRange is a range of sequences, inclusive.
type SeqRange struct {
	First, Last uint64
	// Segment is the file that should have held them, or after which
	// they are missing.
	Segment string
}

// gaps finds sequences that the segments on disk say were written but no
// segment holds: a segment deleted from the middle of the log (segments
// are only ever removed from the front) or emptied. Each segment but the
// last was full when the next began, and the next one's name is the
// sequence after the last one written before it.
func gaps(segs []*segment) []SeqRange {
	var out []SeqRange
	for i := 0; i+1 < len(segs); i++ {
		cur, next := segs[i], segs[i+1]
		name := filepath.Base(cur.path)
		switch {
		case cur.records == 0 && next.first > cur.first:
			out = append(out, SeqRange{First: cur.first, Last: next.first - 1, Segment: name})
		case cur.maxSeq > 0 && cur.maxSeq+1 < next.first:
			out = append(out, SeqRange{First: cur.maxSeq + 1, Last: next.first - 1, Segment: name})
		}
	}
	return out
}
