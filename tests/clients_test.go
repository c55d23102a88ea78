package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
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

// InfluxDB's Go client (v2 API): Health() and Ready() read InfluxDB's
// answers, the blocking write API writes, and a partial write reaches it
// as its error naming what was written.
func TestInfluxDBGoClient(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr})
	ctx := context.Background()
	client := influxdb2.NewClientWithOptions("http://"+httpAddr, "", influxdb2.DefaultOptions().SetPrecision(time.Second))
	defer client.Close()
	h, err := client.Health(ctx)
	if err != nil || h.Status != "pass" {
		t.Fatalf("Health: %+v %v", h, err)
	}
	r, err := client.Ready(ctx)
	if err != nil || r.Status == nil || *r.Status != "ready" {
		t.Fatalf("Ready: %+v %v", r, err)
	}
	w := client.WriteAPIBlocking("tsdb", "tsdb")
	p := influxdb2.NewPoint("sensor", map[string]string{"host": "a"}, map[string]any{"temp": 21.5, "n": int64(3), "ok": true, "note": "x"},
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := w.WritePoint(ctx, p); err != nil {
		t.Fatal(err)
	}
	err = w.WriteRecord(ctx, "sensor,host=b temp=22.5 1767225601", "sensor,host=b temp=oops 1767225602")
	if err == nil || !strings.Contains(err.Error(), "partial write error (1 written)") {
		t.Fatalf("partial write: %v", err)
	}
	c := s.connect(ctx)
	defer c.Close(ctx)
	var got string
	if err := c.QueryRow(ctx, `SELECT string_agg(host || '|' || temp || '|' || coalesce(n::text, '-') || '|' || coalesce(ok::text, '-'), ';' ORDER BY time) FROM sensor`).Scan(&got); err != nil ||
		got != "a|21.5|3|true;b|22.5|-|-" {
		t.Fatalf("sensor rows: %q %v", got, err)
	}
}
