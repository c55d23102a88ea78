package planner

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
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
	in      textInput // the session's TimeZone and DateStyle, as COPY began
	feed    copyFeed
	temp    bool // tbl is a temporary table (temptables.go)
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
	return o, checkCopyOptions(o)
}

// checkCopyOptions refuses the combinations PostgreSQL refuses: a
// delimiter or NULL string that would cut rows, a delimiter the text
// format's escapes or the CSV quote use, or one inside the NULL string.
// The row splitters rely on these (a newline delimiter would end a row
// in one and separate fields in the other).
func checkCopyOptions(o copyOptions) error {
	bad := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.InvalidParameterValue, format, args...)
	}
	switch {
	case o.format == CopyBinary:
		return nil
	case o.delim == '\n' || o.delim == '\r':
		return bad("COPY delimiter cannot be newline or carriage return")
	case strings.ContainsAny(o.null, "\r\n"):
		return bad("COPY null representation cannot use newline or carriage return")
	case o.format == CopyText && strings.IndexByte("\\.abcdefghijklmnopqrstuvwxyz0123456789", o.delim) >= 0:
		return bad("COPY delimiter cannot be \"%c\"", o.delim)
	case strings.IndexByte(o.null, o.delim) >= 0:
		return bad("COPY delimiter must not appear in the NULL specification")
	case o.format == CopyCSV && o.quote == o.delim:
		return bad("COPY delimiter and quote must be different")
	}
	return nil
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
	tempName, temp := isTempRelation(st.Relation)
	if temp && !st.IsFrom {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY of a temporary table TO STDOUT is not supported; use COPY (SELECT …) TO STDOUT")
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
	var tbl schema.Table
	if temp {
		if tbl, err = s.tempInsertTarget(tempName, nil); err != nil {
			return nil, err
		}
	} else {
		name, err := relationName(st.Relation)
		if err != nil {
			return nil, err
		}
		var ok bool
		if tbl, ok = s.p.store.Table(name); !ok {
			return nil, s.missing(name)
		}
	}
	var names []string
	for _, a := range st.Attlist {
		names = append(names, a.GetString_().GetSval())
	}
	targets, err := targetColumns(tbl, names)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "COPY", CopyIn: &CopyIn{Format: o.format, Columns: len(targets), s: s, tbl: tbl, targets: targets, opts: o, in: s.textInput(), temp: temp}}, nil
}

// floatInput reads s as a value of the float type ty, as float8in does.
func floatInput(ty schema.Type, s string) (float64, error) {
	f, ok := parseFloat(s)
	if !ok {
		return 0, fmt.Errorf("invalid input syntax for type %s: %q", ty, s)
	}
	return f, nil
}

// appendText converts one field the way PostgreSQL's input functions do for
// the types tsdb stores.
func appendText(b array.Builder, ty schema.Type, s string, in textInput) error {
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
		f, err := floatInput(ty, s)
		if err != nil {
			return err
		}
		if bb, ok := b.(*array.Float64Builder); ok {
			bb.Append(f)
		} else {
			b.(*array.Float32Builder).Append(float32(f))
		}
	case schema.Bool:
		v, ok := dialect.BoolInput(s)
		if !ok {
			return fmt.Errorf("invalid input syntax for type boolean: %q", s)
		}
		b.(*array.BooleanBuilder).Append(v)
	case schema.Text:
		// Not checked here: COPY checks its text a chunk at a time, and the
		// store refuses any value that is not text (ingest.Store.validate).
		b.(*array.StringBuilder).Append(s)
	case schema.Timestamptz, schema.Timestamp:
		us, hasZone, ok := parseTimestamp(s)
		if !ok {
			return fmt.Errorf("invalid input syntax for type %s: %q", ty, s)
		}
		if ty == schema.Timestamptz {
			us = in.instant(us, hasZone)
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(us))
	case schema.Date:
		days, err := parseDate(s, in.order)
		if err != nil {
			return err
		}
		b.(*array.Date32Builder).Append(arrow.Date32(days))
	case schema.Decimal:
		db := b.(*array.Decimal128Builder)
		dt := db.Type().(*arrow.Decimal128Type)
		v, err := schema.ParseDecimal(s, int(dt.Precision), int(dt.Scale))
		if err != nil {
			return err
		}
		db.Append(v)
	case schema.Interval:
		// PostgreSQL's interval input (the session's IntervalStyle only
		// changes how a leading minus of sql_standard text reads).
		iv, err := pgdatetime.ParseInterval(s)
		if err != nil {
			return err
		}
		v, err := schema.IntervalValue(iv.Months, iv.Days, iv.Micros)
		if err != nil {
			return err
		}
		b.(*array.MonthDayNanoIntervalBuilder).Append(v)
	case schema.Time, schema.TimeTZ:
		text, err := timeOfDayText(s, ty == schema.TimeTZ, in)
		if err != nil {
			return err
		}
		b.(*array.StringBuilder).Append(text)
	case schema.Bit, schema.VarBit:
		// bit_in: binary digits, B… or X…; the length is the column's
		// to check (applyTypmods).
		bits, err := dialect.ParseBitString(s)
		if err != nil {
			return err
		}
		return appendBits(b, bits)
	case schema.Bytea:
		// PostgreSQL's bytea input: hex (\x…) or the escape format.
		v, err := dialect.ParseBytea(s)
		if err != nil {
			return err
		}
		b.(*array.BinaryBuilder).Append(v)
	default:
		return fmt.Errorf("unsupported type %s", ty)
	}
	return nil
}

// parseDate reads a date by PostgreSQL's input rules (ISO, MDY order, as
// COPY's DateStyle is) into days since 1970; ±infinity are the engine's
// infinite dates.
func parseDate(s string, order pgdatetime.Order) (int32, error) {
	v, err := pgdatetime.Parse(s, "date", order)
	if err != nil {
		return 0, err
	}
	switch v.Special {
	case pgdatetime.Infinity:
		return math.MaxInt32, nil
	case pgdatetime.NegInfinity:
		return -math.MaxInt32, nil
	case pgdatetime.Finite:
	default:
		return 0, fmt.Errorf("invalid input syntax for type date: %q", s)
	}
	days := time.Date(v.Year, time.Month(v.Month), v.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
	return int32(days), nil
}

func appendBinary(b array.Builder, ty schema.Type, v []byte) error {
	need := map[schema.Type]int{schema.Int64: 8, schema.Int32: 4, schema.Int16: 2, schema.Float64: 8, schema.Float32: 4, schema.Bool: 1, schema.Timestamptz: 8, schema.Timestamp: 8, schema.Date: 4, schema.Interval: 16, schema.Time: 8, schema.TimeTZ: 12}
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
		if err := schema.CheckText(unsafe.String(unsafe.SliceData(v), len(v))); err != nil {
			return err
		}
		b.(*array.StringBuilder).Append(string(v))
	case schema.Timestamptz, schema.Timestamp:
		us, _, err := schema.FromPGMicros(int64(binary.BigEndian.Uint64(v)))
		if err != nil {
			return err
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(us))
	case schema.Date:
		days, _, err := schema.FromPGDays(int32(binary.BigEndian.Uint32(v)))
		if err != nil {
			return err
		}
		b.(*array.Date32Builder).Append(arrow.Date32(days))
	case schema.Decimal:
		db := b.(*array.Decimal128Builder)
		dt := db.Type().(*arrow.Decimal128Type)
		d, err := schema.DecimalFromPGBinary(v, int(dt.Precision), int(dt.Scale))
		if err != nil {
			return err
		}
		db.Append(d)
	case schema.Bytea:
		b.(*array.BinaryBuilder).Append(slices.Clone(v))
	case schema.Time, schema.TimeTZ:
		// time_send: microseconds since midnight; timetz_send adds the
		// zone in seconds west of UTC.
		us, east := int64(binary.BigEndian.Uint64(v)), 0
		if ty == schema.TimeTZ {
			east = -int(int32(binary.BigEndian.Uint32(v[8:])))
		}
		if us < 0 || us > pgdatetime.MicrosPerDay || ty == schema.Time && us == pgdatetime.MicrosPerDay || east < -maxZoneOffset || east > maxZoneOffset {
			return fmt.Errorf("time of day out of range")
		}
		b.(*array.StringBuilder).Append(schema.TimeText(us, east, ty == schema.TimeTZ))
	case schema.Bit, schema.VarBit:
		bits, err := schema.BitsFromPGBinary(v)
		if err != nil {
			return err
		}
		return appendBits(b, bits)
	case schema.Interval:
		// interval_send: microseconds, days, months.
		iv, err := schema.IntervalValue(int32(binary.BigEndian.Uint32(v[12:])), int32(binary.BigEndian.Uint32(v[8:])), int64(binary.BigEndian.Uint64(v)))
		if err != nil {
			return err
		}
		b.(*array.MonthDayNanoIntervalBuilder).Append(iv)
	default:
		return fmt.Errorf("unsupported type %s", ty)
	}
	return nil
}

// appendBits appends a bit string read from COPY; the empty one, which
// the engine's BIT cannot hold, is refused.
func appendBits(b array.Builder, bits string) error {
	if bits == "" {
		return dialect.ErrEmptyBits
	}
	b.(*array.StringBuilder).Append(bits)
	return nil
}

// maxZoneOffset is PostgreSQL's widest timetz offset, 15:59:59.
const maxZoneOffset = 15*3600 + 59*60 + 59

// timeOfDayText reads time or timetz text (withZone) as PostgreSQL does
// into the form a column holds (schema.TimeText).
func timeOfDayText(s string, withZone bool, in textInput) (string, error) {
	return dialect.TimeOfDayText(s, withZone, dialect.Input{Loc: in.loc, Order: in.order, Now: in.now})
}
