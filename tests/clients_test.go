package tests

import (
	"context"
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

// Debian's python3-influxdb (the 1.x client Telegraf-era scripts use)
// writes JSON points and line protocol; a partial write reaches it as its
// error; the rows read back over SQL exactly.
func TestInfluxDBPythonClient(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr})
	_, port, _ := strings.Cut(httpAddr, ":")
	cmd := exec.Command("/usr/bin/python3", "clients/python/influx_v1.py", port)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "influxdb-python session ok") {
		t.Fatalf("influx_v1.py: %v\n%s", err, out)
	}
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	var got string
	q := `SELECT string_agg(host || '|' || coalesce(city, '-') || '|' || temp || '|' || coalesce(hum::text, '-') || '|' || coalesce(ok::text, '-') || '|' || coalesce(note, '-') || '|' || to_char(time, 'HH24:MI:SS'), ';' ORDER BY time) FROM weather`
	if err := c.QueryRow(ctx, q).Scan(&got); err != nil {
		t.Fatal(err)
	}
	// The client writes a newline in a string as \n, which InfluxDB keeps
	// as written (only \" and \\ are escapes in a string field).
	want := "a|Paris|20.5|40|true|line one\\nline two|00:00:00;b|Lyon|-3.25|90|false|say \"hi\"|00:00:10;c|Nice|21.5|-|-|-|00:01:00"
	if got != want {
		t.Fatalf("weather rows:\n got  %q\n want %q", got, want)
	}
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
