package ingest

import "sync"

// sequencer applies WAL entries to the MemBuffer in sequence order.
//
// Why: a flush records in its Delta commit (txn) the largest WAL sequence it
// holds for a bucket, and replay skips every entry of that bucket up to it.
// That is only right if a bucket never holds entry n+1 without entry n, i.e.
// if entries reach the MemBuffer in WAL order. Writers fsync concurrently
// (group commit) and then take their turn here.
type sequencer struct {
	mu   sync.Mutex
	cond *sync.Cond
	next uint64
}

func newSequencer(next uint64) *sequencer {
	s := &sequencer{next: next}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// run waits until every entry before first is applied, calls apply, and
// marks entries first..first+n-1 done. A failed append still takes its turn
// (with a no-op apply) so that later writers are not blocked forever.
func (s *sequencer) run(first uint64, n int, apply func()) {
	s.mu.Lock()
	for s.next != first {
		s.cond.Wait()
	}
	s.mu.Unlock()
	apply()
	s.mu.Lock()
	s.next = first + uint64(n)
	s.cond.Broadcast()
	s.mu.Unlock()
}
