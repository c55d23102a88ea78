package planner

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// CopyFormat is a COPY data format.
type CopyFormat int

// COPY formats.
const (
	CopyText CopyFormat = iota
	CopyCSV
	CopyBinary
)

// CopyIn receives the data of COPY … FROM STDIN. The wire layer feeds it the
// CopyData payloads and then calls Finish; nothing is written unless every
// row converts, and then all rows go through the same WAL/MemBuffer path
// as INSERT in one write.
type CopyIn struct {
	Format  CopyFormat
	Columns int
	s       *Session
	tbl     schema.Table
	targets []int
	opts    copyOptions
	buf     bytes.Buffer
}

// CopyOut describes COPY … TO STDOUT: rows and how to render them.
type CopyOut struct {
	Format CopyFormat
	Header bool
	Delim  byte
	Null   string
	Result *Result
}

type copyOptions struct {
	format CopyFormat
	delim  byte
	null   string
	header bool
	quote  byte
}

func parseCopyOptions(opts []*pg_query.Node) (copyOptions, error) {
	o := copyOptions{format: CopyText, delim: '\t', null: `\N`, quote: '"'}
	nullSet, delimSet := false, false
	for _, n := range opts {
		d := n.GetDefElem()
		if d == nil {
			continue
		}
		arg := ""
		if d.Arg != nil {
			arg = constString(d.Arg)
		}
		switch strings.ToLower(d.Defname) {
		case "format":
			switch strings.ToLower(arg) {
			case "text":
				o.format = CopyText
			case "csv":
				o.format = CopyCSV
			case "binary":
				o.format = CopyBinary
			default:
				return o, sqlerr.New(sqlerr.InvalidParameterValue, "COPY format %q not recognized", arg)
			}
		case "delimiter":
			if len(arg) != 1 {
				return o, sqlerr.New(sqlerr.FeatureNotSupported, "COPY delimiter must be a single one-byte character")
			}
			o.delim, delimSet = arg[0], true
		case "null":
			o.null, nullSet = arg, true
		case "header":
			o.header = arg == "" || strings.EqualFold(arg, "true") || strings.EqualFold(arg, "on") || arg == "1"
		case "quote":
			if len(arg) != 1 {
				return o, sqlerr.New(sqlerr.FeatureNotSupported, "COPY quote must be a single one-byte character")
			}
			o.quote = arg[0]
		case "encoding":
			if !strings.EqualFold(strings.ReplaceAll(arg, "-", ""), "utf8") {
				return o, sqlerr.New(sqlerr.FeatureNotSupported, "COPY encoding %q: only UTF8 is supported", arg)
			}
		default:
			return o, sqlerr.New(sqlerr.FeatureNotSupported, "COPY option %q is not supported", d.Defname)
		}
	}
	if o.format == CopyCSV {
		if !delimSet {
			o.delim = ','
		}
		if !nullSet {
			o.null = ""
		}
	}
	return o, nil
}

// copy handles COPY statements: FROM STDIN into a table, TO STDOUT from a
// table or query. Files and programs are refused (sandbox).
func (s *Session) copy(ctx context.Context, st *pg_query.CopyStmt) (*Result, error) {
	if st.Filename != "" || st.IsProgram {
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "COPY to or from a file or program is not allowed; use COPY … FROM STDIN / TO STDOUT (psql: \\copy)")
	}
	o, err := parseCopyOptions(st.Options)
	if err != nil {
		return nil, err
	}
	if st.WhereClause != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY … WHERE is not supported")
	}
	if !st.IsFrom {
		var text string
		var node *pg_query.Node
		if st.Query != nil {
			node = st.Query
		} else {
			name, err := relationName(st.Relation)
			if err != nil {
				return nil, err
			}
			cols := "*"
			if len(st.Attlist) > 0 {
				var names []string
				for _, a := range st.Attlist {
					names = append(names, schema.QuoteIdent(a.GetString_().GetSval()))
				}
				cols = strings.Join(names, ", ")
			}
			tree, err := pg_query.Parse(fmt.Sprintf("SELECT %s FROM %s", cols, schema.QuoteIdent(name)))
			if err != nil {
				return nil, err
			}
			node = tree.Stmts[0].Stmt
		}
		if o.format == CopyBinary {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY TO in binary format is not supported; use text or CSV")
		}
		if text, err = deparse(s.p.pgVersion, node); err != nil {
			return nil, err
		}
		res, err := s.execute(ctx, statement{text: text, node: node})
		if err != nil {
			return nil, err
		}
		return &Result{Tag: "COPY", CopyOut: &CopyOut{Format: o.format, Header: o.header, Delim: o.delim, Null: o.null, Result: res}}, nil
	}
	name, err := relationName(st.Relation)
	if err != nil {
		return nil, err
	}
	tbl, ok := s.p.store.Table(name)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	var names []string
	for _, a := range st.Attlist {
		names = append(names, a.GetString_().GetSval())
	}
	targets, err := targetColumns(tbl, names)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "COPY", CopyIn: &CopyIn{Format: o.format, Columns: len(targets), s: s, tbl: tbl, targets: targets, opts: o}}, nil
}

// Write takes one CopyData payload. A COPY is converted and written as one
// statement, so its data is held until the end; past the store's limit
// (its memory limit) the COPY fails instead of exhausting memory.
func (c *CopyIn) Write(p []byte) error {
	if limit := c.s.p.store.MaxStatementBytes(); int64(c.buf.Len()+len(p)) > limit {
		return sqlerr.New("54000", "COPY data exceeds %d MiB (--memory-limit); split it into smaller COPY statements", limit>>20)
	}
	c.buf.Write(p)
	return nil
}

// Finish converts all received rows and inserts them; it returns the row
// count for the COPY n tag.
func (c *CopyIn) Finish(ctx context.Context) (int64, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, c.tbl.ArrowSchema())
	defer bld.Release()
	var err error
	var rows int64
	switch c.opts.format {
	case CopyBinary:
		rows, err = c.parseBinary(bld)
	case CopyCSV:
		rows, err = c.parseCSV(bld)
	default:
		rows, err = c.parseText(bld)
	}
	if err != nil {
		return 0, err
	}
	if rows == 0 {
		return 0, nil
	}
	return c.s.p.store.Insert(ctx, c.tbl.Name, bld.NewRecordBatch())
}

// appendRow converts the text fields of one row (nil = NULL).
func (c *CopyIn) appendRow(bld *array.RecordBuilder, fields []*string, line int) error {
	if len(fields) != len(c.targets) {
		if len(fields) < len(c.targets) {
			return sqlerr.New("22P04", "COPY %s, line %d: missing data for column %q", c.tbl.Name, line, c.tbl.Columns[c.targets[len(fields)]].Name)
		}
		return sqlerr.New("22P04", "COPY %s, line %d: extra data after last expected column", c.tbl.Name, line)
	}
	pos := positions(len(c.tbl.Columns), c.targets)
	for ci, col := range c.tbl.Columns {
		if pos[ci] < 0 || fields[pos[ci]] == nil {
			bld.Field(ci).AppendNull()
			continue
		}
		if err := appendText(bld.Field(ci), col.Type, *fields[pos[ci]]); err != nil {
			return &sqlerr.Error{Code: sqlerr.InvalidTextRep, Message: fmt.Sprintf("COPY %s, line %d, column %s: %v", c.tbl.Name, line, col.Name, err)}
		}
	}
	return nil
}

// appendText converts one field the way PostgreSQL's input functions do for
// the types tsdb stores.
func appendText(b array.Builder, ty schema.Type, s string) error {
	switch ty {
	case schema.Int64, schema.Int32, schema.Int16:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("invalid input syntax for type %s: %q", ty, s)
		}
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(v)
		case *array.Int32Builder:
			if v < math.MinInt32 || v > math.MaxInt32 {
				return fmt.Errorf("value %q is out of range for type integer", s)
			}
			bb.Append(int32(v))
		case *array.Int16Builder:
			if v < math.MinInt16 || v > math.MaxInt16 {
				return fmt.Errorf("value %q is out of range for type smallint", s)
			}
			bb.Append(int16(v))
		}
	case schema.Float64, schema.Float32:
		f, ok := parseFloat(s)
		if !ok {
			return fmt.Errorf("invalid input syntax for type %s: %q", ty, s)
		}
		if bb, ok := b.(*array.Float64Builder); ok {
			bb.Append(f)
		} else {
			b.(*array.Float32Builder).Append(float32(f))
		}
	case schema.Bool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "y", "on", "1":
			b.(*array.BooleanBuilder).Append(true)
		case "f", "false", "no", "n", "off", "0":
			b.(*array.BooleanBuilder).Append(false)
		default:
			return fmt.Errorf("invalid input syntax for type boolean: %q", s)
		}
	case schema.Text:
		b.(*array.StringBuilder).Append(s)
	case schema.Timestamptz, schema.Timestamp:
		us, _, ok := parseTimestamp(s)
		if !ok {
			return fmt.Errorf("invalid input syntax for type %s: %q", ty, s)
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(us))
	default:
		return fmt.Errorf("unsupported type %s", ty)
	}
	return nil
}

// parseText reads PostgreSQL's text COPY format: one row per line, fields
// split by the delimiter, \N for NULL, backslash escapes.
func (c *CopyIn) parseText(bld *array.RecordBuilder) (int64, error) {
	data := c.buf.String()
	var rows int64
	line := 0
	for len(data) > 0 {
		var l string
		if i := strings.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, ""
		}
		line++
		l = strings.TrimSuffix(l, "\r")
		if l == `\.` {
			break
		}
		if line == 1 && c.opts.header {
			continue
		}
		var fields []*string
		for _, raw := range strings.Split(l, string(c.opts.delim)) {
			if raw == c.opts.null {
				fields = append(fields, nil)
				continue
			}
			v := unescapeCopy(raw)
			fields = append(fields, &v)
		}
		if err := c.appendRow(bld, fields, line); err != nil {
			return 0, err
		}
		rows++
	}
	return rows, nil
}

func unescapeCopy(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' || i+1 == len(s) {
			sb.WriteByte(ch)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'v':
			sb.WriteByte('\v')
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

// parseCSV reads the CSV COPY format; an unquoted field equal to the NULL
// string is NULL.
func (c *CopyIn) parseCSV(bld *array.RecordBuilder) (int64, error) {
	data := c.buf.Bytes()
	if i := bytes.Index(data, []byte("\n\\.\n")); i >= 0 {
		data = data[:i+1]
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = rune(c.opts.delim)
	r.FieldsPerRecord = -1
	r.LazyQuotes = false
	r.ReuseRecord = false
	var rows int64
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, sqlerr.New(sqlerr.InvalidTextRep, "COPY %s, line %d: %v", c.tbl.Name, line, err)
		}
		if line == 1 && c.opts.header {
			continue
		}
		if len(rec) == 1 && rec[0] == `\.` {
			break
		}
		fields := make([]*string, len(rec))
		for i := range rec {
			// encoding/csv does not say whether a field was quoted; an
			// empty quoted field is rare enough to read as NULL like an
			// unquoted one when the NULL string is empty.
			if rec[i] == c.opts.null {
				continue
			}
			v := rec[i]
			fields[i] = &v
		}
		if err := c.appendRow(bld, fields, line); err != nil {
			return 0, err
		}
		rows++
	}
	return rows, nil
}

var binaryCopySignature = []byte("PGCOPY\n\xff\r\n\x00")

// parseBinary reads PostgreSQL's binary COPY format (what pgx's CopyFrom
// sends): a signature, then per row a field count and length-prefixed
// binary values.
func (c *CopyIn) parseBinary(bld *array.RecordBuilder) (int64, error) {
	data := c.buf.Bytes()
	bad := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.InvalidTextRep, "COPY %s: "+format, append([]any{c.tbl.Name}, args...)...)
	}
	if !bytes.HasPrefix(data, binaryCopySignature) || len(data) < len(binaryCopySignature)+8 {
		return 0, bad("invalid COPY file header (COPY BINARY)")
	}
	p := len(binaryCopySignature) + 4
	ext := int(binary.BigEndian.Uint32(data[p:]))
	p += 4 + ext
	var rows int64
	for {
		if p == len(data) {
			break // the -1 trailer is optional in practice (pgx omits it)
		}
		if p+2 > len(data) {
			return 0, bad("unexpected end of binary data")
		}
		n := int(int16(binary.BigEndian.Uint16(data[p:])))
		p += 2
		if n == -1 {
			break
		}
		if n != len(c.targets) {
			return 0, bad("row %d has %d fields, expected %d", rows+1, n, len(c.targets))
		}
		vals := make([][]byte, n)
		for i := 0; i < n; i++ {
			if p+4 > len(data) {
				return 0, bad("unexpected end of binary data")
			}
			l := int(int32(binary.BigEndian.Uint32(data[p:])))
			p += 4
			if l < 0 {
				continue
			}
			if p+l > len(data) {
				return 0, bad("unexpected end of binary data")
			}
			vals[i] = data[p : p+l]
			p += l
		}
		pos := positions(len(c.tbl.Columns), c.targets)
		for ci, col := range c.tbl.Columns {
			if pos[ci] < 0 || vals[pos[ci]] == nil {
				bld.Field(ci).AppendNull()
				continue
			}
			if err := appendBinary(bld.Field(ci), col.Type, vals[pos[ci]]); err != nil {
				return 0, bad("row %d, column %s: %v", rows+1, col.Name, err)
			}
		}
		rows++
	}
	return rows, nil
}

var pgEpochMicros = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

func appendBinary(b array.Builder, ty schema.Type, v []byte) error {
	need := map[schema.Type]int{schema.Int64: 8, schema.Int32: 4, schema.Int16: 2, schema.Float64: 8, schema.Float32: 4, schema.Bool: 1, schema.Timestamptz: 8, schema.Timestamp: 8}
	if n, ok := need[ty]; ok && len(v) != n {
		return fmt.Errorf("%d bytes for type %s", len(v), ty)
	}
	switch ty {
	case schema.Int64:
		b.(*array.Int64Builder).Append(int64(binary.BigEndian.Uint64(v)))
	case schema.Int32:
		b.(*array.Int32Builder).Append(int32(binary.BigEndian.Uint32(v)))
	case schema.Int16:
		b.(*array.Int16Builder).Append(int16(binary.BigEndian.Uint16(v)))
	case schema.Float64:
		b.(*array.Float64Builder).Append(math.Float64frombits(binary.BigEndian.Uint64(v)))
	case schema.Float32:
		b.(*array.Float32Builder).Append(math.Float32frombits(binary.BigEndian.Uint32(v)))
	case schema.Bool:
		b.(*array.BooleanBuilder).Append(v[0] != 0)
	case schema.Text:
		b.(*array.StringBuilder).Append(string(v))
	case schema.Timestamptz, schema.Timestamp:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(int64(binary.BigEndian.Uint64(v)) + pgEpochMicros))
	default:
		return fmt.Errorf("unsupported type %s", ty)
	}
	return nil
}
