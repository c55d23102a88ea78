package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/membuffer"
)

// WAL entry layout (version 1):
//
//	byte    format version (1)
//	byte    kind (1 = rows)
//	uvarint len, table name
//	uvarint len, table id (Delta metaData.id)
//	varint  bucket start, varint bucket end (UTC micros)
//	rest    Arrow IPC stream with one record batch
//
// A COPY's entry (kind 4, rows split) has the same header, then
//
//	uint32  little-endian length of the columns' stream
//	        the columns: Arrow IPC stream, text columns as their bytes
//	rest    the text columns' lengths: Arrow IPC stream
//
// both with LZ4 body compression, which the IPC reader undoes
// (textsplit.go says why and how).
//
// The bucket is stored rather than recomputed at replay, so a restart with
// another --bucket-duration still matches each entry with the Delta txn that
// records its flush.
const (
	entryVersion  = 1
	kindRows      = 1
	kindDML       = 2
	kindRowsSplit = 4 // kindDeletes is 3
	// kindFileRows is a rows entry (kindRows' layout) whose rows a
	// transaction's deletes entry, logged after it in the same append,
	// writes into a data file in the commit that rewrites the files it
	// deletes from: the new versions of rows an UPDATE changed there.
	// Replay skips it when that commit landed (the table's dml txn is at
	// or past it) and buffers its rows like any others when it did not.
	kindFileRows = 5
)

// A DML entry (kind 2), as releases before effect logging wrote a DELETE
// or UPDATE, holds after the version and kind bytes: uvarint len + table
// name, uvarint len + table id, uvarint len + operation (DELETE/UPDATE),
// uvarint len + the statement's SQL. Nothing writes it now; replay reads
// its table and operation to say which table it keeps out of service
// (replayTextDML).
type dmlEntry struct {
	table, tableID, op, sql string
}

func decodeDMLEntry(p []byte) (dmlEntry, error) {
	if len(p) < 2 || p[0] != entryVersion || p[1] != kindDML {
		return dmlEntry{}, errors.New("not a DML entry")
	}
	r := bytes.NewReader(p[2:])
	var strs [4]string
	for i := range strs {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return dmlEntry{}, errShortEntry
		}
		b := make([]byte, n)
		r.Read(b)
		strs[i] = string(b)
	}
	return dmlEntry{table: strs[0], tableID: strs[1], op: strs[2], sql: strs[3]}, nil
}

func entryKind(p []byte) byte {
	if len(p) < 2 {
		return 0
	}
	return p[1]
}

// walMinSavings is the least share of a buffer LZ4 must save for a
// compressed WAL entry to keep it compressed.
const walMinSavings = 0.2

// entryForm is how Store.encode writes a record's rows entries.
type entryForm int

const (
	// formRows: kindRows. A statement's rows are not compressed, which
	// would add to its latency.
	formRows entryForm = iota
	// formSplit: kindRowsSplit, the columns LZ4-compressed. COPY's parts
	// are, because on a bulk load each WAL byte costs more than
	// compressing it (the value log is written through a memory map
	// whose every new page faults and is write-protected again at each
	// sync).
	formSplit
	// formFileRows: kindFileRows, an UPDATE's new rows that its rewrite
	// commit writes into a data file.
	formFileRows
)

type entry struct {
	table   string
	tableID string
	key     membuffer.Key
	rec     arrow.RecordBatch
	split   bool // decoded: the record is written as kindRowsSplit's
	// fileRows: a kindFileRows entry (never split).
	fileRows bool
}

// encodeEntryFramed encodes a rows entry into buf (emptied first) with
// room bytes reserved in front (for wal.AppendFramed). The result is buf's
// bytes. With lz4 set, the entry is a split one (kindRowsSplit: text
// columns as their bytes and lengths) and the records' buffers are
// LZ4-compressed (Arrow IPC body compression, which any Arrow reader and
// replay decode) into buffers from lz4, where that saves at least a
// fifth: text and lengths and validity bitmaps shrink, random-walk
// doubles do not and stay as they are.
func encodeEntryFramed(buf *bytes.Buffer, e entry, room int, lz4 *compressBuffers) ([]byte, error) {
	buf.Reset()
	// The IPC stream is about the record's buffers plus a little metadata;
	// growing the buffer by doubling instead costs more than the encoding.
	buf.Grow(room + int(membuffer.RecordBytes(e.rec)) + 4096 + len(e.table) + len(e.tableID))
	buf.Write(make([]byte, room))
	buf.WriteByte(entryVersion)
	switch {
	case lz4 != nil:
		buf.WriteByte(kindRowsSplit)
	case e.fileRows:
		buf.WriteByte(kindFileRows)
	default:
		buf.WriteByte(kindRows)
	}
	var tmp [binary.MaxVarintLen64]byte
	for _, s := range []string{e.table, e.tableID} {
		buf.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(s)))])
		buf.WriteString(s)
	}
	buf.Write(tmp[:binary.PutVarint(tmp[:], e.key.Start)])
	buf.Write(tmp[:binary.PutVarint(tmp[:], e.key.End)])
	if lz4 == nil {
		if err := writeIPC(buf, e.rec); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	cols, lengths := splitText(e.rec, lz4)
	defer cols.Release()
	defer lengths.Release()
	at := buf.Len()
	buf.Write(tmp[:4]) // the columns' length, known once they are written
	opts := []ipc.Option{ipc.WithLZ4(), ipc.WithMinSpaceSavings(walMinSavings), ipc.WithAllocator(lz4)}
	if err := writeIPC(buf, cols, opts...); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(buf.Bytes()[at:], uint32(buf.Len()-at-4))
	if err := writeIPC(buf, lengths, opts...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeIPC appends rec to buf as an Arrow IPC stream.
func writeIPC(buf *bytes.Buffer, rec arrow.RecordBatch, opts ...ipc.Option) error {
	w := ipc.NewWriter(buf, append([]ipc.Option{ipc.WithSchema(rec.Schema())}, opts...)...)
	if err := w.Write(rec); err != nil {
		return fmt.Errorf("encode wal entry: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("encode wal entry: %w", err)
	}
	return nil
}

var errShortEntry = errors.New("entry truncated")

// decodeHeader reads everything but the record, which replay only decodes
// for entries it keeps.
func decodeHeader(p []byte) (entry, []byte, error) {
	var e entry
	if len(p) < 2 {
		return e, nil, errShortEntry
	}
	if p[0] != entryVersion || p[1] != kindRows && p[1] != kindRowsSplit && p[1] != kindFileRows {
		return e, nil, fmt.Errorf("unknown entry version %d kind %d", p[0], p[1])
	}
	e.split = p[1] == kindRowsSplit
	e.fileRows = p[1] == kindFileRows
	r := bytes.NewReader(p[2:])
	var strs [2]string
	for i := range strs {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return e, nil, errShortEntry
		}
		b := make([]byte, n)
		r.Read(b)
		strs[i] = string(b)
	}
	start, err := binary.ReadVarint(r)
	if err != nil {
		return e, nil, errShortEntry
	}
	end, err := binary.ReadVarint(r)
	if err != nil {
		return e, nil, errShortEntry
	}
	e.table, e.tableID, e.key = strs[0], strs[1], membuffer.Key{Start: start, End: end}
	return e, p[len(p)-r.Len():], nil
}

// decodeRecord decodes the record of an entry (split: kindRowsSplit's);
// its buffers, and the entry's bytes they are read into, come from alloc,
// and a split entry's lengths, which the record does not keep, from
// scratch (freed before this returns).
func decodeRecord(p []byte, split bool, alloc, scratch memory.Allocator) (arrow.RecordBatch, error) {
	if !split {
		return readIPC(p, alloc)
	}
	if len(p) < 4 || int(binary.LittleEndian.Uint32(p)) > len(p)-4 {
		return nil, fmt.Errorf("decode wal record: %w", errShortEntry)
	}
	n := int(binary.LittleEndian.Uint32(p))
	cols, err := readIPC(p[4:4+n], alloc)
	if err != nil {
		return nil, err
	}
	lengths, err := readIPC(p[4+n:], scratch)
	if err != nil {
		cols.Release()
		return nil, err
	}
	rec, err := joinText(cols, lengths)
	if err != nil {
		return nil, fmt.Errorf("decode wal record: %w", err)
	}
	return rec, nil
}

// readIPC reads the one record of an Arrow IPC stream.
func readIPC(p []byte, alloc memory.Allocator) (arrow.RecordBatch, error) {
	rd, err := ipc.NewReader(bytes.NewReader(p), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, fmt.Errorf("decode wal record: %w", err)
	}
	defer rd.Release()
	if !rd.Next() {
		if rd.Err() != nil {
			return nil, fmt.Errorf("decode wal record: %w", rd.Err())
		}
		return nil, errors.New("decode wal record: no batch")
	}
	rec := rd.RecordBatch()
	rec.Retain()
	return rec, nil
}
