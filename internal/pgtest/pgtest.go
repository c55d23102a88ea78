// Package pgtest starts Debian's PostgreSQL server in a temporary
// directory: the referee tsdb is compared with, by tsdb-bench for speed and
// by the regression referee in tests/ for answers.
package pgtest

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
	"time"

	"github.com/jackc/pgx/v5"

	"tsdb/internal/proctest"
)

// Options shape a server: extra initdb arguments (a locale) and server
// settings passed as -c name=value.
type Options struct {
	InitdbArgs []string
	Settings   []string
}

// Server is one PostgreSQL server in its own directory, run as the
// postgres user when the caller is root (PostgreSQL refuses root).
type Server struct {
	// URL connects as the superuser postgres to database postgres.
	URL string
	// Major is the server's major version ("15").
	Major string

	bin  string
	dir  string
	asPG bool
	logs *proctest.LockedBuffer
	cmd  *exec.Cmd
	died chan error
}

// Find returns the newest installed server's bin directory.
func Find() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		return "", fmt.Errorf("no PostgreSQL server found under /usr/lib/postgresql (the Makefile installs Debian's postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))))
		return a > b
	})
	return filepath.Dir(dirs[0]), nil
}

// Start runs initdb in dir and starts a server on a free port of
// 127.0.0.1, returning once it accepts connections.
func Start(ctx context.Context, dir string, o Options) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	p := &Server{bin: bin, dir: dir, asPG: os.Geteuid() == 0, logs: &proctest.LockedBuffer{}, died: make(chan error, 1),
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
		// The directory and every parent must let the postgres user in.
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	args := append([]string{"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"}, o.InitdbArgs...)
	if out, err := p.command("initdb", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	addr, err := proctest.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	sargs := []string{"-D", data, "-p", port, "-k", dir, "-c", "listen_addresses=127.0.0.1"}
	for _, s := range o.Settings {
		sargs = append(sargs, "-c", s)
	}
	p.cmd = p.command("postgres", sargs...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { p.died <- p.cmd.Wait() }()
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port)
	c, err := WaitConnect(ctx, p.URL, p.died, p.logs)
	if err != nil {
		p.Stop()
		return nil, err
	}
	c.Close(ctx)
	return p, nil
}

// Logs is what the server printed so far.
func (p *Server) Logs() string { return p.logs.String() }

// Stop shuts the server down (fast mode) and waits for it, killing it
// after a minute.
func (p *Server) Stop() {
	p.command("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").Run()
	select {
	case <-p.died:
	case <-time.After(time.Minute):
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
	}
}

func (p *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if p.asPG {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// WaitConnect dials url until it answers, the server exits (died) or 90
// seconds pass; logs is quoted in the error.
func WaitConnect(ctx context.Context, url string, died <-chan error, logs fmt.Stringer) (*pgx.Conn, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			return c, nil
		}
		select {
		case e := <-died:
			return nil, fmt.Errorf("server exited: %v\n%s", e, logs)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("server did not accept connections: %w\n%s", err, logs)
		}
	}
}
