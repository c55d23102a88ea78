package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Replay calls fn for every entry in sequence order; the payload is valid
// until fn returns. Damage found when the
// WAL was opened is reported to onCorrupt first. An entry that cannot be
// read back (read error, checksum mismatch) is reported to onCorrupt,
// copied to the quarantine directory (kept for inspection), deleted from
// the log and skipped, so that one bad entry does not keep the server from
// starting. fn may also return a *CorruptionError for an entry it cannot
// decode; it is quarantined the same way. Any other error from fn stops
// the replay.
func (w *WAL) Replay(ctx context.Context, fn func(seq uint64, payload []byte) error, onCorrupt func(*CorruptionError)) (err error) {
	w.mu.Lock()
	damaged := w.damaged
	w.damaged = nil
	seqs := make([]uint64, 0, len(w.live))
	for seq := range w.live {
		seqs = append(seqs, seq)
	}
	w.mu.Unlock()
	for _, ce := range damaged {
		w.metrics.corrupt.Inc()
		if onCorrupt != nil {
			onCorrupt(ce)
		}
	}
	slices.Sort(seqs)
	// Entries are read one at a time into one buffer: start-up memory is
	// what the caller keeps, not the size of the log.
	var (
		buf  []byte
		open *segment
		f    *os.File
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	// Quarantined entries are deleted from the log together when the
	// replay ends, however it ends: one tombstone write and one sync for
	// all of them. Their copies are durable by then.
	var quarantined []uint64
	defer func() {
		if len(quarantined) == 0 {
			return
		}
		if derr := w.Delete(ctx, quarantined); derr != nil && err == nil {
			err = fmt.Errorf("wal: delete quarantined entries: %w", derr)
		}
	}()
	for _, seq := range seqs {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.mu.Lock()
		loc, ok := w.live[seq]
		w.mu.Unlock()
		if !ok {
			continue
		}
		corrupt := func(p []byte, cause error) error {
			ce := &CorruptionError{Dir: w.dir, Seq: seq, Segment: filepath.Base(loc.seg.path), Offset: loc.off - headerSize, Err: cause}
			w.metrics.corrupt.Inc()
			if onCorrupt != nil {
				onCorrupt(ce)
			}
			if err := quarantineEntry(w.dir, seq, p); err != nil {
				return err
			}
			quarantined = append(quarantined, seq)
			return nil
		}
		if loc.seg != open {
			if f != nil {
				f.Close()
			}
			var err error
			if f, err = os.Open(loc.seg.path); err != nil {
				f = nil
				return fmt.Errorf("wal: replay: %w", err)
			}
			open = loc.seg
		}
		if cap(buf) < int(loc.n) {
			buf = make([]byte, loc.n)
		}
		p := buf[:loc.n]
		if _, err := f.ReadAt(p, loc.off); err != nil {
			if err := corrupt(nil, err); err != nil {
				return err
			}
			continue
		}
		if got := crc32Checksum(p); got != loc.crc {
			if err := corrupt(p, fmt.Errorf("checksum %08x, want %08x", got, loc.crc)); err != nil {
				return err
			}
			continue
		}
		if err := fn(seq, p); err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				return err
			}
			if err := corrupt(p, ce.Err); err != nil {
				return err
			}
		}
	}
	return nil
}
