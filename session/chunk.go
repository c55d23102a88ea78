package session

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"tsdb/dialect"
	"tsdb/internal/pgtext"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// A result read as chunks is written cell by cell from DuckDB's memory
// into DataRow messages: no Go value per cell. Each column gets a writer
// for its kind, type OID and format once per result; the writers produce
// the bytes appendText and appendBinary produce for the same values
// (encode_test.go holds them to it).

// cellWriter appends the non-NULL value of row in v to dst.
type cellWriter func(dst []byte, v *planner.Vector, row int) ([]byte, error)

// rangeError is PostgreSQL's 22008 for a time value it cannot hold
// (schema.ErrTimestampRange, schema.ErrDateRange).
func rangeError(err error) error {
	return &sqlerr.Error{Code: sqlerr.DatetimeOverflow, Message: err.Error(), Err: err}
}

// textWriter writes a column of kind in text format.
func textWriter(kind planner.Kind, oid uint32, st textStyle) cellWriter {
	switch kind {
	case planner.KindBool:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			if v.Bool(row) {
				return append(dst, 't'), nil
			}
			return append(dst, 'f'), nil
		}
	case planner.KindInt8, planner.KindInt16, planner.KindInt32, planner.KindInt64:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return strconv.AppendInt(dst, v.Int64(row), 10), nil
		}
	case planner.KindFloat32, planner.KindFloat64:
		bits := 64
		if kind == planner.KindFloat32 {
			bits = 32
		}
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return dialect.AppendFloat(dst, v.Float64(row), bits, st.ExtraDigits), nil
		}
	case planner.KindString:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return append(dst, v.Bytes(row)...), nil
		}
	case planner.KindJSON:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return pgtext.AppendJSON(dst, v.Bytes(row), st.ExtraDigits)
		}
	case planner.KindTimestamp, planner.KindTimestampTZ:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			// A value before PostgreSQL's first timestamp (4714-11-24
			// BC), which the engine computes, is out of range as in
			// PostgreSQL, as its binary form is.
			if _, err := schema.ToPGMicros(v.Int64(row)); err != nil {
				return nil, rangeError(err)
			}
			return pgtext.AppendTime(dst, v.Time(row), oid, st), nil
		}
	case planner.KindDate:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			if _, err := schema.ToPGDays(v.Int64(row)); err != nil {
				return nil, rangeError(err)
			}
			return pgtext.AppendTime(dst, v.Time(row), oid, st), nil
		}
	case planner.KindHugeInt:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			if lo, hi := v.Int128(row); hi == int64(lo)>>63 {
				return strconv.AppendInt(dst, int64(lo), 10), nil // fits 64 bits
			}
			b, _ := appendText(dst, v.Value(row), oid, st)
			return b, nil
		}
	}
	return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
		b, _ := appendText(dst, v.Value(row), oid, st)
		return b, nil
	}
}

// binaryWriter writes a column of kind in binary format for oid, as
// appendBinary does: by the OID, for the values it accepts.
func binaryWriter(kind planner.Kind, oid uint32) cellWriter {
	isInt := kind == planner.KindInt8 || kind == planner.KindInt16 || kind == planner.KindInt32 || kind == planner.KindInt64
	switch {
	case oid == 16 && kind == planner.KindBool:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			if v.Bool(row) {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case oid == 21 && isInt:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return binary.BigEndian.AppendUint16(dst, uint16(v.Int64(row))), nil
		}
	case oid == 23 && isInt:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return binary.BigEndian.AppendUint32(dst, uint32(v.Int64(row))), nil
		}
	case oid == 20 && isInt:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return binary.BigEndian.AppendUint64(dst, uint64(v.Int64(row))), nil
		}
	case oid == 701 && (kind == planner.KindFloat32 || kind == planner.KindFloat64):
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float64(row))), nil
		}
	case oid == 700 && (kind == planner.KindFloat32 || kind == planner.KindFloat64):
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(v.Float64(row)))), nil
		}
	case (oid == 1114 || oid == 1184) && (kind == planner.KindTimestamp || kind == planner.KindTimestampTZ):
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			us, err := schema.ToPGMicros(v.Int64(row))
			if err != nil {
				return nil, rangeError(err)
			}
			return binary.BigEndian.AppendUint64(dst, uint64(us)), nil
		}
	case oid == 1082 && kind == planner.KindDate:
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			days, err := schema.ToPGDays(v.Int64(row))
			if err != nil {
				return nil, rangeError(err)
			}
			return binary.BigEndian.AppendUint32(dst, uint32(days)), nil
		}
	case kind == planner.KindJSON:
		// json's binary format is its text (written with the default
		// extra_float_digits: the writer has no session style).
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return pgtext.AppendJSON(dst, v.Bytes(row), 1)
		}
	case kind == planner.KindString && !binaryByOID(oid):
		// text, varchar and anything else rendered as text: the binary
		// format is the bytes.
		return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
			return append(dst, v.Bytes(row)...), nil
		}
	}
	return func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
		b, _, err := appendBinary(dst, v.Value(row), oid)
		return b, err
	}
}

// binaryByOID reports whether appendBinary writes values of oid by their
// type, not as the bytes of their text.
func binaryByOID(oid uint32) bool {
	switch oid {
	case 16, 20, 21, 23, 700, 701, 1082, 1114, 1184, 1186, 1700:
		return true
	}
	return false
}

// columnWriters picks the writer of each column of a result: its kind (from
// a chunk), its type OID (text if the client was told none) and its
// format (text unless formats says binary).
func columnWriters(ch *planner.Chunk, cols []planner.Column, formats []int16, st textStyle) []cellWriter {
	writers := make([]cellWriter, ch.Columns())
	for i := range writers {
		var oid uint32 = 25
		if i < len(cols) {
			oid = cols[i].OID
		}
		kind := ch.Column(i).Kind()
		if i < len(formats) && formats[i] == 1 {
			writers[i] = binaryWriter(kind, oid)
		} else {
			writers[i] = textWriter(kind, oid, st)
		}
		if i < len(cols) && cols[i].Pad > 0 && kind == planner.KindString {
			w, n := writers[i], cols[i].Pad
			writers[i] = func(dst []byte, v *planner.Vector, row int) ([]byte, error) {
				start := len(dst)
				dst, err := w(dst, v, row)
				if err != nil {
					return dst, err
				}
				return padTo(dst, start, n), nil
			}
		}
	}
	return writers
}

// padTo appends spaces to dst so that what was written from start holds
// n characters: a character(n) value as PostgreSQL shows it
// (planner.Column.Pad). Its binary form is the same bytes.
func padTo(dst []byte, start, n int) []byte {
	for c := utf8.RuneCount(dst[start:]); c < n; c++ {
		dst = append(dst, ' ')
	}
	return dst
}

// padValue is padTo for a value held as a Go string.
func padValue(v any, n int) any {
	s, ok := v.(string)
	if !ok || n <= 0 {
		return v
	}
	return string(padTo([]byte(s), 0, n))
}
