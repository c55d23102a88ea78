package pgdatetime

// Writing a value read in the one form the engine reads unambiguously.

import (
	"fmt"
	"strings"
	"time"
)

// Date writes v as a date the engine reads: yyyy-mm-dd, a negative year
// for BC, or ±infinity. Any time of day and zone are dropped, as
// PostgreSQL's date input drops them.
func (v Value) Date() string {
	if inf, ok := v.infinite(); ok {
		return inf
	}
	return ymd(v.Year, v.Month, v.Day)
}

// infinite is the engine's word for ±infinity, when v is one.
func (v Value) infinite() (string, bool) {
	switch v.Special {
	case Infinity:
		return "infinity", true
	case NegInfinity:
		return "-infinity", true
	}
	return "", false
}

func ymd(y, m, d int) string {
	if y < 0 {
		return fmt.Sprintf("-%04d-%02d-%02d", -y, m, d)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

// Timestamp writes v as a timestamp without time zone: the wall clock as
// given, any zone ignored (PostgreSQL ignores it too).
func (v Value) Timestamp() string {
	if inf, ok := v.infinite(); ok {
		return inf
	}
	// time.Date rolls 24:00:00 and a 60th second over, as PostgreSQL does.
	t := time.Date(v.Year, time.Month(v.Month), v.Day, v.Hour, v.Minute, v.Second, 0, time.UTC)
	return v.clock(t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second())
}

func (v Value) clock(y, mo, d, h, mi, s int) string {
	out := ymd(y, mo, d) + fmt.Sprintf(" %02d:%02d:%02d", h, mi, s)
	if v.Micro > 0 {
		out += strings.TrimRight(fmt.Sprintf(".%06d", v.Micro), "0")
	}
	return out
}

// Timestamptz writes v as an instant in UTC ("…+00") when it names its
// zone; without one, it writes the wall clock read in loc (the session's
// zone).
func (v Value) Timestamptz(loc *time.Location) string {
	if inf, ok := v.infinite(); ok {
		return inf
	}
	t := v.instant(loc)
	out := t.Format("2006-01-02 15:04:05.999999")
	if t.Year() <= 0 {
		out = ymd(t.Year(), int(t.Month()), t.Day()) + t.Format(" 15:04:05.999999")
	} else if t.Year() > 9999 {
		out = fmt.Sprintf("%d", t.Year()) + t.Format("-01-02 15:04:05.999999")
	}
	return out + "+00"
}

// instant is the finite v as an instant: in its own zone when it names
// one, else in loc.
func (v Value) instant(loc *time.Location) time.Time {
	// time.Date normalises 24:00:00 and a 60th second into the next
	// day or minute, as PostgreSQL does.
	wall := time.Date(v.Year, time.Month(v.Month), v.Day, v.Hour, v.Minute, v.Second, v.Micro*1000, time.UTC)
	var t time.Time
	switch {
	case v.HasZone && v.Zone == nil:
		t = wall.Add(-time.Duration(v.Offset) * time.Second)
	default:
		z := loc
		if v.HasZone {
			z = v.Zone
		}
		t = WallInstant(wall, z)
		if v.abbrev != "" {
			// A dynamic abbreviation means the offset it stood for in
			// its zone at that time (MSK was +3, then +4 from 2011-03-27).
			if off, ok := AbbreviationOffset(t, z, v.abbrev); ok {
				t = wall.Add(-time.Duration(off) * time.Second)
			}
		}
	}
	return t
}
