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
	runClientArgs(t, startServer(t, t.TempDir(), nil), want, name, args, nil)
}

// runClientArgs runs a client against a given server; the port is appended
// to args, then extra.
func runClientArgs(t *testing.T, s *server, want string, name string, args, extra []string) {
	t.Helper()
	args = append(append(args, s.port()), extra...)
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

// psycopg 3: auto-prepared statements across a migration (DEALLOCATE ALL
// after DDL), PREPARE/EXECUTE, transactions with nested savepoints,
// RETURNING, named cursors, DISCARD ALL.
func TestPsycopg3(t *testing.T) {
	runClient(t, "psycopg 3 session ok", "/usr/bin/python3", "clients/python/psycopg3.py")
}

// SQLAlchemy's ORM: add, flush, rollback; begin_nested; INSERT …
// RETURNING of server-computed values.
func TestSQLAlchemy(t *testing.T) {
	runClient(t, "sqlalchemy session ok", "/usr/bin/python3", "clients/python/orm.py")
}

func TestNodePostgresTransactions(t *testing.T) {
	dir, _ := filepath.Abs("clients/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg")); err != nil {
		t.Fatal("node-postgres is not installed: `make test` runs npm ci in tests/clients/node")
	}
	runClient(t, "node-postgres transactions ok", "node", filepath.Join(dir, "transactions.js"))
}

func javaClasses(t *testing.T) string {
	t.Helper()
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Fatal("pgJDBC is not installed: `make test` installs libpostgresql-jdbc-java")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, "clients/java/Session.java", "clients/java/Transactions.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return classes + ":" + jar
}

func TestPgJDBC(t *testing.T) {
	runClient(t, "pgJDBC session ok", "java", "-cp", javaClasses(t), "Session")
}

// pgJDBC with setAutoCommit(false): commit, rollback, savepoints, a failed
// transaction, generated keys.
func TestPgJDBCTransactions(t *testing.T) {
	runClient(t, "pgJDBC transactions ok", "java", "-cp", javaClasses(t), "Transactions")
}
