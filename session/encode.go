package session

import (
	"time"

	"tsdb/internal/pgtext"
)

// textStyle is how a session writes values as text (pgtext.Style).
type textStyle = pgtext.Style

// PostgreSQL type OIDs that need their own text format.
const (
	oidBytea       = pgtext.OIDBytea
	oidDate        = pgtext.OIDDate
	oidTime        = pgtext.OIDTime
	oidTimestamp   = pgtext.OIDTimestamp
	oidTimestamptz = pgtext.OIDTimestamptz
	oidUUID        = pgtext.OIDUUID
	oidJSON        = pgtext.OIDJSON
)

// encodeText renders a value in PostgreSQL's text format for the column's
// type (pgtext.Encode).
func encodeText(v any, oid uint32, st textStyle) []byte { return pgtext.Encode(v, oid, st) }

// appendText is encodeText appending to dst (pgtext.Append).
func appendText(dst []byte, v any, oid uint32, st textStyle) ([]byte, bool) {
	return pgtext.Append(dst, v, oid, st)
}

// rowEncoder renders the rows of a result into one buffer it reuses:
// Backend.Send copies a DataRow into the connection's write buffer, so its
// values need to live only until then, and a large result then costs no
// allocation per value.
type rowEncoder struct {
	buf   []byte
	ends  []int
	nulls []bool
	out   [][]byte
}

// start begins a row of n values.
func (e *rowEncoder) start(n int) {
	if e.buf == nil {
		e.buf = make([]byte, 0, 4096) // never nil: an empty value is not NULL
	}
	e.buf, e.ends, e.nulls = e.buf[:0], e.ends[:0], e.nulls[:0]
	if cap(e.out) < n {
		e.out = make([][]byte, n)
	}
	e.out = e.out[:n]
}

// text appends the next value in text format.
func (e *rowEncoder) text(v any, oid uint32, st textStyle) {
	var null bool
	e.buf, null = appendText(e.buf, v, oid, st)
	e.ends, e.nulls = append(e.ends, len(e.buf)), append(e.nulls, null)
}

// binary appends the next value in binary format.
func (e *rowEncoder) binary(v any, oid uint32) error {
	b, null, err := appendBinary(e.buf, v, oid)
	if err != nil {
		return err
	}
	e.buf = b
	e.ends, e.nulls = append(e.ends, len(e.buf)), append(e.nulls, null)
	return nil
}

// row returns the values of the row, valid until the next start.
func (e *rowEncoder) row() [][]byte {
	from := 0
	for i, end := range e.ends {
		if e.nulls[i] {
			e.out[i] = nil
		} else {
			e.out[i] = e.buf[from:end:end]
		}
		from = end
	}
	return e.out
}

// utcStyle is the style of values written without a session: UTC and
// the shortest exact floats (extra_float_digits 1).
func utcStyle() textStyle { return textStyle{Loc: time.UTC, ExtraDigits: 1} }

// textStyle is the session's text style now.
func (ex *Executor) textStyle() textStyle {
	set := ex.sess.Settings()
	return textStyle{Loc: set.Location(), ExtraDigits: set.ExtraFloatDigits(), Intervals: set.IntervalStyle(), ByteaEscape: set.Get("bytea_output") == "escape",
		Dates: set.DateStyle(), Order: set.DateOrder()}
}
