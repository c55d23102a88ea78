package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"tsdb/internal/fsutil"
)

// Data directories written by tsdb versions before this one may hold the
// WAL as segment files (<20-digit sequence>.wal) instead of badger: a log
// of checksummed records, each with a 24-byte header. They may hold
// acknowledged entries that no Delta commit has, so Open converts them into
// badger before anything else, entry for entry under the same sequences.
//
// Segment record header (big-endian):
//
//	0  4  CRC32-C of header bytes 4..24
//	4  4  CRC32-C of the payload
//	8  4  payload length
//	12 1  type; 13..16: a part's index, or how many entries of the same
//	      append follow this one
//	16 8  sequence (entries), next sequence (marks), stage (parts),
//	      first sequence (commits)
const segHeaderSize = 24

// Segment record types.
const (
	segEntry     byte = 1
	segTombstone byte = 2 // payload: big-endian sequences deleted
	segNextSeq   byte = 3
	segPart      byte = 4
	segCommit    byte = 5 // payload: stage (8), part count (4)
)

const segmentSuffix = ".wal"

// segHeader is a decoded segment record header.
type segHeader struct {
	off        int
	payloadCRC uint32
	length     uint32
	typ        byte
	aux        uint32
	seq        uint64
}

func parseSegHeader(b []byte, off int) (segHeader, bool) {
	if len(b)-off < segHeaderSize {
		return segHeader{}, false
	}
	h := b[off : off+segHeaderSize]
	if binary.BigEndian.Uint32(h) != crc32.Checksum(h[4:], castagnoli) {
		return segHeader{}, false
	}
	r := segHeader{off: off, payloadCRC: binary.BigEndian.Uint32(h[4:]), length: binary.BigEndian.Uint32(h[8:]),
		typ: h[12], aux: binary.BigEndian.Uint32(h[12:]) & (1<<24 - 1), seq: binary.BigEndian.Uint64(h[16:])}
	if r.typ < segEntry || r.typ > segCommit || int64(len(b)-off-segHeaderSize) < int64(r.length) {
		return segHeader{}, false
	}
	return r, true
}

// segmentLog is what the segment files hold: live entries' payloads by
// sequence, the next sequence, and the damage found.
type segmentLog struct {
	entries map[uint64][]byte
	bad     map[uint64][]byte // entries whose payload fails its checksum
	next    uint64
	damaged []*CorruptionError
}

// readSegments reads every segment in dir, oldest first, applying
// tombstones and stage commits as the segment log did at start-up.
func readSegments(dir string, names []string) (*segmentLog, error) {
	l := &segmentLog{entries: map[uint64][]byte{}, bad: map[uint64][]byte{}, next: 1}
	parts := map[uint64]map[uint32][]byte{}
	for i, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("wal: read segment %s: %w", name, err)
		}
		last := i == len(names)-1
		// The entries of one append are counted down in their headers and
		// become live with the last one: a write cut short is dropped.
		var call []segHeader
		for off := 0; off < len(data); {
			h, ok := parseSegHeader(data, off)
			if !ok {
				next := off + 1
				for ; next+segHeaderSize <= len(data); next++ {
					if h2, ok := parseSegHeader(data, next); ok && crc32.Checksum(data[next+segHeaderSize:next+segHeaderSize+int(h2.length)], castagnoli) == h2.payloadCRC {
						break
					}
				}
				if next+segHeaderSize > len(data) {
					if !last {
						l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Segment: name, Offset: int64(off), Err: fmt.Errorf("the last %d bytes are damaged", len(data)-off)})
					}
					break // a torn tail: never acknowledged
				}
				l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Segment: name, Offset: int64(off), Err: fmt.Errorf("%d damaged bytes skipped", next-off)})
				off = next
				continue
			}
			off = h.off + segHeaderSize + int(h.length)
			p := data[h.off+segHeaderSize : off]
			okPayload := crc32.Checksum(p, castagnoli) == h.payloadCRC
			if len(call) > 0 && (h.typ != segEntry || h.aux != call[len(call)-1].aux-1 || h.seq != call[len(call)-1].seq+1) {
				l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Seq: call[0].seq, Segment: name, Offset: int64(call[0].off),
					Err: fmt.Errorf("only %d entries of a write are intact; they are dropped", len(call))})
				call = nil
			}
			switch h.typ {
			case segEntry:
				call = append(call, h)
				if h.aux != 0 {
					continue
				}
				for _, e := range call {
					ep := data[e.off+segHeaderSize : e.off+segHeaderSize+int(e.length)]
					l.put(e.seq, ep, crc32.Checksum(ep, castagnoli) == e.payloadCRC)
					l.next = max(l.next, e.seq+1)
				}
				call = nil
			case segTombstone:
				if !okPayload || len(p)%8 != 0 {
					l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Segment: name, Offset: int64(h.off), Err: errors.New("a damaged deletion record is skipped")})
					continue
				}
				for j := 0; j < len(p); j += 8 {
					seq := binary.BigEndian.Uint64(p[j:])
					delete(l.entries, seq)
					delete(l.bad, seq)
				}
			case segNextSeq:
				l.next = max(l.next, h.seq)
			case segPart:
				if parts[h.seq] == nil {
					parts[h.seq] = map[uint32][]byte{}
				}
				if !okPayload {
					p = nil // the entry it becomes is quarantined
				}
				parts[h.seq][h.aux] = p
			case segCommit:
				if !okPayload || len(p) != 12 {
					l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Seq: h.seq, Segment: name, Offset: int64(h.off), Err: errors.New("the commit record of a staged write is damaged; its entries are lost")})
					continue
				}
				stage, n := binary.BigEndian.Uint64(p), binary.BigEndian.Uint32(p[8:])
				for j := range n {
					if pp, ok := parts[stage][j]; ok {
						l.put(h.seq+uint64(j), pp, pp != nil)
					}
					// A missing part was deleted before its segment was
					// removed, or lost: the log cannot tell any more.
				}
				delete(parts, stage)
				l.next = max(l.next, h.seq+uint64(n))
			}
		}
		if len(call) > 0 && !last {
			l.damaged = append(l.damaged, &CorruptionError{Dir: dir, Seq: call[0].seq, Segment: name, Offset: int64(call[0].off),
				Err: fmt.Errorf("only %d entries of a write are intact; they are dropped", len(call))})
		}
		if first, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 64); err == nil {
			l.next = max(l.next, first)
		}
	}
	return l, nil
}

func (l *segmentLog) put(seq uint64, p []byte, ok bool) {
	if ok {
		l.entries[seq] = p
		delete(l.bad, seq)
		return
	}
	l.bad[seq] = p
	delete(l.entries, seq)
}

// convertSegments moves a segment log in w.dir into badger: every live
// entry under its sequence, the next sequence, and entries whose payload
// fails its checksum to the quarantine. Then the segments are removed,
// oldest first: a crash part-way leaves a suffix of the log, whose
// tombstones only ever delete entries of itself or of removed segments,
// so converting it again resurrects nothing.
func (w *WAL) convertSegments(ctx context.Context) error {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), segmentSuffix) {
			if _, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), segmentSuffix), 10, 64); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names) // zero-padded: name order is log order
	l, err := readSegments(w.dir, names)
	if err != nil {
		return err
	}
	for seq, p := range l.bad {
		if err := quarantineEntry(w.dir, seq, p); err != nil {
			return err
		}
		l.damaged = append(l.damaged, &CorruptionError{Dir: w.dir, Seq: seq, Err: errors.New("payload does not match its checksum; quarantined")})
	}
	wb := w.db.NewWriteBatch()
	defer wb.Cancel()
	for seq, p := range l.entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		v := make([]byte, crcSize+len(p))
		binary.BigEndian.PutUint32(v, crc32Checksum(p))
		copy(v[crcSize:], p)
		if err := putFrame(wb, entryKey(seq), v, w.chunkBytes); err != nil {
			return fmt.Errorf("wal: convert segments: %w", err)
		}
	}
	// A conversion cut short by a crash runs again on what is left of the
	// log, whose next sequence may be lower than the first run's.
	if err := w.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(nextSeqKey)
		if err != nil {
			return nil
		}
		return item.Value(func(v []byte) error {
			if len(v) == 8 {
				l.next = max(l.next, binary.BigEndian.Uint64(v))
			}
			return nil
		})
	}); err != nil {
		return fmt.Errorf("wal: convert segments: %w", err)
	}
	if err := wb.Set(nextSeqKey, u64(l.next)); err != nil {
		return fmt.Errorf("wal: convert segments: %w", err)
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("wal: convert segments: %w", err)
	}
	// Badger writes with SyncWrites: the entries are durable now.
	for _, name := range names {
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("wal: remove converted segment: %w", err)
		}
		// Each removal durable before the next: what a crash leaves must
		// be a suffix of the log, whatever order the file system would
		// persist the unlinks in.
		if err := fsutil.SyncDir(w.dir); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
	}
	w.damaged = append(w.damaged, l.damaged...)
	w.logger.Info("wal: converted the segment log to badger", "segments", len(names), "entries", len(l.entries), "quarantined", len(l.bad), "next_seq", l.next)
	return nil
}
