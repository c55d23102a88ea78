// Package session is the session executor: one connection's SQL state,
// its transaction block, prepared statements, portals, cursors and engine
// session (planner.Session), driven by the messages the wire layer decodes
// and answering through a Sink the wire layer writes to the client. It
// renders results in PostgreSQL's text and binary formats; it parses no
// wire bytes and the wire layer knows no engine types. CockroachDB's
// connExecutor with its ClientComm is the model.
package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// Column describes one result column the PostgreSQL way.
type Column = planner.Column

// Sink is where an Executor's answers go, in the order it gives them; the
// wire layer turns each into its message. Rows come already rendered as
// DataRow (or CopyData) messages, which the sink writes after everything
// it was given before.
type Sink interface {
	// Notice sends a WARNING (or NOTICE) to the client.
	Notice(severity string, e *sqlerr.Error)
	// ParameterStatus reports a setting the client tracks.
	ParameterStatus(name, value string)
	// RowDescription describes the rows that follow (NoData for nil).
	RowDescription(cols []Column, formats []int16)
	// ParameterDescription describes a prepared statement's parameters.
	ParameterDescription(oids []uint32)
	// WriteRows writes rendered messages.
	WriteRows(msgs []byte) error
	// CommandComplete ends a statement with its tag.
	CommandComplete(tag string)
	// EmptyQuery answers an empty statement.
	EmptyQuery()
	// PortalSuspended ends an Execute that reached its row limit.
	PortalSuspended()
	// CopyIn starts COPY FROM STDIN with n columns in format (0 text,
	// 1 binary); ReceiveCopy then returns each CopyData, done at
	// CopyDone, and an error (57014) at CopyFail.
	CopyIn(format int16, n int) error
	ReceiveCopy() (data []byte, done bool, err error)
	// CopyOut starts COPY TO STDOUT with n text columns; CopyDone ends
	// its data (sent with WriteRows as CopyData messages).
	CopyOut(n int)
	CopyDone()
}

// Options configure the executors of a server.
type Options struct {
	// MaxPreparedStatements bounds a session's named prepared
	// statements; zero means the planner's limit.
	MaxPreparedStatements int
}

// Executor is one session. Its methods are called from the connection's
// goroutine, except Cancel.
type Executor struct {
	sess *planner.Session
	x    *extended
	opts Options
	ctx  context.Context // the connection's: canceled when it ends

	enc rowEncoder // renders rows that come as Go values
	// rows holds rendered DataRow messages until flushRows hands them to
	// the sink, and keeps its capacity across batches and statements.
	rows []byte
	sink Sink // of the running call

	mu          sync.Mutex
	queryCancel context.CancelFunc // of the running statement, if any
}

// rowsFlushBytes is how many bytes of rows are queued before they are
// written.
const rowsFlushBytes = 64 << 10

// Factory opens the sessions of a server.
type Factory struct {
	p    *planner.Planner
	opts Options
}

// NewFactory returns a factory of sessions over p.
func NewFactory(p *planner.Planner, opts Options) *Factory { return &Factory{p: p, opts: opts} }

// Open opens the session of user with process ID pid. ctx is the
// connection's: ending it ends every statement.
func (f *Factory) Open(ctx context.Context, user string, pid uint32) (*Executor, error) {
	return open(ctx, f.p, user, pid, f.opts)
}

func open(ctx context.Context, p *planner.Planner, user string, pid uint32, opts Options) (*Executor, error) {
	sess, err := p.NewSession(ctx, user)
	if err != nil {
		return nil, err
	}
	sess.SetProcessID(pid)
	if opts.MaxPreparedStatements <= 0 {
		opts.MaxPreparedStatements = p.Limits().MaxPreparedStatements
	}
	ex := &Executor{sess: sess, x: newExtended(), opts: opts, ctx: ctx}
	sess.OnEngine(ex.x.hold)
	return ex, nil
}

// Close ends the session: its open results first (they use its engine
// connection), then the session.
func (ex *Executor) Close() error {
	ex.x.closeAll()
	return ex.sess.Close()
}

// Settings returns the session's settings.
func (ex *Executor) Settings() *dialect.Settings { return ex.sess.Settings() }

// TxStatus is the ReadyForQuery status: I idle, T in a block, E failed.
func (ex *Executor) TxStatus() byte {
	switch {
	case ex.sess.TransactionFailed():
		return 'E'
	case ex.sess.InTransaction():
		return 'T'
	}
	return 'I'
}

// FailTransaction marks the transaction block failed after an error the
// wire layer reports (the extended protocol then skips to Sync).
func (ex *Executor) FailTransaction() { ex.sess.FailTransaction() }

// Sync ends an extended-protocol message sequence: outside a transaction
// block the implicit transaction ends, and its portals with it.
func (ex *Executor) Sync() {
	if !ex.sess.InTransaction() {
		ex.x.endTransaction(true)
	}
}

// Cancel interrupts the running statement, if any (CancelRequest,
// pg_cancel_backend). Safe from any goroutine.
func (ex *Executor) Cancel() {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.queryCancel != nil {
		ex.queryCancel()
	}
}

var errStatementTimeout = errors.New("canceling statement due to statement timeout")

// statementContext is the context of one statement: canceled by Cancel,
// by the connection ending, or after statement_timeout. done must be
// called when the statement is over.
func (ex *Executor) statementContext() (ctx context.Context, done func()) {
	var cancel context.CancelFunc
	if d := ex.sess.Settings().StatementTimeout(); d > 0 {
		ctx, cancel = context.WithTimeoutCause(ex.ctx, d, errStatementTimeout)
	} else {
		ctx, cancel = context.WithCancel(ex.ctx)
	}
	ex.mu.Lock()
	ex.queryCancel = cancel
	ex.mu.Unlock()
	return ctx, func() {
		ex.mu.Lock()
		ex.queryCancel = nil
		ex.mu.Unlock()
		cancel()
	}
}

// timeoutError turns an error of a statement that ran out of time into
// PostgreSQL's 57014 with its message.
func timeoutError(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStatementTimeout) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: errStatementTimeout.Error(), Err: err}
	}
	return err
}

// queued keeps the grown row buffer and writes it once it is large.
func (ex *Executor) queued(rows []byte) error {
	ex.rows = rows
	if len(ex.rows) >= rowsFlushBytes {
		return ex.flushRows()
	}
	return nil
}

// flushRows hands the queued rows to the sink, after whatever it was
// given before.
func (ex *Executor) flushRows() error {
	if len(ex.rows) == 0 {
		return nil
	}
	err := ex.sink.WriteRows(ex.rows)
	ex.rows = ex.rows[:0]
	if cap(ex.rows) > 4*rowsFlushBytes {
		ex.rows = nil // one huge row need not stay
	}
	return err
}

// notice passes a statement's warning on, if it has one.
func (ex *Executor) notice(r *planner.Result) {
	if r.Notice != nil {
		ex.sink.Notice("NOTICE", r.Notice)
	}
	if r.Warning != nil {
		ex.sink.Notice("WARNING", r.Warning)
	}
}

// reportChanges sends the reported settings that differ from before.
func (ex *Executor) reportChanges(before [][2]string) {
	old := map[string]string{}
	for _, kv := range before {
		old[kv[0]] = kv[1]
	}
	for _, kv := range ex.sess.Settings().Reported() {
		if old[kv[0]] != kv[1] {
			ex.sink.ParameterStatus(kv[0], kv[1])
		}
	}
}

// Query runs a Query message (the simple protocol): each statement's
// answer goes to sink; the first error stops the rest and is returned
// (the transaction block, if any, is then failed). The wire layer sends
// ReadyForQuery after it.
func (ex *Executor) Query(sql string, sink Sink) error {
	ex.sink = sink
	qctx, done := ex.statementContext()
	defer done()
	// The statements run with a context that a cursor they declare keeps
	// after the Query; the Query's cancel or timeout reaches it meanwhile.
	kept := newKeptContext(ex.ctx)
	stop := context.AfterFunc(qctx, func() { kept.cancel(context.Cause(qctx)) })
	defer func() {
		stop()
		kept.unref()
	}()
	ctx := kept.ctx
	st := ex.textStyle()
	// The settings as the client was last told them: emit runs after its
	// statement ran, so a SET has changed them by then.
	before := ex.sess.Settings().Reported()
	var emit func(r *planner.Result) error
	emit = func(r *planner.Result) error {
		ex.notice(r)
		if r.Empty {
			sink.EmptyQuery()
			return nil
		}
		if r.Execute != nil {
			p, err := ex.executed(r.Execute.Name)
			if err != nil {
				return err
			}
			return ex.sess.ExecuteArgs(ctx, p, r.Execute, emit)
		}
		if r.CopyIn != nil {
			tag, err := ex.copyIn(ctx, r.CopyIn)
			if err != nil {
				return err
			}
			sink.CommandComplete(tag)
			return nil
		}
		if r.CopyOut != nil {
			tag, err := ex.copyOut(r.CopyOut, st)
			if err != nil {
				return err
			}
			sink.CommandComplete(tag)
			return nil
		}
		if r.Cursor != nil || r.Fetch != nil || r.CloseCursor != nil {
			tag, err := ex.cursorCommand(qctx, r, st, kept, nil)
			if err != nil {
				return err
			}
			sink.CommandComplete(tag)
			return nil
		}
		if err := ex.directive(r, ""); err != nil {
			return err
		}
		tag := r.Tag
		if r.Columns != nil {
			sink.RowDescription(r.Columns, nil)
		}
		if r.Rows != nil {
			// Deferred, so that a panic (recovered by the wire layer)
			// also ends a result DuckDB is streaming.
			defer r.Rows.Close()
			var none int // a cursor read to its end holds nothing
			n, err := ex.send(newCursor(r.Rows, r.Columns, nil, st, &ex.enc, &none), 0)
			if err != nil {
				return err
			}
			if tag == "SELECT" {
				tag = fmt.Sprintf("SELECT %d", n)
			}
		}
		sink.CommandComplete(tag)
		ex.afterStatement(tag, before)
		before = ex.sess.Settings().Reported()
		st = ex.textStyle()
		return nil
	}
	wasInTx := ex.sess.InTransaction()
	err := ex.sess.Execute(ctx, sql, emit)
	if err != nil {
		ex.sess.FailTransaction()
		if wasInTx && !ex.sess.InTransaction() {
			ex.x.endTransaction(false) // a COMMIT that failed
		}
		return timeoutError(qctx, err)
	}
	return nil
}

// afterStatement ends what the end of a transaction ends (portals,
// cursors) and reports the settings a statement changed (SET, and the
// ends of blocks and savepoints, which restore settings).
func (ex *Executor) afterStatement(tag string, before [][2]string) {
	switch {
	case (tag == "COMMIT" || tag == "ROLLBACK") && !ex.sess.InTransaction():
		ex.x.endTransaction(tag == "COMMIT")
		ex.reportChanges(before)
	case tag == "ROLLBACK", strings.HasPrefix(tag, "SET"), strings.HasPrefix(tag, "RESET"), tag == "DISCARD ALL":
		ex.reportChanges(before)
	}
}

// executed returns the prepared statement an EXECUTE names.
func (ex *Executor) executed(name string) (*planner.Prepared, error) {
	p, ok := ex.x.stmts[name]
	if !ok || name == "" {
		return nil, sqlerr.New("26000", "prepared statement %q does not exist", name)
	}
	return p, nil
}

// directive keeps or drops what PREPARE, DEALLOCATE and DISCARD ALL name
// (the executor owns the session's prepared statements, portals and
// cursors); running is the portal of the statement, which DISCARD ALL
// leaves to end.
func (ex *Executor) directive(r *planner.Result, running string) error {
	switch {
	case r.Prepare != nil:
		name := r.Prepare.Name
		if _, exists := ex.x.stmts[name]; exists || name == "" {
			return sqlerr.New("42P05", "prepared statement %q already exists", name)
		}
		if len(ex.x.stmts) >= ex.opts.MaxPreparedStatements {
			return sqlerr.New(sqlerr.ProgramLimitExceeded, "too many prepared statements: this connection holds %d (--max-prepared-statements); DEALLOCATE some first", len(ex.x.stmts))
		}
		ex.x.stmts[name] = r.Prepare.Stmt
	case r.Deallocate != nil && r.Deallocate.All:
		for name := range ex.x.stmts {
			if name != "" {
				delete(ex.x.stmts, name)
			}
		}
	case r.Deallocate != nil:
		if _, ok := ex.x.stmts[r.Deallocate.Name]; !ok || r.Deallocate.Name == "" {
			return sqlerr.New("26000", "prepared statement %q does not exist", r.Deallocate.Name)
		}
		delete(ex.x.stmts, r.Deallocate.Name)
	}
	if r.Discard {
		for name := range ex.x.portals {
			if name != running {
				ex.x.closePortal(name)
			}
		}
		for name := range ex.x.cursors {
			ex.x.closeCursor(name)
		}
	}
	return nil
}

// send writes up to limit rows of cur (every row if limit <= 0) and
// returns how many it sent; the rows are handed to the sink before it
// returns.
func (ex *Executor) send(cur *cursor, limit int) (sent int, err error) {
	defer func() {
		if ferr := ex.flushRows(); err == nil {
			err = ferr
		}
	}()
	for limit <= 0 || sent < limit {
		buf, ok, err := cur.appendRow(ex.rows)
		if !ok {
			ex.rows = buf
			return sent, err
		}
		sent++
		if err := ex.queued(buf); err != nil {
			return sent, err
		}
	}
	return sent, nil
}
