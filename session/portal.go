package session

import (
	"context"
	"errors"
	"fmt"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// portal is a bound statement: parameters decoded, result formats chosen.
// A portal executed with a row limit keeps its result open as a cursor
// until it is read to the end or closed.
type portal struct {
	name    string
	stmt    *planner.Prepared
	params  []any
	formats []int16 // per result column
	// resultFormats are the result format codes of the Bind, for rows
	// whose columns are known only when it runs (FETCH).
	resultFormats []int16
	cur           *cursor // of a suspended execution
	// cancel cancels the context the cursor's rows were made with: they
	// outlive the Execute that made them, so each Execute's cancel or
	// timeout is passed on to it while that Execute reads them.
	cancel  context.CancelCauseFunc
	tag     string
	done    bool
	started bool
}

// close ends the portal's result, if it is open.
func (pt *portal) close() {
	if pt.cur != nil {
		pt.cur.close()
		pt.cur = nil
	}
	if pt.cancel != nil {
		pt.cancel(nil)
		pt.cancel = nil
	}
}

// extended holds the prepared statements, portals and SQL cursors of a
// connection.
type extended struct {
	stmts   map[string]*planner.Prepared
	portals map[string]*portal
	cursors map[string]*declared // by DECLARE … CURSOR
	// open is the cursor (of a portal or a declared cursor) whose rows
	// the session's connection streams, if any. The session calls hold
	// before it runs anything else on the connection (Session.OnEngine).
	open *cursor
	// heldBytes are the bytes the cursors hold in memory (cursor.hold).
	heldBytes int
}

// declared is a cursor made by DECLARE … CURSOR.
type declared struct {
	cur     *cursor
	cols    []planner.Column
	formats []int16 // all binary for a BINARY cursor, else none (text)
	hold    bool    // WITH HOLD: outlives its transaction, once that commits
	inTx    bool    // declared in a transaction block not yet ended
	ctx     *keptContext
	scroll  scrollState
}

// hold frees the session's connection for the statement of ctx: the open
// cursor's rows are read into memory (that statement's cancel or timeout
// ends the reading, and the cursor with an error).
func (x *extended) hold(ctx context.Context) {
	if x.open != nil {
		x.open.hold(ctx)
		x.open = nil
	}
}

// forget forgets cur as the open cursor, when it is closed.
func (x *extended) forget(cur *cursor) {
	if cur != nil && x.open == cur {
		x.open = nil
	}
}

// closePortal removes a portal, closing its result.
func (x *extended) closePortal(name string) {
	pt, ok := x.portals[name]
	if !ok {
		return
	}
	x.forget(pt.cur)
	if pt.cur != nil {
		pt.cur.release()
	}
	pt.close()
	delete(x.portals, name)
}

// closeCursor removes a declared cursor, closing its result.
func (x *extended) closeCursor(name string) {
	d, ok := x.cursors[name]
	if !ok {
		return
	}
	x.forget(d.cur)
	d.cur.close()
	d.cur.release()
	d.forgetRows()
	d.ctx.unref()
	delete(x.cursors, name)
}

// endTransaction closes the portals and the cursors declared without
// HOLD, as the end of a transaction does in PostgreSQL (COMMIT, ROLLBACK,
// and Sync outside a transaction block); a rollback also closes the HOLD
// cursors its transaction declared.
func (x *extended) endTransaction(committed bool) {
	for name := range x.portals {
		x.closePortal(name)
	}
	for name, d := range x.cursors {
		switch {
		case !d.hold, d.inTx && !committed:
			x.closeCursor(name)
		default:
			d.inTx = false
		}
	}
}

// closeAll closes every portal and cursor, when the connection ends.
func (x *extended) closeAll() {
	for name := range x.portals {
		x.closePortal(name)
	}
	for name := range x.cursors {
		x.closeCursor(name)
	}
	if x.open != nil { // not reached: every open result is one of the above
		x.open.close()
		x.open = nil
	}
}

func newExtended() *extended {
	return &extended{stmts: map[string]*planner.Prepared{}, portals: map[string]*portal{}, cursors: map[string]*declared{}}
}

func formatFor(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return 0
	case 1:
		return codes[0]
	}
	if i < len(codes) {
		return codes[i]
	}
	return 0
}

// Parse prepares a statement under name ("" the unnamed one, which it
// replaces) with the parameter types the client declares (0: infer).
func (ex *Executor) Parse(name, query string, paramOIDs []uint32) error {
	if name != "" {
		if _, exists := ex.x.stmts[name]; exists {
			return sqlerr.New("42P05", "prepared statement %q already exists", name)
		}
		// Each statement holds its parse tree and description: a client
		// that never closes them must not grow the server without bound
		// (200,000 of them took 750 MB).
		if len(ex.x.stmts) >= ex.opts.MaxPreparedStatements {
			return sqlerr.New(sqlerr.ProgramLimitExceeded, "too many prepared statements: this connection holds %d (--max-prepared-statements); close some (Close, DEALLOCATE) first", len(ex.x.stmts))
		}
	}
	// Parsing and describing plan the statement: statement_timeout and
	// cancel reach them, as in PostgreSQL.
	qctx, done := ex.statementContext()
	p, err := ex.sess.Prepare(qctx, query, paramOIDs)
	done()
	if err != nil {
		return timeoutError(qctx, err)
	}
	ex.x.stmts[name] = p
	return nil
}

// Bind makes portal from statement with the client's parameters (raw, in
// formats by parameter) and the result formats it asks for.
func (ex *Executor) Bind(portalName, statement string, params [][]byte, paramFormats, resultFormats []int16) error {
	p, ok := ex.x.stmts[statement]
	if !ok {
		return sqlerr.New("26000", "prepared statement %q does not exist", statement)
	}
	if len(params) != len(p.ParamOIDs) {
		return sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d", len(params), statement, len(p.ParamOIDs))
	}
	values := make([]any, len(params))
	for i, raw := range params {
		v, err := decodeParam(raw, formatFor(paramFormats, i), p.ParamOIDs[i])
		if err != nil {
			code := sqlerr.InvalidParameterValue
			var te *schema.TextError
			var se *sqlerr.Error
			switch {
			case errors.As(err, &te):
				code = sqlerr.CharacterNotInRepertoire
			case errors.As(err, &se):
				code = se.Code
			}
			return &sqlerr.Error{Code: code, Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		values[i] = v
	}
	formats := make([]int16, len(p.Columns))
	for i := range formats {
		formats[i] = formatFor(resultFormats, i)
	}
	if portalName != "" {
		if _, exists := ex.x.portals[portalName]; exists {
			return sqlerr.New("42P03", "portal %q already exists", portalName)
		}
	}
	// Binding the unnamed portal replaces it: its result, if still open,
	// is closed first.
	ex.x.closePortal(portalName)
	ex.x.portals[portalName] = &portal{name: portalName, stmt: p, params: values, formats: formats, resultFormats: resultFormats}
	return nil
}

// DescribeStatement answers Describe of a prepared statement: its
// parameter types and its result columns (nil: it returns no rows).
func (ex *Executor) DescribeStatement(name string) ([]uint32, []Column, error) {
	p, ok := ex.x.stmts[name]
	if !ok {
		return nil, nil, sqlerr.New("26000", "prepared statement %q does not exist", name)
	}
	return p.ParamOIDs, ex.resultColumns(p), nil
}

// resultColumns are the columns of a prepared statement's rows: for
// EXECUTE those of the statement it runs, for FETCH those of its cursor.
func (ex *Executor) resultColumns(p *planner.Prepared) []Column {
	switch {
	case p.Executes != "":
		if q, ok := ex.x.stmts[p.Executes]; ok && q != p {
			return q.Columns
		}
	case p.Fetch != "":
		if d, ok := ex.x.cursors[p.Fetch]; ok {
			return d.cols
		}
	}
	return p.Columns
}

// DescribePortal answers Describe of a portal: its result columns and
// their formats.
//
// A cursor made by DECLARE is a portal too (psycopg describes its named
// cursors so).
func (ex *Executor) DescribePortal(name string) ([]Column, []int16, error) {
	pt, ok := ex.x.portals[name]
	if !ok {
		if d, ok := ex.x.cursors[name]; ok {
			return d.cols, d.formats, nil
		}
		return nil, nil, sqlerr.New("34000", "portal %q does not exist", name)
	}
	cols := ex.resultColumns(pt.stmt)
	return cols, portalFormats(pt, cols), nil
}

// CloseStatement forgets a prepared statement (Close 'S').
func (ex *Executor) CloseStatement(name string) { delete(ex.x.stmts, name) }

// ClosePortal closes a portal (Close 'P').
func (ex *Executor) ClosePortal(name string) { ex.x.closePortal(name) }

// Execute runs a portal, or continues a suspended one. With maxRows > 0
// the portal sends at most that many rows and, if it sent that many,
// keeps its result open for the next Execute (PortalSuspended).
func (ex *Executor) Execute(portalName string, maxRows int, sink Sink) error {
	ex.sink = sink
	pt, ok := ex.x.portals[portalName]
	if !ok {
		return sqlerr.New("34000", "portal %q does not exist", portalName)
	}
	if pt.started && ex.sess.TransactionFailed() {
		// A portal suspended before the block failed sends no more rows:
		// as every other statement, it waits for the block to end. (One
		// not started yet is refused, or let through to end the block,
		// by the session.)
		return &sqlerr.Error{Code: sqlerr.InFailedTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}
	}
	if pt.done {
		// PostgreSQL answers a finished portal with its tag and no rows.
		sink.CommandComplete(pt.tag)
		return nil
	}
	qctx, done := ex.statementContext()
	defer done()
	if !pt.started {
		pt.started = true
		before := ex.sess.Settings().Reported()
		wasInTx := ex.sess.InTransaction()
		rctx := qctx
		if maxRows > 0 {
			var cancel context.CancelCauseFunc
			rctx, cancel = context.WithCancelCause(ex.ctx)
			pt.cancel = cancel
		}
		err := ex.start(qctx, rctx, pt, maxRows)
		if err != nil {
			pt.done = true
			ex.x.forget(pt.cur)
			pt.close()
			if wasInTx && !ex.sess.InTransaction() {
				ex.x.endTransaction(false) // a COMMIT that failed
			}
			return timeoutError(qctx, err)
		}
		if pt.stmt.Empty {
			pt.done = true
			sink.EmptyQuery()
			return nil
		}
		if pt.cur == nil {
			pt.done = true
			pt.close()
			sink.CommandComplete(pt.tag)
			ex.afterStatement(pt.tag, before)
			return nil
		}
		sink.PortalSuspended()
		return nil
	}
	if pt.cur == nil {
		pt.done = true
		sink.CommandComplete(pt.tag)
		return nil
	}
	stop := context.AfterFunc(qctx, func() { pt.cancel(context.Cause(qctx)) })
	sent, err := ex.send(pt.cur, maxRows)
	stop()
	return ex.endExecute(qctx, pt, maxRows, sent, err)
}

// start runs a portal's statement and sends its first rows; qctx is the
// Execute's context, rctx the one its rows are made with (the portal's
// own when they may outlive the Execute).
func (ex *Executor) start(qctx, rctx context.Context, pt *portal, maxRows int) error {
	st := ex.textStyle()
	if rctx != qctx {
		stop := context.AfterFunc(qctx, func() { pt.cancel(context.Cause(qctx)) })
		defer stop()
	}
	// A cursor DECLARE makes reads its rows after the Execute: they are
	// made with a context its cancel or timeout reaches while it runs,
	// and the cursor's CLOSE after.
	kept := newKeptContext(ex.ctx)
	stopKept := context.AfterFunc(qctx, func() { kept.cancel(context.Cause(qctx)) })
	defer func() {
		stopKept()
		kept.unref()
	}()
	if pt.stmt.Declares {
		rctx = kept.ctx
	}
	var emit func(r *planner.Result) error
	emit = func(r *planner.Result) error {
		ex.notice(r)
		if r.Empty {
			return nil
		}
		if r.Execute != nil {
			p, err := ex.executed(r.Execute.Name)
			if err != nil {
				return err
			}
			return ex.sess.ExecuteArgs(rctx, p, r.Execute, emit)
		}
		pt.tag = r.Tag
		// COPY runs its sub-protocol within Execute, as in PostgreSQL
		// (the sink reads past the Sync and Flush a client sends).
		if r.CopyIn != nil {
			tag, err := ex.copyIn(qctx, r.CopyIn)
			pt.tag = tag
			return err
		}
		if r.CopyOut != nil {
			tag, err := ex.copyOut(r.CopyOut, st)
			pt.tag = tag
			return err
		}
		if r.Cursor != nil || r.Fetch != nil || r.CloseCursor != nil {
			tag, err := ex.cursorCommand(qctx, r, st, kept, pt)
			pt.tag = tag
			return err
		}
		if err := ex.directive(r, pt.name); err != nil {
			return err
		}
		if r.Rows == nil {
			return nil
		}
		cols := ex.resultColumns(pt.stmt)
		if len(cols) != len(r.Columns) {
			cols = r.Columns
		}
		cur := newCursor(r.Rows, cols, portalFormats(pt, cols), st, &ex.enc, &ex.x.heldBytes)
		// Closed here unless the portal keeps it: deferred, so that a
		// panic (recovered by the wire layer) also ends a result DuckDB
		// streams.
		defer func() {
			if pt.cur != cur {
				cur.close()
			}
		}()
		sent, err := ex.send(cur, maxRows)
		if err != nil {
			return err
		}
		if maxRows > 0 && sent == maxRows {
			// As PostgreSQL, without looking ahead: a result of exactly
			// maxRows rows is suspended, and the next Execute completes it.
			cur.cancel = pt.cancel
			pt.cur, ex.x.open = cur, cur
			return nil
		}
		if pt.tag == "SELECT" {
			pt.tag = fmt.Sprintf("SELECT %d", cur.n)
		}
		return nil
	}
	err := ex.sess.ExecutePrepared(rctx, pt.stmt, pt.params, emit)
	// The rows sent so far go before the error or the tag.
	if ferr := ex.flushRows(); err == nil {
		err = ferr
	}
	return err
}

// portalFormats are the formats of a portal's result columns cols.
func portalFormats(pt *portal, cols []Column) []int16 {
	if len(cols) == len(pt.formats) {
		return pt.formats
	}
	formats := make([]int16, len(cols))
	for i := range formats {
		formats[i] = formatFor(pt.resultFormats, i)
	}
	return formats
}

// endExecute ends an Execute of a suspended portal that sent sent rows:
// suspended again, completed, or failed with err.
func (ex *Executor) endExecute(qctx context.Context, pt *portal, maxRows, sent int, err error) error {
	if err == nil && maxRows > 0 && sent == maxRows {
		ex.sink.PortalSuspended()
		return nil
	}
	n := pt.cur.n
	pt.done = true
	ex.x.forget(pt.cur)
	pt.close()
	if err != nil {
		return timeoutError(qctx, err)
	}
	if pt.tag == "SELECT" {
		pt.tag = fmt.Sprintf("SELECT %d", n)
	}
	ex.sink.CommandComplete(pt.tag)
	return nil
}
