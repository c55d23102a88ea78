package dialect

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// atTimeZone rewrites timezone(zone, x) (x AT TIME ZONE zone) whose zone is
// a constant the engine would read otherwise than PostgreSQL: PostgreSQL
// looks a name up among its abbreviations first (PST is always -08, where
// the engine's ICU reads PST as Los Angeles with daylight time), reads a
// POSIX offset as hours west ('UTC+3' is three hours behind UTC; ICU reads
// it as ahead), and takes an interval as an offset east. A dynamic
// abbreviation (MSK) means the offset it stood for at that time, which the
// engine cannot compute: it is computed here for a constant value and
// refused otherwise. A string given as the value is a timestamptz, as
// PostgreSQL resolves it. It reports whether it changed anything.
//
// The engine names written here (GMT-08:00, ICU's sign) would read as
// POSIX zones (the other sign) if rewritten again: like every rewrite of
// RewritePG, it runs once over a tree.
func atTimeZone(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	changed := false
	if sv := fc.Args[1].GetAConst().GetSval(); sv != nil {
		fc.Args[1] = sqltree.Cast(fc.Args[1], "timestamptz")
		changed = true
	}
	zone := fc.Args[0]
	if tc := zone.GetTypeCast(); tc != nil && sqltree.LastName(tc.TypeName.GetNames()) == "interval" {
		if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
			iv, err := pgdatetime.ParseInterval(sv.Sval)
			if err != nil || iv.Months != 0 || iv.Days != 0 || iv.Micros%60_000_000 != 0 {
				return Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("interval time zone %q must not include months, days or seconds", sv.Sval)), true
			}
			fc.Args[0] = pg_query.MakeAConstStrNode(icuOffset(int(iv.Micros/1_000_000)), -1)
			return nil, true
		}
	}
	sv := zone.GetAConst().GetSval()
	if sv == nil {
		return nil, changed
	}
	name := strings.TrimSpace(sv.Sval)
	if off, dyn, ok := pgdatetime.Abbreviation(name); ok {
		if dyn == "" {
			fc.Args[0] = pg_query.MakeAConstStrNode(icuOffset(off), -1)
			return nil, true
		}
		return dynamicAtTimeZone(fc, name, dyn)
	}
	if _, err := time.LoadLocation(name); err == nil || strings.EqualFold(name, "utc") {
		return nil, changed
	}
	if z, ok := zoneOf(name); ok {
		fc.Args[0] = pg_query.MakeAConstStrNode(z.engine, -1)
		return nil, true
	}
	return Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("time zone %q not recognized", name)), true
}

// icuOffset names a fixed offset (seconds east) as ICU does: GMT+05:30.
func icuOffset(secs int) string {
	sign := "+"
	if secs < 0 {
		sign, secs = "-", -secs
	}
	return fmt.Sprintf("GMT%s%02d:%02d", sign, secs/3600, secs%3600/60)
}

// dynamicAtTimeZone computes x AT TIME ZONE abbrev for a dynamic
// abbreviation and a constant x.
func dynamicAtTimeZone(fc *pg_query.FuncCall, abbrev, zone string) (*pg_query.Node, bool) {
	loc, err := time.LoadLocation(zone)
	refuse := Raise(sqlerr.FeatureNotSupported, fmt.Sprintf("time zone abbreviation %q is supported with a constant timestamp only; name the zone (%s)", abbrev, zone))
	tc := fc.Args[1].GetTypeCast()
	if err != nil || tc == nil {
		return refuse, true
	}
	sv := tc.Arg.GetAConst().GetSval()
	if sv == nil {
		return refuse, true
	}
	switch sqltree.LastName(tc.TypeName.GetNames()) {
	case "timestamp":
		// The wall clock read in the abbreviation: timestamptz input.
		v, err := pgdatetime.Parse(sv.Sval+" "+abbrev, "timestamp with time zone", pgdatetime.MDY)
		if err != nil {
			return refuse, true
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(v.Timestamptz(time.UTC), -1), "timestamptz"), true
	case "timestamptz":
		v, err := pgdatetime.Parse(sv.Sval, "timestamp with time zone", pgdatetime.MDY)
		if err != nil || v.Special != pgdatetime.Finite {
			return refuse, true
		}
		t, err := time.Parse("2006-01-02 15:04:05.999999Z07", v.Timestamptz(time.UTC))
		if err != nil {
			return refuse, true
		}
		off, ok := pgdatetime.AbbreviationOffset(t, loc, abbrev)
		if !ok {
			return refuse, true
		}
		wall := t.Add(time.Duration(off) * time.Second).UTC().Format("2006-01-02 15:04:05.999999")
		return sqltree.Cast(pg_query.MakeAConstStrNode(wall, -1), "timestamp"), true
	}
	return refuse, true
}

// isoOffset is a numeric zone as timestamptz input and make_timestamptz
// read it: hours east, with optional minutes and seconds (+2, -04:30,
// +0530).
var isoOffset = regexp.MustCompile(`^[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?:?$`)

// makeTimestamptzZone rewrites make_timestamptz(…, zone) whose zone is a
// constant the engine would read otherwise: a numeric offset counts east
// (the engine refused it), an abbreviation is PostgreSQL's (EDT is always
// -04), a dynamic one (MSK) is computed for constant fields.
func makeTimestamptzZone(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	sv := fc.Args[6].GetAConst().GetSval()
	if sv == nil {
		return nil, false
	}
	z := strings.TrimSpace(sv.Sval)
	set := func(engine string) (*pg_query.Node, bool) {
		fc.Args[6] = pg_query.MakeAConstStrNode(engine, -1)
		return nil, true
	}
	switch {
	case isoOffset.MatchString(z):
		digits := strings.NewReplacer(":", "", "+", "", "-", "").Replace(z)
		if len(digits)%2 == 1 {
			digits = "0" + digits
		}
		h, m, s := atoiDigits(digits[0:2]), 0, 0
		if len(digits) >= 4 {
			m = atoiDigits(digits[2:4])
		}
		if len(digits) >= 6 {
			s = atoiDigits(digits[4:6])
		}
		if h > 15 || m > 59 || s > 59 {
			return Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("numeric time zone %q out of range", z)), true
		}
		secs := h*3600 + m*60 + s
		if z[0] == '-' {
			secs = -secs
		}
		if secs%60 != 0 {
			return Raise(sqlerr.FeatureNotSupported, fmt.Sprintf("time zone %q: offsets with seconds are not supported", z)), true
		}
		return set(icuOffset(secs))
	case isInteger(z):
		return Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("invalid input syntax for type numeric time zone: %q", z)), true
	}
	if off, dyn, ok := pgdatetime.Abbreviation(z); ok {
		if dyn == "" {
			return set(icuOffset(off))
		}
		// The fields read with the abbreviation, as timestamptz input.
		var parts [6]string
		for i, a := range fc.Args[:6] {
			c := a.GetAConst()
			switch {
			case c == nil:
				return Raise(sqlerr.FeatureNotSupported, fmt.Sprintf("time zone abbreviation %q is supported with constant fields only; name the zone (%s)", z, dyn)), true
			case c.GetIval() != nil:
				parts[i] = fmt.Sprint(c.GetIval().Ival)
			case c.GetFval() != nil:
				parts[i] = c.GetFval().Fval
			default:
				return Raise(sqlerr.FeatureNotSupported, "make_timestamptz of these fields is not supported"), true
			}
		}
		v, err := pgdatetime.Parse(fmt.Sprintf("%s-%s-%s %s:%s:%s %s", parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], z), "timestamp with time zone", pgdatetime.YMD)
		if err != nil {
			return Raise(sqlerr.InvalidDatetimeFormat, err.Error()), true
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(v.Timestamptz(time.UTC), -1), "timestamptz"), true
	}
	if _, err := time.LoadLocation(z); err == nil {
		return nil, false
	}
	if zo, ok := zoneOf(z); ok {
		return set(zo.engine)
	}
	if _, ok := pgdatetime.PosixZone(z); ok && len(fc.Funcname) == 1 {
		// A POSIX specification with its rules (FOO8BAR,
		// PST8PDT,M3.2.0,M11.1.0), which the engine does not read: Go's
		// make_timestamptz does.
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tsdb_make_timestamptz")}
		return nil, true
	}
	return Raise(sqlerr.InvalidParameterValue, fmt.Sprintf("time zone %q not recognized", z)), true
}

func atoiDigits(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
