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
	for n, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimSpace(strings.TrimSuffix(string(raw), "\r"))
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
	sections := splitUnescaped(line, ' ', true, 0)
	var kept []string
	for _, s := range sections {
		if s != "" {
			kept = append(kept, s)
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
