package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

func TestConnectionLimits(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--max-connections", "3", "--startup-timeout", "500ms", "--idle-timeout", "1s"})
	ctx := context.Background()
	url := fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr)

	// A client that sends half a message and stops holds its connection
	// only: others keep working.
	slow, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fe := pgproto3.NewFrontend(slow, slow)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb"}})
	fe.Flush()
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	slow.Write([]byte{'Q', 0, 0, 0, 100, 'S', 'E', 'L'}) // 100 bytes announced, 3 sent

	c1, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close(ctx)
	var one int
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query while a client hangs mid-message: %v", err)
	}
	c2, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	// The fourth connection is over the limit.
	_, err = pgx.Connect(ctx, url)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("connection over the limit: %v", err)
	}

	// A 2 GiB length prefix is refused without allocating it; the server
	// goes on.
	c2.Close(ctx)
	time.Sleep(200 * time.Millisecond) // let the server see c2 go
	big, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	bfe := pgproto3.NewFrontend(big, big)
	bfe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb"}})
	bfe.Flush()
	for {
		m, err := bfe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	hdr := []byte{'Q', 0, 0, 0, 0}
	hdr[1], hdr[2], hdr[3], hdr[4] = 0x7f, 0xff, 0xff, 0xff
	big.Write(hdr)
	big.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(big); err != nil {
		t.Fatalf("oversized message: connection not closed: %v", err)
	}
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after the oversized message: %v", err)
	}

	// A connection that never finishes its startup is closed.
	mute, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	mute.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(mute); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("silent client not dropped after the startup timeout: %v after %v", err, time.Since(start))
	}

	// Idle connections are closed after --idle-timeout.
	time.Sleep(1500 * time.Millisecond)
	if err := c1.QueryRow(ctx, "SELECT 1").Scan(&one); err == nil {
		t.Fatal("idle connection survived --idle-timeout")
	}
	c3, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("new connection after the idle ones closed: %v", err)
	}
	c3.Close(ctx)
}
