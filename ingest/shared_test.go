package ingest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestWriterID(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(dir string) error
		wantRe string
	}{
		{"new data dir gets an id", func(string) error { return nil }, `^[0-9a-f]{16}$`},
		{"data dir from before writer ids keeps legacy appIds", func(dir string) error { return os.Mkdir(filepath.Join(dir, "wal"), 0o755) }, `^$`},
		{"an id on disk is kept", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, writerIDFile), []byte("0123456789abcdef\n"), 0o644)
		}, `^0123456789abcdef$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			id, err := loadWriterID(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(tc.wantRe).MatchString(id) {
				t.Fatalf("id %q does not match %s", id, tc.wantRe)
			}
			again, err := loadWriterID(dir)
			if err != nil || again != id {
				t.Fatalf("second load %q (%v), want %q", again, err, id)
			}
			s := &Store{writer: id}
			if !s.ownsAppID(s.dmlAppID()) || s.ownsAppID("tsdb-ffffffffffffffff-dml") && id != "ffffffffffffffff" {
				t.Fatalf("ownsAppID wrong for writer %q", id)
			}
		})
	}
}
