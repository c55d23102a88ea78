package session

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// A cursor reads a result into DataRow messages a row at a time: from
// DuckDB's chunks when the rows come as chunks (no Go value per cell),
// through Go values otherwise. A statement reads its cursor to the end; a
// portal executed with a row limit keeps its cursor open between Executes,
// so that a client reading a large result in batches (JDBC's fetch size)
// holds one batch in the server, not the whole result.
//
// The rows read the session's DuckDB connection, which can run nothing
// else while they are open. Before the session runs another statement,
// hold reads the rest of the result into memory and closes the rows.
type cursor struct {
	rows    planner.Rows
	chunks  planner.ChunkRows // rows read as chunks; nil if they cannot be
	chunk   *planner.Chunk    // being read, valid until the next NextChunk
	at      int               // next row of chunk
	writers []cellWriter      // by column, from the first chunk
	cols    []planner.Column
	formats []int16
	style   textStyle
	enc     *rowEncoder
	n       int    // rows read from rows
	held    []byte // DataRow messages read by hold, not yet sent
	err     error  // the rows' error, kept by hold until the held rows are sent
	closed  bool
	// used counts the bytes the connection's cursors hold (see hold);
	// heldSize is this cursor's part of it.
	used     *int
	heldSize int
	// cancel cancels the context the rows were made with, if they outlive
	// their statement.
	cancel context.CancelCauseFunc
}

// newCursor reads rows in formats by column (none: all text) with the
// session's time zone loc; enc renders rows that come as Go values.
func newCursor(rows planner.Rows, cols []planner.Column, formats []int16, st textStyle, enc *rowEncoder, used *int) *cursor {
	cur := &cursor{rows: rows, cols: cols, formats: formats, style: st, enc: enc, used: used}
	if cr, ok := rows.(planner.ChunkRows); ok {
		cur.chunks = cr
	}
	return cur
}

// appendRow appends the next row to buf as a DataRow message; ok is false
// at the end of the rows or on an error. On an error buf is returned as
// it came.
func (cur *cursor) appendRow(buf []byte) (out []byte, ok bool, err error) {
	if len(cur.held) > 0 {
		size := 1 + int(binary.BigEndian.Uint32(cur.held[1:5]))
		buf = append(buf, cur.held[:size]...)
		cur.held = cur.held[size:]
		if len(cur.held) == 0 {
			cur.release()
		}
		return buf, true, nil
	}
	return cur.appendNext(buf)
}

// appendNext is appendRow from the rows, past any held ones.
func (cur *cursor) appendNext(buf []byte) (out []byte, ok bool, err error) {
	if cur.closed {
		return buf, false, cur.err
	}
	if cur.chunks == nil {
		if !cur.rows.Next() {
			return buf, false, cur.end(cur.rows.Err())
		}
		out, err = cur.appendValues(buf, cur.rows.Values())
		if err != nil {
			return buf, false, err
		}
		cur.n++
		return out, true, nil
	}
	for cur.chunk == nil || cur.at >= cur.chunk.Len() {
		ch, ok := cur.chunks.NextChunk()
		if !ok {
			return buf, false, cur.end(cur.rows.Err())
		}
		if cur.writers == nil {
			cur.writers = columnWriters(ch, cur.cols, cur.formats, cur.style)
		}
		cur.chunk, cur.at = ch, 0
	}
	out, err = appendChunkRow(buf, cur.chunk, cur.at, cur.writers)
	if err != nil {
		return buf, false, err
	}
	cur.at++
	cur.n++
	return out, true, nil
}

// end closes the rows once they are read to their end, so that a cursor
// nobody closes does not keep DuckDB's result and the rows' snapshot of
// buffered batches; err stays the answer to later reads.
func (cur *cursor) end(err error) error {
	if cur.err == nil {
		cur.err = err
	}
	cur.close()
	return cur.err
}

// release forgets the rows hold kept, giving their bytes back to the
// connection's budget.
func (cur *cursor) release() {
	cur.held = nil
	if cur.heldSize > 0 {
		*cur.used -= cur.heldSize
		cur.heldSize = 0
	}
}

// appendChunkRow appends row of ch as a DataRow: 'D', its length, the
// column count, then each value as its length (-1 for NULL) and bytes.
func appendChunkRow(buf []byte, ch *planner.Chunk, row int, writers []cellWriter) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 'D', 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(writers)))
	for i, w := range writers {
		v := ch.Column(i)
		if v.Null(row) {
			buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if buf, err = w(buf, v, row); err != nil {
			return buf[:start], cellError(i, err)
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
	return buf, nil
}

// appendValues appends one row of Go values as a DataRow, each value in
// its column's format for its type OID (text if the client was told none).
func (cur *cursor) appendValues(buf []byte, vals []any) ([]byte, error) {
	e := cur.enc
	e.start(len(vals))
	for i, v := range vals {
		var oid uint32 = 25
		if i < len(cur.cols) {
			oid = cur.cols[i].OID
			v = padValue(v, cur.cols[i].Pad)
		}
		if i < len(cur.formats) && cur.formats[i] == 1 {
			if err := e.binary(v, oid); err != nil {
				return buf, cellError(i, err)
			}
		} else {
			e.text(v, oid, cur.style)
		}
	}
	msg := pgproto3.DataRow{Values: e.row()}
	return msg.Encode(buf)
}

// holdLimit bounds the bytes hold keeps for one connection, over all its
// cursors: a cursor over an endless or huge result must not take the
// server's memory because the session ran another statement while it was
// open.
const holdLimit = 256 << 20

// hold reads the rest of the rows into memory, already encoded, and
// closes them, so that the session's connection is free for another
// statement; the held rows (and the rows' error, if any) go out with the
// next reads. Encoding them now means a SET TimeZone run in between does
// not change how they are written, where PostgreSQL would apply it. Past
// the connection's holdLimit the rest is dropped and the reads end with an
// error instead.
func (cur *cursor) hold(ctx context.Context) {
	if cur.closed {
		return
	}
	if cur.cancel != nil {
		stop := context.AfterFunc(ctx, func() { cur.cancel(context.Cause(ctx)) })
		defer stop()
	}
	start := len(cur.held)
	for {
		if *cur.used+len(cur.held)-start > holdLimit {
			cur.err = sqlerr.New(sqlerr.ProgramLimitExceeded,
				"the rest of this result was dropped: it had to be kept in memory while the session ran another statement, and the connection's results kept so exceed %d MiB", holdLimit>>20)
			break
		}
		var ok bool
		var err error
		cur.held, ok, err = cur.appendNext(cur.held)
		if err != nil {
			cur.err = err
		}
		if !ok {
			break
		}
	}
	n := len(cur.held) - start
	cur.heldSize += n
	*cur.used += n
	cur.close()
}

// close closes the rows; held rows stay readable.
func (cur *cursor) close() {
	if cur.closed {
		return
	}
	cur.closed = true
	cur.chunk = nil
	if err := cur.rows.Close(); err != nil && cur.err == nil {
		cur.err = err
	}
}

// cursorCommand carries out DECLARE … CURSOR, FETCH, MOVE and CLOSE and
// returns the command tag. FETCH sends the rows it reads, after their
// RowDescription, as PostgreSQL does for the simple query protocol.
//
// Over the extended protocol (pt, the portal running the statement), FETCH
// sends no RowDescription (Describe of the portal gave it) and reads in
// the formats the portal's Bind asked for.
func (ex *Executor) cursorCommand(ctx context.Context, r *planner.Result, st textStyle, kept *keptContext, pt *portal) (string, error) {
	x := ex.x
	inTx := ex.sess.InTransaction()
	switch {
	case r.Cursor != nil:
		d := r.Cursor
		if _, exists := x.cursors[d.Name]; exists {
			r.Rows.Close()
			return "", sqlerr.New("42P03", "cursor %q already exists", d.Name)
		}
		var formats []int16
		if d.Binary {
			formats = make([]int16, len(r.Columns))
			for i := range formats {
				formats[i] = 1
			}
		}
		// The cursor's rows stay open on the session's connection until
		// they are read, closed, or held for another statement.
		cur := newCursor(r.Rows, r.Columns, formats, st, &ex.enc, &x.heldBytes)
		cur.cancel = kept.cancel
		kept.refs++
		x.cursors[d.Name] = &declared{cur: cur, cols: r.Columns, formats: formats, hold: d.Hold, inTx: inTx, ctx: kept,
			scroll: newScrollState(d)}
		x.open = cur
		return r.Tag, nil
	case r.CloseCursor != nil:
		if r.CloseCursor.Name == "" {
			for name := range x.cursors {
				x.closeCursor(name)
			}
			return "CLOSE CURSOR ALL", nil
		}
		if _, ok := x.cursors[r.CloseCursor.Name]; !ok {
			return "", sqlerr.New("34000", "cursor %q does not exist", r.CloseCursor.Name)
		}
		x.closeCursor(r.CloseCursor.Name)
		return r.Tag, nil
	}
	f := r.Fetch
	d, ok := x.cursors[f.Name]
	if !ok {
		return "", sqlerr.New("34000", "cursor %q does not exist", f.Name)
	}
	if !d.cur.closed && x.open != d.cur {
		x.hold(ctx) // not reached: an open cursor is the connection's
	}
	// A cancel or statement_timeout of this FETCH reaches the rows
	// through the context they were made with, the DECLARE's.
	stop := context.AfterFunc(ctx, func() { d.ctx.cancel(context.Cause(ctx)) })
	defer stop()
	var n int64
	var err error
	if !f.Move {
		if pt != nil {
			if err := d.cur.useFormats(fetchFormats(pt.resultFormats, d)); err != nil {
				return "", err
			}
		} else {
			ex.sink.RowDescription(d.cols, d.formats)
		}
	}
	switch {
	case d.streams(f):
		// Straight from the result (to the client, or skipped by MOVE):
		// the cursor keeps nothing.
		limit := int(min(f.Count, math.MaxInt))
		var done int
		if f.Move {
			done, err = d.cur.skip(limit)
		} else {
			done, err = ex.send(d.cur, limit)
		}
		n = d.streamed(done, limit, err)
	case f.Move:
		n, err = d.fetch(f, nil)
	default:
		n, err = d.fetch(f, func(msg []byte) error { return ex.queued(append(ex.rows, msg...)) })
		if ferr := ex.flushRows(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		x.closeCursor(f.Name)
		return "", err
	}
	return fmt.Sprintf("%s %d", r.Tag, n), nil
}

// fetchFormats are the formats a FETCH over the extended protocol reads a
// cursor's columns in: those its Bind asked for, else the cursor's own.
func fetchFormats(codes []int16, d *declared) []int16 {
	if len(codes) == 0 {
		return d.formats
	}
	out := make([]int16, len(d.cols))
	for i := range out {
		out[i] = formatFor(codes, i)
	}
	return out
}

// useFormats sets the formats of a cursor's rows before its first row is
// read; after that they stay as they are.
func (cur *cursor) useFormats(formats []int16) error {
	same := len(formats) == len(cur.formats)
	for i := 0; same && i < len(formats); i++ {
		same = formats[i] == cur.formats[i]
	}
	allText := true
	for _, f := range append(append([]int16(nil), formats...), cur.formats...) {
		allText = allText && f == 0
	}
	if same || allText {
		return nil
	}
	if cur.n > 0 || cur.writers != nil || len(cur.held) > 0 || cur.closed {
		return sqlerr.New(sqlerr.FeatureNotSupported, "a cursor's rows keep the formats of its first FETCH")
	}
	cur.formats = formats
	return nil
}

// keptContext is the context a Query's statements run with when their
// rows may outlive it (DECLARE … CURSOR): canceled by the Query's cancel
// or timeout while it runs, and after it once its last cursor is closed.
type keptContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	refs   int // the Query while it runs, and cursors made with it and still open
}

// newKeptContext returns a context held by its Query, which unrefs it
// when it ends.
func newKeptContext(parent context.Context) *keptContext {
	ctx, cancel := context.WithCancelCause(parent)
	return &keptContext{ctx: ctx, cancel: cancel, refs: 1}
}

// unref drops a cursor's reference, canceling the context after the last.
func (k *keptContext) unref() {
	if k.refs--; k.refs <= 0 {
		k.cancel(nil)
	}
}

// skip reads and drops up to limit rows (all if limit <= 0), for MOVE.
func (cur *cursor) skip(limit int) (int, error) {
	var scratch []byte
	n := 0
	for limit <= 0 || n < limit {
		var ok bool
		var err error
		scratch, ok, err = cur.appendRow(scratch[:0])
		if !ok {
			return n, err
		}
		n++
	}
	return n, nil
}

// cellError is the error of writing column i of a row: one with an
// SQLSTATE (a timestamp PostgreSQL cannot hold, 22008) as it is, as
// PostgreSQL reports it; anything else is tsdb's own failure.
func cellError(i int, err error) error {
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return se
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Message: fmt.Sprintf("column %d: %v", i+1, err)}
}
