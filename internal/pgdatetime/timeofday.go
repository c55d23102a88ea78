package pgdatetime

import "time"

// The type names Parse takes for a time of day.
const (
	TypeTime   = "time without time zone"
	TypeTimetz = "time with time zone"
)

// MicrosPerDay is 24:00:00, the largest time of day PostgreSQL holds.
const MicrosPerDay = 86_400_000_000

// TimeOfDay is a time or timetz value: microseconds since midnight, from
// 00:00:00 to 24:00:00, and for timetz the zone's offset in seconds east
// of UTC.
type TimeOfDay struct {
	Micros int64
	Offset int
}

// ParseTime reads time (withZone false) or timetz input as PostgreSQL's
// time_in and timetz_in do: a time of day with an optional date (read,
// then dropped), AM/PM, a zone (dropped by time), 'allballs' and 'now'
// (now, in the zone loc). A timetz written without a zone takes loc's
// offset on the date it names, or on now's date; a zone by its full name
// (America/New_York) needs a date, whose offset it then has.
func ParseTime(s string, withZone bool, order Order, loc *time.Location, now time.Time) (TimeOfDay, error) {
	typ := TypeTime
	if withZone {
		typ = TypeTimetz
	}
	v, err := Parse(s, typ, order)
	if se, ok := err.(*SyntaxError); ok && !withZone {
		se.Type = "time" // as PostgreSQL's message names it
	}
	if err != nil {
		return TimeOfDay{}, err
	}
	if v.Special == Now {
		t := now.In(loc)
		_, off := t.Zone()
		clock := int64(t.Hour())*3_600_000_000 + int64(t.Minute())*60_000_000 + int64(t.Second())*1_000_000 + int64(t.Nanosecond()/1000)
		return TimeOfDay{Micros: clock, Offset: off}, nil
	}
	if err := v.checkClock(s); err != nil {
		return TimeOfDay{}, err
	}
	if v.HasZone && v.Zone != nil && v.abbrev == "" && !v.hasDate {
		// PostgreSQL cannot tell a full zone name's offset without a
		// date, and refuses the input even for time, which drops it.
		return TimeOfDay{}, &SyntaxError{Type: map[bool]string{false: "time", true: typ}[withZone], Input: s}
	}
	out := TimeOfDay{Micros: v.clockMicros()}
	if !withZone {
		return out, nil
	}
	switch {
	case v.HasZone && v.Zone == nil:
		out.Offset = v.Offset
	default:
		z := loc
		if v.HasZone {
			z = v.Zone
		}
		if !v.hasDate {
			d := now.In(z)
			v.Year, v.Month, v.Day = d.Year(), int(d.Month()), d.Day()
		}
		// The offset the zone has at that wall clock on that date (a
		// dynamic abbreviation's own, see instant).
		v.HasZone, v.Zone = true, z
		wall := time.Date(v.Year, time.Month(v.Month), v.Day, v.Hour, v.Minute, v.Second, v.Micro*1000, time.UTC)
		out.Offset = int(wall.Sub(v.instant(z)) / time.Second)
	}
	return out, nil
}

// checkClock refuses a time of day past 24:00:00 (a 60th second is the
// next minute, as PostgreSQL counts it).
func (v *Value) checkClock(input string) error {
	if v.Hour > 24 || v.Minute > 59 || v.Second > 60 || v.clockMicros() > MicrosPerDay {
		return &RangeError{Input: input}
	}
	return nil
}

func (v *Value) clockMicros() int64 {
	return int64(v.Hour)*3_600_000_000 + int64(v.Minute)*60_000_000 + int64(v.Second)*1_000_000 + int64(v.Micro)
}
