package dialect

import (
	"errors"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// UnicodeEscapes rewrites the escape-string literals of a query (E'…')
// that hold Unicode escapes (\uXXXX, \UXXXXXXXX) as standard literals of
// the text they denote, and refuses the escapes PostgreSQL refuses. The
// engine reads \u as a plain "u", and a statement tsdb passes to it as
// written (E'd\u0061t\U00000061' became "du0061tU00000061" where
// PostgreSQL answers "data"), or one PostgreSQL's grammar refused, kept
// its escape strings as they were. Literals without Unicode escapes mean
// the same to both.
func UnicodeEscapes(query string) (string, error) {
	if !strings.Contains(query, `\`) {
		return query, nil
	}
	res, err := pg_query.Scan(query)
	if err != nil {
		// PostgreSQL's scanner refuses bad escapes; a statement tsdb
		// cannot parse would otherwise go to the engine as it is, which
		// reads \u as "u".
		msg := err.Error()
		var e *sqlerr.Error
		switch {
		case msg == "invalid Unicode escape":
			e = sqlerr.New("22025", "%s", msg)
			e.Hint = `Unicode escapes must be \uXXXX or \UXXXXXXXX.`
		case strings.HasPrefix(msg, "invalid Unicode"):
			e = sqlerr.New(sqlerr.SyntaxError, "%s", msg)
		case strings.HasPrefix(msg, "invalid byte sequence"):
			e = sqlerr.New(sqlerr.CharacterNotInRepertoire, "%s", msg)
		default:
			return query, nil // the parser reports it
		}
		var pe *parser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			e.Position = pe.Cursorpos
		}
		return "", e
	}
	var out strings.Builder
	last := 0
	for _, t := range res.GetTokens() {
		if t.Token != pg_query.Token_SCONST {
			continue
		}
		lit := query[t.Start:t.End]
		if len(lit) < 3 || (lit[0] != 'E' && lit[0] != 'e') || lit[1] != '\'' || !strings.ContainsAny(lit, "uU") {
			continue
		}
		text, changed, err := decodeEscapeString(lit[2:len(lit)-1], int(t.Start)+2)
		if err != nil {
			return "", err
		}
		if !changed {
			continue
		}
		out.WriteString(query[last:t.Start])
		out.WriteString(schema.QuoteString(text))
		last = int(t.End)
	}
	if last == 0 {
		return query, nil
	}
	out.WriteString(query[last:])
	return out.String(), nil
}

// decodeEscapeString decodes the body of an E'…' literal as PostgreSQL's
// scanner does; changed reports whether it held a Unicode escape. at is
// the body's byte offset in the query, for error positions.
func decodeEscapeString(body string, at int) (text string, changed bool, err error) {
	var b strings.Builder
	hexVal := func(s string) (rune, bool) {
		var v rune
		for _, c := range s {
			switch {
			case c >= '0' && c <= '9':
				v = v*16 + c - '0'
			case c >= 'a' && c <= 'f':
				v = v*16 + c - 'a' + 10
			case c >= 'A' && c <= 'F':
				v = v*16 + c - 'A' + 10
			default:
				return 0, false
			}
		}
		return v, true
	}
	isHex := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
	}
	errAt := func(code, msg string, i int) error {
		e := sqlerr.New(code, "%s", msg)
		e.Position = utf8.RuneCountInString(body[:min(i, len(body))]) + at + 1
		return e
	}
	var high rune // a high surrogate waiting for its low half
	highAt := 0
	for i := 0; i < len(body); {
		c := body[i]
		if high != 0 && (c != '\\' || i+1 >= len(body) || (body[i+1] != 'u' && body[i+1] != 'U')) {
			return "", false, errAt(sqlerr.SyntaxError, "invalid Unicode surrogate pair", i)
		}
		switch {
		case c == '\'' && i+1 < len(body) && body[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c != '\\' || i+1 >= len(body):
			b.WriteByte(c)
			i++
		default:
			e := body[i+1]
			switch e {
			case 'b':
				b.WriteByte('\b')
				i += 2
			case 'f':
				b.WriteByte('\f')
				i += 2
			case 'n':
				b.WriteByte('\n')
				i += 2
			case 'r':
				b.WriteByte('\r')
				i += 2
			case 't':
				b.WriteByte('\t')
				i += 2
			case 'x':
				j := i + 2
				for j < len(body) && j < i+4 && isHex(body[j]) {
					j++
				}
				if j == i+2 {
					b.WriteByte('x')
					i += 2
					break
				}
				v, _ := hexVal(body[i+2 : j])
				b.WriteByte(byte(v))
				i = j
			case '0', '1', '2', '3', '4', '5', '6', '7':
				j, v := i+1, 0
				for j < len(body) && j < i+4 && body[j] >= '0' && body[j] <= '7' {
					v = v*8 + int(body[j]-'0')
					j++
				}
				b.WriteByte(byte(v))
				i = j
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+2+n > len(body) {
					return "", false, errAt("22025", "invalid Unicode escape", i)
				}
				v, ok := hexVal(body[i+2 : i+2+n])
				if !ok {
					return "", false, errAt("22025", "invalid Unicode escape", i)
				}
				changed = true
				switch {
				case v >= 0xD800 && v <= 0xDBFF:
					if high != 0 {
						return "", false, errAt(sqlerr.SyntaxError, "invalid Unicode surrogate pair", i)
					}
					high, highAt = v, i
				case v >= 0xDC00 && v <= 0xDFFF:
					if high == 0 {
						return "", false, errAt(sqlerr.SyntaxError, "invalid Unicode surrogate pair", i)
					}
					b.WriteRune(0x10000 + (high-0xD800)<<10 + (v - 0xDC00))
					high = 0
				case v == 0 || v > utf8.MaxRune:
					return "", false, errAt(sqlerr.SyntaxError, "invalid Unicode escape value", i)
				default:
					b.WriteRune(v)
				}
				i += 2 + n
			default:
				b.WriteByte(e)
				i += 2
			}
		}
	}
	if high != 0 {
		return "", false, errAt(sqlerr.SyntaxError, "invalid Unicode surrogate pair", max(highAt, len(body)))
	}
	text = b.String()
	if changed && !utf8.ValidString(text) {
		return "", false, sqlerr.New(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
	}
	return text, changed, nil
}
