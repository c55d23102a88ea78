package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Root is where a database's tables live: a directory on the local
// filesystem (LocalRoot) or a prefix on an S3-compatible store (S3Root).
type Root interface {
	// Tables lists the names of the tables under the root, sorted. A name
	// may belong to a table whose first commit is missing (a create that
	// crashed, or one in progress elsewhere).
	Tables(ctx context.Context) ([]string, error)
	// Table returns the store of one table; it need not exist yet.
	Table(ctx context.Context, name string) (Store, error)
	// DropTable deletes every file of a table.
	DropTable(ctx context.Context, name string) error
	// DropIncomplete deletes what a create that never wrote its first
	// commit left, where that is known to be safe.
	DropIncomplete(ctx context.Context, name string) error
	// String names the root for logs.
	String() string
}

// LocalRoot keeps each table in a directory under Dir.
type LocalRoot struct {
	Dir string
}

// NewLocalRoot returns a root at dir, which is created if missing.
func NewLocalRoot(dir string) (*LocalRoot, error) {
	s, err := NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return &LocalRoot{Dir: s.Root}, nil
}

// droppedPrefix marks a table directory that DropTable renamed away before
// deleting it: a crash halfway must not leave half a table under its name.
const droppedPrefix = ".dropped-"

// String implements Root.
func (r *LocalRoot) String() string { return r.Dir }

// Tables implements Root. Directories a crashed DROP TABLE left behind are
// removed on the way; directories whose names TableDir does not make are
// not tsdb's tables and are left out.
func (r *LocalRoot) Tables(context.Context) ([]string, error) {
	ents, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil, fmt.Errorf("delta: list tables in %s: %w", r.Dir, err)
	}
	var names []string
	for _, e := range ents {
		switch {
		case !e.IsDir():
		case strings.HasPrefix(e.Name(), droppedPrefix):
			if err := os.RemoveAll(filepath.Join(r.Dir, e.Name())); err != nil {
				return nil, fmt.Errorf("delta: remove dropped table: %w", err)
			}
		default:
			if name, ok := TableName(e.Name()); ok {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// Table implements Root.
func (r *LocalRoot) Table(_ context.Context, name string) (Store, error) {
	return NewLocalStore(filepath.Join(r.Dir, TableDir(name)))
}

// DropTable implements Root: the directory is renamed first, so a crash
// mid-removal leaves no half table behind (Tables removes the rest).
func (r *LocalRoot) DropTable(_ context.Context, name string) error {
	dir := filepath.Join(r.Dir, TableDir(name))
	gone := filepath.Join(r.Dir, fmt.Sprintf("%s%s-%d", droppedPrefix, TableDir(name), time.Now().UnixNano()))
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("delta: drop table %s: %w", name, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("delta: remove files of dropped table %s: %w", name, err)
	}
	return nil
}

// DropIncomplete implements Root: this process is the only writer of a
// local directory, so a table without a log is a crashed create, unless
// it holds data files: then its log was lost, and the files are all that
// is left of the table (ErrHasData; nothing is removed).
func (r *LocalRoot) DropIncomplete(ctx context.Context, name string) error {
	dir := filepath.Join(r.Dir, TableDir(name))
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	store := &LocalStore{Root: dir}
	files, err := store.ListData(ctx)
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".parquet") {
			return fmt.Errorf("%w: %s holds data file %s but no commit", ErrHasData, name, f.Path)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delta: %w", err)
	}
	return nil
}

// ErrHasData is DropIncomplete's refusal to remove a table directory that
// holds data files.
var ErrHasData = errors.New("delta: table without a log holds data files")
