package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
)

// Deletion vectors (the deletionVectors table feature): a writer such as
// Databricks or Spark deletes rows of a data file by committing the file
// again with a bitmap of the row positions that no longer count. tsdb
// never writes one; it reads them, so that every reader of a shared table
// sees the same rows, and it carries a file's vector in the remove of a
// rewrite.

// DeletionVector is the descriptor of a deletion vector in an add or
// remove action.
type DeletionVector struct {
	// StorageType is 'i' (inline in the log), 'u' (a file in the table's
	// directory named by a UUID) or 'p' (a file at an absolute path).
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	// Offset is where the vector starts in its file ('u' and 'p').
	Offset      *int32 `json:"offset,omitempty"`
	SizeInBytes int32  `json:"sizeInBytes"`
	Cardinality int64  `json:"cardinality"`
}

// UniqueID identifies the vector; with the file's path it is the logical
// key of a file in a snapshot (the same file can be committed again with
// another vector).
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + strconv.Itoa(int(*dv.Offset))
	}
	return id
}

// dvMagic starts a serialized RoaringBitmapArray in its portable form (the
// only form the protocol allows on disk).
const dvMagic = 1681511377

// RowSet is a set of row positions of a data file: the rows a deletion
// vector deletes. The zero value is empty.
type RowSet struct{ bm *roaring64.Bitmap }

// Len returns how many positions the set holds.
func (r RowSet) Len() uint64 {
	if r.bm == nil {
		return 0
	}
	return r.bm.GetCardinality()
}

// Contains reports whether position i is in the set.
func (r RowSet) Contains(i uint64) bool { return r.bm != nil && r.bm.Contains(i) }

// Runs calls fn for each maximal run [first, last] of consecutive
// positions, ascending.
func (r RowSet) Runs(fn func(first, last uint64)) {
	if r.bm == nil {
		return
	}
	it := r.bm.Iterator()
	started := false
	var first, last uint64
	for it.HasNext() {
		v := it.Next()
		switch {
		case !started:
			first, last, started = v, v, true
		case v == last+1:
			last = v
		default:
			fn(first, last)
			first, last = v, v
		}
	}
	if started {
		fn(first, last)
	}
}

// NewRowSet returns the set of the given positions.
func NewRowSet(rows ...uint64) RowSet {
	return RowSet{bm: roaring64.BitmapOf(rows...)}
}

// LoadDeletionVector reads the rows dv deletes: decoded from the log for
// an inline vector, read and checked (size, checksum) from its file in
// store otherwise.
func LoadDeletionVector(ctx context.Context, store Store, dv *DeletionVector) (RowSet, error) {
	if dv == nil {
		return RowSet{}, nil
	}
	var data []byte
	switch dv.StorageType {
	case "i":
		raw, err := z85Decode(dv.PathOrInlineDv)
		if err != nil {
			return RowSet{}, fmt.Errorf("delta: inline deletion vector: %w", err)
		}
		if int(dv.SizeInBytes) > len(raw) || dv.SizeInBytes < 0 {
			return RowSet{}, fmt.Errorf("delta: inline deletion vector of %d bytes says it has %d", len(raw), dv.SizeInBytes)
		}
		data = raw[:dv.SizeInBytes] // the encoding pads to a multiple of 4
	case "u":
		p, err := dvFilePath(dv.PathOrInlineDv)
		if err != nil {
			return RowSet{}, err
		}
		if data, err = readDVFile(ctx, store, p, dv); err != nil {
			return RowSet{}, err
		}
	case "p":
		// An absolute path or URI (shallow clones write them): read when it
		// names a file of this table's storage.
		r, ok := store.(interface{ TablePath(string) (string, bool) })
		var p string
		if ok {
			p, ok = r.TablePath(dv.PathOrInlineDv)
		}
		if !ok {
			return RowSet{}, fmt.Errorf("delta: deletion vector at %q, outside the table's storage: not supported", dv.PathOrInlineDv)
		}
		var err error
		if data, err = readDVFile(ctx, store, p, dv); err != nil {
			return RowSet{}, err
		}
	default:
		return RowSet{}, fmt.Errorf("delta: deletion vector of unknown storage type %q", dv.StorageType)
	}
	rows, err := decodeRoaringArray(data)
	if err != nil {
		return RowSet{}, err
	}
	if int64(rows.Len()) != dv.Cardinality {
		return RowSet{}, fmt.Errorf("delta: deletion vector holds %d rows, its descriptor says %d", rows.Len(), dv.Cardinality)
	}
	return rows, nil
}

// dvFilePath is the table-relative file of a 'u' vector: an optional
// random prefix (a directory) and the file's UUID in 20 Z85 characters.
func dvFilePath(s string) (string, error) {
	if len(s) < 20 {
		return "", fmt.Errorf("delta: deletion vector path %q is shorter than a UUID", s)
	}
	prefix, enc := s[:len(s)-20], s[len(s)-20:]
	raw, err := z85Decode(enc)
	if err != nil {
		return "", fmt.Errorf("delta: deletion vector path %q: %w", s, err)
	}
	id, err := uuid.FromBytes(raw)
	if err != nil {
		return "", fmt.Errorf("delta: deletion vector path %q: %w", s, err)
	}
	if strings.Contains(prefix, "..") || strings.HasPrefix(prefix, "/") {
		return "", fmt.Errorf("delta: deletion vector prefix %q leaves the table", prefix)
	}
	name := "deletion_vector_" + id.String() + ".bin"
	if prefix != "" {
		return prefix + "/" + name, nil
	}
	return name, nil
}

// readDVFile reads one vector from a deletion vector file: a version byte
// (1) at the start of the file; at the vector's offset its size (4 bytes,
// big-endian), the serialized vector, and the CRC-32 of the vector (4
// bytes, big-endian).
func readDVFile(ctx context.Context, store Store, p string, dv *DeletionVector) ([]byte, error) {
	b, err := store.Get(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("delta: deletion vector file: %w", err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("delta: deletion vector file %s: %s", p, fmt.Sprintf(format, args...))
	}
	if len(b) < 1 || b[0] != 1 {
		return nil, fail("not format version 1")
	}
	off := 1
	if dv.Offset != nil {
		off = int(*dv.Offset)
	}
	if off < 1 || off+4 > len(b) {
		return nil, fail("offset %d outside the file (%d bytes)", off, len(b))
	}
	size := int(binary.BigEndian.Uint32(b[off:]))
	if size != int(dv.SizeInBytes) {
		return nil, fail("the vector at %d has %d bytes, the log says %d", off, size, dv.SizeInBytes)
	}
	start := off + 4
	if start+size+4 > len(b) {
		return nil, fail("the vector at %d runs past the end", off)
	}
	data := b[start : start+size]
	if want := binary.BigEndian.Uint32(b[start+size:]); crc32.ChecksumIEEE(data) != want {
		return nil, fail("checksum mismatch at %d", off)
	}
	return data, nil
}

// decodeRoaringArray reads a RoaringBitmapArray in its portable form: the
// magic number (4 bytes, little-endian), then a 64-bit roaring bitmap in
// the portable format (bucket count, then each bucket's high 32 bits and
// a 32-bit roaring bitmap).
func decodeRoaringArray(data []byte) (RowSet, error) {
	if len(data) < 4 || binary.LittleEndian.Uint32(data) != dvMagic {
		return RowSet{}, errors.New("delta: deletion vector: not a portable RoaringBitmapArray")
	}
	bm := roaring64.New()
	if _, err := bm.ReadFrom(bytes.NewReader(data[4:])); err != nil {
		return RowSet{}, fmt.Errorf("delta: deletion vector: %w", err)
	}
	return RowSet{bm: bm}, nil
}

// EncodeInlineDeletionVector returns an inline descriptor of rows, as
// Spark and Databricks commit one. tsdb itself deletes by rewriting files;
// this serves tests that commit what those writers commit.
func EncodeInlineDeletionVector(rows RowSet) (*DeletionVector, error) {
	var buf bytes.Buffer
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], dvMagic)
	buf.Write(magic[:])
	bm := rows.bm
	if bm == nil {
		bm = roaring64.New()
	}
	bm.RunOptimize()
	if _, err := bm.WriteTo(&buf); err != nil {
		return nil, err
	}
	return &DeletionVector{StorageType: "i", PathOrInlineDv: z85Encode(buf.Bytes()), SizeInBytes: int32(buf.Len()), Cardinality: int64(rows.Len())}, nil
}

// z85Alphabet is ZeroMQ's Z85 (RFC 32), which the protocol uses for
// inline vectors and file UUIDs.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decode decodes Z85 text (a multiple of 5 characters) into 4 bytes per
// 5 characters.
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := strings.IndexByte(z85Alphabet, s[i+j])
			if d < 0 {
				return nil, fmt.Errorf("z85: invalid character %q", s[i+j])
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group %q out of range", s[i:i+5])
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// z85Encode encodes b, padded with zero bytes to a multiple of 4.
func z85Encode(b []byte) string {
	for len(b)%4 != 0 {
		b = append(b[:len(b):len(b)], 0)
	}
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		var grp [5]byte
		for j := 4; j >= 0; j-- {
			grp[j] = z85Alphabet[v%85]
			v /= 85
		}
		sb.Write(grp[:])
	}
	return sb.String()
}
