package pgtext

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"tsdb/dialect"
)

// JSONText is a JSON value as the engine wrote it (a result column of
// type JSON read from the engine's memory); Append writes it with
// AppendJSON.
type JSONText []byte

// The engine's JSON text is kept as written — keys in their order,
// duplicate keys, the spaces of a json constant, integers of any size —
// as PostgreSQL's json keeps its text; its driver decoded it into Go
// values instead, which sorted keys and passed every number through a
// double (9007199254740993 came back as 9007199254740992). A number with
// a fraction or an exponent is written otherwise: it is a double the
// engine wrote (to_json of a float8, a float8 column in row_to_json) in
// its own form, 2.0, 100000000000000000000.0 and 1.5e-7, where PostgreSQL
// writes float8out's 2, 1e+20 and 1.5e-07, and is written as PostgreSQL
// writes the double. (A json constant's 2.0 becomes 2 as well, where
// PostgreSQL keeps the text; the driver's decoding did the same.)
//
// The engine writes the doubles JSON has no literal for bare (NaN,
// Infinity, -Infinity), where PostgreSQL's to_json writes strings
// ("NaN"); but its json input takes them bare too ('[NaN]'::json), where
// PostgreSQL's refuses them. The text cannot tell the two apart, so such a
// value fails (ErrJSONNonFinite) rather than be answered as one of them.

// AppendJSON appends the engine's JSON text raw to dst as PostgreSQL
// writes it (see JSONText), with float8's digits as extraDigits
// (extra_float_digits) asks. It fails (22P02, as PostgreSQL's json input
// does) when raw is no JSON: the engine's input takes what JSON does not,
// such as a trailing comma ('[1,2,]'::json) or NaN.
func AppendJSON(dst, raw []byte, extraDigits int) ([]byte, error) {
	start := len(dst)
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			dst = append(dst, c)
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == 'N' || c == 'I' || c == '-' && i+1 < len(raw) && raw[i+1] == 'I':
			return dst, ErrJSONNonFinite
		case c == '-' || c >= '0' && c <= '9':
			end, fraction := i, false
			for end < len(raw) && isNumberByte(raw[end]) {
				fraction = fraction || raw[end] == '.' || raw[end] == 'e' || raw[end] == 'E'
				end++
			}
			num := raw[i:end]
			if !jsonNumber(num) {
				return dst, ErrJSONSyntax // Go's float syntax takes more
			}
			f, err := strconv.ParseFloat(string(num), 64)
			switch {
			case !fraction || isRangeError(err):
				// An integer as written; a number past a double's
				// range can only be a json constant's, kept as
				// PostgreSQL keeps it (json.Valid judges both).
				dst = append(dst, num...)
			case err != nil:
				return dst, ErrJSONSyntax
			default:
				dst = dialect.AppendFloat(dst, f, 64, extraDigits)
			}
			i = end - 1
			continue
		}
		dst = append(dst, c)
	}
	if !json.Valid(dst[start:]) {
		return dst, ErrJSONSyntax
	}
	return dst, nil
}

// ErrJSONSyntax is a JSON value PostgreSQL's json input refuses;
// ErrJSONNonFinite one that holds a bare NaN or Infinity (see JSONText).
var (
	ErrJSONSyntax    = errors.New("invalid input syntax for type json")
	ErrJSONNonFinite = fmt.Errorf("%w: NaN or Infinity", ErrJSONSyntax)
)

// jsonNumber reports whether b is a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// isRangeError reports a number past a double's range.
func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
