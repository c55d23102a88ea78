package dialect

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// Input is how a session reads date and time text: in its TimeZone, its
// DateStyle's field order and its IntervalStyle, with 'now' meaning Now.
type Input struct {
	Loc       *time.Location
	Order     pgdatetime.Order
	Intervals pgdatetime.IntervalStyle
	// Dates is DateStyle's output style, for dates and timestamps
	// written as text.
	Dates pgdatetime.DateStyle
	Now   time.Time
	// FloatDigits is extra_float_digits, for floats written as text.
	FloatDigits int
}

// DateTimeLiteral reads a constant cast to date, timestamp or timestamptz
// ('January 8, 1999'::date, timestamptz '1999-01-08 04:05 PST') by
// PostgreSQL's input rules and gives the engine the value in ISO form:
// DuckDB reads only ISO 8601, and reads some other forms wrongly
// ('01/02/03' as the year 1). A zone-less timestamptz is read in loc, the
// session's zone, as PostgreSQL does. ok is false for anything else. Input
// PostgreSQL refuses is an error with its SQLSTATE.
func DateTimeLiteral(tc *pg_query.TypeCast, in Input) (n *pg_query.Node, ok bool, err error) {
	loc, order, now := in.Loc, in.Order, in.Now
	sv := tc.Arg.GetAConst().GetSval()
	if sv == nil || len(tc.TypeName.GetArrayBounds()) > 0 {
		return nil, false, nil
	}
	typ := sqltree.LastName(tc.TypeName.GetNames())
	var pgType string
	switch typ {
	case "date":
		pgType = "date"
	case "timestamp":
		pgType = "timestamp without time zone"
	case "timestamptz":
		pgType = "timestamp with time zone"
	case "time", "timetz":
		if len(tc.TypeName.GetTypmods()) > 0 {
			return nil, false, nil
		}
		text, err := TimeOfDayText(sv.Sval, typ == "timetz", in)
		if err != nil {
			return nil, false, err
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(text, tc.Arg.GetAConst().Location), typ), true, nil
	case "interval":
		if len(tc.TypeName.GetTypmods()) > 0 {
			return intervalLiteral(tc, sv.Sval, in.Intervals)
		}
		iv, err := pgdatetime.ParseIntervalStyle(sv.Sval, in.Intervals)
		if err != nil {
			var re *pgdatetime.IntervalRangeError
			if errors.As(err, &re) {
				return nil, false, &sqlerr.Error{Code: re.SQLState(), Message: err.Error(), Err: err}
			}
			return nil, false, &sqlerr.Error{Code: sqlerr.InvalidDatetimeFormat, Message: err.Error(), Err: err}
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(iv.String(), tc.Arg.GetAConst().Location), "interval"), true, nil
	default:
		return nil, false, nil
	}
	v, err := pgdatetime.Parse(sv.Sval, pgType, order)
	if err != nil {
		return nil, false, dateTimeError(err)
	}
	var text string
	switch v.Special {
	case pgdatetime.Now:
		// The statement's time as a constant: a DELETE logged as text
		// must mean the same rows when the log is replayed.
		t := now.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
		now := sqltree.Cast(pg_query.MakeAConstStrNode(t, -1), "timestamptz")
		if typ == "timestamptz" {
			return now, true, nil
		}
		return sqltree.Cast(now, typ), true, nil
	case pgdatetime.Today, pgdatetime.Tomorrow, pgdatetime.Yesterday:
		// Midnight of the day the zone (the one written, else the
		// session's) shows at the statement's time, which in a block is
		// the block's start, as in PostgreSQL.
		days := map[pgdatetime.Special]int{pgdatetime.Today: 0, pgdatetime.Tomorrow: 1, pgdatetime.Yesterday: -1}[v.Special]
		z := loc
		switch {
		case v.Zone != nil:
			z = v.Zone
		case v.HasZone:
			z = time.FixedZone("", v.Offset)
		}
		t := now.In(z)
		midnight := time.Date(t.Year(), t.Month(), t.Day()+days, 0, 0, 0, 0, z)
		switch typ {
		case "date":
			text = midnight.Format("2006-01-02")
		case "timestamp":
			text = midnight.Format("2006-01-02 15:04:05")
		default:
			text = midnight.UTC().Format("2006-01-02 15:04:05") + "+00"
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(text, -1), typ), true, nil
	}
	switch typ {
	case "date":
		text = v.Date()
	case "timestamp":
		text = v.Timestamp()
	default:
		text = v.Timestamptz(loc)
	}
	out := &pg_query.TypeCast{Arg: pg_query.MakeAConstStrNode(text, tc.Arg.GetAConst().Location), Location: tc.Location,
		TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(typ)}, Typemod: -1, Typmods: tc.TypeName.Typmods}}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: out}}, true, nil
}

// TimeOfDayText reads time or timetz input (withZone) by PostgreSQL's
// rules and writes it as the engine reads it. The engine holds 24:00:00,
// but its driver hands it over as midnight: it is refused rather than
// shown as 00:00:00.
func TimeOfDayText(s string, withZone bool, in Input) (string, error) {
	v, err := pgdatetime.ParseTime(s, withZone, in.Order, in.Loc, in.Now)
	if err != nil {
		return "", dateTimeError(err)
	}
	if v.Micros == pgdatetime.MicrosPerDay && !withZone {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "time 24:00:00 is not supported; use 00:00:00 or 23:59:59.999999")
	}
	return schema.TimeText(v.Micros, v.Offset, withZone), nil
}

// dateTimeError is the SQL error of input the reader refuses.
func dateTimeError(err error) error {
	var re *pgdatetime.RangeError
	var ze *pgdatetime.ZoneError
	var de *pgdatetime.DisplacementError
	switch {
	case errors.As(err, &re):
		return &sqlerr.Error{Code: sqlerr.DatetimeOverflow, Message: err.Error(), Err: err}
	case errors.As(err, &de):
		return &sqlerr.Error{Code: "22009", Message: err.Error(), Err: err}
	case errors.As(err, &ze):
		return &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Message: err.Error(), Err: err}
	}
	return &sqlerr.Error{Code: sqlerr.InvalidDatetimeFormat, Message: err.Error(), Err: err}
}

// Interval field masks of PostgreSQL's interval typmod (datetime.h).
const (
	intervalMonth  = 1 << 1
	intervalYear   = 1 << 2
	intervalDay    = 1 << 3
	intervalHour   = 1 << 10
	intervalMinute = 1 << 11
	intervalSecond = 1 << 12
)

var intervalUnits = map[int64]string{
	intervalYear: "year", intervalMonth: "month", intervalDay: "day",
	intervalHour: "hour", intervalMinute: "minute", intervalSecond: "second",
}

// intervalLiteral reads an interval constant with field restrictions
// (interval '1 2:03:04' day to minute, interval '1:30' minute to second,
// interval(2) '…') as PostgreSQL does: a bare number counts in the last
// field named, minutes and seconds may be written m:ss, and the fields
// below the last one named are cut off (seconds rounded to the precision).
func intervalLiteral(tc *pg_query.TypeCast, text string, style pgdatetime.IntervalStyle) (*pg_query.Node, bool, error) {
	mods := tc.TypeName.GetTypmods()
	if len(mods) == 0 {
		return nil, false, nil
	}
	if fullRange(mods) {
		return nil, false, nil
	}
	iv, err := IntervalValue(tc.TypeName, text, style)
	if err != nil {
		return nil, false, err
	}
	out := &pg_query.TypeCast{Arg: pg_query.MakeAConstStrNode(iv.String(), -1), Location: tc.Location,
		TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("interval")}, Typemod: -1}}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: out}}, true, nil
}

// intervalFullRange is the field mask of an interval typmod that names
// no fields.
const intervalFullRange = 0x7FFF

// fullRange reports whether interval typmods restrict nothing: no fields
// and no precision below microseconds.
func fullRange(mods []*pg_query.Node) bool {
	mask := int64(mods[0].GetAConst().GetIval().GetIval())
	prec := int64(-1)
	if len(mods) > 1 {
		prec = int64(mods[1].GetAConst().GetIval().GetIval())
	}
	return mask == intervalFullRange && (prec < 0 || prec >= 6)
}

// IntervalValue is the value of the interval text typed as tn (interval,
// or interval with fields or a precision: intervalLiteral's rules), as
// PostgreSQL's interval input gives it; the error carries its SQLSTATE.
func IntervalValue(tn *pg_query.TypeName, text string, style pgdatetime.IntervalStyle) (pgdatetime.Interval, error) {
	mods := tn.GetTypmods()
	mask, prec := int64(intervalFullRange), int64(-1)
	if len(mods) > 0 {
		mask = int64(mods[0].GetAConst().GetIval().GetIval())
	}
	if len(mods) > 1 {
		prec = int64(mods[1].GetAConst().GetIval().GetIval())
	}
	last := int64(intervalSecond)
	if mask != intervalFullRange {
		for _, b := range []int64{intervalYear, intervalMonth, intervalDay, intervalHour, intervalMinute, intervalSecond} {
			if mask&b != 0 {
				last = b
			}
		}
	}
	in := strings.TrimSpace(text)
	if _, err := strconv.ParseFloat(in, 64); err == nil && len(mods) > 0 {
		in += " " + intervalUnits[last]
	} else if f := strings.Fields(in); mask == intervalDay|intervalHour && len(f) == 2 && isInteger(f[0]) && isInteger(f[1]) {
		// DAY TO HOUR reads "d h".
		in = f[0] + " days " + f[1] + " hours"
	} else if mask == intervalMinute|intervalSecond {
		fields := strings.Fields(in)
		for i, f := range fields {
			if minSec.MatchString(f) {
				sign := ""
				if f[0] == '-' || f[0] == '+' {
					sign, f = f[:1], f[1:]
				}
				fields[i] = sign + "0:" + f
			}
		}
		in = strings.Join(fields, " ")
	}
	iv, err := pgdatetime.ParseIntervalStyle(in, style)
	if err != nil {
		var re *pgdatetime.IntervalRangeError
		if errors.As(err, &re) {
			return iv, &sqlerr.Error{Code: re.SQLState(), Message: err.Error(), Err: err}
		}
		return iv, &sqlerr.Error{Code: sqlerr.InvalidDatetimeFormat, Message: fmt.Sprintf("invalid input syntax for type interval: %q", text), Err: err}
	}
	switch last {
	case intervalYear:
		iv.Months, iv.Days, iv.Micros = iv.Months/12*12, 0, 0
	case intervalMonth:
		iv.Days, iv.Micros = 0, 0
	case intervalDay:
		iv.Micros = 0
	case intervalHour:
		iv.Micros = iv.Micros / 3_600_000_000 * 3_600_000_000
	case intervalMinute:
		iv.Micros = iv.Micros / 60_000_000 * 60_000_000
	case intervalSecond:
		if prec >= 0 && prec < 6 {
			scale := int64(1)
			for range 6 - prec {
				scale *= 10
			}
			if iv.Micros >= 0 {
				iv.Micros = (iv.Micros + scale/2) / scale * scale
			} else {
				iv.Micros = -((-iv.Micros + scale/2) / scale * scale)
			}
		}
	}
	return iv, nil
}

// minSec is a time field read as minutes and seconds under MINUTE TO
// SECOND: m:ss with an optional fraction.
var minSec = regexp.MustCompile(`^[+-]?\d+:\d+(\.\d*)?$`)

// isoForms are the forms DateTimeLiteral writes and tsdb's parameters
// take (an astronomical year, 0 and negative ones included): the engine
// reads them as they are.
var isoForms = map[string]*regexp.Regexp{
	"date":        regexp.MustCompile(`^-?\d{4}-\d\d-\d\d$`),
	"timestamp":   regexp.MustCompile(`^-?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?$`),
	"interval":    regexp.MustCompile(`^-?\d+ months -?\d+ days -?\d+ hours -?\d+ microseconds$`),
	"timestamptz": regexp.MustCompile(`^-?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$`),
	"time":        regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6}$`),
	"timetz":      regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d:\d\d$`),
}

// IsISOLiteral reports whether a cast constant is already in the form
// DateTimeLiteral writes, so rewriting it again changes nothing.
func IsISOLiteral(tc *pg_query.TypeCast) bool {
	sv := tc.Arg.GetAConst().GetSval()
	if sv == nil {
		return true
	}
	re, ok := isoForms[sqltree.LastName(tc.TypeName.GetNames())]
	return ok && re.MatchString(sv.Sval)
}

// isInteger reports whether s is a whole number with an optional sign.
func isInteger(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// intervalTruncation is a value cast to an interval with field
// restrictions (f1::interval day to minute): the fields below the last
// one named are cut off, as PostgreSQL's AdjustIntervalForTypmod does
// (datetrunc is the engine's date_trunc by a name not rewritten again).
// A precision of seconds is refused for a value that is not a constant.
func intervalTruncation(tc *pg_query.TypeCast) *pg_query.Node {
	mods := tc.TypeName.Typmods
	mask := int64(mods[0].GetAConst().GetIval().GetIval())
	tc.TypeName.Typmods = nil
	if len(mods) > 1 && mods[1].GetAConst().GetIval().GetIval() < 6 {
		return Raise(sqlerr.FeatureNotSupported, "interval(p) of a value that is not a constant is not supported")
	}
	last := int64(0)
	for _, b := range []int64{intervalYear, intervalMonth, intervalDay, intervalHour, intervalMinute, intervalSecond} {
		if mask != 0x7FFF && mask&b != 0 {
			last = b
		}
	}
	if last == 0 || last == intervalSecond {
		return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: tc}}
	}
	return call("datetrunc", pg_query.MakeAConstStrNode(intervalUnits[last], -1), &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: tc}})
}

// justify answers justify_hours, justify_days and justify_interval of a
// constant interval; the engine has no function to give them a value.
func justify(name string, arg *pg_query.Node, in Input) *pg_query.Node {
	tc := arg.GetTypeCast()
	if tc == nil || sqltree.LastName(tc.TypeName.GetNames()) != "interval" || len(tc.TypeName.GetTypmods()) > 0 || tc.Arg.GetAConst().GetSval() == nil {
		return Raise(sqlerr.FeatureNotSupported, name+"() is supported for a constant interval only")
	}
	iv, err := pgdatetime.ParseIntervalStyle(tc.Arg.GetAConst().GetSval().Sval, in.Intervals)
	if err != nil {
		return Raise(sqlerr.InvalidDatetimeFormat, err.Error())
	}
	var ok bool
	switch name {
	case "justify_hours":
		iv, ok = iv.JustifyHours()
	case "justify_days":
		iv, ok = iv.JustifyDays()
	case "justify_interval":
		iv, ok = iv.JustifyInterval()
	default:
		return Raise(sqlerr.UndefinedFunction, "function "+name+" does not exist")
	}
	if !ok {
		return Raise(sqlerr.DatetimeOverflow, "interval out of range")
	}
	return sqltree.Cast(pg_query.MakeAConstStrNode(iv.String(), -1), "interval")
}
