package wal

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// load builds the index of live entries from badger's keys (values stay on
// disk until Replay), restores the next sequence and stage id, and deletes
// what a crash left behind: parts of stages that never committed, and
// commit records whose parts are all deleted.
func (w *WAL) load(ctx context.Context) error {
	type stageParts map[uint32]partInfo
	var (
		next, nextStage uint64 = 1, 1
		parts                  = map[uint64]stageParts{}
		commits                = map[uint64][2]uint64{} // stage: first, n
		garbage         [][]byte
	)
	readU64 := func(item *badger.Item) (uint64, error) {
		var v uint64
		err := item.Value(func(b []byte) error {
			if len(b) == 8 {
				v = binary.BigEndian.Uint64(b)
			}
			return nil
		})
		return v, err
	}
	err := w.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			k := item.Key()
			switch {
			case (len(k) == 9 || len(k) == 13) && k[0] == prefixEntry:
				// A chunk (13 bytes) sorts right after its entry's key.
				seq := binary.BigEndian.Uint64(k[1:])
				l := w.live[seq]
				l.chunks++
				l.size += item.ValueSize()
				w.live[seq] = l
				next = max(next, seq+1)
			case (len(k) == 13 || len(k) == 17) && k[0] == prefixPart:
				stage := binary.BigEndian.Uint64(k[1:])
				if parts[stage] == nil {
					parts[stage] = stageParts{}
				}
				i := binary.BigEndian.Uint32(k[9:])
				p := parts[stage][i]
				p.chunks++
				p.size += item.ValueSize()
				parts[stage][i] = p
				nextStage = max(nextStage, stage+1)
			case len(k) == 9 && k[0] == prefixCommit:
				stage := binary.BigEndian.Uint64(k[1:])
				var first, n uint64
				if err := item.Value(func(b []byte) error {
					if len(b) != 12 {
						return fmt.Errorf("commit record of stage %d has %d bytes", stage, len(b))
					}
					first, n = binary.BigEndian.Uint64(b), uint64(binary.BigEndian.Uint32(b[8:]))
					return nil
				}); err != nil {
					// Its parts cannot be numbered: they are lost.
					w.damaged = append(w.damaged, &CorruptionError{Dir: w.dir, Key: fmt.Sprintf("c/%d", stage), Err: err})
					garbage = append(garbage, item.KeyCopy(nil))
					continue
				}
				commits[stage] = [2]uint64{first, n}
				nextStage = max(nextStage, stage+1)
				next = max(next, first+n)
			case string(k) == string(nextSeqKey):
				v, err := readU64(item)
				if err != nil {
					return err
				}
				next = max(next, v)
			case string(k) == string(nextStageKey):
				v, err := readU64(item)
				if err != nil {
					return err
				}
				nextStage = max(nextStage, v)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wal: read the log's keys: %w", err)
	}
	for stage, c := range commits {
		live := 0
		for i := range uint32(c[1]) {
			p, ok := parts[stage][i]
			if !ok {
				continue // deleted after its rows were flushed
			}
			delete(parts[stage], i)
			w.live[c[0]+uint64(i)] = loc{stage: stage, part: i, chunks: p.chunks, size: p.size}
			live++
		}
		if live == 0 {
			garbage = append(garbage, commitKey(stage))
			continue
		}
		w.commits[stage] = &commit{first: c[0], live: live}
	}
	orphans := 0
	for stage, ps := range parts {
		for i, p := range ps {
			garbage = append(garbage, partKey(stage, i))
			for c := uint32(1); c < p.chunks; c++ {
				garbage = append(garbage, chunkKey(partKey(stage, i), c))
			}
			orphans++
		}
	}
	w.next.Store(next)
	w.nextStage.Store(nextStage)
	if len(garbage) > 0 {
		wb := w.db.NewWriteBatch()
		defer wb.Cancel()
		for _, k := range garbage {
			if err := wb.Delete(k); err != nil {
				return fmt.Errorf("wal: delete what a crash left: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("wal: delete what a crash left: %w", err)
		}
		if orphans > 0 {
			w.logger.Info("wal: deleted the parts of writes that never committed", "parts", orphans)
		}
	}
	return nil
}
