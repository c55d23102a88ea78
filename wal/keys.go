package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// Key prefixes; see the package comment for the layout.
const (
	prefixEntry  = 'e'
	prefixPart   = 'p'
	prefixCommit = 'c'
)

var (
	nextSeqKey   = []byte("m/next")
	nextStageKey = []byte("m/stage")
	// flushMarkerKey is written and dropped by the reclaimer: DropPrefix
	// is badger's only call that flushes the memtable, and it does
	// nothing when no key has the prefix (see reclaim.go).
	flushMarkerKey = []byte("!flush")
)

// crcSize is the CRC32-C in front of every entry's and part's payload.
const crcSize = 4

// maxParts bounds the parts of one stage (a part's index has four bytes;
// the bound keeps a stage's commit within one badger transaction).
const maxParts = 1 << 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

func entryKey(seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixEntry
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

func partKey(stage uint64, part uint32) []byte {
	k := make([]byte, 13)
	k[0] = prefixPart
	binary.BigEndian.PutUint64(k[1:], stage)
	binary.BigEndian.PutUint32(k[9:], part)
	return k
}

func commitKey(stage uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixCommit
	binary.BigEndian.PutUint64(k[1:], stage)
	return k
}

// commitValue is a commit record: the first sequence its parts take and
// how many there are.
func commitValue(first uint64, n uint32) []byte {
	v := make([]byte, 12)
	binary.BigEndian.PutUint64(v, first)
	binary.BigEndian.PutUint32(v[8:], n)
	return v
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// A payload larger than a chunk is split: badger refuses a value larger
// than a value-log file, and small files are what lets GC give space back
// soon (see reclaim.go). Its first chunk goes under the entry's (or
// part's) key, after the checksum of the whole payload, the rest under
// that key followed by the big-endian chunk index (1, 2, …). A key's
// length tells a chunk from an entry or part, so a log reads back whatever
// chunk size wrote it.
//
// chunkBytes is the chunk size for a value-log file of vlogBytes: a
// quarter, so that a chunk and its header always fit in the file badger
// is writing, and at most 4 MiB.
func chunkBytes(vlogBytes int64) int {
	return int(min(vlogBytes/4, 4<<20))
}

func chunkKey(base []byte, i uint32) []byte {
	return binary.BigEndian.AppendUint32(append(make([]byte, 0, len(base)+4), base...), i)
}

// chunks is how many values a frame (checksum and payload) takes in
// chunks of size bytes.
func chunks(frame []byte, size int) uint32 {
	n := (len(frame) - crcSize + size - 1) / size
	return uint32(max(n, 1))
}

// setter is what takes keys: a badger transaction or write batch.
type setter interface{ Set(k, v []byte) error }

// putFrame sets frame (checksum and payload) under key, split into chunks
// of size bytes.
func putFrame(s setter, key, frame []byte, size int) error {
	p := frame[crcSize:]
	if len(p) <= size {
		return s.Set(key, frame)
	}
	if err := s.Set(key, frame[:crcSize+size]); err != nil {
		return err
	}
	for i, off := uint32(1), size; off < len(p); i, off = i+1, off+size {
		if err := s.Set(chunkKey(key, i), p[off:min(off+size, len(p))]); err != nil {
			return err
		}
	}
	return nil
}

// deleter is what deletes keys: a badger transaction or write batch.
type deleter interface{ Delete(k []byte) error }

// deleteFrame deletes the n chunks of the frame under key.
func deleteFrame(d deleter, key []byte, n uint32) error {
	if err := d.Delete(key); err != nil {
		return err
	}
	for i := uint32(1); i < n; i++ {
		if err := d.Delete(chunkKey(key, i)); err != nil {
			return err
		}
	}
	return nil
}
