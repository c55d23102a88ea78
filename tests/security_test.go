package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// testCA writes a CA and a server certificate for 127.0.0.1/localhost
// into dir and returns the paths of the CA, certificate and key.
func testCA(t *testing.T, dir string) (caPath, certPath, keyPath string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tsdb test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	caPath, certPath, keyPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644)
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return caPath, certPath, keyPath
}

func psqlWith(t *testing.T, s *server, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("psql", append([]string{"-X", "-A", "-t", "-c", "SELECT 'ok'"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TLS with psql (require, verify-full against the test's CA) and pgx;
// --tls-required refuses plain connections.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := testCA(t, dir)
	s := startServer(t, t.TempDir(), []string{"--tls-cert", cert, "--tls-key", key, "--tls-required"})
	base := fmt.Sprintf("host=127.0.0.1 port=%s user=tsdb dbname=tsdb", s.port())
	for _, mode := range []string{"sslmode=require", "sslmode=verify-full sslrootcert=" + ca + " host=localhost"} {
		out, err := psqlWith(t, s, nil, base+" "+mode)
		if err != nil || strings.TrimSpace(out) != "ok" {
			t.Fatalf("psql %s: %v\n%s", mode, err, out)
		}
	}
	if out, err := psqlWith(t, s, nil, base+" sslmode=disable"); err == nil || !strings.Contains(out, "TLS is required") {
		t.Fatalf("plain connection with --tls-required: %v\n%s", err, out)
	}
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(ca)
	pool.AppendCertsFromPEM(pem)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://tsdb@localhost:%s/tsdb?sslmode=verify-full", s.port()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgx over TLS: %v", err)
	}
	defer c.Close(context.Background())
	var one int
	if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	// lib/pq and pgJDBC verify the certificate too.
	db, err := sql.Open("postgres", fmt.Sprintf("postgres://tsdb@localhost:%s/tsdb?sslmode=verify-full&sslrootcert=%s", s.port(), ca))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("lib/pq over TLS: %v", err)
	}
	runClientArgs(t, s, "pgJDBC session ok", "java", []string{"-cp", javaClasses(t), "Session"}, []string{"ssl=true&sslmode=verify-ca&sslrootcert=" + ca})
	t.Run("data sent ahead of the answer", func(t *testing.T) { dataSentAhead(t, s) })
}

// dataSentAhead: a client that sends its startup packet in the same write
// as its SSLRequest or GSSEncRequest, without waiting for the answer, gets
// the answer and then PostgreSQL's FATAL 08P01; its plaintext startup is
// never taken (CVE-2021-23214). The server goes on serving.
func dataSentAhead(t *testing.T, s *server) {
	startup, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb", "database": "tsdb"}}).Encode(nil)
	for _, tc := range []struct {
		request pgproto3.FrontendMessage
		answer  byte
		message string
	}{
		{&pgproto3.SSLRequest{}, 'S', "received unencrypted data after SSL request"},
		{&pgproto3.GSSEncRequest{}, 'N', "received unencrypted data after GSSAPI encryption request"},
	} {
		nc, err := net.Dial("tcp", s.pgAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		req, _ := tc.request.Encode(nil)
		if _, err := nc.Write(append(req, startup...)); err != nil {
			t.Fatal(err)
		}
		var answer [1]byte
		if _, err := io.ReadFull(nc, answer[:]); err != nil || answer[0] != tc.answer {
			t.Fatalf("%T: answer %q (%v), want %q", tc.request, answer[0], err, tc.answer)
		}
		fe := pgproto3.NewFrontend(nc, nc)
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("%T: %v", tc.request, err)
		}
		e, ok := msg.(*pgproto3.ErrorResponse)
		if !ok || e.Severity != "FATAL" || e.Code != "08P01" || e.Message != tc.message {
			t.Fatalf("%T: got %#v, want FATAL 08P01 %q", tc.request, msg, tc.message)
		}
		if msg, err := fe.Receive(); err == nil {
			t.Fatalf("%T: connection still open after the FATAL, sent %#v", tc.request, msg)
		}
	}
	if out, err := psqlWith(t, s, nil, fmt.Sprintf("host=127.0.0.1 port=%s user=tsdb dbname=tsdb sslmode=require", s.port())); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("psql after the refusals: %v\n%s", err, out)
	}
}

// With an admin password every client authenticates with SCRAM-SHA-256;
// wrong passwords get 28P01; without one, tsdb refuses to listen beyond
// loopback.
func TestPasswordAuthentication(t *testing.T) {
	s := startServer(t, t.TempDir(), nil, "TSDB_ADMIN_PASSWORD=s3cret")
	base := fmt.Sprintf("host=127.0.0.1 port=%s user=tsdb dbname=tsdb sslmode=disable", s.port())
	if out, err := psqlWith(t, s, []string{"PGPASSWORD=s3cret"}, base); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("psql with the right password: %v\n%s", err, out)
	}
	if out, err := psqlWith(t, s, []string{"PGPASSWORD=wrong"}, base); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("psql with a wrong password: %v\n%s", err, out)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb:s3cret@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatalf("pgx SCRAM: %v", err)
	}
	c.Close(ctx)
	for _, url := range []string{
		fmt.Sprintf("postgres://tsdb:nope@%s/tsdb?sslmode=disable", s.pgAddr),
		fmt.Sprintf("postgres://mallory:s3cret@%s/tsdb?sslmode=disable", s.pgAddr),
	} {
		_, err := pgx.Connect(ctx, url)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Fatalf("%s: %v, want 28P01", url, err)
		}
	}
	if !strings.Contains(s.logs.String(), "authentication failed") {
		t.Error("failed logins are not logged")
	}

	cmd := exec.Command(binary, "serve", "--data-dir", t.TempDir(), "--pg-addr", "0.0.0.0:0", "--http-addr", "")
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "without a password") || !strings.Contains(string(out), "TSDB_ADMIN_PASSWORD") {
		t.Fatalf("0.0.0.0 without a password: %v\n%s", err, out)
	}
}

// Roles: a pg_read_all_data member may only read, a pg_write_all_data
// member may also write rows; neither may change tables or roles. Roles
// survive a restart.
func TestRoles(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil, "TSDB_ADMIN_PASSWORD=adminpw")
	ctx := context.Background()
	connect := func(user, pw string) (*pgx.Conn, error) {
		cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s:%s@%s/tsdb?sslmode=disable", user, pw, s.pgAddr))
		if err != nil {
			return nil, err
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		return pgx.ConnectConfig(ctx, cfg)
	}
	admin, err := connect("tsdb", "adminpw")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE m (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO m VALUES (now(), 1)",
		"CREATE ROLE grafana LOGIN PASSWORD 'g'",
		"CREATE ROLE agent LOGIN PASSWORD 'a'",
		"GRANT pg_read_all_data TO grafana",
		"GRANT pg_write_all_data TO agent",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	check := func(c *pgx.Conn, who string, cases map[string]string) {
		t.Helper()
		for q, want := range cases {
			_, err := c.Exec(ctx, q)
			if got := code(err); got != want {
				t.Errorf("%s: %s: %s, want %s", who, q, got, want)
			}
		}
	}
	reader, err := connect("grafana", "g")
	if err != nil {
		t.Fatal(err)
	}
	check(reader, "reader", map[string]string{
		"SELECT count(*) FROM m":              "ok",
		"INSERT INTO m VALUES (now(), 2)":     "42501",
		"UPDATE m SET v = 3":                  "42501",
		"DELETE FROM m":                       "42501",
		"COPY m FROM STDIN":                   "42501",
		"CREATE TABLE x (time TIMESTAMPTZ)":   "42501",
		"DROP TABLE m":                        "42501",
		"CHECKPOINT":                          "42501",
		"CREATE ROLE evil LOGIN PASSWORD 'x'": "42501",
	})
	writer, err := connect("agent", "a")
	if err != nil {
		t.Fatal(err)
	}
	check(writer, "writer", map[string]string{
		"INSERT INTO m VALUES (now(), 2)":    "ok",
		"SELECT count(*) FROM m":             "ok",
		"CREATE TABLE x (time TIMESTAMPTZ)":  "42501",
		"GRANT pg_write_all_data TO grafana": "42501",
	})
	if _, err := admin.Exec(ctx, "ALTER ROLE grafana PASSWORD 'correct-horse-battery'"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "REVOKE pg_write_all_data FROM agent"); err != nil {
		t.Fatal(err)
	}
	s.stop()

	s = startServer(t, dir, nil, "TSDB_ADMIN_PASSWORD=adminpw")
	if _, err := connect("grafana", "g"); code(err) != "28P01" {
		t.Fatalf("old password after ALTER ROLE: %v", err)
	}
	reader, err = connect("grafana", "correct-horse-battery")
	if err != nil {
		t.Fatalf("roles did not survive the restart: %v", err)
	}
	check(reader, "reader after restart", map[string]string{"SELECT count(*) FROM m": "ok"})
	writer, err = connect("agent", "a")
	if err != nil {
		t.Fatal(err)
	}
	check(writer, "revoked writer", map[string]string{"INSERT INTO m VALUES (now(), 9)": "42501", "SELECT 1": "42501"})
	roles, _ := os.ReadFile(filepath.Join(dir, "auth", "roles.json"))
	if strings.Contains(string(roles), "correct-horse-battery") || !strings.Contains(string(roles), "grafana") {
		t.Fatalf("roles file: %s", roles)
	}
	admin, err = connect("tsdb", "adminpw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "DROP ROLE grafana"); err != nil {
		t.Fatal(err)
	}
	if _, err := connect("grafana", "correct-horse-battery"); code(err) != "28P01" {
		t.Fatalf("dropped role logged in: %v", err)
	}
}

// TestChannelBinding: over TLS with a password, clients that ask for
// channel binding (libpq's channel_binding=require, pgx's) authenticate
// with SCRAM-SHA-256-PLUS, bound to the server's certificate; clients that
// do not still use SCRAM-SHA-256. Before, channel_binding=require failed:
// the server offered no PLUS mechanism.
func TestChannelBinding(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := testCA(t, dir)
	s := startServer(t, t.TempDir(), []string{"--tls-cert", cert, "--tls-key", key}, "TSDB_ADMIN_PASSWORD=s3cret")
	base := fmt.Sprintf("host=localhost port=%s user=tsdb dbname=tsdb sslmode=verify-full sslrootcert=%s", s.port(), ca)
	for _, cb := range []string{"require", "prefer", "disable"} {
		out, err := psqlWith(t, s, []string{"PGPASSWORD=s3cret"}, base+" channel_binding="+cb)
		if err != nil || strings.TrimSpace(out) != "ok" {
			t.Fatalf("psql channel_binding=%s: %v\n%s", cb, err, out)
		}
	}
	if out, err := psqlWith(t, s, []string{"PGPASSWORD=wrong"}, base+" channel_binding=require"); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("wrong password with channel binding: %v\n%s", err, out)
	}
	// Without TLS there is nothing to bind to: libpq refuses by itself.
	if out, err := psqlWith(t, s, []string{"PGPASSWORD=s3cret"}, fmt.Sprintf("host=127.0.0.1 port=%s user=tsdb dbname=tsdb sslmode=disable channel_binding=require", s.port())); err == nil {
		t.Fatalf("channel_binding=require without TLS connected:\n%s", out)
	}
}

// TestShippedBinaryHasNoFaultInjection: fault injection (which can SIGKILL
// the process) exists in the test build only; the shipped binary refuses
// to start when asked for it.
func TestShippedBinaryHasNoFaultInjection(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
	}{
		{[]string{"--faults", "flush.commit=crash"}, ""},
		{nil, "TSDB_FAULTS=flush.commit=crash"},
	} {
		cmd := exec.Command(binary, append([]string{"serve", "--data-dir", t.TempDir(), "--pg-addr", freeAddr(t), "--http-addr", ""}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "fault") {
			t.Errorf("bin/tsdb %v %s: %v\n%s", tc.args, tc.env, err, out)
		}
	}
	if strings.Contains(func() string { out, _ := exec.Command(binary, "help").CombinedOutput(); return string(out) }(), "-faults") {
		t.Error("bin/tsdb help lists --faults")
	}
}
