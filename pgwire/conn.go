package pgwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/internal/sqlerr"
	"tsdb/session"
)

// conn is one client connection: the protocol's side of a session. It
// decodes the client's messages, hands them to the session executor and
// writes what the executor answers (it implements session.Sink).
type conn struct {
	srv    *Server
	nc     net.Conn
	be     *pgproto3.Backend
	rd     *bufio.Reader // be's read buffer, for what a client sent ahead
	pid    uint32
	secret []byte
	tls    bool
	ctx    context.Context // canceled when the server closes
	stop   context.CancelFunc
	// session is set once the connection holds a session slot (guarded
	// by the server's mu).
	session bool

	mu         sync.Mutex
	ex         *session.Executor // once the session exists
	terminated atomic.Bool       // pg_terminate_backend asked the session to end
}

// terminate ends the session at its next message (pg_terminate_backend):
// its running statement is canceled and its wait for a message cut short.
func (c *conn) terminate() {
	c.terminated.Store(true)
	c.cancelQuery()
	c.nc.SetReadDeadline(time.Now())
}

// cancelQuery interrupts the running statement, if any (CancelRequest,
// pg_cancel_backend).
func (c *conn) cancelQuery() {
	c.mu.Lock()
	ex := c.ex
	c.mu.Unlock()
	if ex != nil {
		ex.Cancel()
	}
}

func (c *conn) serve() {
	defer c.nc.Close()
	defer c.stop()
	log := c.srv.logger.With("remote", c.nc.RemoteAddr().String(), "pid", c.pid)
	// A bug in handling one connection must not take the server down: the
	// panic is logged with its stack, counted, and the connection closed.
	defer func() {
		if r := recover(); r != nil {
			c.srv.metrics.panics.Inc()
			log.Error("panic while serving connection; connection closed", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	c.be, c.rd = newBackend(c.nc, c.srv.opts.MaxMessageSize)
	// A client gets StartupTimeout to complete its startup.
	c.nc.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	params, ok := c.startup()
	if !ok {
		return
	}
	if c.srv.opts.TLSRequired && !c.tls {
		c.sendFatal("28000", "TLS is required (--tls-required): connect with sslmode=require")
		return
	}
	if c.srv.opts.Auth != nil && c.srv.opts.Auth.PasswordsRequired() {
		host, _, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
		if err := c.authenticate(params["user"]); err != nil {
			// Slow down password guessing: the client waits, holding no
			// slot, so failing logins cannot keep others out.
			delay := c.srv.delayFailure(c, host)
			log.Warn("authentication failed", "user", params["user"], "err", err, "delay", delay.String())
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-c.ctx.Done():
				}
				c.srv.delayDone(host)
			}
			c.sendFatal("28P01", fmt.Sprintf("password authentication failed for user %q", params["user"]))
			return
		}
		c.srv.authDelay(host, false)
	}
	if !c.srv.beginSession(c) {
		// As PostgreSQL says it.
		c.sendFatal("53300", fmt.Sprintf("sorry, too many clients already (--max-connections %d)", c.srv.opts.MaxConnections))
		return
	}
	c.nc.SetDeadline(time.Time{})
	ex, err := c.srv.factory.Open(c.ctx, params["user"], c.pid)
	if err != nil {
		c.sendError(err)
		c.be.Flush()
		log.Error("cannot open session", "err", err)
		return
	}
	defer ex.Close()
	c.mu.Lock()
	c.ex = ex
	c.mu.Unlock()
	defer c.srv.backends.Add(c.pid, params["user"], c.cancelQuery, c.terminate)()
	startupWarnings, err := ex.Startup(params)
	if err != nil {
		// As PostgreSQL: an unknown parameter, or a bad value, in the
		// startup packet or in its options (PGOPTIONS='-c name=value')
		// ends the connection with the reason.
		c.sendFatal(sqlerr.Code(err), err.Error())
		log.Debug("startup parameter refused", "err", err)
		return
	}
	c.be.Send(&pgproto3.AuthenticationOk{})
	for _, w := range startupWarnings {
		c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: sqlerr.Warning, Message: w})
	}
	for _, kv := range ex.Settings().Reported() {
		c.be.Send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := c.be.Flush(); err != nil {
		return
	}
	log.Debug("session started", "user", params["user"], "database", params["database"], "application", params["application_name"])
	skipToSync := false
	for {
		if d := c.srv.opts.IdleTimeout; d > 0 {
			c.nc.SetReadDeadline(time.Now().Add(d))
		}
		// terminate sets the flag before it cuts the wait short: read
		// after the deadline above, the flag cannot be missed.
		var msg pgproto3.FrontendMessage
		var err error
		if !c.terminated.Load() {
			msg, err = c.be.Receive()
		}
		c.nc.SetReadDeadline(time.Time{})
		if c.terminated.Load() {
			// pg_terminate_backend: PostgreSQL's words, then the end.
			c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"})
			c.be.Flush()
			log.Info("session terminated by pg_terminate_backend")
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				log.Info("closing idle connection", "idle_timeout", c.srv.opts.IdleTimeout.String())
				c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P05", Message: "terminating connection due to idle-session timeout"})
				c.be.Flush()
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && c.ctx.Err() == nil {
				log.Debug("receive failed; closing", "err", err)
				c.sendError(&sqlerr.Error{Code: sqlerr.ProtocolViolation, Message: fmt.Sprintf("invalid message: %v", err)})
				c.be.Flush()
			}
			return
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.srv.metrics.statements.Inc()
			if err := ex.Query(m.String, c); err != nil {
				c.sendError(err)
			}
			c.ready(ex)
		case *pgproto3.Terminate:
			return
		case *pgproto3.Sync:
			skipToSync = false
			ex.Sync()
			c.ready(ex)
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Outside a COPY: the rest of a COPY FROM STDIN whose
			// statement failed before it began. Clients send the data
			// without waiting for CopyInResponse (pgx does); PostgreSQL
			// ignores it, as the protocol says, and so does tsdb.
			continue
		case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close, *pgproto3.Flush:
			// After an error PostgreSQL ignores everything up to Sync.
			if skipToSync {
				if _, ok := m.(*pgproto3.Flush); ok {
					c.be.Flush()
				}
				continue
			}
			if _, ok := m.(*pgproto3.Execute); ok {
				c.srv.metrics.statements.Inc()
			}
			if err := c.extended(ex, msg); err != nil {
				ex.FailTransaction()
				c.sendError(err)
				skipToSync = true
			}
		default:
			c.sendError(&sqlerr.Error{Code: sqlerr.ProtocolViolation, Message: fmt.Sprintf("unexpected message %T", msg)})
			c.be.Flush()
			return
		}
	}
}

// extended hands one extended-protocol message to the executor and
// acknowledges it. An error is sent by the caller, which then discards
// messages until Sync.
func (c *conn) extended(ex *session.Executor, msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		if err := ex.Parse(m.Name, m.Query, m.ParameterOIDs); err != nil {
			return err
		}
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		if err := ex.Bind(m.DestinationPortal, m.PreparedStatement, m.Parameters, m.ParameterFormatCodes, m.ResultFormatCodes); err != nil {
			return err
		}
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			oids, cols, err := ex.DescribeStatement(m.Name)
			if err != nil {
				return err
			}
			c.ParameterDescription(oids)
			c.RowDescription(cols, nil)
			return nil
		}
		cols, formats, err := ex.DescribePortal(m.Name)
		if err != nil {
			return err
		}
		c.RowDescription(cols, formats)
	case *pgproto3.Execute:
		return ex.Execute(m.Portal, int(m.MaxRows), c)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			ex.CloseStatement(m.Name)
		} else {
			ex.ClosePortal(m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	case *pgproto3.Flush:
		return c.be.Flush()
	}
	return nil
}

// startup reads the startup packet, declining TLS and GSS encryption, and
// handles CancelRequest connections.
func (c *conn) startup() (map[string]string, bool) {
	for {
		msg, err := readStartup(c.rd)
		if err != nil {
			return nil, false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.tls {
				return nil, false
			}
			if err := c.upgradeTLS(); err != nil {
				c.srv.logger.Debug("TLS negotiation failed", "remote", c.nc.RemoteAddr().String(), "err", err)
				return nil, false
			}
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil, false
			}
			if err := c.nothingSentAhead("GSSAPI encryption request"); err != nil {
				return nil, false
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return nil, false
		case *pgproto3.StartupMessage:
			return m.Parameters, true
		default:
			return nil, false
		}
	}
}

// maxStartupPacket bounds a startup packet, length word included, as
// PostgreSQL's MAX_STARTUP_PACKET_LENGTH (and pgproto3) do.
const maxStartupPacket = 4 + 10_000

// readStartup reads one startup packet (StartupMessage, SSLRequest,
// GSSEncRequest or CancelRequest) and decodes it with pgproto3.
//
// Why not the backend's ReceiveStartupMessage: pgproto3 reads ahead into a
// buffer of its own, so what a client sent past an SSLRequest could not be
// told apart from nothing. Reading exactly the packet's bytes leaves the
// rest in rd, where nothingSentAhead sees it.
func readStartup(rd *bufio.Reader) (pgproto3.FrontendMessage, error) {
	hdr, err := rd.Peek(4)
	if err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr)))
	if n < 8 || n > maxStartupPacket {
		return nil, fmt.Errorf("invalid length of startup packet: %d", n)
	}
	pkt := make([]byte, n)
	if _, err := io.ReadFull(rd, pkt); err != nil {
		return nil, err
	}
	return pgproto3.NewBackend(bytes.NewReader(pkt), io.Discard).ReceiveStartupMessage()
}

// nothingSentAhead refuses a client that did not wait for the answer to
// its SSLRequest or GSSEncRequest before sending more, as PostgreSQL does:
// FATAL 08P01, then the connection closes.
//
// Why: bytes already read past the request were sent before any
// encryption was agreed. Taking them as the first message of a TLS
// session would let a man in the middle inject a plaintext startup or
// query into it (PostgreSQL's CVE-2021-23214); no real client sends them.
func (c *conn) nothingSentAhead(request string) error {
	n := c.rd.Buffered()
	if n == 0 {
		return nil
	}
	c.srv.logger.Warn("unencrypted data after an encryption request; connection closed", "remote", c.nc.RemoteAddr().String(), "request", request, "bytes", n)
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08P01",
		Message: "received unencrypted data after " + request,
		Detail:  "This could be either a client-software bug or evidence of an attempted man-in-the-middle attack."})
	c.be.Flush()
	return fmt.Errorf("%d bytes sent ahead of the answer to the %s", n, request)
}

func (c *conn) sendFatal(code, msg string) {
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.be.Flush()
}

func (c *conn) ready(ex *session.Executor) {
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: ex.TxStatus()})
	c.be.Flush()
}

// The session.Sink of the connection: each answer becomes its message.

// Notice implements session.Sink.
func (c *conn) Notice(severity string, w *sqlerr.Error) {
	c.be.Send(&pgproto3.NoticeResponse{Severity: severity, SeverityUnlocalized: severity, Code: w.Code, Message: w.Message, Detail: w.Detail, Hint: w.Hint})
}

// ParameterStatus implements session.Sink.
func (c *conn) ParameterStatus(name, value string) {
	c.be.Send(&pgproto3.ParameterStatus{Name: name, Value: value})
}

// RowDescription implements session.Sink.
func (c *conn) RowDescription(cols []session.Column, formats []int16) {
	if cols == nil {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		var f int16
		if formats != nil {
			f = formats[i]
		}
		mod := int32(-1)
		if col.Pad > 0 {
			mod = int32(col.Pad) + 4 // character(n), PostgreSQL's VARHDRSZ added
		}
		fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: col.OID, DataTypeSize: col.Size, TypeModifier: mod, Format: f}
	}
	c.be.Send(&pgproto3.RowDescription{Fields: fields})
}

// ParameterDescription implements session.Sink.
func (c *conn) ParameterDescription(oids []uint32) {
	c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
}

// WriteRows implements session.Sink: the rendered messages go straight to
// the socket, after the messages the Backend holds. Sent through the
// Backend instead, every batch of rows got a fresh write buffer (pgproto3
// drops one larger than 1 KiB after each flush): 21 MB of garbage for a
// 45,000-row result, each page touched for the first time.
func (c *conn) WriteRows(msgs []byte) error {
	if err := c.be.Flush(); err != nil {
		return err
	}
	_, err := c.nc.Write(msgs)
	return err
}

// CommandComplete implements session.Sink.
func (c *conn) CommandComplete(tag string) {
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

// EmptyQuery implements session.Sink.
func (c *conn) EmptyQuery() { c.be.Send(&pgproto3.EmptyQueryResponse{}) }

// PortalSuspended implements session.Sink.
func (c *conn) PortalSuspended() { c.be.Send(&pgproto3.PortalSuspended{}) }

// CopyIn implements session.Sink.
func (c *conn) CopyIn(format int16, n int) error {
	codes := make([]uint16, n)
	for i := range codes {
		codes[i] = uint16(format)
	}
	c.be.Send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	return c.be.Flush()
}

// ReceiveCopy implements session.Sink: the next CopyData, or done at
// CopyDone; CopyFail is 57014, as in PostgreSQL. Flush and Sync are
// ignored during COPY IN, as PostgreSQL does.
func (c *conn) ReceiveCopy() ([]byte, bool, error) {
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return nil, false, err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			return m.Data, false, nil
		case *pgproto3.CopyDone:
			return nil, true, nil
		case *pgproto3.CopyFail:
			return nil, false, sqlerr.New(sqlerr.QueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
		default:
			return nil, false, sqlerr.New(sqlerr.ProtocolViolation, "unexpected message type %T during COPY from stdin", msg)
		}
	}
}

// CopyOut implements session.Sink.
func (c *conn) CopyOut(n int) {
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, n)})
}

// CopyDone implements session.Sink.
func (c *conn) CopyDone() { c.be.Send(&pgproto3.CopyDone{}) }

func (c *conn) sendError(err error) {
	var se *sqlerr.Error
	if !errors.As(err, &se) {
		se = &sqlerr.Error{Code: sqlerr.InternalError, Message: err.Error()}
		c.srv.logger.Error("internal error", "err", err)
	}
	c.srv.metrics.errors.WithLabelValues(se.Code).Inc()
	c.be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: se.Code, Message: se.Message, Detail: se.Detail, Hint: se.Hint, Position: int32(se.Position)})
}

// readBufferBytes is how much a connection reads from its socket at once.
//
// Why: pgproto3 reads into an 8 KiB buffer, so a COPY from psql (which
// sends 8 KiB messages back to back) cost one read system call per 8 KiB:
// a tenth of the server's CPU for a CSV file. Reading what the socket
// holds, up to this much, takes one call per several messages; the extra
// copy out of the buffer costs far less than the calls it saves. At a TLS
// upgrade the handshake reads the socket itself, so bytes a client sent
// after SSLRequest without waiting for the answer would sit in the old
// buffer: such a connection is refused first (nothingSentAhead).
const readBufferBytes = 64 << 10

// newBackend starts the protocol on rw, reading through a buffer of
// readBufferBytes, with messages of at most maxBody bytes. It returns the
// buffer too, which holds what the client sent past the last message.
func newBackend(rw net.Conn, maxBody int) (*pgproto3.Backend, *bufio.Reader) {
	rd := bufio.NewReaderSize(rw, readBufferBytes)
	be := pgproto3.NewBackend(rd, rw)
	be.SetMaxBodyLen(maxBody)
	return be, rd
}
