package pgwire

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// countingConn counts the reads a connection makes of its socket.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// TestBackendReadsInLargeChunks sends 4 MiB of COPY data in the 8 KiB
// messages psql sends over a real socket, and checks that the server reads
// it in far fewer system calls than messages: pgproto3 alone reads 8 KiB
// at a time, a tenth of a COPY's server CPU.
func TestBackendReadsInLargeChunks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const msgBytes, msgs = 8 << 10, 512
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		fe := pgproto3.NewFrontend(c, c)
		payload := make([]byte, msgBytes)
		for i := range msgs {
			payload[0] = byte(i)
			fe.Send(&pgproto3.CopyData{Data: payload})
		}
		fe.Send(&pgproto3.CopyDone{})
		fe.Flush()
	}()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cc := &countingConn{Conn: nc}
	be, _ := newBackend(cc, 1<<20)
	got := 0
	for {
		msg, err := be.Receive()
		if errors.Is(err, io.EOF) {
			t.Fatalf("connection closed after %d messages", got)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, done := msg.(*pgproto3.CopyDone); done {
			break
		}
		cd := msg.(*pgproto3.CopyData)
		if len(cd.Data) != msgBytes || cd.Data[0] != byte(got) {
			t.Fatalf("message %d: %d bytes starting %d", got, len(cd.Data), cd.Data[0])
		}
		got++
	}
	if got != msgs {
		t.Fatalf("got %d messages, want %d", got, msgs)
	}
	// 4 MiB in 64 KiB reads is 64; the socket may hand over less at a
	// time, never as little as one message per read.
	if r := cc.reads.Load(); r > msgs/4 {
		t.Fatalf("%d reads for %d messages of %d bytes", r, msgs, msgBytes)
	}
	t.Logf("%d reads for %d messages", cc.reads.Load(), msgs)
}
