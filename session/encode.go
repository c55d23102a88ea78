package session

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/planner"
)

// PostgreSQL type OIDs that need their own text format.
const (
	oidBytea       = 17
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidUUID        = 2950
	oidJSON        = 114
)

// encodeText renders a value in PostgreSQL's text format for the column's
// type. timestamptz values are shown in the session's time zone, as
// PostgreSQL does. nil is SQL NULL.
func encodeText(v any, oid uint32, st textStyle) []byte {
	b, null := appendText(nil, v, oid, st)
	if null {
		return nil
	}
	if b == nil {
		b = []byte{} // empty, not NULL
	}
	return b
}

// appendText is encodeText appending to dst; null reports SQL NULL (and
// appends nothing).
func appendText(dst []byte, v any, oid uint32, st textStyle) (b []byte, null bool) {
	if oid == oidJSON && v != nil {
		// The driver hands JSON over decoded: a JSON string arrives as a
		// Go string and must go back out quoted ("s", not s), an array
		// as JSON, not as a PostgreSQL array literal.
		if b, err := marshalJSON(v); err == nil {
			return append(dst, b...), false
		}
	}
	switch x := v.(type) {
	case nil:
		return dst, true
	case bool:
		if x {
			return append(dst, 't'), false
		}
		return append(dst, 'f'), false
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), false
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), false
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), false
	case int64:
		return strconv.AppendInt(dst, x, 10), false
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), false
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), false
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), false
	case uint64:
		return strconv.AppendUint(dst, x, 10), false
	case float32:
		return dialect.AppendFloat(dst, float64(x), 32, st.extraDigits), false
	case float64:
		return dialect.AppendFloat(dst, x, 64, st.extraDigits), false
	case string:
		return append(dst, x...), false
	case []byte:
		if oid == oidBytea {
			if st.byteaEscape {
				return appendByteaEscape(dst, x), false
			}
			dst = append(dst, `\x`...)
			return hex.AppendEncode(dst, x), false
		}
		if oid == oidUUID && len(x) == 16 {
			// The driver scans a UUID into its 16 bytes.
			return append(dst, formatUUID(x)...), false
		}
		return append(dst, x...), false
	case time.Time:
		return appendTime(dst, x, oid, st), false
	case *big.Int:
		return x.Append(dst, 10), false
	case duckdb.Decimal:
		return append(dst, formatDecimal(x)...), false
	case duckdb.Interval:
		return append(dst, pgdatetime.Interval{Months: x.Months, Days: x.Days, Micros: x.Micros}.Format(st.intervals)...), false
	case duckdb.UUID:
		return append(dst, formatUUID(x[:])...), false
	case []any:
		return append(dst, formatArray(x, planner.ArrayElement(oid), st)...), false
	case planner.Record:
		return appendRecord(dst, x, st), false
	case map[string]any, duckdb.Map:
		b, err := marshalJSON(x)
		if err != nil {
			return fmt.Append(dst, x), false
		}
		return append(dst, b...), false
	}
	return fmt.Append(dst, v), false
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

// textStyle is how a session writes values as text: timestamptz in its
// TimeZone, floats by its extra_float_digits, intervals in its
// IntervalStyle, bytea by its bytea_output.
type textStyle struct {
	loc         *time.Location
	extraDigits int
	intervals   pgdatetime.IntervalStyle
	byteaEscape bool
	// dates and order are DateStyle: how dates and timestamps are
	// written (ISO, the zero value, unless the session set another).
	dates pgdatetime.DateStyle
	order pgdatetime.Order
}

// utcStyle is the style of values written without a session: UTC and
// the shortest exact floats (extra_float_digits 1).
func utcStyle() textStyle { return textStyle{loc: time.UTC, extraDigits: 1} }

// textStyle is the session's text style now.
func (ex *Executor) textStyle() textStyle {
	set := ex.sess.Settings()
	return textStyle{loc: set.Location(), extraDigits: set.ExtraFloatDigits(), intervals: set.IntervalStyle(), byteaEscape: set.Get("bytea_output") == "escape",
		dates: set.DateStyle(), order: set.DateOrder()}
}

// appendByteaEscape writes bytea_output escape: printable ASCII as it is,
// a backslash doubled, every other byte as \ and three octal digits.
func appendByteaEscape(dst, b []byte) []byte {
	for _, c := range b {
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c < 0x20 || c > 0x7e:
			dst = append(dst, '\\', '0'+c>>6, '0'+c>>3&7, '0'+c&7)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// infinite tells DuckDB's infinite timestamps and dates (the largest
// magnitudes of their counts, as the Go time the driver makes of them)
// apart from finite ones: +1, -1 or 0.
func infinite(t time.Time, oid uint32) int {
	return pgdatetime.EngineInfinity(t, oid == oidDate)
}

// appendTime writes a date, time, timestamp or timestamptz as PostgreSQL's
// output does in the session's DateStyle and zone.
func appendTime(dst []byte, t time.Time, oid uint32, st textStyle) []byte {
	switch infinite(t, oid) {
	case 1:
		return append(dst, "infinity"...)
	case -1:
		return append(dst, "-infinity"...)
	}
	kind := pgdatetime.KindTimestamptz
	switch oid {
	case oidTime:
		return t.UTC().AppendFormat(dst, "15:04:05.999999")
	case oidDate:
		kind = pgdatetime.KindDate
	case oidTimestamp:
		kind = pgdatetime.KindTimestamp
	}
	return pgdatetime.AppendDateTime(dst, t, kind, st.loc, st.dates, st.order)
}

func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// formatArray renders a list as a PostgreSQL array literal of elements of
// type elem (0: as their Go types print, times as timestamptz).
func formatArray(xs []any, elem uint32, st textStyle) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			sb.WriteByte(',')
		}
		if x == nil {
			sb.WriteString("NULL")
			continue
		}
		oid := elem
		if _, ok := x.(time.Time); ok && oid == 0 {
			oid = oidTimestamptz
		}
		s := string(encodeText(x, oid, st))
		if s == "" || strings.ContainsAny(s, `{},"\ `) || strings.EqualFold(s, "null") {
			s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		sb.WriteString(s)
	}
	sb.WriteByte('}')
	return sb.String()
}

// formatDecimal prints a decimal with all its scale digits, as PostgreSQL
// prints numeric (1.50, not 1.5).
func formatDecimal(d duckdb.Decimal) string {
	if d.Value == nil {
		return "0"
	}
	s := new(big.Int).Abs(d.Value).String()
	sign := ""
	if d.Value.Sign() < 0 {
		sign = "-"
	}
	scale := int(d.Scale)
	if scale == 0 {
		return sign + s
	}
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	frac := s[len(s)-scale:]
	if d.Width == 38 && d.Scale == 10 {
		// The planner's type for numeric without precision (see
		// rewritePG): PostgreSQL prints such a value with the digits it
		// has, 1.5 and not 1.5000000000.
		if frac = strings.TrimRight(frac, "0"); frac == "" {
			return sign + s[:len(s)-scale]
		}
	}
	return sign + s[:len(s)-scale] + "." + frac
}

// marshalJSON writes v as JSON text, leaving <, > and & as they are (the
// standard library escapes them for HTML).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// appendRecord writes a row value as PostgreSQL's record_out does: its
// fields in parentheses, separated by commas, NULL as nothing, and a field
// in double quotes (with " and \ doubled) when it is empty or holds a
// quote, backslash, parenthesis, comma or white space.
func appendRecord(dst []byte, r planner.Record, st textStyle) []byte {
	dst = append(dst, '(')
	var field []byte
	for i, f := range r.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		if f == nil {
			continue
		}
		var null bool
		field, null = appendText(field[:0], f, r.OIDs[i], st)
		if null {
			continue
		}
		if len(field) > 0 && !bytes.ContainsAny(field, "\"\\(),") && !bytes.ContainsFunc(field, isRecordSpace) {
			dst = append(dst, field...)
			continue
		}
		dst = append(dst, '"')
		for _, c := range field {
			if c == '"' || c == '\\' {
				dst = append(dst, c)
			}
			dst = append(dst, c)
		}
		dst = append(dst, '"')
	}
	return append(dst, ')')
}

// isRecordSpace is C's isspace, which record_out quotes.
func isRecordSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}
