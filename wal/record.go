package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// Every record in a segment starts with a fixed header:
//
//	offset size
//	0      4    CRC32-C of header bytes 4..24
//	4      4    CRC32-C of the payload
//	8      4    payload length
//	12     1    record type
//	13     3    a part's index in its stage; for an entry, how many
//	            entries of the same Append follow it
//	16     8    the entry's sequence (entries), the next sequence
//	            (markers), the stage (parts), the first sequence
//	            (commits), zero (tombstones)
//
// The header has a checksum of its own so that a reader can tell a damaged
// header, whose length cannot be trusted, from a damaged payload, whose
// record is skipped by its length; and so that after damage it can find the
// next intact record by trying every offset.
const headerSize = 24

// Record types.
const (
	recEntry     byte = 1 // a payload appended by a caller
	recTombstone byte = 2 // payload: big-endian sequences of deleted entries
	recNextSeq   byte = 3 // the sequence the next entry gets, at least
	recPart      byte = 4 // a payload of a stage, an entry once committed
	recCommit    byte = 5 // payload: stage and part count; they become entries
)

// maxParts bounds the parts of one stage: a part's index has three bytes.
const maxParts = 1 << 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a decoded record header.
type header struct {
	payloadCRC uint32
	length     uint32
	typ        byte
	aux        uint32
	seq        uint64
}

// putHeader writes the header of a record into dst[:headerSize]: its
// payload has n bytes and checksum pcrc.
func putHeader(dst []byte, typ byte, aux uint32, seq uint64, n, pcrc uint32) {
	binary.BigEndian.PutUint32(dst[4:], pcrc)
	binary.BigEndian.PutUint32(dst[8:], n)
	binary.BigEndian.PutUint32(dst[12:], aux)
	dst[12] = typ
	binary.BigEndian.PutUint64(dst[16:], seq)
	binary.BigEndian.PutUint32(dst[0:], crc32.Checksum(dst[4:headerSize], castagnoli))
}

// parseHeader decodes the header at the start of b. It fails when b is too
// short, the header checksum does not match, or the type is unknown.
func parseHeader(b []byte) (header, bool) {
	if len(b) < headerSize {
		return header{}, false
	}
	if binary.BigEndian.Uint32(b) != crc32.Checksum(b[4:headerSize], castagnoli) {
		return header{}, false
	}
	h := header{
		payloadCRC: binary.BigEndian.Uint32(b[4:]),
		length:     binary.BigEndian.Uint32(b[8:]),
		typ:        b[12],
		aux:        binary.BigEndian.Uint32(b[12:]) & (maxParts - 1),
		seq:        binary.BigEndian.Uint64(b[16:]),
	}
	switch h.typ {
	case recEntry, recTombstone, recNextSeq, recPart, recCommit:
		return h, true
	}
	return header{}, false
}

// record returns a whole record (header and payload) of the given type.
func record(typ byte, seq uint64, p []byte) []byte {
	b := make([]byte, headerSize+len(p))
	copy(b[headerSize:], p)
	putHeader(b, typ, 0, seq, uint32(len(p)), crc32Checksum(p))
	return b
}

func crc32Checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }
