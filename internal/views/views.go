// Package views keeps tsdb's views (CREATE VIEW) and functions written in
// SQL (CREATE FUNCTION … LANGUAGE sql): SQL text the planner puts in the
// place of every name that calls for it. For a view: its name, its query,
// its columns as they were when it was made, and the relations it reads,
// so that DROP can refuse to leave a view without its table; for a
// function: its parameters, its result and its body. Each kind persists
// in one JSON file in the data directory, replaced atomically on every
// change.
package views

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"tsdb/internal/fsutil"
)

// Column is one column of a view's result.
type Column struct {
	Name string `json:"name"`
	// OID is the PostgreSQL type of the column (catalogs show it).
	OID uint32 `json:"oid"`
	// Pad is character(n)'s n for a column of character(n) values.
	Pad int `json:"pad,omitempty"`
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

// Function is one function written in SQL.
type Function struct {
	Name   string  `json:"name"`
	Params []Param `json:"params"`
	// Returns is the result type as SQL (for a set: of each row when
	// Columns is empty).
	Returns string `json:"returns,omitempty"`
	// SetOf: the function returns rows (SETOF, RETURNS TABLE).
	SetOf bool `json:"setof,omitempty"`
	// Columns are the result's columns of RETURNS TABLE (…) or OUT
	// parameters.
	Columns []Param `json:"columns,omitempty"`
	// Body is the SELECT whose result is the function's, as SQL text;
	// $n and the parameters' names stand for the arguments.
	Body string `json:"body"`
	// Strict: NULL for any NULL argument, without running the body.
	Strict bool `json:"strict,omitempty"`
}

// Param is a parameter of a function, or a column of its result.
type Param struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"` // as SQL
	// Default is the value when a call leaves it out, as SQL ("": none).
	Default string `json:"default,omitempty"`
}

// Index is an index a client asked for (CREATE INDEX): tsdb keeps its
// definition so that catalogs, DROP INDEX and names taken behave as in
// PostgreSQL, and reads the table as it would without it.
type Index struct {
	Name  string `json:"name"`
	Table string `json:"table"`
	// Definition is the CREATE INDEX statement as SQL text.
	Definition string `json:"definition"`
}

// Store holds the views, functions and indexes. It is safe for concurrent
// use.
type Store struct {
	mu        sync.RWMutex
	views     named[View]
	functions named[Function]
	indexes   named[Index]
}

// named are the items of one kind by name, with the file they persist in
// ("" keeps them in memory).
type named[T any] struct {
	path  string
	items map[string]T
}

// change applies fn to the items and writes their file; an error of fn
// or of the write leaves them as they were. The caller holds the store's
// lock.
func (n *named[T]) change(fn func(map[string]T) error) error {
	before := maps.Clone(n.items)
	if err := fn(n.items); err != nil {
		n.items = before
		return err
	}
	if n.path == "" {
		return nil
	}
	if err := save(n.path, n.items); err != nil {
		n.items = before
		return err
	}
	return nil
}

// ErrNoView is returned for a view that does not exist.
var ErrNoView = errors.New("view does not exist")

// The files of functions and indexes, beside the views'.
const (
	FunctionsFile = "functions.json"
	IndexesFile   = "indexes.json"
)

// Open loads the views file at path and the functions and indexes files
// beside it (missing: none). An empty path keeps them in memory.
func Open(path string) (*Store, error) {
	s := &Store{views: named[View]{path: path, items: map[string]View{}},
		functions: named[Function]{items: map[string]Function{}}, indexes: named[Index]{items: map[string]Index{}}}
	if path == "" {
		return s, nil
	}
	s.functions.path = filepath.Join(filepath.Dir(path), FunctionsFile)
	s.indexes.path = filepath.Join(filepath.Dir(path), IndexesFile)
	if err := load(path, s.views.items, func(v View) string { return v.Name }); err != nil {
		return nil, err
	}
	if err := load(s.functions.path, s.functions.items, func(f Function) string { return f.Name }); err != nil {
		return nil, err
	}
	if err := load(s.indexes.path, s.indexes.items, func(x Index) string { return x.Name }); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads a JSON list of items into m by name (a missing file: none).
func load[T any](path string, m map[string]T, name func(T) string) error {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("views: %w", err)
	}
	var items []T
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("views: read %s: %w", path, err)
	}
	for _, it := range items {
		m[name(it)] = it
	}
	return nil
}

// save writes m's items, by name, durably to path, so that a crash leaves
// the old or the new file, never a torn one.
func save[T any](path string, m map[string]T) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	items := make([]T, 0, len(m))
	for _, n := range names {
		items = append(items, m[n])
	}
	b, err := json.MarshalIndent(items, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	if err == nil {
		err = fsutil.WriteFile(path, b)
	}
	if err != nil {
		return fmt.Errorf("views: write %s: %w", path, err)
	}
	return nil
}

// Get returns the view named name.
func (s *Store) Get(name string) (View, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.views.items[name]
	return v, ok
}

// Len is the number of views.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.views.items)
}

// List returns every view, by name.
func (s *Store) List() []View {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]View, 0, len(s.views.items))
	for _, v := range s.views.items {
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
		for _, v := range s.views.items {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.views.change(func(m map[string]View) error {
		m[v.Name] = v
		return nil
	})
}

// Drop removes the views named; ErrNoView if one does not exist (then
// none is removed).
func (s *Store) Drop(names ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.views.change(func(m map[string]View) error {
		for _, n := range names {
			if _, ok := m[n]; !ok {
				return fmt.Errorf("%w: %s", ErrNoView, n)
			}
		}
		for _, n := range names {
			delete(m, n)
		}
		return nil
	})
}

// Function returns the function named name.
func (s *Store) Function(name string) (Function, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.functions.items[name]
	return f, ok
}

// HasFunctions reports whether there is any function.
func (s *Store) HasFunctions() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.functions.items) > 0
}

// MentionsFunction reports whether text holds the name of a function, in
// any case: the cheap test before a statement's tree is walked for calls.
func (s *Store) MentionsFunction(text string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.functions.items) == 0 {
		return false
	}
	lower := strings.ToLower(text)
	for name := range s.functions.items {
		if strings.Contains(lower, strings.ToLower(name)) {
			return true
		}
	}
	return false
}

// PutFunction stores f, replacing a function of its name.
func (s *Store) PutFunction(f Function) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.functions.change(func(m map[string]Function) error { m[f.Name] = f; return nil })
}

// DropFunction removes the function named name (nothing if there is
// none).
func (s *Store) DropFunction(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.functions.change(func(m map[string]Function) error { delete(m, name); return nil })
}

// Index returns the index named name.
func (s *Store) Index(name string) (Index, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	x, ok := s.indexes.items[name]
	return x, ok
}

// Indexes returns every index, by name.
func (s *Store) Indexes() []Index {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Index, 0, len(s.indexes.items))
	for _, x := range s.indexes.items {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PutIndex stores x, replacing an index of its name.
func (s *Store) PutIndex(x Index) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexes.change(func(m map[string]Index) error { m[x.Name] = x; return nil })
}

// DropIndexes removes the indexes named and those of the tables named
// (nothing for a name there is none of).
func (s *Store) DropIndexes(names, tables []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexes.change(func(m map[string]Index) error {
		for _, n := range names {
			delete(m, n)
		}
		for n, x := range m {
			if slices.Contains(tables, x.Table) {
				delete(m, n)
			}
		}
		return nil
	})
}
