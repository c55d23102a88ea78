// Package views keeps tsdb's views (CREATE VIEW): each one's name, its
// query as SQL text, its columns as they were when it was made, and the
// relations it reads, so that DROP can refuse to leave a view without
// its table. Views persist in one JSON file in the data directory,
// replaced atomically on every change; the planner expands a view into
// its query wherever a statement names it.
package views

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"tsdb/internal/fsutil"
)

// Column is one column of a view's result.
type Column struct {
	Name string `json:"name"`
	// OID is the PostgreSQL type of the column (catalogs show it).
	OID uint32 `json:"oid"`
}

// View is one view.
type View struct {
	Name string `json:"name"`
	// Query is the view's SELECT as SQL text (PostgreSQL's grammar).
	Query   string   `json:"query"`
	Columns []Column `json:"columns"`
	// Reads are the tables and views the query names.
	Reads []string `json:"reads"`
}

// Store holds the views. It is safe for concurrent use.
type Store struct {
	path  string // "" keeps views in memory only
	mu    sync.RWMutex
	views map[string]View
}

// ErrNoView is returned for a view that does not exist.
var ErrNoView = errors.New("view does not exist")

// Open loads the views file at path (missing: no views). An empty path
// keeps the views in memory.
func Open(path string) (*Store, error) {
	s := &Store{path: path, views: map[string]View{}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var vs []View
		if err := json.Unmarshal(b, &vs); err != nil {
			return nil, fmt.Errorf("views: read %s: %w", path, err)
		}
		for _, v := range vs {
			s.views[v.Name] = v
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("views: %w", err)
	}
	return s, nil
}

// Get returns the view named name.
func (s *Store) Get(name string) (View, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.views[name]
	return v, ok
}

// Len is the number of views.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.views)
}

// List returns every view, by name.
func (s *Store) List() []View {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]View, 0, len(s.views))
	for _, v := range s.views {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Dependents returns the views that read name, directly or through other
// views, by name.
func (s *Store) Dependents(name string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		for _, v := range s.views {
			if seen[v.Name] {
				continue
			}
			for _, r := range v.Reads {
				if r == n {
					seen[v.Name] = true
					visit(v.Name)
					break
				}
			}
		}
	}
	visit(name)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Put stores v, replacing a view of its name.
func (s *Store) Put(v View) error {
	return s.change(func() error {
		s.views[v.Name] = v
		return nil
	})
}

// Drop removes the views named; ErrNoView if one does not exist (then
// none is removed).
func (s *Store) Drop(names ...string) error {
	return s.change(func() error {
		for _, n := range names {
			if _, ok := s.views[n]; !ok {
				return fmt.Errorf("%w: %s", ErrNoView, n)
			}
		}
		for _, n := range names {
			delete(s.views, n)
		}
		return nil
	})
}

// change applies fn and writes the views file durably, so that a crash
// leaves the old or the new file, never a torn one. A failed write
// leaves the views as they were.
func (s *Store) change(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := make(map[string]View, len(s.views))
	for k, v := range s.views {
		before[k] = v
	}
	if err := fn(); err != nil {
		s.views = before
		return err
	}
	if s.path == "" {
		return nil
	}
	vs := make([]View, 0, len(s.views))
	for _, v := range s.views {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Name < vs[j].Name })
	b, err := json.MarshalIndent(vs, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(s.path), 0o700)
	}
	if err == nil {
		err = fsutil.WriteFile(s.path, b)
	}
	if err != nil {
		s.views = before
		return fmt.Errorf("views: write %s: %w", s.path, err)
	}
	return nil
}
