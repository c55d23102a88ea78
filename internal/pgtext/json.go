package pgtext

import "bytes"

// JSONText is a JSON value the engine wrote as text (a result column of
// type JSON read from its memory): it goes to the client as it is, with
// its keys in their order and its spaces, as PostgreSQL's json keeps
// them; only the numbers JSON has no literal for are written as
// PostgreSQL writes them (AppendJSONText).
type JSONText []byte

// nonFinite are the engine's literals of the doubles JSON cannot write,
// and PostgreSQL's JSON of them: a string.
var nonFinite = [...]struct{ engine, pg string }{
	{"-Infinity", `"-Infinity"`}, {"Infinity", `"Infinity"`}, {"NaN", `"NaN"`},
}

// AppendJSONText appends the engine's JSON text raw to dst, with the
// bare NaN, Infinity and -Infinity it writes for such doubles (not JSON)
// written as the strings PostgreSQL's to_json makes of them. Only text
// outside strings is looked at: inside one, "NaN" is a string's text.
func AppendJSONText(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, 'N') < 0 && bytes.IndexByte(raw, 'I') < 0 {
		return append(dst, raw...)
	}
	inString, escaped := false, false
	start := 0
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
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != 'N' && c != 'I' && c != '-' {
			continue
		}
		for _, nf := range nonFinite {
			if bytes.HasPrefix(raw[i:], []byte(nf.engine)) {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, nf.pg...)
				i += len(nf.engine) - 1
				start = i + 1
				break
			}
		}
	}
	return append(dst, raw[start:]...)
}
