package dialect

import (
	"errors"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// PostgreSQL's Unicode-escape literals (U&'d\0061t', U&"d\0061t", each
// with an optional UESCAPE '!') and its nonstandard strings (a plain
// '…' read with backslash escapes while standard_conforming_strings is
// off). The engine reads U&'x' as a column U combined with & and a plain
// string as written: both are rewritten here into literals that mean the
// same to PostgreSQL's grammar and to the engine.

// unicodeLiterals rewrites each U&'…' string as the standard literal of
// the text it denotes and each U&"…" name as a quoted name, and refuses
// the escapes PostgreSQL refuses, with its message and position.
func unicodeLiterals(query string) (string, error) {
	if !strings.Contains(query, "&'") && !strings.Contains(query, `&"`) {
		return query, nil
	}
	res, err := pg_query.Scan(query)
	if err != nil {
		return query, nil // the parser reports it
	}
	tokens := res.GetTokens()
	var out strings.Builder
	last := 0
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		if t.Token != pg_query.Token_USCONST && t.Token != pg_query.Token_UIDENT {
			continue
		}
		end := t.End
		if i+2 < len(tokens) && tokens[i+1].Token == pg_query.Token_UESCAPE && tokens[i+2].Token == pg_query.Token_SCONST {
			end = tokens[i+2].End
			i += 2
		}
		span := query[t.Start:end]
		prefix := "SELECT "
		if t.Token == pg_query.Token_UIDENT {
			prefix = "SELECT 1 AS "
		}
		tree, perr := pg_query.Parse(prefix + span)
		if perr != nil {
			e := sqlerr.New(sqlerr.SyntaxError, "%s", perr.Error())
			var pe *parser.Error
			if errors.As(perr, &pe) {
				e = sqlerr.New(sqlerr.SyntaxError, "%s", pe.Message)
				if pe.Cursorpos > len(prefix) {
					e.Position = int(t.Start) + pe.Cursorpos - len(prefix)
				}
			}
			if e.Message == "invalid Unicode escape" {
				e.Hint = `Unicode escapes must be \XXXX or \+XXXXXX.`
			}
			return "", e
		}
		rt := tree.GetStmts()[0].GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget()
		out.WriteString(query[last:t.Start])
		if t.Token == pg_query.Token_UIDENT {
			out.WriteString(`"` + strings.ReplaceAll(rt.GetName(), `"`, `""`) + `"`)
		} else {
			out.WriteString(schema.QuoteString(rt.GetVal().GetAConst().GetSval().GetSval()))
		}
		last = int(end)
	}
	if last == 0 {
		return query, nil
	}
	out.WriteString(query[last:])
	return out.String(), nil
}

// NonstandardStrings rewrites a query written while
// standard_conforming_strings is off: there a plain '…' literal reads
// backslash escapes as E'…' does, so each such literal holding a
// backslash becomes the E'…' literal it is. A U&'…' literal is refused,
// as PostgreSQL refuses it then. Comments, quoted names and dollar-quoted
// strings are skipped whole.
func NonstandardStrings(query string) (string, error) {
	if !strings.Contains(query, `\`) && !strings.Contains(query, "&'") {
		return query, nil
	}
	var out strings.Builder
	last := 0
	identChar := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			if j := strings.IndexByte(query[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(query)
			}
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			depth := 0
			for i < len(query) {
				if strings.HasPrefix(query[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(query[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		case c == '"':
			j := i + 1
			for j < len(query) {
				if query[j] == '"' {
					if j+1 < len(query) && query[j+1] == '"' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
		case c == '$' && (i == 0 || !identChar(query[i-1])):
			// $tag$…$tag$ (tag possibly empty), or a parameter $1.
			j := i + 1
			for j < len(query) && identChar(query[j]) && query[j] != '$' {
				j++
			}
			if j < len(query) && query[j] == '$' && (j == i+1 || query[i+1] < '0' || query[i+1] > '9') {
				tag := query[i : j+1]
				if k := strings.Index(query[j+1:], tag); k >= 0 {
					i = j + 1 + k + len(tag)
				} else {
					i = len(query)
				}
			} else {
				i = j
			}
		case c == '\'':
			w := i
			for w > 0 && identChar(query[w-1]) {
				w--
			}
			word := query[w:i]
			if word == "" && i >= 2 && query[i-1] == '&' && (query[i-2] == 'u' || query[i-2] == 'U') && (i == 2 || !identChar(query[i-3])) {
				e := sqlerr.New(sqlerr.FeatureNotSupported, "unsafe use of string constant with Unicode escapes")
				e.Detail = "String constants with Unicode escapes cannot be used when standard_conforming_strings is off."
				e.Position = len([]rune(query[:i-2])) + 1
				return "", e
			}
			escapes := word != "E" && word != "e"
			bits := strings.EqualFold(word, "b") || strings.EqualFold(word, "x")
			// The literal's end: '' is a quote, and (unless a bit
			// string) a backslash escapes the next byte.
			j, backslash := i+1, false
			for j < len(query) {
				if query[j] == '\\' && !bits {
					backslash = true
					j += 2
					continue
				}
				if query[j] == '\'' {
					if j+1 < len(query) && query[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if escapes && !bits && backslash {
				switch {
				case strings.EqualFold(word, "n"): // N'…' is text, as E'…' is
					out.WriteString(query[last:w])
				case word != "": // a type name: date'…'
					out.WriteString(query[last:i] + " ")
				default:
					out.WriteString(query[last:i])
				}
				out.WriteString("E")
				last = i
			}
			i = j + 1
		default:
			i++
		}
	}
	if last == 0 {
		return query, nil
	}
	out.WriteString(query[last:])
	return out.String(), nil
}

// Unistr is PostgreSQL's unistr(text): \XXXX, \+XXXXXX, \uXXXX and
// \UXXXXXXXX are characters (UTF-16 surrogate pairs combined), \\ is a
// backslash, anything else is itself.
func Unistr(s string) (string, error) {
	var b strings.Builder
	var pairFirst rune
	invalidPair := func() error { return sqlerr.New(sqlerr.SyntaxError, "invalid Unicode surrogate pair") }
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			if pairFirst != 0 {
				return "", invalidPair()
			}
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			if pairFirst != 0 {
				return "", invalidPair()
			}
			b.WriteByte('\\')
			i += 2
			continue
		}
		var digits string
		var skip int
		switch {
		case i+5 <= len(s) && isHex(s[i+1:i+5]):
			digits, skip = s[i+1:i+5], 5
		case i+6 <= len(s) && s[i+1] == 'u' && isHex(s[i+2:i+6]):
			digits, skip = s[i+2:i+6], 6
		case i+8 <= len(s) && s[i+1] == '+' && isHex(s[i+2:i+8]):
			digits, skip = s[i+2:i+8], 8
		case i+10 <= len(s) && s[i+1] == 'U' && isHex(s[i+2:i+10]):
			digits, skip = s[i+2:i+10], 10
		default:
			e := sqlerr.New(sqlerr.SyntaxError, "invalid Unicode escape")
			e.Hint = `Unicode escapes must be \XXXX, \+XXXXXX, \uXXXX, or \UXXXXXXXX.`
			return "", e
		}
		v, _ := strconv.ParseUint(digits, 16, 32)
		if v == 0 || v > 0x10FFFF {
			return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid Unicode code point: %04X", v)
		}
		r := rune(v)
		switch {
		case pairFirst != 0:
			if r < 0xDC00 || r > 0xDFFF {
				return "", invalidPair()
			}
			b.WriteRune(0x10000 + (pairFirst-0xD800)<<10 + (r - 0xDC00))
			pairFirst = 0
		case r >= 0xDC00 && r <= 0xDFFF:
			return "", invalidPair()
		case r >= 0xD800 && r <= 0xDBFF:
			pairFirst = r
		default:
			b.WriteRune(r)
		}
		i += skip
	}
	if pairFirst != 0 {
		return "", invalidPair()
	}
	return b.String(), nil
}

// isHex reports whether s is all hexadecimal digits.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
