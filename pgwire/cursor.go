package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

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
	loc     *time.Location
	enc     *rowEncoder
	n       int    // rows read from rows
	held    []byte // DataRow messages read by hold, not yet sent
	err     error  // the rows' error, kept by hold until the held rows are sent
	closed  bool
}

// newCursor reads rows in formats by column (none: all text) with the
// session's time zone loc; enc renders rows that come as Go values.
func newCursor(rows planner.Rows, cols []planner.Column, formats []int16, loc *time.Location, enc *rowEncoder) *cursor {
	cur := &cursor{rows: rows, cols: cols, formats: formats, loc: loc, enc: enc}
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
			cur.held = nil
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
			return buf, false, cur.rows.Err()
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
			cur.chunk = nil
			return buf, false, cur.rows.Err()
		}
		if cur.writers == nil {
			cur.writers = columnWriters(ch, cur.cols, cur.formats, cur.loc)
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
			return buf[:start], &sqlerr.Error{Code: sqlerr.InternalError, Message: fmt.Sprintf("column %d: %v", i+1, err)}
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
		}
		if i < len(cur.formats) && cur.formats[i] == 1 {
			if err := e.binary(v, oid); err != nil {
				return buf, &sqlerr.Error{Code: sqlerr.InternalError, Message: fmt.Sprintf("column %d: %v", i+1, err)}
			}
		} else {
			e.text(v, oid, cur.loc)
		}
	}
	msg := pgproto3.DataRow{Values: e.row()}
	return msg.Encode(buf)
}

// hold reads the rest of the rows into memory, already encoded, and
// closes them, so that the session's connection is free for another
// statement; the held rows (and the rows' error, if any) go out with the
// next Executes. Encoding them now means a SET TimeZone run in between
// does not change how they are written, where PostgreSQL would apply it.
func (cur *cursor) hold() {
	if cur.closed {
		return
	}
	for {
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

// send writes up to limit rows of cur (every row if limit <= 0) and
// returns how many it sent; the rows are written before it returns.
func (c *conn) send(cur *cursor, limit int) (sent int, err error) {
	// The rows go out before anything the caller sends next.
	defer func() {
		if ferr := c.flushRows(); err == nil {
			err = ferr
		}
	}()
	for limit <= 0 || sent < limit {
		buf, ok, err := cur.appendRow(c.rows)
		if !ok {
			c.rows = buf
			return sent, err
		}
		sent++
		if err := c.queued(buf, nil); err != nil {
			return sent, err
		}
	}
	return sent, nil
}
