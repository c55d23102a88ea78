package planner

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/decfloat"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// literalValues converts INSERT … VALUES whose cells are all plain literals
// straight into an Arrow record, without a round trip through DuckDB (which
// costs a query plan per statement). It only takes conversions whose result
// is unambiguous; for anything else (expressions, function calls, casts to
// other types, values that need rounding or a time zone) it returns false
// and the statement goes through DuckDB, so the result is the same either
// way.
func literalValues(tbl schema.Table, targets []int, rows []*pg_query.Node, in textInput) (arrow.RecordBatch, bool) {
	for _, row := range rows {
		if len(row.GetList().GetItems()) != len(targets) {
			return nil, false
		}
	}
	return literalRecord(tbl, targets, len(rows), in, func(r, j int, ty schema.Type) (literal, bool) {
		return constOf(rows[r].GetList().GetItems()[j], ty)
	})
}

// literalRecord builds a record of the table from n rows of constants;
// cell(r, j, ty) is the j-th value of row r, for a column of type ty.
// Columns not among targets are NULL. It reports false as soon as a value
// needs the engine's conversion rules.
func literalRecord(tbl schema.Table, targets []int, n int, in textInput, cell func(r, j int, ty schema.Type) (literal, bool)) (arrow.RecordBatch, bool) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	bld.Reserve(n)
	pos := positions(len(tbl.Columns), targets)
	// Text columns get their bytes up front: growing by doubling copies
	// and zeroes, and fresh memory is what costs here.
	for ci, col := range tbl.Columns {
		sb, ok := bld.Field(ci).(*array.StringBuilder)
		if !ok || pos[ci] < 0 || col.Type != schema.Text {
			continue
		}
		size := 0
		for r := range n {
			if lit, ok := cell(r, pos[ci], col.Type); ok && lit.kind == 's' {
				size += len(lit.text)
			}
		}
		sb.ReserveData(size)
	}
	for r := range n {
		for ci, col := range tbl.Columns {
			if pos[ci] < 0 {
				bld.Field(ci).AppendNull()
				continue
			}
			lit, ok := cell(r, pos[ci], col.Type)
			if !ok || !appendLit(bld.Field(ci), col.Type, lit, in) {
				return nil, false
			}
		}
	}
	return bld.NewRecordBatch(), true
}

// literal is a constant cell: its kind and value (text for decimals and
// strings, i for integers, b for booleans).
type literal struct {
	kind byte // 'i' integer, 'f' decimal, 's' string, 'b' boolean, 'n' null
	text string
	b    bool
	i    int64
}

func constOf(n *pg_query.Node, ty schema.Type) (literal, bool) {
	c := n.GetAConst()
	if tc := n.GetTypeCast(); tc != nil && tc.TypeName != nil {
		// 'x'::type where the type is the column's own is a plain literal
		// too (bound parameters look like that); casts to other types are
		// left to DuckDB.
		// A cast with a length ('0101'::varbit(2), 'abc'::varchar(2))
		// changes the value: the engine's path applies it.
		if t, err := schema.ParseType(sqltree.TypeName(tc.TypeName)); err == nil && t == ty && len(tc.TypeName.Typmods) == 0 {
			c = tc.Arg.GetAConst()
		}
	}
	if c == nil {
		return literal{}, false
	}
	if c.Isnull {
		return literal{kind: 'n'}, true
	}
	switch v := c.Val.(type) {
	case *pg_query.A_Const_Ival:
		return literal{kind: 'i', i: int64(v.Ival.Ival)}, true
	case *pg_query.A_Const_Fval:
		return literal{kind: 'f', text: v.Fval.Fval}, true
	case *pg_query.A_Const_Sval:
		return literal{kind: 's', text: v.Sval.Sval}, true
	case *pg_query.A_Const_Boolval:
		return literal{kind: 'b', b: v.Boolval.Boolval}, true
	}
	return literal{}, false
}

// appendLit appends one constant converted to ty, or reports false when the
// conversion needs the engine's rules.
func appendLit(b array.Builder, ty schema.Type, lit literal, in textInput) bool {
	if lit.kind == 'n' {
		b.AppendNull()
		return true
	}
	if lit.kind == 's' {
		// A string literal converts by the same input rules as a COPY
		// field, except that a zone on a timestamp without time zone is
		// left to the engine (PostgreSQL ignores it, DuckDB converts).
		if ty == schema.Timestamp {
			if _, hasZone, ok := parseTimestamp(lit.text); !ok || hasZone {
				return false
			}
		}
		return appendText(b, ty, lit.text, in) == nil
	}
	switch ty {
	case schema.Int64, schema.Int32, schema.Int16:
		var v int64
		switch lit.kind {
		case 'i':
			v = lit.i
		case 'f':
			// A decimal literal can still be a whole number out of int32
			// range ("9007199254740993"); fractions need rounding rules.
			x, err := strconv.ParseInt(lit.text, 10, 64)
			if err != nil {
				return false
			}
			v = x
		default:
			return false
		}
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(v)
		case *array.Int32Builder:
			if v < math.MinInt32 || v > math.MaxInt32 {
				return false
			}
			bb.Append(int32(v))
		case *array.Int16Builder:
			if v < math.MinInt16 || v > math.MaxInt16 {
				return false
			}
			bb.Append(int16(v))
		default:
			return false
		}
	case schema.Float64, schema.Float32:
		var f float64
		switch lit.kind {
		case 'i':
			if lit.i > 1<<53 || lit.i < -(1<<53) {
				return false
			}
			f = float64(lit.i)
		case 'f':
			x, ok := parseFloat(lit.text)
			if !ok {
				return false
			}
			// A number literal is a numeric, which has no negative
			// zero: -0.0 is 0 (the string '-0' keeps its sign).
			f = x + 0
		default:
			return false
		}
		switch bb := b.(type) {
		case *array.Float64Builder:
			bb.Append(f)
		case *array.Float32Builder:
			if !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
				return false
			}
			bb.Append(float32(f))
		default:
			return false
		}
	case schema.Bool:
		if lit.kind != 'b' {
			return false
		}
		b.(*array.BooleanBuilder).Append(lit.b)
	case schema.Decimal:
		text := lit.text
		switch lit.kind {
		case 'i':
			text = strconv.FormatInt(lit.i, 10)
		case 'f':
		default:
			return false
		}
		// A value that does not fit is left to the engine's cast, which
		// refuses it.
		return appendText(b, ty, text, in) == nil
	default:
		return false
	}
	return true
}

// parseFloat reads decimal text, NaN and ±Infinity as PostgreSQL does.
func parseFloat(s string) (float64, bool) {
	if f, ok := decfloat.Parse(s); ok {
		return f, true
	}
	// The common case, plain decimal digits, skips the trimming and the
	// case folding of the special names.
	if n := len(s); n > 0 && (s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '.') && s[n-1] >= '0' && s[n-1] <= '9' {
		for i := 0; i < n; i++ {
			if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
				return 0, false
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && (f != 0 || !dialect.NonZeroMantissa(s))
	}
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), true
	case "-infinity", "-inf":
		return math.Inf(-1), true
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E') {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && (f != 0 || !dialect.NonZeroMantissa(s))
}

// textInput is how a session reads date and time text (COPY fields,
// literals): a timestamptz without a zone is a wall clock in its TimeZone,
// and a date's field order is its DateStyle's.
type textInput struct {
	loc   *time.Location
	order pgdatetime.Order
	// now is the statement's time ('now', and the date a timetz
	// without a zone takes its offset on).
	now time.Time
}

// utcInput reads text as a session with PostgreSQL's defaults and TimeZone
// UTC does.
func utcInput() textInput { return textInput{loc: time.UTC, order: pgdatetime.MDY, now: time.Now()} }

// textInput is the session's way of reading date and time text.
func (s *Session) textInput() textInput {
	return textInput{loc: s.settings.Location(), order: s.settings.DateOrder(), now: s.statementTime()}
}

// instant converts what parseTimestamp read to the instant a timestamptz
// stores: a value without a zone is a wall clock in the session's zone,
// read as PostgreSQL reads one (pgdatetime.WallInstant).
func (in textInput) instant(us int64, hasZone bool) int64 {
	if hasZone || in.loc == nil || in.loc == time.UTC || us == math.MaxInt64 || us == math.MinInt64 {
		return us
	}
	return pgdatetime.WallInstant(time.UnixMicro(us).UTC(), in.loc).UnixMicro()
}

// parseTimestamp reads the ISO forms clients send: YYYY-MM-DD, optionally
// followed by [T ]HH:MM[:SS[.ffffff]] and a zone (Z, ±HH, ±HHMM, ±HH:MM).
// Without a zone it returns the wall clock as if in UTC, and hasZone false:
// a timestamptz reads it in the session's zone (textInput.instant). More
// than microsecond precision, other zones and other forms are left to
// DuckDB.
func parseTimestamp(s string) (micros int64, hasZone, ok bool) {
	if micros, hasZone, ok = isoTimestamp(s); ok {
		return micros, hasZone, true
	}
	return parseTimestampForms(s)
}

// isoTimestamp reads the one form loads send nearly always, without
// spaces around it: YYYY-MM-DD HH:MM:SS (or T), optionally 1 to 6
// fraction digits, optionally Z or a ±HH, ±HHMM or ±HH:MM zone. It takes
// exactly what parseTimestampForms takes of that form, with the same
// result (a test and FuzzSQL check), in a tenth of time.Parse's time.
func isoTimestamp(s string) (micros int64, hasZone, ok bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return 0, false, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return 0, false, false
	}
	i, frac := 19, 0
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		digits := j - i - 1
		if digits < 1 || digits > 6 {
			return 0, false, false
		}
		frac = num(i+1, digits)
		for range 6 - digits {
			frac *= 10
		}
		i = j
	}
	offset := 0
	switch zone := s[i:]; {
	case zone == "":
	case zone == "Z" || zone == "z":
		hasZone = true
	case zone[0] == '+' || zone[0] == '-':
		var hh, mm int
		switch len(zone) {
		case 3:
			hh, mm = num(i+1, 2), 0
		case 5:
			hh, mm = num(i+1, 2), num(i+3, 2)
		case 6:
			if zone[3] != ':' {
				return 0, false, false
			}
			hh, mm = num(i+1, 2), num(i+4, 2)
		default:
			return 0, false, false
		}
		if hh < 0 || hh > 15 || mm < 0 || mm > 59 {
			return 0, false, false
		}
		offset = (hh*60 + mm) * 60
		if zone[0] == '-' {
			offset = -offset
		}
		hasZone = true
	default:
		return 0, false, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec-offset)
	return secs*1_000_000 + int64(frac), hasZone, true
}

// daysIn is the number of days of a month of the proleptic Gregorian
// calendar.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to a proleptic Gregorian date
// (the era arithmetic of Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y >= 0 here: years before 1 are refused
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// parseTimestampForms is parseTimestamp for every form it takes.
func parseTimestampForms(s string) (micros int64, hasZone, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false, false
	}
	offset := 0
	if rest := s[10:]; len(rest) > 0 {
		if strings.HasSuffix(rest, "Z") || strings.HasSuffix(rest, "z") {
			s, hasZone = strings.TrimRight(s[:len(s)-1], " "), true
		} else if i := strings.LastIndexAny(rest, "+-"); i >= 0 {
			zone := strings.ReplaceAll(rest[i+1:], ":", "")
			if len(zone) != 2 && len(zone) != 4 {
				return 0, false, false
			}
			hh, err1 := strconv.Atoi(zone[:2])
			mm := 0
			var err2 error
			if len(zone) == 4 {
				mm, err2 = strconv.Atoi(zone[2:])
			}
			if err1 != nil || err2 != nil || hh > 15 || mm > 59 {
				return 0, false, false
			}
			offset = (hh*60 + mm) * 60
			if rest[i] == '-' {
				offset = -offset
			}
			s, hasZone = strings.TrimRight(s[:10+i], " "), true
		}
	}
	var layout string
	switch {
	case len(s) == 10:
		layout = "2006-01-02"
	case len(s) >= 16 && (s[10] == ' ' || s[10] == 'T'):
		if s[10] == 'T' {
			s = s[:10] + " " + s[11:]
		}
		layout = "2006-01-02 15:04"
		if len(s) >= 19 {
			layout = "2006-01-02 15:04:05"
			if len(s) > 19 {
				if s[19] != '.' || len(s) > 26 || len(s) == 20 {
					return 0, false, false
				}
				for _, r := range s[20:] {
					if r < '0' || r > '9' {
						return 0, false, false
					}
				}
			}
		} else if len(s) != 16 {
			return 0, false, false
		}
	default:
		return 0, false, false
	}
	t, err := time.Parse(layout, s)
	if err != nil || t.Year() < 1 {
		return 0, false, false
	}
	return t.UnixMicro() - int64(offset)*1_000_000, hasZone, true
}
