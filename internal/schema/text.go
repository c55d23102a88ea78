package schema

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TextError is a value PostgreSQL would not take as text in a UTF-8
// database: bytes that are not UTF-8, or a NUL byte. Such a value must be
// refused on the way in: DuckDB refuses to read it back, so one stored
// value would make its table unreadable.
type TextError struct {
	Bytes []byte // the offending sequence
}

func (e *TextError) Error() string {
	hex := make([]string, len(e.Bytes))
	for i, b := range e.Bytes {
		hex[i] = fmt.Sprintf("0x%02x", b)
	}
	return `invalid byte sequence for encoding "UTF8": ` + strings.Join(hex, " ")
}

// CheckText returns a *TextError if str is not valid text.
func CheckText(str string) error {
	if utf8.ValidString(str) && strings.IndexByte(str, 0) < 0 {
		return nil
	}
	for i := 0; i < len(str); {
		r, size := utf8.DecodeRuneInString(str[i:])
		switch {
		case r == 0:
			return &TextError{Bytes: []byte{0}}
		case r == utf8.RuneError && size == 1:
			return &TextError{Bytes: []byte(str[i:min(i+2, len(str))])}
		}
		i += size
	}
	return nil
}
