package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

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

// waitConnect dials url until it answers or the deadline passes.
func waitConnect(ctx context.Context, url string, died <-chan error, logs fmt.Stringer) (*pgx.Conn, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			return c, nil
		}
		select {
		case e := <-died:
			return nil, fmt.Errorf("server exited: %v\n%s", e, logs)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("server did not accept connections: %w\n%s", err, logs)
		}
	}
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
	c, err := waitConnect(ctx, s.url, s.died, s.logs)
	if err != nil {
		s.cmd.Process.Kill()
		return nil, err
	}
	c.Close(ctx)
	return s, nil
}

// rssBytes is the server's resident set size.
func (s *tsdbServer) rssBytes() int64 { return procRSS(s.cmd.Process.Pid) }

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

// pgServer is Debian's PostgreSQL server in a temporary directory, run as
// the postgres user when the bench runs as root (PostgreSQL refuses root).
type pgServer struct {
	bin   string
	dir   string
	url   string
	asPG  bool
	logs  *proctest.LockedBuffer
	cmd   *exec.Cmd
	died  chan error
	Major string
}

// findPostgres returns the newest installed server's bin directory.
func findPostgres() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		return "", fmt.Errorf("no PostgreSQL server found under /usr/lib/postgresql (make bench installs Debian's postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))))
		return a > b
	})
	return filepath.Dir(dirs[0]), nil
}

func (p *pgServer) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if p.asPG {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func startPostgres(ctx context.Context, dir string) (*pgServer, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	p := &pgServer{bin: bin, dir: dir, asPG: os.Geteuid() == 0, logs: &proctest.LockedBuffer{}, died: make(chan error, 1),
		Major: filepath.Base(filepath.Dir(bin))}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if p.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := p.command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Durable commits (fsync, synchronous_commit on: the defaults), a
	// buffer pool that holds the data set, and checkpoints spaced out so a
	// load is not measured against a checkpoint storm.
	p.cmd = p.command("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=1GB", "-c", "work_mem=64MB",
		"-c", "max_wal_size=8GB", "-c", "fsync=on", "-c", "synchronous_commit=on")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { p.died <- p.cmd.Wait() }()
	p.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	c, err := waitConnect(ctx, p.url, p.died, p.logs)
	if err != nil {
		p.stop()
		return nil, err
	}
	c.Close(ctx)
	return p, nil
}

func (p *pgServer) stop() {
	p.command("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").Run()
	select {
	case <-p.died:
	case <-time.After(time.Minute):
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
	}
}
