package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Replay calls fn for every entry in sequence order; the payload is valid
// until fn returns. Damage found when the WAL was opened is reported to
// onCorrupt first. An entry that cannot be read back (badger error,
// checksum mismatch) is reported to onCorrupt, copied to the quarantine
// directory (kept for inspection), deleted from the log and skipped, so
// that one bad entry does not keep the server from starting. fn may also
// return a *CorruptionError for an entry it cannot decode; it is
// quarantined the same way. Any other error from fn stops the replay.
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
	// Quarantined entries are deleted from the log together when the
	// replay ends, however it ends. Their copies are durable by then.
	var quarantined []uint64
	defer func() {
		if len(quarantined) == 0 {
			return
		}
		if derr := w.Delete(ctx, quarantined); derr != nil && err == nil {
			err = fmt.Errorf("wal: delete quarantined entries: %w", derr)
		}
	}()
	// One read transaction for the whole replay; values are read one at a
	// time, in place (badger's value log is memory-mapped): start-up memory
	// is what the caller keeps, not the size of the log.
	txn := w.db.NewTransaction(false)
	defer txn.Discard()
	var buf []byte // a chunked entry, put together
	for _, seq := range seqs {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.mu.Lock()
		l, ok := w.live[seq]
		w.mu.Unlock()
		if !ok {
			continue
		}
		key := l.key(seq)
		corrupt := func(p []byte, cause error) error {
			ce := &CorruptionError{Dir: w.dir, Seq: seq, Key: keyName(key), Err: cause}
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
		var fnErr error
		// check verifies the payload's checksum and calls fn.
		check := func(v []byte) error {
			if len(v) < crcSize {
				return &shortValueError{n: len(v)}
			}
			p := v[crcSize:]
			if got, want := crc32Checksum(p), binary.BigEndian.Uint32(v); got != want {
				return &checksumError{got: got, want: want, payload: slices.Clone(p)}
			}
			fnErr = fn(seq, p)
			var ce *CorruptionError
			if errors.As(fnErr, &ce) {
				fnErr = corrupt(slices.Clone(p), ce.Err)
			}
			return nil
		}
		var err error
		var partial []byte // of a chunked entry, what was read
		if l.chunks <= 1 {
			// In place: the value log is memory-mapped.
			var item *badger.Item
			if item, err = txn.Get(key); err == nil {
				err = item.Value(check)
			}
		} else {
			if buf, err = readChunks(txn, key, l.chunks, buf[:0]); err == nil {
				err = check(buf)
			}
			partial = buf
		}
		if err != nil {
			// Only what is certainly damaged or gone is quarantined and
			// deleted: a payload that fails its checksum, a key (or a
			// chunk) that is missing. Any other read error may pass (an
			// I/O error, a closing database): the start fails instead,
			// and the entry stays for the next one.
			var cs *checksumError
			var sv *shortValueError
			switch {
			case errors.As(err, &cs):
				err = corrupt(cs.payload, cs)
			case errors.As(err, &sv):
				err = corrupt(nil, sv)
			case errors.Is(err, badger.ErrKeyNotFound):
				err = corrupt(partial, err)
			default:
				return fmt.Errorf("wal: replay: read entry %d (key %s): %w", seq, keyName(key), err)
			}
			if err != nil {
				return err
			}
			continue
		}
		if fnErr != nil {
			return fnErr
		}
	}
	return nil
}

// readChunks appends the n chunks under key to buf.
func readChunks(txn *badger.Txn, key []byte, n uint32, buf []byte) ([]byte, error) {
	for i := range n {
		k := key
		if i > 0 {
			k = chunkKey(key, i)
		}
		item, err := txn.Get(k)
		if err != nil {
			return buf, fmt.Errorf("chunk %d of %d: %w", i, n, err)
		}
		if err := item.Value(func(v []byte) error { buf = append(buf, v...); return nil }); err != nil {
			return buf, fmt.Errorf("chunk %d of %d: %w", i, n, err)
		}
	}
	return buf, nil
}

// shortValueError is a value too short to hold a checksum (what badger
// returns for a value whose bytes it lost, as when it cut a damaged
// value-log file at open).
type shortValueError struct{ n int }

func (e *shortValueError) Error() string {
	return fmt.Sprintf("value of %d bytes is shorter than its checksum", e.n)
}

// checksumError is a payload that does not match its checksum.
type checksumError struct {
	got, want uint32
	payload   []byte
}

func (e *checksumError) Error() string {
	return fmt.Sprintf("checksum %08x, want %08x", e.got, e.want)
}

// keyName renders a WAL key for messages.
func keyName(k []byte) string {
	switch {
	case len(k) == 9 && k[0] == prefixEntry:
		return fmt.Sprintf("e/%d", binary.BigEndian.Uint64(k[1:]))
	case len(k) == 13 && k[0] == prefixPart:
		return fmt.Sprintf("p/%d/%d", binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint32(k[9:]))
	}
	return fmt.Sprintf("%q", k)
}
