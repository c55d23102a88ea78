package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A CancelRequest stops a running query with 57014; the connection stays
// usable.
func TestCancelRequestStopsQuery(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	go func() {
		time.Sleep(300 * time.Millisecond)
		c.PgConn().CancelRequest(context.Background())
	}()
	start := time.Now()
	_, err := c.Exec(ctx, "SELECT count(*) FROM range(1000000000000) a")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("canceled query: %v, want SQLSTATE 57014", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancel took %v", d)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("connection after cancel: %v", err)
	}
}

// Startup parameters and SET: ParameterStatus like PostgreSQL's, SHOW, and
// timestamptz printed in the session time zone.
func TestSessionSettings(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	pc := c.PgConn()
	for name, want := range map[string]string{"server_version": "16.6", "integer_datetimes": "on", "TimeZone": "UTC", "client_encoding": "UTF8", "DateStyle": "ISO, MDY", "standard_conforming_strings": "on"} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("ParameterStatus %s = %q, want %q", name, got, want)
		}
	}
	out := s.psql(`SET TimeZone = 'Asia/Kolkata';
SHOW TimeZone;
SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' AS t;
BEGIN;
COMMIT;
`, "-A", "-t")
	for _, want := range []string{"Asia/Kolkata", "2026-01-01 05:30:00+05:30", "BEGIN", "COMMIT"} {
		if !strings.Contains(out, want) {
			t.Errorf("psql output lacks %q:\n%s", want, out)
		}
	}
	// A SET of a reported setting is reported, in a query string of
	// several statements too: drivers convert timestamps with the zone
	// they were told, psql lexes backslashes by standard_conforming_strings.
	if _, err := pc.Exec(ctx, "SELECT 1; SET TimeZone = 'Asia/Kolkata'; SET standard_conforming_strings = off").ReadAll(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"TimeZone": "Asia/Kolkata", "standard_conforming_strings": "off"} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("after SET, ParameterStatus %s = %q, want %q", name, got, want)
		}
	}
	res, err := pc.Exec(ctx, `SELECT 'a\\b\'c'`).ReadAll()
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 || string(res[0].Rows[0][0]) != `a\b'c` {
		t.Errorf("a nonstandard string literal: %v, %v; want a\\b'c", res, err)
	}
	if _, err := c.Exec(ctx, "SET TimeZone = 'Mars/Olympus'"); err == nil {
		t.Error("invalid time zone accepted")
	}
}

// statement_timeout stops a long query with 57014 and its PostgreSQL message.
func TestStatementTimeout(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "SET statement_timeout = '300ms'"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.Exec(ctx, "SELECT count(*) FROM range(1000000000000) a")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
		t.Fatalf("long query under statement_timeout: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout took %v", d)
	}
	if _, err := c.Exec(ctx, "RESET statement_timeout"); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}
