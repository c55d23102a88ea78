package planner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/pgtext"
	"tsdb/internal/sqlerr"
)

// toCharNumber is the engine function _tsdb_to_char_num(value, type,
// format) that to_char of a number is rewritten to (dialect.ToCharNumber):
// the value as text, its engine type's name, and the template.
type toCharNumber struct{}

func (toCharNumber) Config() duckdb.ScalarFuncConfig {
	text, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		panic(err) // a fixed, valid type
	}
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{text, text, text}, ResultTypeInfo: text}
}

func (toCharNumber) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF("_tsdb_to_char_num", &err)
		value, _ := values[0].(string)
		typeName, _ := values[1].(string)
		format, _ := values[2].(string)
		text, ferr := dialect.ToCharNumber(value, typeName, format)
		if ferr != nil {
			// Raised as the dialect raises errors in SQL, so that the
			// client gets the SQLSTATE (dialect.EngineError).
			return nil, fmt.Errorf("[tsdb %s] %s", sqlerr.Code(ferr), ferr.Error())
		}
		return text, nil
	}}
}

// intervalText is the engine function _tsdb_interval_text(value, style)
// that a cast of an interval to text is rewritten to: PostgreSQL's text
// of the interval in an IntervalStyle (pgdatetime.IntervalStyle's value).
// Its argument is of any type, since the rewrite names it for casts of
// every type and only runs it for intervals.
type intervalText struct{}

func (intervalText) Config() duckdb.ScalarFuncConfig {
	anyType, err := duckdb.NewTypeInfo(duckdb.TYPE_ANY)
	if err != nil {
		panic(err) // a fixed, valid type
	}
	style, err := duckdb.NewTypeInfo(duckdb.TYPE_INTEGER)
	if err != nil {
		panic(err)
	}
	text, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		panic(err)
	}
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{anyType, style}, ResultTypeInfo: text}
}

func (intervalText) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF("_tsdb_interval_text", &err)
		iv, ok := values[0].(duckdb.Interval)
		if !ok {
			return nil, fmt.Errorf("[tsdb %s] _tsdb_interval_text of %T", sqlerr.InternalError, values[0])
		}
		style, _ := values[1].(int32)
		return pgdatetime.Interval{Months: iv.Months, Days: iv.Days, Micros: iv.Micros}.Format(pgdatetime.IntervalStyle(style)), nil
	}}
}

// floatText is the engine function _tsdb_float_text(value, extra digits)
// that a cast of a float to text is rewritten to: PostgreSQL's output of
// a float8 or float4 under extra_float_digits. Its argument is of any type
// (see intervalText).
type floatText struct{}

func (floatText) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: udfTypes(duckdb.TYPE_ANY, duckdb.TYPE_INTEGER), ResultTypeInfo: udfTypes(duckdb.TYPE_VARCHAR)[0]}
}

func (floatText) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF("_tsdb_float_text", &err)
		extra, _ := values[1].(int32)
		switch f := values[0].(type) {
		case float64:
			return string(dialect.AppendFloat(nil, f, 64, int(extra))), nil
		case float32:
			return string(dialect.AppendFloat(nil, float64(f), 32, int(extra))), nil
		}
		return nil, fmt.Errorf("[tsdb %s] _tsdb_float_text of %T", sqlerr.InternalError, values[0])
	}}
}

// zoneCache holds the zones of the TimeZone values the engine's Go
// functions were given, read once each. It keeps at most maxZones: a
// client may set any number of POSIX zones ('<x1>+3', '<x2>+3', …).
type zoneCache struct {
	m sync.Map // TimeZone value → *time.Location
	n atomic.Int64
}

const maxZones = 1024

// get is the zone a TimeZone value names (UTC for one that names none).
func (c *zoneCache) get(zone string) *time.Location {
	if loc, ok := c.m.Load(zone); ok {
		return loc.(*time.Location)
	}
	l, ok := dialect.ZoneLocation(zone)
	if !ok {
		l = time.UTC
	}
	if c.n.Load() >= maxZones {
		return l
	}
	loc, loaded := c.m.LoadOrStore(zone, l)
	if !loaded {
		c.n.Add(1)
	}
	return loc.(*time.Location)
}

// style is the session's text style a rewrite passed to an engine
// function as five arguments: DateStyle, its order, TimeZone,
// IntervalStyle and extra_float_digits.
func (c *zoneCache) style(v []driver.Value) pgtext.Style {
	style, _ := v[0].(int32)
	order, _ := v[1].(int32)
	zone, _ := v[2].(string)
	intervals, _ := v[3].(int32)
	digits, _ := v[4].(int32)
	return pgtext.Style{Loc: c.get(zone), ExtraDigits: int(digits), Intervals: pgdatetime.IntervalStyle(intervals),
		Dates: pgdatetime.DateStyle(style), Order: pgdatetime.Order(order)}
}

// listElement is the type OID of the innermost elements of a list of
// the engine's type ty (INTEGER[][] → int4).
func listElement(ty string) uint32 {
	for strings.HasSuffix(ty, "[]") {
		ty = strings.TrimSuffix(ty, "[]")
	}
	return columnFor("", ty).OID
}

// dateTextFunctions are the Go functions that write dates and times as
// text in the session's zone (its TimeZone value, read once per engine).
// Their first argument is of any type, since the rewrites name them for
// values of every type and run them only for dates and timestamps (see
// intervalText); kind is pgdatetime.TimeKind's value.
func dateTextFunctions() []goScalar {
	zones := &zoneCache{}
	const (
		anyType = duckdb.TYPE_ANY
		integer = duckdb.TYPE_INTEGER
		text    = duckdb.TYPE_VARCHAR
	)
	timeOf := func(name string, v driver.Value) (time.Time, error) {
		t, ok := v.(time.Time)
		if !ok {
			return t, fmt.Errorf("%s of %T", name, v)
		}
		return t, nil
	}
	return []goScalar{
		// _tsdb_datetime_text(value, kind, style, order, zone): a cast of
		// a date or timestamp to text when the session's DateStyle is not
		// ISO (the engine writes ISO itself).
		{"_tsdb_datetime_text", []duckdb.Type{anyType, integer, integer, integer, text}, text, func(v []driver.Value) (any, error) {
			t, err := timeOf("_tsdb_datetime_text", v[0])
			if err != nil {
				return nil, err
			}
			kind, _ := v[1].(int32)
			style, _ := v[2].(int32)
			order, _ := v[3].(int32)
			zone, _ := v[4].(string)
			switch pgdatetime.EngineInfinity(t, kind == int32(pgdatetime.KindDate)) {
			case 1:
				return "infinity", nil
			case -1:
				return "-infinity", nil
			}
			return string(pgdatetime.AppendDateTime(nil, t, pgdatetime.TimeKind(kind), zones.get(zone), pgdatetime.DateStyle(style), pgdatetime.Order(order))), nil
		}},
		// _tsdb_value_text(value, type, style, order, zone, intervals,
		// digits): a list or a row value cast to text, written as the
		// session writes the array or record ({1,2}, {"a b",NULL},
		// {{1,2},{3,4}}, (1,a,)), where the engine's cast writes its own
		// list and struct text ([1, 2], {'f1': 1}). type is the engine's
		// name of the value's type, which says what its elements or
		// fields are (and the fields' order, which the driver's map of a
		// struct does not keep).
		{"_tsdb_value_text", []duckdb.Type{anyType, text, integer, integer, text, integer, integer}, text, func(v []driver.Value) (any, error) {
			ty, _ := v[1].(string)
			st := zones.style(v[2:7])
			col := columnFor("", ty)
			if arr, ok := dialect.ArrayOf(listElement(ty)); ok && col.record == nil {
				// Of a list of lists too: its elements' type, not text's.
				col.OID = arr
			}
			value := v[0]
			if col.record != nil {
				if err := checkRecords([]Column{{Name: "row", record: col.record}}); err != nil {
					return nil, err
				}
				rec, err := col.record.value(v[0])
				if err != nil {
					return nil, err
				}
				value = rec
			} else if _, ok := v[0].([]any); !ok {
				return nil, fmt.Errorf("_tsdb_value_text of %T", v[0])
			}
			return string(pgtext.Encode(value, col.OID, st)), nil
		}},
		// _tsdb_array_join(list, type, separator, null text, has null
		// text, style, order, zone, intervals, digits): PostgreSQL's
		// array_to_string, its elements written as the session writes
		// them (2, not the engine's 2.0), a NULL as the null text or
		// left out, a multidimensional array flattened.
		{"_tsdb_array_join", []duckdb.Type{anyType, text, text, text, duckdb.TYPE_BOOLEAN, integer, integer, text, integer, integer}, text, func(v []driver.Value) (any, error) {
			list, ok := v[0].([]any)
			if !ok {
				return nil, fmt.Errorf("_tsdb_array_join of %T", v[0])
			}
			ty, _ := v[1].(string)
			sep, _ := v[2].(string)
			nullText, _ := v[3].(string)
			hasNull, _ := v[4].(bool)
			st := zones.style(v[5:10])
			elem := listElement(ty)
			var b strings.Builder
			first := true
			var join func(xs []any)
			join = func(xs []any) {
				for _, x := range xs {
					if sub, ok := x.([]any); ok {
						join(sub)
						continue
					}
					if x == nil && !hasNull {
						continue
					}
					if !first {
						b.WriteString(sep)
					}
					first = false
					if x == nil {
						b.WriteString(nullText)
						continue
					}
					b.Write(pgtext.Encode(x, elem, st))
				}
			}
			join(list)
			return b.String(), nil
		}},
		// _tsdb_to_timestamp(text, template, zone) and _tsdb_to_date(text,
		// template): PostgreSQL's to_timestamp and to_date of a text by a
		// template (pgdatetime.ToTimestamp), the wall clock read in the
		// session's zone unless TZH/TZM give one.
		{"_tsdb_to_timestamp", []duckdb.Type{text, text, text}, duckdb.TYPE_TIMESTAMP_TZ, func(v []driver.Value) (any, error) {
			s, _ := v[0].(string)
			tmpl, _ := v[1].(string)
			zone, _ := v[2].(string)
			wall, offset, hasZone, err := pgdatetime.ToTimestamp(s, tmpl)
			if err != nil {
				return nil, err
			}
			if hasZone {
				return wall.Add(-time.Duration(offset) * time.Second), nil
			}
			return pgdatetime.WallInstant(wall, zones.get(zone)), nil
		}},
		{"_tsdb_to_date", []duckdb.Type{text, text}, duckdb.TYPE_DATE, func(v []driver.Value) (any, error) {
			s, _ := v[0].(string)
			tmpl, _ := v[1].(string)
			wall, _, _, err := pgdatetime.ToTimestamp(s, tmpl)
			if err != nil {
				return nil, err
			}
			return time.Date(wall.Year(), wall.Month(), wall.Day(), 0, 0, 0, 0, time.UTC), nil
		}},
		// _tsdb_zone_abbrev(value, kind, zone): to_char's TZ, the
		// abbreviation PostgreSQL prints for the zone at that instant
		// (PST, CEST, +0545) for a timestamptz, nothing for a timestamp,
		// which has no zone. The engine's strftime %Z printed the zone's
		// name (PST8PDT).
		{"_tsdb_zone_abbrev", []duckdb.Type{anyType, integer, text}, text, func(v []driver.Value) (any, error) {
			t, err := timeOf("_tsdb_zone_abbrev", v[0])
			if err != nil {
				return nil, err
			}
			if kind, _ := v[1].(int32); kind != int32(pgdatetime.KindTimestamptz) {
				return "", nil
			}
			zone, _ := v[2].(string)
			return pgdatetime.ZoneAbbreviation(t, zones.get(zone)), nil
		}},
	}
}

// registerFunctions adds tsdb's Go functions to the engine's catalog,
// where every connection finds them.
func registerFunctions(ctx context.Context, db *sql.DB) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := duckdb.RegisterScalarUDF(c, "_tsdb_to_char_num", toCharNumber{}); err != nil {
		return err
	}
	if err := duckdb.RegisterScalarUDF(c, "_tsdb_interval_text", intervalText{}); err != nil {
		return err
	}
	if err := duckdb.RegisterScalarUDF(c, "_tsdb_float_text", floatText{}); err != nil {
		return err
	}
	if err := duckdb.RegisterScalarUDF(c, "_tsdb_float_var", floatVariance{}); err != nil {
		return err
	}
	re := &dialect.RegexpCache{}
	for _, f := range slices.Concat(textFunctions(re), degreeFunctions(), dateTextFunctions()) {
		if err := duckdb.RegisterScalarUDF(c, f.name, f); err != nil {
			return fmt.Errorf("register %s: %w", f.name, err)
		}
	}
	for _, f := range listFunctions(re) {
		if err := duckdb.RegisterScalarUDF(c, f.name, f); err != nil {
			return fmt.Errorf("register %s: %w", f.name, err)
		}
	}
	return nil
}

// recoverUDF turns a panic of a Go function the engine calls into the
// query's error: the engine calls it from C, where a panic would end the
// server, not the statement.
func recoverUDF(name string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("[tsdb %s] %s failed: %v", sqlerr.InternalError, name, r)
	}
}
