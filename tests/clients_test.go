package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runClient runs a client program against a fresh server and expects it to
// print its "ok" line. The programs assert every answer themselves.
func runClient(t *testing.T, want string, name string, args ...string) {
	t.Helper()
	s := startServer(t, t.TempDir(), nil)
	args = append(args, s.port())
	cmd := exec.Command(name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func TestNodePostgres(t *testing.T) {
	dir, _ := filepath.Abs("clients/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg")); err != nil {
		t.Fatal("node-postgres is not installed: `make test` runs npm ci in tests/clients/node")
	}
	runClient(t, "node-postgres session ok", "node", filepath.Join(dir, "session.js"))
}

func TestPsycopg2(t *testing.T) {
	// Debian's python3-psycopg2 belongs to Debian's python3.
	runClient(t, "psycopg2 session ok", "/usr/bin/python3", "clients/python/session.py")
}

func TestPgJDBC(t *testing.T) {
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Fatal("pgJDBC is not installed: `make test` installs libpostgresql-jdbc-java")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "clients/java/Session.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	runClient(t, "pgJDBC session ok", "java", "-cp", classes+":"+jar, "Session")
}
