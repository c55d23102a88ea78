// Package lineproto accepts InfluxDB line-protocol writes over HTTP
// (Telegraf and other agents): it parses the lines, maps each measurement
// to a table (created on first write) and writes the rows through the same
// durable path as INSERT.
package lineproto

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"tsdb/internal/schema"
)

// Field is one field value; Kind is 'f' float, 'i' integer, 'u' unsigned,
// 'b' boolean, 's' string.
type Field struct {
	Key  string
	Kind byte
	F    float64
	I    int64
	B    bool
	S    string
}

// Point is one parsed line.
type Point struct {
	Measurement string
	Tags        map[string]string
	Fields      []Field
	Micros      int64 // UTC microseconds
	Line        int   // in the body, from 1: for messages
}

// ParseError names a line that could not be read.
type ParseError struct {
	Line int
	Text string // the line, as InfluxDB quotes it in its answer
	Msg  string
}

// Error reads as InfluxDB's parse errors do, with the line number.
func (e *ParseError) Error() string {
	return fmt.Sprintf("unable to parse '%s': %s (line %d)", e.Text, e.Msg, e.Line)
}

// precisions maps the precision parameter to nanoseconds per unit: the
// short names of /write and /api/v2/write, and InfluxDB 3's long ones.
var precisions = map[string]int64{"": 1, "ns": 1, "n": 1, "us": 1000, "u": 1000, "ms": 1_000_000, "s": 1_000_000_000,
	"m": 60_000_000_000, "h": 3_600_000_000_000,
	"auto": 1, "nanosecond": 1, "microsecond": 1000, "millisecond": 1_000_000, "second": 1_000_000_000}

// ErrPrecision is returned by Parse for a precision it does not know.
var ErrPrecision = errors.New("unknown precision (ns, us, ms, s, m or h)")

// Parse reads a body of lines: the points of the lines it could read and,
// for each line it could not, a ParseError (InfluxDB writes the good lines
// of a request and reports the others). Lines without a timestamp get now.
func Parse(data []byte, precision string, now time.Time) ([]Point, []*ParseError, error) {
	unit, ok := precisions[precision]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrPrecision, precision)
	}
	var out []Point
	var bad []*ParseError
	for _, raw := range logicalLines(data) {
		n := raw.line - 1
		line := strings.TrimSpace(strings.TrimSuffix(raw.text, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Not text: refused here with its line, rather than stored where
		// it would make its table unreadable.
		if err := schema.CheckText(line); err != nil {
			bad = append(bad, &ParseError{Line: n + 1, Text: strings.ToValidUTF8(line, "\uFFFD"), Msg: err.Error()})
			continue
		}
		p, err := parseLine(line, unit, now)
		if err != nil {
			bad = append(bad, &ParseError{Line: n + 1, Text: line, Msg: err.Error()})
			continue
		}
		p.Line = n + 1
		out = append(out, p)
	}
	return out, bad, nil
}

// rawLine is one line of a body and the number of its first line.
type rawLine struct {
	text string
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
	emit := func(end int) {
		out = append(out, rawLine{text: string(data[start:end]), line: startLine})
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch c {
			case '\\':
				if i+1 < len(data) && data[i+1] == '\n' {
					physical++
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

// splitUnescaped splits s at sep outside backslash escapes and (when
// quotes is set) outside double-quoted strings.
func splitUnescaped(s string, sep byte, quotes bool, max int) []string {
	var parts []string
	start, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case quotes && s[i] == '"':
			inQuote = !inQuote
		case s[i] == sep && !inQuote && (max <= 0 || len(parts) < max-1):
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.ContainsRune(`,= "\`, rune(s[i+1])) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func parseLine(line string, unit int64, now time.Time) (Point, error) {
	// Quotes delimit string field values only: in the measurement and
	// tags they are plain characters.
	first := splitUnescaped(line, ' ', false, 2)
	kept := []string{first[0]}
	if len(first) == 2 {
		for _, s := range splitUnescaped(first[1], ' ', true, 0) {
			if s != "" {
				kept = append(kept, s)
			}
		}
	}
	if len(kept) < 2 || len(kept) > 3 {
		return Point{}, fmt.Errorf("want measurement[,tags] fields [timestamp]")
	}
	head := splitUnescaped(kept[0], ',', false, 0)
	p := Point{Measurement: unescape(head[0]), Tags: map[string]string{}}
	if p.Measurement == "" {
		return p, fmt.Errorf("missing measurement")
	}
	for _, t := range head[1:] {
		kv := splitUnescaped(t, '=', false, 2)
		if len(kv) != 2 || kv[0] == "" {
			return p, fmt.Errorf("invalid tag %q", t)
		}
		p.Tags[unescape(kv[0])] = unescape(kv[1])
	}
	for _, f := range splitUnescaped(kept[1], ',', true, 0) {
		kv := splitUnescaped(f, '=', true, 2)
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return p, fmt.Errorf("invalid field %q", f)
		}
		fl, err := parseValue(unescape(kv[0]), kv[1])
		if err != nil {
			return p, err
		}
		p.Fields = append(p.Fields, fl)
	}
	p.Micros = now.UnixMicro()
	if len(kept) == 3 {
		ts, err := strconv.ParseInt(kept[2], 10, 64)
		if err != nil {
			return p, fmt.Errorf("invalid timestamp %q", kept[2])
		}
		ns := ts * unit
		if unit > 1 && ns/unit != ts {
			return p, fmt.Errorf("timestamp %q out of range", kept[2])
		}
		p.Micros = ns / 1000
		if ns%1000 != 0 && ns < 0 {
			p.Micros-- // floor, also before 1970
		}
	}
	return p, nil
}

func parseValue(key, v string) (Field, error) {
	f := Field{Key: key}
	switch {
	case strings.HasPrefix(v, `"`):
		if len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return f, fmt.Errorf("field %q: unterminated string", key)
		}
		f.Kind, f.S = 's', strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v[1:len(v)-1])
	case strings.HasSuffix(v, "i"):
		n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
		if err != nil {
			return f, fmt.Errorf("field %q: invalid integer %q", key, v)
		}
		f.Kind, f.I = 'i', n
	case strings.HasSuffix(v, "u"):
		n, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
		if err != nil || n > math.MaxInt64 {
			return f, fmt.Errorf("field %q: invalid unsigned integer %q (at most 2^63-1)", key, v)
		}
		f.Kind, f.I = 'i', int64(n)
	case v == "t" || v == "T" || v == "true" || v == "True" || v == "TRUE":
		f.Kind, f.B = 'b', true
	case v == "f" || v == "F" || v == "false" || v == "False" || v == "FALSE":
		f.Kind, f.B = 'b', false
	default:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return f, fmt.Errorf("field %q: invalid number %q", key, v)
		}
		f.Kind, f.F = 'f', x
	}
	return f, nil
}
