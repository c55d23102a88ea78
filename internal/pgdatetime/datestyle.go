package pgdatetime

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// DateStyle is the output half of PostgreSQL's DateStyle setting: how
// dates and timestamps are written as text. (The other half, the field
// order of ambiguous input, is Order; the SQL and Postgres styles also
// follow it when they write day and month.)
type DateStyle int

// The four output styles. ISO is the default and the only one drivers
// ask for.
const (
	ISODates      DateStyle = iota // 1997-12-17 07:37:16-08
	SQLDates                       // 12/17/1997 07:37:16.00 PST
	PostgresDates                  // Wed Dec 17 07:37:16 1997 PST
	GermanDates                    // 17.12.1997 07:37:16.00 PST
)

// DateStyleOf reads the style part of a DateStyle value ("Postgres, MDY"):
// ISO for anything it does not know.
func DateStyleOf(setting string) DateStyle {
	style, _, _ := strings.Cut(setting, ",")
	switch strings.ToUpper(strings.TrimSpace(style)) {
	case "SQL":
		return SQLDates
	case "POSTGRES":
		return PostgresDates
	case "GERMAN":
		return GermanDates
	}
	return ISODates
}

// String is the style as SHOW DateStyle names it.
func (s DateStyle) String() string {
	switch s {
	case SQLDates:
		return "SQL"
	case PostgresDates:
		return "Postgres"
	case GermanDates:
		return "German"
	}
	return "ISO"
}

// TimeKind says which of the date/time types a value written by
// AppendDateTime is: the type decides what is written, not the value.
type TimeKind int

// The kinds AppendDateTime writes.
const (
	KindDate TimeKind = iota
	KindTimestamp
	KindTimestamptz
)

var (
	weekdayNames = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	monthNames   = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// AppendDateTime writes t in a DateStyle, as PostgreSQL's EncodeDateOnly
// and EncodeDateTime do: a date, a timestamp (t's wall clock in UTC) or a
// timestamptz (t in loc; in ISO followed by its offset, in the other
// styles by the zone's abbreviation, or the offset where the zone has
// none). Years have at least four digits and years before 1 AD are
// written as BC (Go's layouts would write -0001 for 2 BC); the caller
// writes the infinities, which are the same in every style.
func AppendDateTime(dst []byte, t time.Time, kind TimeKind, loc *time.Location, style DateStyle, order Order) []byte {
	if kind == KindTimestamptz {
		if loc == nil {
			loc = time.UTC
		}
		t = t.In(loc)
	} else {
		t = t.UTC()
	}
	year, mon, day := t.Date()
	month := int(mon)
	bc := year <= 0
	if bc {
		year = 1 - year
	}
	dmy := order == DMY
	switch {
	case style == ISODates:
		dst = appendYear4(dst, year)
		if kind == KindDate {
			dst = t.AppendFormat(dst, "-01-02")
		} else {
			dst = t.AppendFormat(dst, "-01-02 15:04:05.999999")
		}
		if kind == KindTimestamptz {
			_, off := t.Zone()
			dst = appendOffset(dst, off)
		}
	case style == PostgresDates && kind != KindDate:
		dst = append(dst, weekdayNames[t.Weekday()]...)
		dst = append(dst, ' ')
		if dmy {
			dst = append(two(dst, day), ' ')
			dst = append(dst, monthNames[month-1]...)
		} else {
			dst = append(dst, monthNames[month-1]...)
			dst = two(append(dst, ' '), day)
		}
		dst = appendClock(append(dst, ' '), t)
		dst = appendYear4(append(dst, ' '), year)
	default:
		sep := byte('/')
		switch style {
		case PostgresDates:
			sep = '-'
		case GermanDates:
			sep, dmy = '.', true
		}
		if dmy {
			dst = append(two(dst, day), sep)
			dst = two(dst, month)
		} else {
			dst = append(two(dst, month), sep)
			dst = two(dst, day)
		}
		dst = appendYear4(append(dst, sep), year)
		if kind != KindDate {
			dst = appendClock(append(dst, ' '), t)
		}
	}
	if kind == KindTimestamptz && style != ISODates {
		dst = append(dst, ' ')
		dst = append(dst, ZoneAbbreviation(t, loc)...)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

func two(dst []byte, n int) []byte {
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}

// appendYear4 writes a year with at least four digits.
func appendYear4(dst []byte, y int) []byte {
	for p := 1000; p > 1 && y < p; p /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(y), 10)
}

// appendClock writes hh:mm:ss and the fraction of a second without its
// trailing zeros.
func appendClock(dst []byte, t time.Time) []byte {
	return t.AppendFormat(dst, "15:04:05.999999")
}

// appendOffset writes a UTC offset in seconds east as ±hh[:mm[:ss]].
// AppendOffset writes a UTC offset (seconds east) as PostgreSQL's output
// does: +HH, +HH:MM or +HH:MM:SS.
func AppendOffset(dst []byte, off int) []byte { return appendOffset(dst, off) }

func appendOffset(dst []byte, off int) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = two(append(dst, sign), off/3600)
	if m, s := off%3600/60, off%60; m != 0 || s != 0 {
		dst = two(append(dst, ':'), m)
		if s != 0 {
			dst = two(append(dst, ':'), s)
		}
	}
	return dst
}

// abbreviation is the zone abbreviation PostgreSQL writes for a zone
// name: the name itself for the tz database's (PST, CEST, +0545), the
// part in angle brackets of a POSIX name (<+02>-02 is +02), the letters
// before the offset of another (UTC+3 is UTC); "" for a bare offset.
func abbreviation(name string) string {
	if rest, ok := strings.CutPrefix(name, "<"); ok {
		in, _, _ := strings.Cut(rest, ">")
		return in
	}
	switch i := strings.IndexAny(name, "+-0123456789"); {
	case i > 0:
		return name[:i]
	case i == 0 && strings.Contains(name, ":"):
		return "" // a POSIX offset: written as an offset
	}
	return name
}

// EngineInfinity tells the engine's infinite dates and timestamps, as its
// driver hands them over: 1 for infinity, -1 for -infinity, 0 for a
// finite value. A date's infinities are the largest day counts, a
// timestamp's the largest microsecond counts.
func EngineInfinity(t time.Time, date bool) int {
	if date {
		switch t.Unix() / 86400 {
		case math.MaxInt32:
			return 1
		case -math.MaxInt32:
			return -1
		}
		return 0
	}
	switch t.UnixMicro() {
	case math.MaxInt64:
		return 1
	case -math.MaxInt64:
		return -1
	}
	return 0
}

// ZoneAbbreviation is what PostgreSQL writes for loc's zone at t: its
// abbreviation (PST, CEST, +0545), or the offset where it has none.
func ZoneAbbreviation(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	name, off := t.In(loc).Zone()
	if a := abbreviation(name); a != "" {
		return a
	}
	return string(appendOffset(nil, off))
}
