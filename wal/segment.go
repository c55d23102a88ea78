package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// segmentSuffix ends every segment's file name. The rest of the name is
// the next sequence when the segment was started, or one more than the
// previous segment's name if that is larger (stage parts take no
// sequence); zero-padded, so that names sort in log order. Open starts
// sequences at no less than the last name, so they survive the deletion of
// every entry.
const segmentSuffix = ".wal"

// segment is one file of the log. Segments are written in order; only the
// last one is appended to.
type segment struct {
	first uint64 // from the file name
	path  string
	live  int // entries in it that are neither deleted nor quarantined
	// maxSeq is the largest sequence an entry, commit or mark in it
	// holds (zero: none), and records counts its intact records: with
	// the next segment's name they tell a segment deleted or emptied
	// from the middle of the log (see Gaps).
	maxSeq  uint64
	records int
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

// listSegments returns the segments in dir, oldest first.
func listSegments(dir string) ([]*segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, &segment{first: first, path: filepath.Join(dir, name)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs, nil
}

// scannedRecord is one intact record header found in a segment.
type scannedRecord struct {
	header
	off       int64    // of the header
	payloadOK bool     // the payload matches its checksum
	tombs     []uint64 // a tombstone's sequences
}

// region is a damaged byte range of a segment.
type region struct{ off, n int64 }

// scan reads a segment's records. Damage is skipped: a bad header starts a
// search for the next offset that holds an intact record. Damage that runs
// to the end of the file is returned as the tail (a write cut short by a
// crash looks like that); damage followed by intact records as a region.
func scan(data []byte) (recs []scannedRecord, damaged []region, tailAt int64) {
	off := 0
	for off < len(data) {
		r, ok := recordAt(data, off)
		if !ok {
			next := resync(data, off+1)
			if next < 0 {
				return recs, damaged, int64(off)
			}
			damaged = append(damaged, region{int64(off), int64(next - off)})
			off = next
			continue
		}
		recs = append(recs, r)
		off += headerSize + int(r.length)
	}
	return recs, damaged, int64(len(data))
}

// recordAt decodes the record at off: its header must be intact and its
// payload within data. A tombstone's payload must also be intact, since
// its sequences are read.
func recordAt(data []byte, off int) (scannedRecord, bool) {
	h, ok := parseHeader(data[off:])
	if !ok || int64(len(data)-off-headerSize) < int64(h.length) {
		return scannedRecord{}, false
	}
	p := data[off+headerSize : off+headerSize+int(h.length)]
	r := scannedRecord{header: h, off: int64(off), payloadOK: crc32.Checksum(p, castagnoli) == h.payloadCRC}
	if h.typ == recTombstone {
		if !r.payloadOK || len(p)%8 != 0 {
			return scannedRecord{}, false
		}
		r.tombs = make([]uint64, len(p)/8)
		for i := range r.tombs {
			r.tombs[i] = binary.BigEndian.Uint64(p[8*i:])
		}
	}
	return r, true
}

// resync returns the first offset from off on where an intact record with
// an intact payload starts, or -1.
func resync(data []byte, off int) int {
	for ; off+headerSize <= len(data); off++ {
		if r, ok := recordAt(data, off); ok && r.payloadOK {
			return off
		}
	}
	return -1
}
