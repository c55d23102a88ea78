// Package pgtext writes values as PostgreSQL's text output functions do:
// the Go values the engine's driver hands over (a row of a result, or the
// argument of a Go function the engine calls), each with the PostgreSQL
// type OID it stands for, in a session's Style (time zone, DateStyle,
// IntervalStyle, extra_float_digits, bytea_output). The wire layer writes
// results with it; the planner's functions that make values text (an
// array cast to text) do too, so that both write alike.
package pgtext

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
)

// Record is a row value: its fields in order, each with its type OID. A
// field that is itself a row value is a Record. It is written as
// PostgreSQL does, "(1,abc,)" in text.
type Record struct {
	Fields []any
	OIDs   []uint32
}

// PostgreSQL type OIDs that need their own text format.
const (
	OIDBytea       = 17
	OIDDate        = 1082
	OIDTime        = 1083
	OIDTimeTZ      = 1266
	OIDTimestamp   = 1114
	OIDTimestamptz = 1184
	OIDUUID        = 2950
	OIDJSON        = 114
)

// Encode renders a value in PostgreSQL's text format for the column's
// type. timestamptz values are shown in the session's time zone, as
// PostgreSQL does. nil is SQL NULL.
func Encode(v any, oid uint32, st Style) []byte {
	b, null := Append(nil, v, oid, st)
	if null {
		return nil
	}
	if b == nil {
		b = []byte{} // empty, not NULL
	}
	return b
}

// Append is Encode appending to dst; null reports SQL NULL (and
// appends nothing).
func Append(dst []byte, v any, oid uint32, st Style) (b []byte, null bool) {
	if j, ok := v.(JSONText); ok {
		// Checked when read (planner's chunks): raw as written if not.
		if out, err := AppendJSON(dst, j, st.ExtraDigits); err == nil {
			return out, false
		}
		return append(dst, j...), false
	}
	if oid == OIDJSON && v != nil {
		// The driver hands JSON over decoded: a JSON string arrives as a
		// Go string and must go back out quoted ("s", not s), an array
		// as JSON, not as a PostgreSQL array literal.
		if b, err := MarshalJSON(v); err == nil {
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
		return dialect.AppendFloat(dst, float64(x), 32, st.ExtraDigits), false
	case float64:
		return dialect.AppendFloat(dst, x, 64, st.ExtraDigits), false
	case string:
		return append(dst, x...), false
	case []byte:
		if oid == OIDBytea {
			if st.ByteaEscape {
				return AppendByteaEscape(dst, x), false
			}
			dst = append(dst, `\x`...)
			return hex.AppendEncode(dst, x), false
		}
		if oid == OIDUUID && len(x) == 16 {
			// The driver scans a UUID into its 16 bytes.
			return append(dst, FormatUUID(x)...), false
		}
		return append(dst, x...), false
	case time.Time:
		return AppendTime(dst, x, oid, st), false
	case *big.Int:
		return x.Append(dst, 10), false
	case duckdb.Decimal:
		return append(dst, FormatDecimal(x)...), false
	case duckdb.Interval:
		return append(dst, pgdatetime.Interval{Months: x.Months, Days: x.Days, Micros: x.Micros}.Format(st.Intervals)...), false
	case duckdb.UUID:
		return append(dst, FormatUUID(x[:])...), false
	case []any:
		return append(dst, FormatArray(x, dialect.ArrayElement(oid), st)...), false
	case Record:
		return AppendRecord(dst, x, st), false
	case map[string]any, duckdb.Map:
		b, err := MarshalJSON(x)
		if err != nil {
			return fmt.Append(dst, x), false
		}
		return append(dst, b...), false
	}
	return fmt.Append(dst, v), false
}

// Style is how a session writes values as text: timestamptz in its
// TimeZone, floats by its extra_float_digits, intervals in its
// IntervalStyle, bytea by its bytea_output.
type Style struct {
	Loc         *time.Location
	ExtraDigits int
	Intervals   pgdatetime.IntervalStyle
	ByteaEscape bool
	// Dates and Order are DateStyle: how dates and timestamps are
	// written (ISO, the zero value, unless the session set another).
	Dates pgdatetime.DateStyle
	Order pgdatetime.Order
}

// AppendByteaEscape writes bytea_output escape: printable ASCII as it is,
// a backslash doubled, every other byte as \ and three octal digits.
func AppendByteaEscape(dst, b []byte) []byte {
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
	return pgdatetime.EngineInfinity(t, oid == OIDDate)
}

// AppendTime writes a date, time, timestamp or timestamptz as PostgreSQL's
// output does in the session's DateStyle and zone.
func AppendTime(dst []byte, t time.Time, oid uint32, st Style) []byte {
	switch oid {
	case OIDTime:
		return AppendClock(dst, ClockMicros(t))
	case OIDTimeTZ:
		_, off := t.Zone()
		return pgdatetime.AppendOffset(AppendClock(dst, ClockMicros(t)), off)
	}
	switch infinite(t, oid) {
	case 1:
		return append(dst, "infinity"...)
	case -1:
		return append(dst, "-infinity"...)
	}
	kind := pgdatetime.KindTimestamptz
	switch oid {
	case OIDDate:
		kind = pgdatetime.KindDate
	case OIDTimestamp:
		kind = pgdatetime.KindTimestamp
	}
	return pgdatetime.AppendDateTime(dst, t, kind, st.Loc, st.Dates, st.Order)
}

func FormatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// FormatArray renders a list as a PostgreSQL array literal of elements of
// type elem (0: as their Go types print, times as timestamptz).
func FormatArray(xs []any, elem uint32, st Style) string {
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
		if sub, ok := x.([]any); ok {
			// A dimension of a multidimensional array: its braces are
			// the syntax, not text to quote.
			sb.WriteString(FormatArray(sub, elem, st))
			continue
		}
		oid := elem
		if _, ok := x.(time.Time); ok && oid == 0 {
			oid = OIDTimestamptz
		}
		s := string(Encode(x, oid, st))
		if s == "" || strings.ContainsAny(s, `{},"\ `) || strings.EqualFold(s, "null") {
			s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		sb.WriteString(s)
	}
	sb.WriteByte('}')
	return sb.String()
}

// FormatDecimal prints a decimal with all its scale digits, as PostgreSQL
// prints numeric (1.50, not 1.5).
func FormatDecimal(d duckdb.Decimal) string {
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

// MarshalJSON writes v as JSON text, leaving <, > and & as they are (the
// standard library escapes them for HTML).
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// AppendRecord writes a row value as PostgreSQL's record_out does: its
// fields in parentheses, separated by commas, NULL as nothing, and a field
// in double quotes (with " and \ doubled) when it is empty or holds a
// quote, backslash, parenthesis, comma or white space.
func AppendRecord(dst []byte, r Record, st Style) []byte {
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
		field, null = Append(field[:0], f, r.OIDs[i], st)
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

// ClockMicros is the time of day of a time or timetz value as the driver
// hands it over (a Go time on 1 January of year 1, in the value's own
// offset), in microseconds since midnight: 24:00:00, which PostgreSQL's
// time holds, arrives as midnight of the day after.
func ClockMicros(t time.Time) int64 {
	midnight := time.Date(1, time.January, 1, 0, 0, 0, 0, t.Location())
	if d := t.Sub(midnight); d >= 0 && d <= 24*time.Hour {
		return d.Microseconds()
	}
	// Any other date: the time of day on it.
	return t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())).Microseconds()
}

// AppendClock writes a time of day as PostgreSQL does: HH:MM:SS and the
// fraction of a second without trailing zeros.
func AppendClock(dst []byte, us int64) []byte {
	sec := us / 1_000_000
	dst = fmt.Appendf(dst, "%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	if frac := us % 1_000_000; frac != 0 {
		f := strconv.AppendInt(nil, frac+1_000_000, 10)[1:] // six digits
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		dst = append(append(dst, '.'), f...)
	}
	return dst
}
