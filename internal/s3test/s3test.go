// Package s3test starts a real S3-compatible server (versitygw, Apache-2.0)
// for tests: object storage is tested against a server, never a mock.
// `make deps` builds the binary into .cache/bin/versitygw.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"tsdb/internal/proctest"
)

// Server is a running versitygw on 127.0.0.1 serving the directories of
// Dir as buckets (its posix backend).
type Server struct {
	Endpoint  string // http://127.0.0.1:port
	AccessKey string
	SecretKey string
	// Dir holds one directory per bucket; objects are plain files in them.
	Dir string
}

// Binary finds versitygw: $TSDB_VERSITYGW, else .cache/bin/versitygw in the
// module root above the working directory.
func Binary() (string, error) {
	if p := os.Getenv("TSDB_VERSITYGW"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".cache", "bin", "versitygw")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("versitygw is not built (run `make deps`): %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start runs versitygw until the test ends, with the given buckets made.
// A missing binary fails the test: object storage must not go untested.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{AccessKey: "tsdbtest", SecretKey: "tsdbtest-secret", Dir: t.TempDir()}
	for _, b := range buckets {
		if err := os.Mkdir(filepath.Join(s.Dir, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr, err := proctest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", addr, "posix", s.Dir)
	logs, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("versitygw log:\n%s", b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("versitygw exited at start-up:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s within 30s", addr)
		}
	}
	s.Endpoint = "http://" + addr
	return s
}
