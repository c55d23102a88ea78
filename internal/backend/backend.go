// Package backend lists the server's sessions by process ID, so that a
// statement of one session can cancel or end another (pg_cancel_backend,
// pg_terminate_backend) without the SQL layer knowing the wire layer: the
// wire layer adds each session with what cancelling and ending it do, the
// SQL layer signals by ID.
package backend

import (
	"errors"
	"sort"
	"sync"
)

// Registry holds the sessions. It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	sessions map[uint32]*entry
}

type entry struct {
	user              string
	cancel, terminate func()
}

// New returns an empty registry.
func New() *Registry { return &Registry{sessions: map[uint32]*entry{}} }

// Add lists a session; remove takes it off again.
func (r *Registry) Add(pid uint32, user string, cancel, terminate func()) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[pid] = &entry{user: user, cancel: cancel, terminate: terminate}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.sessions, pid)
	}
}

// ErrNotPermitted refuses a signal to a session of another role.
var ErrNotPermitted = errors.New("permission denied")

// Signal cancels the running statement of session pid, or ends the
// session (terminate). A role may signal its own sessions; admin any.
// found is false when no session has that ID.
func (r *Registry) Signal(pid uint32, terminate bool, user string, admin bool) (found bool, err error) {
	r.mu.Lock()
	e := r.sessions[pid]
	r.mu.Unlock()
	if e == nil {
		return false, nil
	}
	if !admin && e.user != user {
		return true, ErrNotPermitted
	}
	if terminate {
		e.terminate()
	} else {
		e.cancel()
	}
	return true, nil
}

// Session is what Sessions lists of one session.
type Session struct {
	PID  uint32
	User string
}

// Sessions lists the sessions by process ID.
func (r *Registry) Sessions() []Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Session, 0, len(r.sessions))
	for pid, e := range r.sessions {
		out = append(out, Session{PID: pid, User: e.user})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
