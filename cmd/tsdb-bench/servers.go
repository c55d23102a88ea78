package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"tsdb/internal/pgtest"
	"tsdb/internal/proctest"
)

// freePort is a port nothing listens on now.
func freePort() (int, error) {
	addr, err := proctest.FreeAddr()
	if err != nil {
		return 0, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}

// tsdbServer is the real tsdb binary on a temporary data directory.
type tsdbServer struct {
	cmd     *exec.Cmd
	url     string
	httpURL string
	logs    *proctest.LockedBuffer
	died    chan error
}

func startTSDB(ctx context.Context, binary, dataDir string, extra []string) (*tsdbServer, error) {
	pgPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &tsdbServer{logs: &proctest.LockedBuffer{}, died: make(chan error, 1),
		url:     fmt.Sprintf("postgres://tsdb@127.0.0.1:%d/tsdb?sslmode=disable", pgPort),
		httpURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
	args := append([]string{"serve", "--data-dir", dataDir,
		"--pg-addr", fmt.Sprintf("127.0.0.1:%d", pgPort), "--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort)}, extra...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tsdb: %w", err)
	}
	go func() { s.died <- s.cmd.Wait() }()
	c, err := pgtest.WaitConnect(ctx, s.url, s.died, s.logs)
	if err != nil {
		s.cmd.Process.Kill()
		return nil, err
	}
	c.Close(ctx)
	return s, nil
}

// resetPeakRSS starts the server's peak resident set size afresh (Linux's
// clear_refs), so that peakRSS tells one load's; false where it cannot.
func (s *tsdbServer) resetPeakRSS() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0) == nil
}

// peakRSS is the server's largest resident set size since resetPeakRSS.
func (s *tsdbServer) peakRSS() int64 {
	n, _ := proctest.PeakRSS(s.cmd.Process.Pid) // 0 when unknown
	return n
}

// rssBytes is the server's resident set size.
func (s *tsdbServer) rssBytes() int64 { return procRSS(s.cmd.Process.Pid) }

// fileRSSBytes is the file pages of the server's resident set: the
// binary's code (about 100 MiB with the engine) and the WAL's
// memory-mapped value log, which the kernel may reclaim.
func (s *tsdbServer) fileRSSBytes() int64 {
	n, _ := proctest.FileRSS(s.cmd.Process.Pid) // 0 when unknown
	return n
}

func (s *tsdbServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.died:
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
	}
}

func procRSS(pid int) int64 {
	n, _ := proctest.RSS(pid) // 0 when unknown
	return n
}

// startPostgres starts the comparison server: durable commits (fsync,
// synchronous_commit on: the defaults), a buffer pool that holds the data
// set, and checkpoints spaced out so a load is not measured against a
// checkpoint storm.
func startPostgres(ctx context.Context, dir string) (*pgtest.Server, error) {
	return pgtest.Start(ctx, dir, pgtest.Options{Settings: []string{"shared_buffers=1GB", "work_mem=64MB",
		"max_wal_size=8GB", "fsync=on", "synchronous_commit=on"}})
}
