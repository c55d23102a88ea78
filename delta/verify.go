package delta

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"github.com/parquet-go/parquet-go"
)

// OwnLayout reports whether f holds a prefix of the table's columns in
// the table's types, as every file tsdb writes (it records its checksum
// in each): such files are read by position; others by name.
func OwnLayout(f File) bool {
	_, own := f.Tags[ChecksumTag]
	return own && f.Prefix
}

// ChecksumTag is the add.tags key under which tsdb records a data file's
// CRC-32C (hex), computed as it writes the file. Delta has no checksum of
// its own for data files; a file whose bytes no longer match is damaged,
// whatever a reader would make of them.
const ChecksumTag = "tsdb.crc32c"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(data []byte) string {
	return hex.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli)))
}

// ErrDamagedFile reports a data file that is missing or whose bytes are
// not the file its add action describes.
var ErrDamagedFile = errors.New("damaged data file")

// VerifyDataFile checks the local copy of a data file against its add
// action: it must exist, have the size the log records, end in a Parquet
// footer that parses, and, where tsdb wrote it, match its checksum. The
// error wraps ErrDamagedFile (and fs.ErrNotExist for a missing file).
func VerifyDataFile(localPath string, a Add) error {
	data, err := os.ReadFile(localPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing: %w", ErrDamagedFile, a.Path, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("delta: read %s: %w", a.Path, err)
	}
	if a.Size > 0 && int64(len(data)) != a.Size {
		return fmt.Errorf("%w: %s has %d bytes, its add action says %d", ErrDamagedFile, a.Path, len(data), a.Size)
	}
	if want, ok := a.Tags[ChecksumTag]; ok && checksum(data) != want {
		return fmt.Errorf("%w: %s does not match its checksum (CRC-32C %s, recorded %s)", ErrDamagedFile, a.Path, checksum(data), want)
	}
	if len(data) < 12 || !bytes.Equal(data[:4], []byte("PAR1")) || !bytes.Equal(data[len(data)-4:], []byte("PAR1")) {
		return fmt.Errorf("%w: %s is not a Parquet file (no PAR1 magic at both ends)", ErrDamagedFile, a.Path)
	}
	if _, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true)); err != nil {
		return fmt.Errorf("%w: %s: its footer cannot be read: %v", ErrDamagedFile, a.Path, err)
	}
	return nil
}

// CheckSize is VerifyDataFile's cheap part, for every file of a table when
// it opens: the local copy exists and has the recorded size.
func CheckSize(localPath string, a Add) error {
	fi, err := os.Stat(localPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing: %w", ErrDamagedFile, a.Path, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("delta: stat %s: %w", a.Path, err)
	}
	if a.Size > 0 && fi.Size() != a.Size {
		return fmt.Errorf("%w: %s has %d bytes, its add action says %d", ErrDamagedFile, a.Path, fi.Size(), a.Size)
	}
	return nil
}
