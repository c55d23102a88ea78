package planner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

// copyBatchRows is how many rows one Arrow record of a COPY holds.
const copyBatchRows = 64 << 10

// chunkDecoder decodes one chunk into Arrow records. The dispatcher cuts
// chunks at row ends (copyFeed.rowsEnd) and strips the binary header, so a
// decoder never sees a partial row: running out of data inside a row is an
// error. Chunks are decoded concurrently, each by its own decoder.
type chunkDecoder struct {
	c          *CopyIn
	cols       *copyColumns // the record being built
	recs       []arrow.RecordBatch
	rows       int64
	line       int  // input lines (rows) seen, for messages
	ended      bool // \. or the binary trailer was seen
	checkText  bool // the chunk is not all UTF-8 text: check text fields one by one
	fields     []copyField
	scratch    []byte
	pos        []int
	bucket     int64  // time bucket of the rows in cols
	err        error  // the chunk's first bad row
	bucketCuts int    // records cut because the bucket changed
	skipped    []byte // the chunk, when a decoder skipped it after a failure
	chunkRows  int    // rows in the chunk, for sizing columns
	chunkBytes int    // bytes of the chunk, which bound its text
	// alloc allocates the columns' buffers: the COPY's slabs once it is
	// large (copySlabAfter), the Go allocator before.
	alloc memory.Allocator
	// finished is set by the decoder goroutine when it is done with the
	// chunk (decoded, failed or skipped); the fields above are then the
	// connection goroutine's.
	finished atomic.Bool
}

// copyField is one field of a row: its bytes, or NULL.
type copyField struct {
	b       []byte
	null    bool
	escaped bool // b was unescaped, and may hold any byte
}

// cut turns the rows in cols into a record.
func (d *chunkDecoder) cut() {
	if d.cols == nil || d.cols.len() == 0 {
		return
	}
	if stats := d.c.feed.textBytes; stats != nil {
		n := int64(d.cols.len())
		for i := range stats {
			if b := d.cols.textBytes(i); b > 0 {
				stats[i].Store(int64(b) * 16 / n)
			}
		}
	}
	d.recs = append(d.recs, d.cols.record())
}

// reserve sizes empty columns for the rows left in the chunk (at most a
// record's worth), and text columns by the bytes per row of the COPY's
// last record. Columns otherwise grow by doubling: every step copies what
// is there, and the record keeps the slack.
func (d *chunkDecoder) reserve() {
	rows := min(max(d.chunkRows-int(d.rows), 64), copyBatchRows)
	stats := d.c.feed.textBytes
	d.cols.reserve(rows, func(ci int) int {
		if ci < len(stats) {
			return int(stats[ci].Load())
		}
		return 0
	}, d.chunkBytes)
}

// done cuts the last record of the chunk and drops the row scratch: its
// field slices point into the chunk, and a finished decoder waits for
// Finish with its records, so keeping them would keep every chunk's input
// alive until the COPY ends.
func (d *chunkDecoder) done() {
	d.cut()
	d.fields, d.scratch = nil, nil
}

// copyMinCutRows is the fewest rows records cut at bucket changes must
// hold on average: time-ordered input gives one record per bucket, which
// the store keeps without splitting, while unordered input does not
// shatter into tiny records.
const copyMinCutRows = 512

// sorted reports whether the input looks time-ordered so far: records cut
// at bucket changes are not tiny.
func (d *chunkDecoder) sorted() bool {
	return d.bucketCuts < 4 || d.rows >= int64(d.bucketCuts)*copyMinCutRows
}

// columns returns the columns for a row whose time is in bucket (ok
// false: no time known), with room for it, cutting a record first when it
// is full, when a text column passed copyRecordTextBytes, or when sorted
// input moves on to the next bucket.
func (d *chunkDecoder) columns(bucket int64, ok bool) *copyColumns {
	c := d.c
	if d.cols == nil {
		if d.alloc == nil {
			d.alloc = memory.DefaultAllocator
		}
		d.cols = newCopyColumns(d.alloc, &c.tbl, c.Format != CopyBinary)
		d.pos = positions(len(c.tbl.Columns), c.targets)
	}
	n := d.cols.len()
	if n >= copyBatchRows || d.cols.full || (ok && n > 0 && bucket != d.bucket && d.sorted()) {
		if n < copyBatchRows {
			d.bucketCuts++
		}
		d.cut()
		n = 0
	}
	if n == 0 {
		d.reserve()
	}
	if ok {
		d.bucket = bucket
	}
	d.cols.newRow()
	return d.cols
}

// bucketOf is the start of the MemBuffer bucket of a time in micros, as
// the store computes it.
func (d *chunkDecoder) bucketOf(us int64) int64 {
	return membuffer.BucketKey(us, d.c.s.p.store.BucketDuration()).Start
}

// consume decodes a chunk.
func (d *chunkDecoder) consume(data []byte) error {
	d.chunkBytes = len(data)
	switch d.c.Format {
	case CopyBinary:
		return d.consumeBinary(data)
	case CopyCSV:
		d.checkText = schema.CheckText(unsafe.String(unsafe.SliceData(data), len(data))) != nil
		return d.consumeLines(data, d.splitCSV)
	default:
		d.checkText = schema.CheckText(unsafe.String(unsafe.SliceData(data), len(data))) != nil
		return d.consumeLines(data, d.splitText)
	}
}

// consumeLines cuts text or CSV rows with split, which returns the end of
// the row starting at data[0] (after its newline).
func (d *chunkDecoder) consumeLines(data []byte, split func(data []byte) (int, error)) error {
	for used := 0; used < len(data) && !d.ended; {
		n, err := split(data[used:])
		if err != nil {
			return err
		}
		used += n
		d.line++
		if d.ended || (d.line == 1 && d.c.opts.header) {
			continue
		}
		if err := d.appendFields(); err != nil {
			return err
		}
	}
	return nil
}

// lineEnd finds the end of a line without quotes: the index after '\n'
// (or the end of data), and where its content ends (before "\r\n").
func lineEnd(data []byte) (end, content int) {
	end = len(data)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		end = i + 1
	}
	content = end
	if content > 0 && data[content-1] == '\n' {
		content--
	}
	if content > 0 && data[content-1] == '\r' {
		content--
	}
	return end, content
}

// splitText reads one line of PostgreSQL's text format: fields split by
// the delimiter, the NULL string (\N) for NULL, backslash escapes. Lines
// without a backslash or '\r' take splitPlain's word-at-a-time path.
func (d *chunkDecoder) splitText(data []byte) (int, error) {
	if end, ok := d.splitPlain(data, '\\'); ok {
		return end, nil
	}
	return d.splitEscapedText(data)
}

// splitEscapedText is splitText for any line, escapes included.
func (d *chunkDecoder) splitEscapedText(data []byte) (int, error) {
	c := d.c
	end, content := lineEnd(data)
	line := data[:content]
	if len(line) == 2 && line[0] == '\\' && line[1] == '.' {
		d.ended = true
		return end, nil
	}
	d.fields, d.scratch = d.fields[:0], d.scratch[:0]
	delim := c.opts.delim
	for {
		i := bytes.IndexByte(line, delim)
		raw := line
		if i >= 0 {
			raw = line[:i]
		}
		switch {
		case string(raw) == c.opts.null:
			d.fields = append(d.fields, copyField{null: true})
		case bytes.IndexByte(raw, '\\') < 0:
			d.fields = append(d.fields, copyField{b: raw})
		default:
			start := len(d.scratch)
			d.scratch = unescapeCopy(d.scratch, raw)
			d.fields = append(d.fields, copyField{b: d.scratch[start:len(d.scratch):len(d.scratch)], escaped: true})
		}
		if i < 0 {
			break
		}
		line = line[i+1:]
	}
	return end, nil
}

// valueErrorCode is the SQLSTATE of a value COPY could not take: bytes
// that are not text, or text that is not a value of its column's type.
func valueErrorCode(err error) string {
	var te *schema.TextError
	switch {
	case errors.As(err, &te):
		return sqlerr.CharacterNotInRepertoire
	case errors.Is(err, schema.ErrTimestampRange), errors.Is(err, schema.ErrDateRange), errors.Is(err, schema.ErrIntervalRange):
		return sqlerr.DatetimeOverflow
	case errors.As(err, new(*pgdatetime.SyntaxError)):
		return sqlerr.InvalidDatetimeFormat
	case errors.As(err, new(*pgdatetime.DisplacementError)):
		return "22009" // invalid_time_zone_displacement_value
	case errors.As(err, new(*pgdatetime.IntervalRangeError)):
		var re *pgdatetime.IntervalRangeError
		errors.As(err, &re)
		return re.SQLState() // interval_field_overflow, or the months' total
	case errors.Is(err, schema.ErrNumericOverflow):
		return sqlerr.NumericOutOfRange
	case errors.As(err, new(*sqlerr.Error)):
		return sqlerr.Code(err) // the dialect's input (bit strings)
	}
	return sqlerr.InvalidTextRep
}

// unescapeCopy appends s with the text format's backslash escapes resolved:
// the C-like ones, \NNN in octal and \xHH in hex (one to three and one or
// two digits); a backslash before any other character stands for it.
func unescapeCopy(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' || i+1 == len(s) {
			dst = append(dst, ch)
			continue
		}
		i++
		if c := s[i]; c >= '0' && c <= '7' {
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			dst = append(dst, byte(v))
			i = j - 1
			continue
		}
		if s[i] == 'x' && i+1 < len(s) && hexDigit(s[i+1]) >= 0 {
			v := hexDigit(s[i+1])
			j := i + 2
			if j < len(s) && hexDigit(s[j]) >= 0 {
				v = v*16 + hexDigit(s[j])
				j++
			}
			dst = append(dst, byte(v))
			i = j - 1
			continue
		}
		switch s[i] {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'v':
			dst = append(dst, '\v')
		default:
			dst = append(dst, s[i])
		}
	}
	return dst
}

// hexDigit is the value of a hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// splitCSV reads one CSV row as PostgreSQL does: the quote character
// starts and ends quoting anywhere in a field, a doubled quote inside
// quotes is a quote, newlines inside quotes belong to the field, and only
// an unquoted field equal to the NULL string is NULL. Most lines hold
// neither quotes nor a carriage return: splitPlain takes those, and the
// rest (and the end marker, which starts with a backslash) take
// splitQuotedCSV.
func (d *chunkDecoder) splitCSV(data []byte) (int, error) {
	if len(data) > 0 && data[0] != '\\' {
		if end, ok := d.splitPlain(data, d.c.opts.quote); ok {
			return end, nil
		}
	}
	return d.splitQuotedCSV(data)
}

// Bytes equal to a given one in a word, found eight at a time.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
	low7Bits = 0x7F7F7F7F7F7F7F7F
)

// zeroBytes has the high bit set in exactly the bytes of x that are zero
// (no false positives across bytes, unlike the shorter formula).
func zeroBytes(x uint64) uint64 {
	return ^((x&low7Bits + low7Bits) | x | low7Bits)
}

// splitPlain splits the line at the start of data into its fields if
// neither special (CSV's quote, the text format's backslash) nor a
// carriage return comes before its newline; ok is false otherwise, and the
// caller takes its format's general path. Such a line's fields are its
// bytes between delimiters, in either format. It reads a word at a time:
// each word is compared with the delimiter, the newline, special and '\r'
// at once, and the delimiters' positions come from its bits.
//
// Why: the per-field byte search it replaces (a call per field, 21 per
// TSBS row, after three whole-line scans for the newline, quote and '\r')
// was a tenth of a CSV COPY's decoding.
func (d *chunkDecoder) splitPlain(data []byte, special byte) (end int, ok bool) {
	c := d.c
	delim := c.opts.delim
	d.fields, d.scratch = d.fields[:0], d.scratch[:0]
	dm, qm := lowBits*uint64(delim), lowBits*uint64(special)
	const nm, rm = lowBits * '\n', lowBits * '\r'
	start := 0 // the field being read starts here
	field := func(to int) {
		f := data[start:to:to]
		d.fields = append(d.fields, copyField{b: f, null: string(f) == c.opts.null})
		start = to + 1
	}
	i := 0
	for ; len(data)-i >= 8; i += 8 {
		w := binary.LittleEndian.Uint64(data[i:])
		delims := zeroBytes(w ^ dm)
		special := zeroBytes(w^qm) | zeroBytes(w^rm)
		nl := zeroBytes(w ^ nm)
		if nl != 0 {
			// Only what comes before the newline is the line's.
			before := nl&-nl - 1
			delims &= before
			special &= before
		}
		if special != 0 {
			return 0, false
		}
		for ; delims != 0; delims &= delims - 1 {
			field(i + bits.TrailingZeros64(delims)/8)
		}
		if nl != 0 {
			at := i + bits.TrailingZeros64(nl)/8
			field(at)
			return at + 1, true
		}
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case delim:
			field(i)
		case '\n':
			field(i)
			return i + 1, true
		case special, '\r':
			return 0, false
		}
	}
	field(len(data))
	return len(data), true
}

// splitQuotedCSV is splitCSV for any line: a byte at a time, quotes and
// carriage returns included.
func (d *chunkDecoder) splitQuotedCSV(data []byte) (int, error) {
	c := d.c
	end, content := lineEnd(data)
	if content == 2 && data[0] == '\\' && data[1] == '.' {
		d.ended = true
		return end, nil
	}
	d.fields, d.scratch = d.fields[:0], d.scratch[:0]
	delim, quote := c.opts.delim, c.opts.quote
	i := 0
	for {
		// One field: a plain run is taken as is; once a quote appears,
		// the field is rebuilt in scratch.
		start, quoted, inQuote, plain := i, false, false, true
		fstart := len(d.scratch)
		for {
			if i == len(data) {
				if inQuote {
					return 0, sqlerr.New(sqlerr.InvalidTextRep, "COPY %s, line %d: unterminated CSV quoted field", c.tbl.Name, d.line+1)
				}
				break
			}
			ch := data[i]
			if inQuote {
				if ch == quote {
					if i+1 < len(data) && data[i+1] == quote {
						d.scratch = append(d.scratch, quote)
						i += 2
						continue
					}
					inQuote = false
					i++
					continue
				}
				d.scratch = append(d.scratch, ch)
				i++
				continue
			}
			if ch == delim || ch == '\n' || ch == '\r' {
				break
			}
			if ch == quote {
				if plain {
					d.scratch = append(d.scratch, data[start:i]...)
					plain = false
				}
				quoted, inQuote = true, true
				i++
				continue
			}
			if !plain {
				d.scratch = append(d.scratch, ch)
			}
			i++
		}
		var f copyField
		if plain {
			f.b = data[start:i]
			f.null = !quoted && string(f.b) == c.opts.null
		} else {
			f.b = d.scratch[fstart:len(d.scratch):len(d.scratch)]
		}
		d.fields = append(d.fields, f)
		if i == len(data) {
			return i, nil
		}
		switch data[i] {
		case delim:
			i++
			continue
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return i + 2, nil
			}
			return i + 1, nil
		default: // '\n'
			return i + 1, nil
		}
	}
}

// appendFields converts the fields of the current row into the builders.
func (d *chunkDecoder) appendFields() error {
	c := d.c
	fields := d.fields
	if len(fields) != len(c.targets) {
		if len(fields) < len(c.targets) {
			return sqlerr.New("22P04", "COPY %s, line %d: missing data for column %q", c.tbl.Name, d.line, c.tbl.Columns[c.targets[len(fields)]].Name)
		}
		return sqlerr.New("22P04", "COPY %s, line %d: extra data after last expected column", c.tbl.Name, d.line)
	}
	if d.pos == nil {
		d.pos = positions(len(c.tbl.Columns), c.targets)
	}
	// The time comes first: it decides which record the row goes to.
	ti := c.tbl.TimeIndex
	var us int64
	haveTime := false
	if p := timePos(d.pos, ti); p >= 0 && !fields[p].null {
		v, hasZone, ok := parseTimestamp(unsafe.String(unsafe.SliceData(fields[p].b), len(fields[p].b)))
		if ok && c.tbl.Columns[ti].Type == schema.Timestamptz {
			v = c.in.instant(v, hasZone)
		}
		if !ok {
			return &sqlerr.Error{Code: sqlerr.InvalidTextRep, Message: fmt.Sprintf("COPY %s, line %d, column %s: invalid input syntax for type %s: %q", c.tbl.Name, d.line, c.tbl.Columns[ti].Name, c.tbl.Columns[ti].Type, fields[p].b)}
		}
		us, haveTime = v, true
	}
	cols := d.columns(d.bucketOf(us), haveTime)
	for ci, col := range c.tbl.Columns {
		p := d.pos[ci]
		if p < 0 || fields[p].null {
			cols.appendNull(ci)
			continue
		}
		if ci == ti {
			cols.appendTime(ci, us)
			continue
		}
		// The string views the row's bytes only for the conversion:
		// appendText copies what it keeps.
		s := unsafe.String(unsafe.SliceData(fields[p].b), len(fields[p].b))
		if col.Type == schema.Text && (d.checkText || fields[p].escaped) {
			// The chunk is not all text, or escapes made these bytes: find
			// the line that is not (the store would refuse it without).
			if err := schema.CheckText(s); err != nil {
				return &sqlerr.Error{Code: sqlerr.CharacterNotInRepertoire, Message: fmt.Sprintf("COPY %s, line %d, column %s: %v", c.tbl.Name, d.line, col.Name, err), Err: err}
			}
		}
		// The types most columns have, without appendText's dispatch
		// (a tenth of a COPY's CPU at 21 columns).
		var err error
		switch cols.kind(ci) {
		case colText:
			if len(s) > maxTextValueBytes {
				return &sqlerr.Error{Code: sqlerr.ProgramLimitExceeded, Message: fmt.Sprintf("COPY %s, line %d, column %s: a value of %d bytes is longer than the %d bytes a text value may hold", c.tbl.Name, d.line, col.Name, len(s), maxTextValueBytes)}
			}
			cols.appendText(ci, s)
			continue
		case colFloat64:
			var v float64
			if v, err = floatInput(col.Type, s); err == nil {
				cols.appendFloat(ci, v)
			}
		default:
			if col.Type == schema.Bit || col.Type == schema.VarBit {
				// bit_in with the column's length: a wrong length is
				// reported before a wrong digit, as PostgreSQL does.
				var bits string
				if bits, err = dialect.BitInput(s, col.MaxLength, col.Type == schema.VarBit); err == nil {
					err = appendBits(cols.builder(ci), bits)
				}
			} else {
				err = appendText(cols.builder(ci), col.Type, s, c.in)
			}
		}
		if err != nil {
			return &sqlerr.Error{Code: valueErrorCode(err), Message: fmt.Sprintf("COPY %s, line %d, column %s: %v", c.tbl.Name, d.line, col.Name, err)}
		}
	}
	cols.endRow()
	d.rows++
	return nil
}

var binaryCopySignature = []byte("PGCOPY\n\xff\r\n\x00")

// consumeBinary reads PostgreSQL's binary COPY format (what pgx's CopyFrom
// sends): a signature, flags and a header extension, then per row a field
// count and length-prefixed binary values, and a -1 trailer.
func (d *chunkDecoder) consumeBinary(data []byte) error {
	c := d.c
	bad := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.InvalidTextRep, "COPY %s: "+format, append([]any{c.tbl.Name}, args...)...)
	}
	truncated := bad("unexpected end of binary data")
	for p := 0; p < len(data) && !d.ended; {
		// The -1 trailer is optional in practice (pgx omits it).
		if p+2 > len(data) {
			return truncated
		}
		n := int(int16(binary.BigEndian.Uint16(data[p:])))
		if n == -1 {
			d.ended = true
			break
		}
		if n != len(c.targets) {
			return bad("row %d has %d fields, expected %d", d.line+int(d.rows)+1, n, len(c.targets))
		}
		q := p + 2
		d.fields = d.fields[:0]
		for range n {
			if q+4 > len(data) {
				return truncated
			}
			l := int(int32(binary.BigEndian.Uint32(data[q:])))
			q += 4
			if l < 0 {
				d.fields = append(d.fields, copyField{null: true})
				continue
			}
			if q+l > len(data) {
				return truncated
			}
			d.fields = append(d.fields, copyField{b: data[q : q+l]})
			q += l
		}
		if d.pos == nil {
			d.pos = positions(len(c.tbl.Columns), c.targets)
		}
		var us int64
		haveTime := false
		if fp := timePos(d.pos, c.tbl.TimeIndex); fp >= 0 && len(d.fields[fp].b) == 8 && !d.fields[fp].null {
			// A value out of range fails below, as the column's.
			if v, _, err := schema.FromPGMicros(int64(binary.BigEndian.Uint64(d.fields[fp].b))); err == nil {
				us, haveTime = v, true
			}
		}
		cols := d.columns(d.bucketOf(us), haveTime)
		for ci, col := range c.tbl.Columns {
			fp := d.pos[ci]
			if fp < 0 || d.fields[fp].null {
				cols.appendNull(ci)
				continue
			}
			if err := appendBinary(cols.builder(ci), col.Type, d.fields[fp].b); err != nil {
				return &sqlerr.Error{Code: valueErrorCode(err), Message: fmt.Sprintf("COPY %s: row %d, column %s: %v", c.tbl.Name, d.line+int(d.rows)+1, col.Name, err)}
			}
		}
		cols.endRow()
		d.rows++
		p = q
	}
	return nil
}

// timePos is where a row's fields hold the table's time column, or -1:
// not given, or a table without one (a temporary table, whose rows all go
// to one bucket).
func timePos(pos []int, ti int) int {
	if ti < 0 {
		return -1
	}
	return pos[ti]
}
