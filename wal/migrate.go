package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"tsdb/internal/fsutil"
)

// Until the segment log, the WAL was a badger database in the same
// directory: entry n under the key 'e' + big-endian n, its value a
// CRC32-C of the payload and the payload; the next sequence under
// "m/next"; quarantined entries under 'q' + n. A data directory written
// by that version may still hold acknowledged entries that no Delta commit
// has, so Open converts it before anything else.

// badgerManifest marks a directory that holds a badger database.
const badgerManifest = "MANIFEST"

// migrateBadger converts a badger WAL in dir to one segment holding the
// same entries under the same sequences, then removes badger's files.
// A crash part-way leaves either the badger files alone (the conversion
// runs again) or a complete segment beside them (only the removal runs
// again): the segment is written under a temporary name, synced, and
// renamed before any badger file is removed.
func migrateBadger(ctx context.Context, dir string, logger *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(dir, badgerManifest)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	segs, err := listSegments(dir)
	if err != nil {
		return fmt.Errorf("wal: list segments: %w", err)
	}
	if len(segs) == 0 {
		if err := convertBadger(ctx, dir, logger); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	// The manifest goes last: while it exists, a restart finishes the job.
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || name == badgerManifest || strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("wal: remove badger file: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(dir, badgerManifest)); err != nil {
		return fmt.Errorf("wal: remove badger file: %w", err)
	}
	return syncDir(dir)
}

func convertBadger(ctx context.Context, dir string, logger *slog.Logger) error {
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithDetectConflicts(false).
		WithMemTableSize(16 << 20).WithNumMemtables(2).WithBlockCacheSize(8 << 20).WithNumCompactors(2))
	if err != nil {
		return fmt.Errorf("wal: open the badger WAL to convert it: %w", err)
	}
	defer db.Close()
	var (
		out     []byte
		next    uint64 = 1
		entries int
		bad     int
	)
	err = db.View(func(txn *badger.Txn) error {
		if item, err := txn.Get([]byte("m/next")); err == nil {
			if err := item.Value(func(v []byte) error {
				if len(v) == 8 {
					next = max(next, binary.BigEndian.Uint64(v))
				}
				return nil
			}); err != nil {
				return err
			}
		}
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := it.Item().Key()
			if len(k) != 9 || (k[0] != 'e' && k[0] != 'q') {
				continue
			}
			seq := binary.BigEndian.Uint64(k[1:])
			v, err := it.Item().ValueCopy(nil)
			ok := err == nil && len(v) >= 4 && binary.BigEndian.Uint32(v) == crc32Checksum(v[4:])
			if k[0] == 'q' || !ok {
				// Kept for inspection, as the badger WAL did, and never replayed.
				bad++
				if err := quarantineEntry(dir, seq, v); err != nil {
					return err
				}
				continue
			}
			out = append(out, record(recEntry, seq, v[4:])...)
			next = max(next, seq+1)
			entries++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: read the badger WAL: %w", err)
	}
	out = append(out, record(recNextSeq, next, nil)...)
	if err := fsutil.WriteFile(filepath.Join(dir, segmentName(1)), out); err != nil {
		return fmt.Errorf("wal: write the converted log: %w", err)
	}
	logger.Info("wal: converted the badger WAL to segments", "entries", entries, "quarantined", bad, "next_seq", next)
	return nil
}
