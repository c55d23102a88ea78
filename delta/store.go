package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tsdb/internal/fsutil"
)

// ErrExists is returned by PutIfAbsent when the object already exists: for a
// commit file it means another writer took that version first.
var ErrExists = errors.New("delta: object already exists")

// Store is where a Delta table's files live. Paths are slash-separated and
// relative to the table root. Implementations: LocalStore and S3Store.
type Store interface {
	// Get returns an object's contents; a missing object is fs.ErrNotExist.
	Get(ctx context.Context, path string) ([]byte, error)
	// Put writes an object durably, replacing nothing: data files have
	// unique names.
	Put(ctx context.Context, path string, data []byte) error
	// PutFile stores a synced local file, made by fsutil.CreateTemp next
	// to LocalPath(path), as the object path; the local file then is the
	// object's local copy under LocalPath. Data files are streamed to disk
	// this way instead of being held in memory whole.
	PutFile(ctx context.Context, path, tmp string) error
	// PutIfAbsent writes an object atomically unless it exists (ErrExists).
	// Readers never see a partially written object.
	PutIfAbsent(ctx context.Context, path string, data []byte) error
	// List returns the names (not paths) of the objects directly under dir,
	// sorted.
	List(ctx context.Context, dir string) ([]string, error)
	// Delete removes an object; a missing object is not an error.
	Delete(ctx context.Context, path string) error
	// LocalPath returns the absolute local path where the engine reads a
	// data file: the file itself for a local store, a mirrored copy for an
	// object store (Fetch puts it there).
	LocalPath(path string) string
	// Fetch makes a data file readable at LocalPath.
	Fetch(ctx context.Context, path string) error
	// ListData returns the data files directly under the table root, and
	// the leftovers of interrupted writes of data files, with their ages.
	ListData(ctx context.Context) ([]ObjectInfo, error)
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Path    string
	Size    int64
	ModTime time.Time
}

// isDataFile tells data files (and the temporary files a crashed write of
// one leaves, ".<name>.tmp-*") from everything else under a table root.
func isDataFile(name string) bool {
	return strings.HasSuffix(name, ".parquet") || (strings.HasPrefix(name, ".") && strings.Contains(name, ".parquet.tmp-"))
}

// LocalStore is a Store on the local filesystem rooted at a directory.
type LocalStore struct {
	Root string
}

// NewLocalStore returns a store rooted at dir, which is created if missing.
func NewLocalStore(dir string) (*LocalStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("delta: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("delta: create %s: %w", abs, err)
	}
	return &LocalStore{Root: abs}, nil
}

func (s *LocalStore) abs(p string) string { return filepath.Join(s.Root, filepath.FromSlash(p)) }

// LocalPath implements Store.
func (s *LocalStore) LocalPath(p string) string { return s.abs(p) }

// Fetch implements Store: a local file is where the engine reads it.
func (s *LocalStore) Fetch(context.Context, string) error { return nil }

// Get implements Store.
func (s *LocalStore) Get(_ context.Context, p string) ([]byte, error) {
	b, err := os.ReadFile(s.abs(p))
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", p, err)
	}
	return b, nil
}

// Put implements Store. The data is written to a temporary file and renamed
// into place, so a crash never leaves a truncated file under the final name.
func (s *LocalStore) Put(_ context.Context, p string, data []byte) error {
	if err := fsutil.WriteFile(s.abs(p), data); err != nil {
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	return nil
}

// PutFile implements Store: the synced file is renamed into place.
func (s *LocalStore) PutFile(_ context.Context, p, tmp string) error {
	dst := s.abs(p)
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	if err := fsutil.SyncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("delta: sync dir of %s: %w", p, err)
	}
	return nil
}

// PutIfAbsent implements Store. It writes a temporary file and hard-links it
// to the final name: link(2) fails if the name exists, so a commit is never
// overwritten and never visible half-written.
func (s *LocalStore) PutIfAbsent(_ context.Context, p string, data []byte) error {
	dst := s.abs(p)
	tmp, err := fsutil.WriteTemp(dst, data)
	if err != nil {
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("delta: %s: %w", p, ErrExists)
		}
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	if err := fsutil.SyncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("delta: sync dir of %s: %w", p, err)
	}
	return nil
}

// List implements Store.
func (s *LocalStore) List(_ context.Context, dir string) ([]string, error) {
	ents, err := os.ReadDir(s.abs(dir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("delta: list %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// ListData implements Store.
func (s *LocalStore) ListData(context.Context) ([]ObjectInfo, error) {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("delta: list %s: %w", s.Root, err)
	}
	var out []ObjectInfo
	for _, e := range ents {
		if e.IsDir() || !isDataFile(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			return nil, fmt.Errorf("delta: stat %s: %w", e.Name(), err)
		}
		out = append(out, ObjectInfo{Path: e.Name(), Size: info.Size(), ModTime: info.ModTime()})
	}
	return out, nil
}

// Delete implements Store.
func (s *LocalStore) Delete(_ context.Context, p string) error {
	if err := os.Remove(s.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delta: delete %s: %w", p, err)
	}
	return nil
}

// TablePath turns an absolute path or file: URI of a file under the
// table's directory into its table-relative path.
func (s *LocalStore) TablePath(abs string) (string, bool) {
	p := abs
	if strings.HasPrefix(abs, "file:") {
		u, err := url.Parse(abs)
		if err != nil {
			return "", false
		}
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		return "", false
	}
	rel, err := filepath.Rel(s.Root, filepath.Clean(p))
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
