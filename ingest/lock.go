package ingest

import (
	"context"
	"errors"
	"sync"
)

// tableLock is a table's write lock (tableState.flushMu): one flush,
// compaction commit, DELETE/UPDATE, schema change, drop or transaction
// commit of the table at a time; a transaction that deleted or updated
// rows of the table holds it until it ends, so that the rows it named stay
// where it saw them. Unlike sync.Mutex a waiter can give up when its
// context ends.
type tableLock struct {
	ch chan struct{} // holds a token while locked
}

func (l *tableLock) init() {
	if l.ch == nil {
		l.ch = make(chan struct{}, 1)
	}
}

// Lock waits for the lock.
func (l *tableLock) Lock() { l.ch <- struct{}{} }

// LockContext waits for the lock until ctx ends.
func (l *tableLock) LockContext(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryLock takes the lock if it is free.
func (l *tableLock) TryLock() bool {
	select {
	case l.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// Unlock releases the lock.
func (l *tableLock) Unlock() { <-l.ch }

// TxID names a transaction to the lock manager; zero is none.
type TxID uint64

// lockManager knows which transaction holds which table lock and which it
// waits for, to find deadlocks between transactions: a transaction that
// would wait, directly or through others, for a lock it holds itself gets
// 40P01 at once, as in PostgreSQL (which looks after deadlock_timeout).
// Flushes, compactions and single statements hold table locks too, but
// never wait for another table's lock while they do.
type lockManager struct {
	mu      sync.Mutex
	holders map[*tableState]TxID
	waits   map[TxID]*tableState
}

func newLockManager() *lockManager {
	return &lockManager{holders: map[*tableState]TxID{}, waits: map[TxID]*tableState{}}
}

// LockTable takes table name's write lock for transaction tx, waiting
// until ctx ends (57014 then, or the context's own cause). A
// lock tx holds already is not taken again (held reports false); unlock
// releases it otherwise.
func (s *Store) LockTable(ctx context.Context, tx TxID, name string) (held bool, unlock func(), err error) {
	ts, err := s.state(name)
	if err != nil {
		return false, nil, err
	}
	return s.lockTableState(ctx, tx, ts, false)
}

// ErrLockedByTx is LockTableUnlessTx's answer when another transaction
// holds the lock.
var ErrLockedByTx = errors.New("ingest: the table's write lock is held by another transaction")

// LockTableUnlessTx is LockTable that does not wait for another
// transaction (or statement) holding the lock: it returns ErrLockedByTx
// then (SELECT … FOR UPDATE NOWAIT, SKIP LOCKED). A flush or compaction
// holding it briefly is waited for, as it locks no rows.
func (s *Store) LockTableUnlessTx(ctx context.Context, tx TxID, name string) (held bool, unlock func(), err error) {
	ts, err := s.state(name)
	if err != nil {
		return false, nil, err
	}
	return s.lockTableState(ctx, tx, ts, true)
}

func (s *Store) lockTableState(ctx context.Context, tx TxID, ts *tableState, unlessTx bool) (held bool, unlock func(), err error) {
	lm := s.locks
	lm.mu.Lock()
	if lm.holders[ts] == tx {
		lm.mu.Unlock()
		return true, func() {}, nil
	}
	lm.mu.Unlock()
	if !ts.flushMu.TryLock() {
		lm.mu.Lock()
		if h := lm.holders[ts]; unlessTx && h != 0 && h != tx {
			lm.mu.Unlock()
			return false, nil, ErrLockedByTx
		}
		// Follow the chain of waits from the holder: back at tx, waiting
		// would never end.
		for at := lm.holders[ts]; at != 0; {
			if at == tx {
				lm.mu.Unlock()
				return false, nil, &Error{Kind: KindDeadlock, Msg: "deadlock detected",
					Detail: "Two transactions each wait for a table the other has changed.",
					Hint:   "Change the tables of a transaction in the same order everywhere."}
			}
			t := lm.waits[at]
			if t == nil {
				break
			}
			at = lm.holders[t]
		}
		lm.waits[tx] = ts
		lm.mu.Unlock()
		err := ts.flushMu.LockContext(ctx)
		lm.mu.Lock()
		delete(lm.waits, tx)
		lm.mu.Unlock()
		if err != nil {
			return false, nil, mapCanceled(ctx, err)
		}
	}
	if ts.isDropped() {
		ts.flushMu.Unlock()
		return false, nil, noSuchTable(ts.sch().Name)
	}
	lm.mu.Lock()
	lm.holders[ts] = tx
	lm.mu.Unlock()
	return false, func() {
		lm.mu.Lock()
		delete(lm.holders, ts)
		lm.mu.Unlock()
		ts.flushMu.Unlock()
	}, nil
}

// mapCanceled is the error of a wait its context ended: the context's
// cause when it has one of its own (a statement timeout), else 57014.
func mapCanceled(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && c != ctx.Err() {
		return c
	}
	return &Error{Kind: KindCanceled, Msg: "canceling statement due to user request", Err: err}
}
