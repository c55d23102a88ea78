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
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"tsdb/internal/decfloat"
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

// Tag is one tag of a point.
type Tag struct{ Key, Value string }

// Tag returns the value of the tag key, if the point has it.
func (p *Point) Tag(key string) (string, bool) {
	for _, t := range p.Tags {
		if t.Key == key {
			return t.Value, true
		}
	}
	return "", false
}

// Point is one parsed line.
type Point struct {
	Measurement string
	Tags        []Tag // in the line's order, keys unique
	Fields      []Field
	Micros      int64 // UTC microseconds
	Line        int   // in the body, from 1: for messages
	// keys is shared by the points of one Parse with the same tag keys
	// and field keys and kinds in the same order (nil: not known), so
	// that what the write path finds about one point's keys it knows for
	// the next without comparing them.
	keys *keyShape
}

// keyShape identifies the keys of points (Point.keys). Not empty: pointers
// to distinct zero-size values may be equal.
type keyShape struct{ _ byte }

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
	unit, err := precisionUnit(precision)
	if err != nil {
		return nil, nil, err
	}
	return newParser().parse(data, unit, now)
}

// precisionUnit is the nanoseconds per unit of a precision parameter.
func precisionUnit(precision string) (int64, error) {
	unit, ok := precisions[precision]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrPrecision, precision)
	}
	return unit, nil
}

func newParser() *parser {
	return &parser{names: map[string]string{}}
}

// parse reads a body with the parser, which may have read others before:
// what it interned it knows, and its chunks and its slice of points are
// filled again from their start (the points of an earlier body must be
// out of use).
func (ps *parser) parse(data []byte, unit int64, now time.Time) ([]Point, []*ParseError, error) {
	ps.unit, ps.now, ps.prev = unit, now, Point{}
	ps.tagChunk, ps.fieldChunk = ps.tagChunk[:0], ps.fieldChunk[:0]
	if len(ps.names) >= maxInterned {
		// Full of an earlier body's names (request IDs, say): begin
		// again, rather than keep them and intern nothing new.
		clear(ps.names)
	}
	var out []Point
	var bad []*ParseError
	if plainBody(data) {
		out, bad = ps.body(data)
	} else {
		out, bad = ps.lines(data)
	}
	ps.points = out[:0]
	ps.measurement = nil // not to keep the body alive
	return out, bad, nil
}

// lines reads a body logical line by logical line, each with a decoder
// of its own: what a body with quotes, escapes or carriage returns needs.
func (ps *parser) lines(data []byte) ([]Point, []*ParseError) {
	lines := logicalLines(data)
	out := ps.pointsFor(len(lines))
	var bad []*ParseError
	for _, raw := range lines {
		// Blank lines, comments and what may lead a line are the
		// decoder's to judge, as InfluxDB's is.
		line := bytes.Trim(raw.text, " \r")
		if len(line) == 0 {
			continue
		}
		// Not text: refused here with its line, rather than stored where
		// it would make its table unreadable.
		if !utf8.Valid(line) || bytes.IndexByte(line, 0) >= 0 {
			if err := schema.CheckText(string(line)); err != nil && line[0] != '#' {
				bad = append(bad, &ParseError{Line: raw.line, Text: strings.ToValidUTF8(string(line), "\uFFFD"), Msg: err.Error()})
				continue
			}
		}
		out, bad = ps.entries(raw, out, bad)
	}
	return out, bad
}

// plainBody reports whether every line of data is one entry, read as the
// decoder reads it on its own: no quote or backslash (nothing that can
// continue a line or that InfluxDB escapes otherwise than the decoder),
// no carriage return (trimmed from lines read one by one), and text.
// Such a body, what metrics agents send, is read by one decoder.
func plainBody(data []byte) bool {
	return bytes.IndexByte(data, '"') < 0 && bytes.IndexByte(data, '\\') < 0 &&
		bytes.IndexByte(data, '\r') < 0 && bytes.IndexByte(data, 0) < 0 && utf8.Valid(data)
}

// body reads a plain body (plainBody) with one decoder: the points in it
// and a ParseError for each line that could not be read, the same points,
// lines, texts and columns as Parse's line by line reading gives (at the
// end of a line the words may differ: one decoder finds a newline where a
// decoder of the line alone finds the end of its text).
func (ps *parser) body(data []byte) ([]Point, []*ParseError) {
	out := ps.pointsFor(bytes.Count(data, []byte{'\n'}) + 1)
	var bad []*ParseError
	ps.data = data
	defer func() { ps.data = nil }()
	d := lineprotocol.NewDecoderWithBytes(data)
	at := lineCursor{data: data, line: 1}
	for d.Next() {
		ps.measurementCap = -1
		p, err := ps.entry(d)
		if ps.measurementCap >= 0 {
			// The entry's measurement is a part of data (nothing is
			// unescaped in a plain body): its offset gives its line.
			at.seek(cap(data) - ps.measurementCap)
		}
		if err != nil {
			msg := err.Error()
			var de *lineprotocol.DecodeError
			var ve *valueError
			switch {
			case errors.As(err, &de):
				at.toLine(int(de.Line))
				msg = fmt.Sprintf("%v (column %d)", de.Err, de.Column)
			case errors.As(err, &ve):
				msg = fmt.Sprintf("%v (column %d)", ve.err, ve.column)
			}
			bad = append(bad, &ParseError{Line: at.line, Text: physicalLine(data[at.start:], 0), Msg: msg})
			continue
		}
		p.Line = at.line
		out = append(out, p)
	}
	return out, bad
}

// parser is the state of one Parse: the write's precision and time, and
// the names and tag values already read, so that the same name in every
// line is one string.
type parser struct {
	unit  int64
	now   time.Time
	names map[string]string
	// The points' tags and fields are parts of these chunks: one
	// allocation for thousands of points, not two for each. A full chunk
	// is left to the points that hold parts of it and a new one begun.
	tagChunk   []Tag
	fieldChunk []Field
	// prev is the last point read: agents send the same measurement,
	// keys and mostly the same tag values in line after line, so a name
	// equal to the previous line's at the same place is taken from it
	// without a lookup.
	prev Point
	// data is the plain body being read (body), nil otherwise.
	data []byte
	// points is the slice of points the last body was read into.
	points []Point
	// measurementCap is the capacity of the last measurement's bytes as
	// the decoder returned them, or -1: in a plain body, where they are a
	// part of it, this tells where the entry is.
	measurementCap int
	// measurement is the last measurement's bytes as the decoder
	// returned them: a logical line's entries (entries) tell their lines
	// by them.
	measurement []byte
}

// pointsFor is an empty slice of points with room for n: the one of the
// body read before, when it has the room.
func (ps *parser) pointsFor(n int) []Point {
	// A hint, not a promise: a body of blank lines must not reserve a
	// point per newline, so past maxPointsHint the slice grows as points
	// come.
	n = min(n, maxPointsHint)
	if cap(ps.points) >= n {
		return ps.points[:0]
	}
	return make([]Point, 0, n)
}

// maxPointsHint bounds the points reserved for a body before reading it,
// and the slice of points a parser keeps for the next body.
const maxPointsHint = 64 << 10

// release makes the parser forget the body it read, before it waits in a
// pool for the next: its points and the tags and fields of its last chunk
// (which hold the body's strings) are cleared, and a slice of points
// grown past maxPointsHint is dropped; interned names are kept, up to
// maxInterned of them.
func (ps *parser) release() {
	clear(ps.points[:cap(ps.points)])
	if cap(ps.points) > maxPointsHint {
		ps.points = nil
	}
	clear(ps.tagChunk)
	clear(ps.fieldChunk)
	ps.tagChunk, ps.fieldChunk = ps.tagChunk[:0], ps.fieldChunk[:0]
	ps.prev = Point{}
}

// chunkLen is how many tags or fields the first chunk holds; each next
// one holds twice as many, up to maxChunkLen, so that a parser reading
// body after body soon fills one chunk from its start for each.
const (
	chunkLen    = 8192
	maxChunkLen = 64 << 10
)

// maxInterned bounds the strings a parser keeps: tag values can be
// unique per line (request IDs), and then interning only costs.
const maxInterned = 4096

// intern returns b as a string, the same string for the same bytes.
func (ps *parser) intern(b []byte) string {
	if s, ok := ps.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(ps.names) < maxInterned {
		ps.names[s] = s
	}
	return s
}

// room makes room in *chunk for one more tag or field of the entry whose
// first is at *start: a full chunk is left to the points that hold parts
// of it, and the entry's first tags or fields move to a new one.
func room[T any](chunk *[]T, start *int) {
	if len(*chunk) < cap(*chunk) {
		return
	}
	entry := (*chunk)[*start:]
	n := max(chunkLen, min(2*cap(*chunk), maxChunkLen), 2*len(entry)+1)
	*chunk = append(make([]T, 0, n), entry...)
	*start = 0
}

// part is the entry's tags or fields, from start to the end of the chunk,
// with a capacity that ends with them (an append to one point's part
// cannot reach the next point's).
func part[T any](chunk []T, start int) []T {
	if start == len(chunk) {
		return nil
	}
	return chunk[start:len(chunk):len(chunk)]
}

// entries reads one logical line with InfluxData's own line-protocol
// decoder (github.com/influxdata/line-protocol/v2), so that what is
// accepted and refused, and how escapes read, is InfluxDB's. A logical
// line holds one entry; should the decoder find more (it ends an entry
// where logicalLines did not), each is read, an error naming its own
// line.
func (ps *parser) entries(raw rawLine, out []Point, bad []*ParseError) ([]Point, []*ParseError) {
	d := lineprotocol.NewDecoderWithBytes(raw.text)
	// The entries after the first lie on later lines of the logical
	// line: where its measurement is a part of the text (nothing
	// unescaped in it), it tells which; else the line of the entry
	// before stands.
	at := lineCursor{data: raw.text, line: raw.line}
	for d.Next() {
		ps.measurementCap = -1
		p, err := ps.entry(d)
		if m := ps.measurement; ps.measurementCap >= 0 && len(m) > 0 {
			if off := cap(raw.text) - cap(m); off >= 0 && off < len(raw.text) && &raw.text[off] == &m[0] {
				at.seek(off)
			}
		}
		if err != nil {
			line, msg := raw.line, err.Error()
			var de *lineprotocol.DecodeError
			if errors.As(err, &de) {
				line += int(de.Line) - 1
				msg = fmt.Sprintf("%v (column %d)", de.Err, de.Column)
			}
			at.toLine(line)
			bad = append(bad, &ParseError{Line: line, Text: physicalLine(raw.text, line-raw.line), Msg: msg})
			continue
		}
		p.Line = at.line
		out = append(out, p)
	}
	return out, bad
}

// nextField reads the entry's next field as d.NextField does. In a plain
// body (ps.data set) a float in the form metrics take is read by decfloat,
// bit for bit what the decoder's strconv.ParseFloat gives at a fraction of
// its cost, and returned as fast (isFast, v unset); a value the decoder
// refuses is refused with its words and column.
func (ps *parser) nextField(d *lineprotocol.Decoder) (key []byte, v lineprotocol.Value, fast float64, isFast bool, err error) {
	if ps.data == nil {
		key, v, err = d.NextField()
		return key, v, 0, false, err
	}
	key, kind, raw, err := d.NextFieldBytes()
	if err != nil || key == nil {
		return nil, v, 0, false, err
	}
	if kind == lineprotocol.Float {
		if x, ok := decfloat.ParseBytes(raw); ok {
			return key, v, x, true, nil
		}
	}
	if v, err = lineprotocol.NewValueFromBytes(kind, raw); err != nil {
		// Where the decoder points: the value, after the key and its
		// '=', counted from the entry's first byte, its measurement
		// (nothing is escaped in a plain body, so both are parts of it).
		at := cap(ps.data) - cap(key) + len(key) + 1
		column := at - (cap(ps.data) - ps.measurementCap) + 1
		return nil, v, 0, false, &valueError{column: column, err: fmt.Errorf("cannot parse value for field key %q: %w", key, err)}
	}
	return key, v, 0, false, nil
}

// valueError is a field value of a plain body the decoder refuses, with
// the column it names (the line is the entry's).
type valueError struct {
	column int
	err    error
}

func (e *valueError) Error() string { return e.err.Error() }

// Unwrap gives the decoder's error, as a DecodeError would.
func (e *valueError) Unwrap() error { return e.err }

// entry reads the entry d is at.
func (ps *parser) entry(d *lineprotocol.Decoder) (p Point, err error) {
	unit, now := ps.unit, ps.now
	m, err := d.Measurement()
	if err != nil {
		return Point{}, err
	}
	ps.measurementCap, ps.measurement = cap(m), m
	prev := &ps.prev
	p.Measurement = prev.Measurement
	if string(m) != p.Measurement {
		p.Measurement = ps.intern(m)
	}
	same := prev.keys != nil // keys as prev's, so far
	// The tags and fields are read into the chunks; a line that turns
	// out bad gives back what it took.
	ts, fs := len(ps.tagChunk), len(ps.fieldChunk)
	defer func() {
		if err != nil {
			ps.tagChunk, ps.fieldChunk = ps.tagChunk[:ts], ps.fieldChunk[:fs]
		} else {
			ps.prev = p
		}
	}()
	for j := 0; ; j++ {
		k, v, err := d.NextTag()
		if err != nil {
			return p, err
		}
		if k == nil {
			break
		}
		var t Tag
		if j < len(prev.Tags) && string(k) == prev.Tags[j].Key {
			t = prev.Tags[j]
			if string(v) != t.Value {
				t.Value = ps.intern(v)
			}
		} else {
			t = Tag{Key: ps.intern(k), Value: ps.intern(v)}
			same = false
		}
		// Keys all as the previous point's so far cannot repeat: its
		// were checked.
		if !same {
			for _, o := range ps.tagChunk[ts:] {
				if o.Key == t.Key {
					return p, fmt.Errorf("duplicate tag %q", k)
				}
			}
		}
		room(&ps.tagChunk, &ts)
		ps.tagChunk = append(ps.tagChunk, t)
	}
	for j := 0; ; j++ {
		k, v, fast, isFast, err := ps.nextField(d)
		if err != nil {
			return p, err
		}
		if k == nil {
			break
		}
		var f Field
		if j < len(prev.Fields) && string(k) == prev.Fields[j].Key {
			f.Key = prev.Fields[j].Key
		} else {
			f.Key = ps.intern(k)
			same = false
		}
		switch {
		case isFast:
			f.Kind, f.F = 'f', fast
		case v.Kind() == lineprotocol.Float:
			f.Kind, f.F = 'f', v.FloatV()
		case v.Kind() == lineprotocol.Int:
			f.Kind, f.I = 'i', v.IntV()
		case v.Kind() == lineprotocol.Uint:
			// Stored as bigint: past its range it would not read back.
			if v.UintV() > math.MaxInt64 {
				return p, fmt.Errorf("field %q: unsigned integer %du is above 2^63-1, the largest bigint", k, v.UintV())
			}
			f.Kind, f.I = 'i', int64(v.UintV())
		case v.Kind() == lineprotocol.Bool:
			f.Kind, f.B = 'b', v.BoolV()
		case v.Kind() == lineprotocol.String:
			f.Kind, f.S = 's', v.StringV()
		}
		if same && f.Kind != prev.Fields[j].Kind {
			same = false
		}
		room(&ps.fieldChunk, &fs)
		ps.fieldChunk = append(ps.fieldChunk, f)
	}
	p.Tags, p.Fields = part(ps.tagChunk, ts), part(ps.fieldChunk, fs)
	if same && len(p.Tags) == len(prev.Tags) && len(p.Fields) == len(prev.Fields) {
		p.keys = prev.keys
	} else {
		p.keys = new(keyShape)
	}
	tb, err := d.TimeBytes()
	if err != nil {
		return p, err
	}
	if tb == nil {
		// As InfluxDB: the server's time, at the write's precision.
		ns := now.UnixNano()
		p.Micros = (ns - ns%unit) / 1000
		return p, nil
	}
	n, err := strconv.ParseInt(string(tb), 10, 64)
	if err != nil {
		return p, fmt.Errorf("invalid timestamp %q", tb)
	}
	ns := n * unit
	if unit > 1 && ns/unit != n {
		return p, fmt.Errorf("timestamp %q out of range", tb)
	}
	// Microseconds, PostgreSQL's resolution: the digits below are cut
	// (toward the past, also before 1970).
	p.Micros = ns / 1000
	if ns%1000 != 0 && ns < 0 {
		p.Micros--
	}
	return p, nil
}
