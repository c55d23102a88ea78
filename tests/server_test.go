// Package tests holds end-to-end tests: they start the real tsdb binary on
// free ports with a temporary data directory and talk to it with the real
// psql binary and with pgx over 127.0.0.1.
package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tsdb/internal/proctest"
)

// binary is the tsdb binary under test: $TSDB_BIN, else ../bin/tsdb (built
// by `make test`), else built once here. faultsBinary is the test build
// with fault injection (-tags faults), which the tests that set
// TSDB_FAULTS start: $TSDB_FAULTS_BIN, else ../bin/tsdb-faults. The shipped
// binary has no fault injection.
var binary, faultsBinary string

func TestMain(m *testing.M) {
	var cleanup []string
	find := func(env, path, tags string) string {
		bin := os.Getenv(env)
		if bin == "" {
			bin, _ = filepath.Abs(path)
		}
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
		dir, err := os.MkdirTemp("", "tsdb-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = append(cleanup, dir)
		bin = filepath.Join(dir, "tsdb")
		cmd := exec.Command("go", "build", "-tags="+tags, "-o", bin, "../cmd/tsdb")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build tsdb:", err)
			os.Exit(1)
		}
		return bin
	}
	binary = find("TSDB_BIN", "../bin/tsdb", "duckdb_arrow")
	faultsBinary = find("TSDB_FAULTS_BIN", "../bin/tsdb-faults", "duckdb_arrow,faults")
	code := m.Run()
	for _, dir := range cleanup {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// server is a running tsdb process.
type server struct {
	t       testing.TB
	dataDir string
	pgAddr  string
	cmd     *exec.Cmd
	logs    *proctest.LockedBuffer
	done    chan error
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := proctest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startServerB is startServer for benchmarks.
func startServerB(b *testing.B, dataDir string, args ...string) *server {
	b.Helper()
	s, died := launch(b, dataDir, args)
	if died != nil {
		b.Fatalf("tsdb exited during start-up: %v\n%s", died, s.logs.String())
	}
	return s
}

// startServer starts tsdb on dataDir with free ports and waits until it
// accepts connections. Extra args and env entries are passed through.
func startServer(t *testing.T, dataDir string, args []string, env ...string) *server {
	t.Helper()
	s, died := launch(t, dataDir, args, env...)
	if died != nil {
		t.Fatalf("tsdb exited during start-up: %v\n%s", died, s.logs.String())
	}
	return s
}

// launch starts tsdb and waits until it is ready or has exited (died).
func launch(t testing.TB, dataDir string, args []string, env ...string) (s *server, died error) {
	t.Helper()
	// A free port can be taken by another process between freeAddr
	// closing it and tsdb binding it: start again on new ports then.
	for attempt := 0; ; attempt++ {
		s, died = launchOnce(t, dataDir, args, env...)
		if died == nil || attempt == 2 || !strings.Contains(s.logs.String(), "address already in use") {
			return s, died
		}
	}
}

func launchOnce(t testing.TB, dataDir string, args []string, env ...string) (s *server, died error) {
	t.Helper()
	s = &server{t: t, dataDir: dataDir, pgAddr: freeAddr(t), logs: &proctest.LockedBuffer{}, done: make(chan error, 1)}
	all := append([]string{"serve", "--data-dir", dataDir, "--pg-addr", s.pgAddr, "--http-addr", freeAddr(t), "--engine-threads", "2", "--memory-limit", "2GiB"}, args...)
	bin := binary
	for _, e := range env {
		if strings.HasPrefix(e, "TSDB_FAULTS=") {
			bin = faultsBinary
		}
	}
	s.cmd = exec.Command(bin, all...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.Contains(s.logs.String(), "tsdb ready") {
			break
		}
		select {
		case err := <-s.done:
			if err == nil {
				err = fmt.Errorf("exit status 0")
			}
			return s, err
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			t.Fatalf("tsdb did not become ready:\n%s", s.logs.String())
		}
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("tsdb log:\n%s", s.logs.String())
		}
	})
	return s, nil
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("tsdb exited with %v after SIGTERM\n%s", err, s.logs.String())
		}
	case <-time.After(60 * time.Second):
		s.t.Fatal("tsdb did not stop within 60s of SIGTERM")
	}
}

// kill9 kills the process without giving it a chance to flush.
func (s *server) kill9() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.pgAddr)
	return p
}

// connect opens a pgx connection using the simple query protocol.
func (s *server) connect(ctx context.Context) *pgx.Conn {
	s.t.Helper()
	c, err := s.tryConnect(ctx)
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	return c
}

// connectAs opens a simple-protocol connection as a given user.
func (s *server) connectAs(ctx context.Context, user, password string) *pgx.Conn {
	s.t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s:%s@%s/tsdb?sslmode=disable", user, password, s.pgAddr))
	if err != nil {
		s.t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		s.t.Fatalf("connect as %s: %v", user, err)
	}
	s.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// tryConnect is connect for goroutines other than the test's, which must not
// call t.Fatal; the server may be gone.
func (s *server) tryConnect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable&connect_timeout=10", s.pgAddr))
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.t.Cleanup(func() { c.Close(context.Background()) })
	return c, nil
}

// psql runs the real psql binary with a script on stdin and returns its
// output; it fails the test if psql fails.
func (s *server) psql(script string, extra ...string) string {
	s.t.Helper()
	out, err := s.psqlErr(script, extra...)
	if err != nil {
		s.t.Fatalf("psql: %v\n%s", err, out)
	}
	return out
}

func (s *server) psqlErr(script string, extra ...string) (string, error) {
	args := append([]string{"-X", "-h", "127.0.0.1", "-p", s.port(), "-U", "tsdb", "-v", "ON_ERROR_STOP=1"}, extra...)
	args = append(args, "tsdb")
	cmd := exec.Command("psql", args...)
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=cat", "PGTZ=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkRecordedScript runs a psql script on s (unaligned, echoing the
// statements, going on after errors) and requires the lines of its output
// that keep picks to equal those of PostgreSQL 15's output recorded in
// recorded.
func checkRecordedScript(t *testing.T, s *server, script, recorded string, keep func(string) []string) {
	t.Helper()
	want, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.psqlErr("\\i "+script+"\n", "-A", "-a", "-v", "ON_ERROR_STOP=0")
	wantLines, gotLines := keep(string(want)), keep(got)
	for i := 0; i < len(wantLines) || i < len(gotLines); i++ {
		var w, g string
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if w != g {
			t.Fatalf("%s, line %d: tsdb %q, PostgreSQL 15 %q\n%s", script, i+1, g, w, got)
		}
	}
}

func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// execAll runs statements in order; the first error fails the test.
func execAll(t testing.TB, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := c.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// queryInt runs a query returning one integer.
func queryInt(t testing.TB, c *pgx.Conn, q string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// wantSQLState runs q, which must fail with SQLSTATE code and leave the
// connection usable.
func wantSQLState(t testing.TB, c *pgx.Conn, q, code string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Exec(ctx, q)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Errorf("%s: %v, want SQLSTATE %s", q, err, code)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("connection unusable after %q: %v", q, err)
	}
}
