package dialect

import (
	"errors"
	"strconv"
	"strings"

	"tsdb/internal/sqlerr"
)

// NonZeroMantissa reports whether decimal text has a nonzero digit
// before its exponent: a value that parsed as 0 then underflowed.
func NonZeroMantissa(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// FloatInputError is PostgreSQL's error for float text out of the
// type's range, overflowing or underflowing ('10e400', '10e-400'), or
// nil.
func FloatInputError(s string, bits int) error {
	t := strings.TrimSpace(s)
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "nan", "inf", "infinity":
		return nil
	}
	f, err := strconv.ParseFloat(t, bits)
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) || err == nil && f == 0 && NonZeroMantissa(t) {
		typ := "double precision"
		if bits == 32 {
			typ = "real"
		}
		return sqlerr.New(sqlerr.NumericOutOfRange, "%q is out of range for type %s", s, typ)
	}
	return nil
}
