package lineproto

// Where the lines of a body are: logical lines (a string field value may
// hold newlines), the physical line an entry or error lies on, and a
// cursor that follows a decoder through a body once.

import "bytes"

// lineCursor follows the decoder through a body: the number of a line
// and where it starts. It only moves forward, so that naming the lines of
// a body reads it once, however many of them are bad.
type lineCursor struct {
	data  []byte
	line  int // from 1
	start int // offset of the line's first byte
}

// seek moves to the line holding offset off (never before the current).
func (c *lineCursor) seek(off int) {
	if off < c.start || off > len(c.data) {
		return
	}
	if n := bytes.Count(c.data[c.start:off], []byte{'\n'}); n > 0 {
		c.line += n
		c.start = bytes.LastIndexByte(c.data[:off], '\n') + 1
	}
}

// toLine moves to line n (never before the current).
func (c *lineCursor) toLine(n int) {
	for c.line < n {
		i := bytes.IndexByte(c.data[c.start:], '\n')
		if i < 0 {
			return
		}
		c.start += i + 1
		c.line++
	}
}

// rawLine is one line of a body and the number of its first line.
type rawLine struct {
	text []byte // a part of the body, or a copy where it had to change
	line int
}

// logicalLines cuts a body into lines. A newline inside a string field
// value belongs to the value, as InfluxDB reads it: Telegraf writes the
// messages of syslog, tail, docker_log and exec unescaped. A string still
// open at the end of the body is taken as ended at its line's end, so
// that the lines after a stray quote are still read.
func logicalLines(data []byte) []rawLine {
	var out []rawLine
	physical := 1 // number of the line at i
	start, startLine := 0, 1
	section := 0      // 0 measurement and tags, 1 fields, 2 timestamp
	seen := false     // a non-space byte in section 0
	inString := false // inside a string field value
	openedAt := -1    // where the open string's line ends, for a fallback
	// literal holds, for the line being read, the backslashes in string
	// values that InfluxDB keeps as written (before n, r and t: only \"
	// and \\ are escapes there) but the decoder would read as escapes;
	// they are doubled in the text it gets.
	var literal []int
	emit := func(end int) {
		text := data[start:end:end]
		if len(literal) > 0 {
			var b bytes.Buffer
			prev := start
			for _, at := range literal {
				if at >= end {
					break // past an unterminated string's line
				}
				b.Write(data[prev:at])
				b.WriteByte('\\')
				prev = at
			}
			b.Write(data[prev:end])
			text = b.Bytes()
			literal = literal[:0]
		}
		out = append(out, rawLine{text: text, line: startLine})
	}
	for i := 0; i < len(data); i++ {
		if i == start && !inString {
			// Most lines hold no quote and no backslash: nothing in them
			// can continue past their newline.
			end := bytes.IndexByte(data[i:], '\n')
			if end < 0 {
				end = len(data)
			} else {
				end += i
			}
			if bytes.IndexByte(data[i:end], '"') < 0 && bytes.IndexByte(data[i:end], '\\') < 0 {
				if end == len(data) {
					break // the last line, emitted below
				}
				emit(end)
				physical++
				start, startLine = end+1, physical
				i = end
				continue
			}
		}
		c := data[i]
		switch {
		case inString:
			switch c {
			case '\\':
				if i+1 < len(data) {
					switch data[i+1] {
					case '\n':
						physical++
						literal = append(literal, i)
					case 'n', 'r', 't', '\r':
						literal = append(literal, i)
					}
				}
				i++
			case '"':
				inString = false
			case '\n':
				physical++
			}
			continue
		case c == '\n':
			emit(i)
			physical++
			start, startLine = i+1, physical
			section, seen = 0, false
			continue
		case c == '\\':
			i++
			seen = true
			continue
		case c == ' ':
			if section == 0 && !seen {
				continue
			}
			if section < 2 {
				section++
			}
			continue
		case c == '"' && section == 1 && i > 0 && data[i-1] == '=':
			inString = true
			openedAt = i
		}
		seen = true
	}
	if inString {
		// Unterminated: read the rest as if the string ended at its
		// line's end (that line then fails to parse on its own).
		end := openedAt
		for end < len(data) && data[end] != '\n' {
			end++
		}
		emit(end)
		if end < len(data) {
			rest := logicalLines(data[end+1:])
			line := startLine + bytes.Count(data[start:end+1], []byte("\n"))
			for _, r := range rest {
				r.line += line - 1
				out = append(out, r)
			}
		}
		return out
	}
	if start < len(data) {
		emit(len(data))
	}
	return out
}

// physicalLine is line n (from 0) of text, without its line end.
func physicalLine(text []byte, n int) string {
	for ; n > 0; n-- {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		text = text[i+1:]
	}
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return string(bytes.TrimSuffix(text, []byte{'\r'}))
}
