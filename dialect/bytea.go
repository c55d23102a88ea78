package dialect

import (
	"encoding/hex"
	"errors"
	"strings"

	"tsdb/internal/sqlerr"
)

// ParseBytea reads PostgreSQL's bytea input: the hex format (\x and pairs
// of hex digits, with whitespace between pairs) or the escape format
// (\\ for a backslash, \ and three octal digits for a byte).
func ParseBytea(s string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(s, `\x`); ok {
		var out []byte
		for i := 0; i < len(rest); {
			c := rest[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			b, err := hex.DecodeString(rest[i:min(i+2, len(rest))])
			switch {
			case err != nil && !errors.Is(err, hex.ErrLength):
				bad := rest[i : i+1]
				if _, err := hex.DecodeString(bad + "0"); err == nil {
					bad = rest[i+1 : i+2]
				}
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %q", bad)
			case err != nil:
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			out = append(out, b[0])
			i += 2
		}
		return out, nil
	}
	return parseByteaEscape(s)
}

// parseByteaEscape reads bytea's escape format.
func parseByteaEscape(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return out, nil
}
