package session

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/planner"
)

// copyIn runs COPY FROM STDIN: the sink asks the client for the data and
// returns it a CopyData at a time, until CopyDone (load) or CopyFail
// (abort).
func (ex *Executor) copyIn(ctx context.Context, ci *planner.CopyIn) (string, error) {
	// However the COPY ends, its decoder goroutines stop and its rows are
	// freed.
	defer ci.Close()
	format := int16(0)
	if ci.Format == planner.CopyBinary {
		format = 1
	}
	if err := ex.sink.CopyIn(format, ci.Columns); err != nil {
		return "", err
	}
	var failed error
	for {
		data, done, err := ex.sink.ReceiveCopy()
		if err != nil {
			return "", err
		}
		if !done {
			if failed == nil {
				failed = ci.Write(data)
			}
			// After a failure the rest of the data is read and dropped:
			// the client sends until CopyDone.
			continue
		}
		if failed != nil {
			return "", failed
		}
		n, err := ci.Finish(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("COPY %d", n), nil
	}
}

// copyOut sends a result as COPY TO STDOUT data in text or CSV format.
func (ex *Executor) copyOut(co *planner.CopyOut, st textStyle) (string, error) {
	res := co.Result
	ex.sink.CopyOut(len(res.Columns))
	if res.Rows == nil {
		ex.sink.CopyDone()
		return "COPY 0", nil
	}
	defer res.Rows.Close()
	csvMode := co.Format == planner.CopyCSV
	// Fields are rendered into one line buffer and queued as CopyData with
	// the result rows' buffer: no value, field or line is allocated.
	var line, val []byte
	field := func(s []byte, null bool) {
		switch {
		case null:
			line = append(line, co.Null...)
		case csvMode:
			line = appendCSVField(line, s, co.Delim, co.Null)
		default:
			line = appendTextField(line, s, co.Delim)
		}
	}
	if co.Header && csvMode {
		for i, col := range res.Columns {
			if i > 0 {
				line = append(line, co.Delim)
			}
			field([]byte(col.Name), false)
		}
		line = append(line, '\n')
		if err := ex.sendCopyData(line); err != nil {
			return "", err
		}
	}
	n := 0
	endLine := func() error {
		line = append(line, '\n')
		if err := ex.sendCopyData(line); err != nil {
			ex.flushRows()
			return err
		}
		n++
		return nil
	}
	if cr, ok := res.Rows.(planner.ChunkRows); ok {
		// Fields straight from DuckDB's memory, as sendChunks writes rows.
		var writers []cellWriter
		for ch, ok := cr.NextChunk(); ok; ch, ok = cr.NextChunk() {
			if writers == nil {
				writers = columnWriters(ch, res.Columns, nil, st)
			}
			for row := range ch.Len() {
				line = line[:0]
				for i, w := range writers {
					if i > 0 {
						line = append(line, co.Delim)
					}
					v := ch.Column(i)
					if v.Null(row) {
						field(nil, true)
						continue
					}
					val, _ = w(val[:0], v, row)
					field(val, false)
				}
				if err := endLine(); err != nil {
					return "", err
				}
			}
		}
	}
	for res.Rows.Next() {
		line = line[:0]
		for i, v := range res.Rows.Values() {
			if i > 0 {
				line = append(line, co.Delim)
			}
			var null bool
			val, null = appendText(val[:0], padValue(v, res.Columns[i].Pad), res.Columns[i].OID, st)
			field(val, null)
		}
		if err := endLine(); err != nil {
			return "", err
		}
	}
	// The data goes before CopyDone or an error.
	if err := ex.flushRows(); err != nil {
		return "", err
	}
	if err := res.Rows.Err(); err != nil {
		return "", err
	}
	ex.sink.CopyDone()
	return fmt.Sprintf("COPY %d", n), nil
}

// appendCSVField appends s as a CSV field: quoted (quotes doubled) when it
// is empty or the NULL string, or holds the delimiter, a quote or a line
// break, so that it reads back as the same text and never as NULL.
func appendCSVField(dst, s []byte, delim byte, null string) []byte {
	quote := len(s) == 0 || string(s) == null
	for i := 0; !quote && i < len(s); i++ {
		switch s[i] {
		case delim, '"', '\r', '\n':
			quote = true
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, ch := range s {
		if ch == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, ch)
	}
	return append(dst, '"')
}

// appendTextField appends s as a field of COPY's text format: backslash,
// tab, newline, carriage return and the delimiter escaped with a backslash.
func appendTextField(dst, s []byte, delim byte) []byte {
	for _, ch := range s {
		switch ch {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case delim:
			dst = append(dst, '\\', delim)
		default:
			dst = append(dst, ch)
		}
	}
	return dst
}

// sendCopyData queues one CopyData message of COPY TO STDOUT, written
// with the rows.
func (ex *Executor) sendCopyData(data []byte) error {
	msg := pgproto3.CopyData{Data: data}
	b, err := msg.Encode(ex.rows)
	if err != nil {
		return err
	}
	return ex.queued(b)
}
