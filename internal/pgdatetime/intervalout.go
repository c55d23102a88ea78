package pgdatetime

import (
	"strconv"
	"strings"
)

// IntervalStyle is PostgreSQL's IntervalStyle setting: how an interval is
// written as text (and, for SQLStandard, how a leading sign is read).
type IntervalStyle int

// The four styles PostgreSQL has.
const (
	Postgres IntervalStyle = iota
	PostgresVerbose
	SQLStandard
	ISO8601
)

// IntervalStyleOf reads an IntervalStyle setting's value.
func IntervalStyleOf(s string) (IntervalStyle, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "postgres":
		return Postgres, true
	case "postgres_verbose":
		return PostgresVerbose, true
	case "sql_standard":
		return SQLStandard, true
	case "iso_8601":
		return ISO8601, true
	}
	return Postgres, false
}

// String is the setting's value.
func (s IntervalStyle) String() string {
	return [...]string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"}[s]
}

// ivFields are an interval's fields as PostgreSQL's interval2itm splits
// it: years and months from the months, hours to microseconds from the
// time, each carrying the sign of the part it came from.
type ivFields struct {
	year, mon, day, hour, min, sec, usec int64
}

func (iv Interval) fields() ivFields {
	t := iv.Micros
	return ivFields{
		year: int64(iv.Months) / 12, mon: int64(iv.Months) % 12, day: int64(iv.Days),
		hour: t / 3_600_000_000, min: t / 60_000_000 % 60, sec: t / 1_000_000 % 60, usec: t % 1_000_000,
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// appendSeconds writes |sec| (two digits when pad) and the fraction of
// |usec| without trailing zeros, as PostgreSQL's AppendSeconds.
func appendSeconds(b []byte, sec, usec int64, pad bool) []byte {
	s := abs64(sec)
	if pad && s < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, s, 10)
	if usec != 0 {
		frac := strconv.FormatInt(abs64(usec)+1_000_000, 10)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(frac, "0")...)
	}
	return b
}

// appendClock writes |hour|:|min|:|sec| and the fraction, minutes and
// seconds in two digits, the hours in two when padHour.
func (f ivFields) appendClock(b []byte, padHour bool) []byte {
	h, m := abs64(f.hour), abs64(f.min)
	if padHour && h < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, h, 10)
	b = append(b, ':')
	if m < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, m, 10)
	b = append(b, ':')
	return appendSeconds(b, f.sec, f.usec, true)
}

// Format writes the interval as PostgreSQL does in style.
func (iv Interval) Format(style IntervalStyle) string {
	f := iv.fields()
	var b []byte
	switch style {
	case PostgresVerbose:
		b = f.verbose()
	case SQLStandard:
		b = f.sqlStandard()
	case ISO8601:
		b = f.iso()
	default:
		b = f.postgres()
	}
	return string(b)
}

// postgres is "1 year 2 mons -3 days +04:05:06.5": a unit is plural
// unless its count is exactly 1, and a positive part after a negative one
// carries a +.
func (f ivFields) postgres() []byte {
	var b []byte
	empty, afterNegative := true, false
	part := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if !empty {
			b = append(b, ' ')
		}
		if afterNegative && n > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ' ')
		b = append(b, unit...)
		if n != 1 {
			b = append(b, 's')
		}
		empty, afterNegative = false, n < 0
	}
	part(f.year, "year")
	part(f.mon, "mon")
	part(f.day, "day")
	negTime := f.hour < 0 || f.min < 0 || f.sec < 0 || f.usec < 0
	if f.hour != 0 || f.min != 0 || f.sec != 0 || f.usec != 0 || empty {
		if !empty {
			b = append(b, ' ')
		}
		switch {
		case negTime:
			b = append(b, '-')
		case afterNegative:
			b = append(b, '+')
		}
		b = f.appendClock(b, true)
	}
	return b
}

// verbose is "@ 1 year 2 mons 3 days 4 hours 5 mins 6.5 secs ago": the
// first non-zero field's sign becomes "ago", later fields are written
// relative to it.
func (f ivFields) verbose() []byte {
	b := []byte{'@'}
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if isZero {
			isBefore = v < 0
			v = abs64(v)
		} else if isBefore {
			v = -v
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
		b = append(b, unit...)
		if v != 1 {
			b = append(b, 's')
		}
		isZero = false
	}
	part(f.year, "year")
	part(f.mon, "mon")
	part(f.day, "day")
	part(f.hour, "hour")
	part(f.min, "min")
	if f.sec != 0 || f.usec != 0 {
		b = append(b, ' ')
		if f.sec < 0 || (f.sec == 0 && f.usec < 0) {
			if isZero {
				isBefore = true
			} else if !isBefore {
				b = append(b, '-')
			}
		} else if isBefore {
			b = append(b, '-')
		}
		b = appendSeconds(b, f.sec, f.usec, false)
		b = append(b, " sec"...)
		if abs64(f.sec) != 1 || f.usec != 0 {
			b = append(b, 's')
		}
		isZero = false
	}
	if isZero {
		b = append(b, " 0"...)
	}
	if isBefore {
		b = append(b, " ago"...)
	}
	return b
}

// sqlStandard is "1-2", "3 4:05:06", "-1-2" or, when the fields have
// mixed signs or both year-month and day-time parts, "+1-2 -3 +4:05:06"
// with every sign given.
func (f ivFields) sqlStandard() []byte {
	neg := f.year < 0 || f.mon < 0 || f.day < 0 || f.hour < 0 || f.min < 0 || f.sec < 0 || f.usec < 0
	pos := f.year > 0 || f.mon > 0 || f.day > 0 || f.hour > 0 || f.min > 0 || f.sec > 0 || f.usec > 0
	yearMonth := f.year != 0 || f.mon != 0
	dayTime := f.day != 0 || f.hour != 0 || f.min != 0 || f.sec != 0 || f.usec != 0
	standard := !(neg && pos) && !(yearMonth && dayTime)
	var b []byte
	if neg && standard {
		b = append(b, '-')
		f = ivFields{-f.year, -f.mon, -f.day, -f.hour, -f.min, -f.sec, -f.usec}
	}
	clock := func() { b = f.appendClock(b, false) }
	sign := func(negative bool) byte {
		if negative {
			return '-'
		}
		return '+'
	}
	switch {
	case !neg && !pos:
		b = append(b, '0')
	case !standard:
		b = append(b, sign(f.year < 0 || f.mon < 0))
		b = strconv.AppendInt(b, abs64(f.year), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, abs64(f.mon), 10)
		b = append(b, ' ', sign(f.day < 0))
		b = strconv.AppendInt(b, abs64(f.day), 10)
		b = append(b, ' ', sign(f.hour < 0 || f.min < 0 || f.sec < 0 || f.usec < 0))
		clock()
	case yearMonth:
		b = strconv.AppendInt(b, f.year, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, f.mon, 10)
	case f.day != 0:
		b = strconv.AppendInt(b, f.day, 10)
		b = append(b, ' ')
		clock()
	default:
		clock()
	}
	return b
}

// iso is ISO 8601's "P1Y2M3DT4H5M6.5S", with each field's own sign.
func (f ivFields) iso() []byte {
	if f == (ivFields{}) {
		return []byte("PT0S")
	}
	b := []byte{'P'}
	part := func(v int64, unit byte) {
		if v != 0 {
			b = strconv.AppendInt(b, v, 10)
			b = append(b, unit)
		}
	}
	part(f.year, 'Y')
	part(f.mon, 'M')
	part(f.day, 'D')
	if f.hour != 0 || f.min != 0 || f.sec != 0 || f.usec != 0 {
		b = append(b, 'T')
	}
	part(f.hour, 'H')
	part(f.min, 'M')
	if f.sec != 0 || f.usec != 0 {
		if f.sec < 0 || f.usec < 0 {
			b = append(b, '-')
		}
		b = appendSeconds(b, f.sec, f.usec, false)
		b = append(b, 'S')
	}
	return b
}
