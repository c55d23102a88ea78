package delta

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"tsdb/internal/fsutil"
)

// newDataFile is a data file being written: its bytes go to a temporary
// local file beside where the file will live, so neither a flush nor a
// compaction holds a whole file in memory, and a crash leaves a temporary
// file that orphan cleanup recognises, never a half file under a name.
type newDataFile struct {
	path string // the name it gets in the table
	f    *os.File
	size int64
	crc  hash.Hash32
}

// createDataFile starts a data file under a new unique name.
func createDataFile(store Store) (*newDataFile, error) {
	path := fmt.Sprintf("part-%05d-%s.%s.parquet", 0, uuid.NewString(), strings.ToLower(dataCodec().String()))
	f, err := fsutil.CreateTemp(store.LocalPath(path))
	if err != nil {
		return nil, fmt.Errorf("delta: create %s: %w", path, err)
	}
	return &newDataFile{path: path, f: f, crc: crc32.New(castagnoli)}, nil
}

// Write appends to the file, keeping its size and checksum.
func (d *newDataFile) Write(p []byte) (int, error) {
	n, err := d.f.Write(p)
	d.size += int64(n)
	d.crc.Write(p[:n])
	return n, err
}

// commit makes the finished file durable and stored and returns its add
// action with the given statistics.
func (d *newDataFile) commit(ctx context.Context, store Store, stats string) (Add, error) {
	err := d.f.Sync()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = store.PutFile(ctx, d.path, d.f.Name())
	}
	if err != nil {
		os.Remove(d.f.Name())
		return Add{}, fmt.Errorf("delta: store %s: %w", d.path, err)
	}
	return Add{
		Path:             d.path,
		PartitionValues:  map[string]string{},
		Size:             d.size,
		ModificationTime: time.Now().UnixMilli(),
		DataChange:       true,
		Stats:            stats,
		Tags:             map[string]string{ChecksumTag: hex.EncodeToString(binary.BigEndian.AppendUint32(nil, d.crc.Sum32()))},
	}, nil
}

// abort removes an unfinished file.
func (d *newDataFile) abort() {
	d.f.Close() // may be closed already; the file goes either way
	os.Remove(d.f.Name())
}
