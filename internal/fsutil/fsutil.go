// Package fsutil holds the steps that make a local file write survive a
// crash: a file is synced before it gets its final name, and the directory
// after the name changed. The Delta store and the WAL both write this way.
package fsutil

import (
	"os"
	"path/filepath"
)

// SyncDir makes the entries of dir durable: files created, renamed, linked
// or removed in it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// CreateTemp creates a fresh temporary file next to dst (creating dst's
// directory if needed), named ".<base of dst>.tmp-*" so that a crash's
// leftovers are recognisable. The caller syncs it before giving it its
// final name.
func CreateTemp(dst string) (*os.File, error) {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, "."+filepath.Base(dst)+".tmp-*")
}

// WriteTemp writes data to a fresh temporary file next to dst (creating
// dst's directory if needed), syncs it and returns its name. The caller
// gives it its final name, by rename or link, or removes it.
func WriteTemp(dst string, data []byte) (string, error) {
	f, err := CreateTemp(dst)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// WriteFile writes data under dst durably: a crash leaves either the old
// file or the whole new one, never a part of it, and once WriteFile
// returns the new one stays.
func WriteFile(dst string, data []byte) error {
	tmp, err := WriteTemp(dst, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(dst))
}
