package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// conn is one client connection.
type conn struct {
	srv    *Server
	nc     net.Conn
	be     *pgproto3.Backend
	pid    uint32
	secret []byte
	tls    bool
	ctx    context.Context // canceled when the server closes
	stop   context.CancelFunc
	// session is set once the connection holds a session slot (guarded
	// by the server's mu).
	session bool

	mu          sync.Mutex
	queryCancel context.CancelFunc // of the running statement, if any
	terminated  atomic.Bool        // pg_terminate_backend asked the session to end

	enc rowEncoder // the connection's goroutine renders rows with it
	// rows holds encoded DataRow messages until flushRows writes them,
	// and keeps its capacity across batches and statements. Sent through
	// the Backend instead, every flushed batch of rows got a fresh write
	// buffer (pgproto3 drops one larger than 1 KiB after each flush): 21 MB
	// of garbage for a 45,000-row result, each page touched for the first
	// time.
	rows []byte
}

// rowsFlushBytes is how many bytes of rows are queued before they are
// written.
const rowsFlushBytes = 64 << 10

// sendCopyData queues one CopyData message of COPY TO STDOUT. The caller
// must call flushRows before it sends any other message, so that the data
// goes first.
func (c *conn) sendCopyData(data []byte) error {
	msg := pgproto3.CopyData{Data: data}
	return c.queued(msg.Encode(c.rows))
}

// queued keeps the grown row buffer and writes it once it is large.
func (c *conn) queued(rows []byte, err error) error {
	if err != nil {
		return err
	}
	c.rows = rows
	if len(c.rows) >= rowsFlushBytes {
		return c.flushRows()
	}
	return nil
}

// flushRows writes the queued rows after the messages the Backend holds
// (the RowDescription and whatever else came before them).
func (c *conn) flushRows() error {
	if len(c.rows) == 0 {
		return nil
	}
	err := c.be.Flush()
	if err == nil {
		_, err = c.nc.Write(c.rows)
	}
	c.rows = c.rows[:0]
	if cap(c.rows) > 4*rowsFlushBytes {
		c.rows = nil // one huge row need not stay
	}
	return err
}

// terminate ends the session at its next message (pg_terminate_backend):
// its running statement is canceled and its wait for a message cut short.
func (c *conn) terminate() {
	c.terminated.Store(true)
	c.cancelQuery()
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) cancelQuery() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queryCancel != nil {
		c.queryCancel()
	}
}

// startupParams that are connection metadata, not settings.
var startupOnly = map[string]bool{"user": true, "database": true, "options": true, "replication": true}

// applyStartupSettings applies the settings of a startup packet, as
// PostgreSQL reads them: the -c name=value (or --name=value) switches of
// its options parameter (a backslash escapes the next character, so that
// a value may hold a space), then its parameters, which win. Each goes
// through Settings.StartupSetting; the warnings it returns are for the
// client. A replication connection is refused: tsdb has no replication
// protocol.
func applyStartupSettings(set *planner.Settings, params map[string]string) (warnings []string, err error) {
	if r := strings.ToLower(params["replication"]); r != "" && r != "false" && r != "off" && r != "no" && r != "0" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "replication connections are not supported")
	}
	apply := func(name, value string) error {
		w, err := set.StartupSetting(name, value)
		if w != "" {
			warnings = append(warnings, w)
		}
		return err
	}
	args := splitOptions(params["options"])
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c" && i+1 < len(args):
			i++
			kv = args[i]
		case strings.HasPrefix(a, "-c"):
			kv = a[2:]
		case strings.HasPrefix(a, "--"):
			kv = a[2:]
		default:
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "invalid command-line argument for server process: %s", a)
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, sqlerr.New(sqlerr.SyntaxError, "-c %s requires a value", kv)
		}
		if err := apply(strings.ReplaceAll(name, "-", "_"), value); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(params))
	for k := range params {
		if !startupOnly[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if err := apply(k, params[k]); err != nil {
			return nil, err
		}
	}
	return warnings, nil
}

// splitOptions splits the options startup parameter at unescaped white
// space; a backslash escapes the next character.
func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
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
	c.be = pgproto3.NewBackend(c.nc, c.nc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)
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
	sess, err := c.srv.planner.NewSession(c.ctx, params["user"])
	if err != nil {
		c.sendError(err)
		c.be.Flush()
		log.Error("cannot open session", "err", err)
		return
	}
	defer sess.Close()
	sess.SetProcessID(c.pid)
	defer c.srv.backends.Add(c.pid, params["user"], c.cancelQuery, c.terminate)()
	startupWarnings, err := applyStartupSettings(sess.Settings(), params)
	if err != nil {
		// As PostgreSQL: an unknown parameter, or a bad value, in the
		// startup packet or in its options (PGOPTIONS='-c name=value')
		// ends the connection with the reason.
		se := &sqlerr.Error{Code: sqlerr.Code(err), Message: err.Error()}
		c.sendFatal(se.Code, se.Message)
		log.Debug("startup parameter refused", "err", err)
		return
	}
	c.be.Send(&pgproto3.AuthenticationOk{})
	for _, w := range startupWarnings {
		c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: sqlerr.Warning, Message: w})
	}
	for _, kv := range sess.Settings().Reported() {
		c.be.Send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := c.be.Flush(); err != nil {
		return
	}
	log.Debug("session started", "user", params["user"], "database", params["database"], "application", params["application_name"])
	skipToSync := false
	ext := newExtended()
	// Before the session closes: an open portal's rows use its connection.
	defer ext.closeAll()
	sess.OnEngine(ext.hold)
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
			c.simpleQuery(sess, ext, m.String)
		case *pgproto3.Terminate:
			return
		case *pgproto3.Sync:
			skipToSync = false
			// The unnamed portal lives until the end of the implicit
			// transaction, which Sync ends.
			if !sess.InTransaction() {
				// The implicit transaction ends: as in PostgreSQL, its
				// portals go with it.
				ext.endTransaction(true)
			}
			c.ready(sess)
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
			if err := c.handleExtended(sess, ext, msg); err != nil {
				sess.FailTransaction()
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

// startup reads the startup packet, declining TLS and GSS encryption, and
// handles CancelRequest connections.
func (c *conn) startup() (map[string]string, bool) {
	for {
		msg, err := c.be.ReceiveStartupMessage()
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

func (c *conn) sendFatal(code, msg string) {
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.be.Flush()
}

func (c *conn) ready(sess *planner.Session) {
	status := byte('I')
	switch {
	case sess.TransactionFailed():
		status = 'E'
	case sess.InTransaction():
		status = 'T'
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: status})
	c.be.Flush()
}

// statementContext is the context of one statement: canceled by a
// CancelRequest, by the server closing, or after statement_timeout. The
// returned function must be called when the statement is done.
func (c *conn) statementContext(sess *planner.Session) (context.Context, func()) {
	var ctx context.Context
	var cancel context.CancelFunc
	if d := sess.Settings().StatementTimeout(); d > 0 {
		ctx, cancel = context.WithTimeoutCause(c.ctx, d, errStatementTimeout)
	} else {
		ctx, cancel = context.WithCancel(c.ctx)
	}
	c.mu.Lock()
	c.queryCancel = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.queryCancel = nil
		c.mu.Unlock()
		cancel()
	}
}

var errStatementTimeout = errors.New("canceling statement due to statement timeout")

// timeoutError turns an error of a statement that ran out of time into
// PostgreSQL's 57014 with its message.
func timeoutError(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStatementTimeout) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: errStatementTimeout.Error(), Err: err}
	}
	return err
}

func (c *conn) simpleQuery(sess *planner.Session, x *extended, query string) {
	qctx, done := c.statementContext(sess)
	defer done()
	// The statements run with a context that a cursor they declare keeps
	// after the Query; the Query's cancel or timeout reaches it meanwhile.
	kept := newKeptContext(c.ctx)
	stop := context.AfterFunc(qctx, func() { kept.cancel(context.Cause(qctx)) })
	defer func() {
		stop()
		kept.unref()
	}()
	ctx := kept.ctx
	loc := sess.Settings().Location()
	err := sess.Execute(ctx, query, func(r *planner.Result) error {
		c.sendWarning(r.Warning)
		if r.Empty {
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return nil
		}
		if r.CopyIn != nil {
			tag, err := c.copyIn(ctx, r.CopyIn)
			if err != nil {
				return err
			}
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
			return nil
		}
		if r.CopyOut != nil {
			tag, err := c.copyOut(r.CopyOut, loc)
			if err != nil {
				return err
			}
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
			return nil
		}
		if r.Cursor != nil || r.Fetch != nil || r.CloseCursor != nil {
			tag, err := c.cursorCommand(qctx, x, r, loc, kept, sess.InTransaction())
			if err != nil {
				return err
			}
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
			return nil
		}
		before := sess.Settings().Reported()
		tag := r.Tag
		if r.Columns != nil {
			fields := make([]pgproto3.FieldDescription, len(r.Columns))
			for i, col := range r.Columns {
				fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: col.OID, DataTypeSize: col.Size, TypeModifier: -1}
			}
			c.be.Send(&pgproto3.RowDescription{Fields: fields})
		}
		if r.Rows != nil {
			// Deferred, so that a panic (recovered by serve) also ends a
			// result DuckDB is streaming before the session closes.
			defer r.Rows.Close()
			n, err := c.sendRows(r.Rows, r.Columns, nil, loc)
			if err != nil {
				return err
			}
			if tag == "SELECT" {
				tag = fmt.Sprintf("SELECT %d", n)
			}
		}
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		if tag == "COMMIT" || tag == "ROLLBACK" {
			x.endTransaction(tag == "COMMIT")
		}
		if strings.HasPrefix(tag, "SET") || strings.HasPrefix(tag, "RESET") {
			c.reportChanges(before, sess.Settings().Reported())
			loc = sess.Settings().Location()
		}
		return nil
	})
	if err != nil {
		sess.FailTransaction()
		c.sendError(timeoutError(qctx, err))
	}
	c.ready(sess)
}

// sendRows sends all of a result's rows, in formats by column (none: all
// text), and returns how many it sent.
func (c *conn) sendRows(rows planner.Rows, cols []planner.Column, formats []int16, loc *time.Location) (int, error) {
	var none int // a cursor read to its end holds nothing
	return c.send(newCursor(rows, cols, formats, loc, &c.enc, &none), 0)
}

func (c *conn) reportChanges(before, after [][2]string) {
	old := map[string]string{}
	for _, kv := range before {
		old[kv[0]] = kv[1]
	}
	for _, kv := range after {
		if old[kv[0]] != kv[1] {
			c.be.Send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
		}
	}
}

// sendWarning sends a statement's warning, if it has one, as PostgreSQL
// sends its WARNING notices.
func (c *conn) sendWarning(w *sqlerr.Error) {
	if w == nil {
		return
	}
	c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: w.Code, Message: w.Message, Detail: w.Detail, Hint: w.Hint})
}

func (c *conn) sendError(err error) {
	var se *sqlerr.Error
	if !errors.As(err, &se) {
		se = &sqlerr.Error{Code: sqlerr.InternalError, Message: err.Error()}
		c.srv.logger.Error("internal error", "err", err)
	}
	c.srv.metrics.errors.WithLabelValues(se.Code).Inc()
	c.be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: se.Code, Message: se.Message, Detail: se.Detail, Hint: se.Hint})
}
