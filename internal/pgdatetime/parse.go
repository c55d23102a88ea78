// Package pgdatetime reads date and time input the way PostgreSQL does
// (its "Date/Time Input Interpretation" rules, in the session's DateStyle
// field order; interval input in interval.go)
// and writes the value in the one form the engine reads unambiguously.
// DuckDB's own reader takes only ISO 8601: '99-01-08' becomes the year 99,
// 'January 8, 1999' and 'PST' are errors. This package is a leaf: it knows
// no SQL tree and no engine.
package pgdatetime

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Special is a value PostgreSQL names by a word.
type Special int

// The words a date or timestamp may be given as.
const (
	Finite Special = iota
	Infinity
	NegInfinity
	Now       // now: the statement's start
	Today     // today: midnight of the current day
	Tomorrow  // tomorrow: midnight of the next day
	Yesterday // yesterday: midnight of the day before
)

// Value is a parsed date or timestamp: a wall clock, the zone it was given
// in (if any), or a special word.
type Value struct {
	Special Special
	// Year is astronomical: 1 BC is 0, 2 BC is -1.
	Year, Month, Day       int
	Hour, Minute, Second   int
	Micro                  int
	HasTime                bool
	HasZone                bool
	Offset                 int            // seconds east of UTC, when HasZone and Zone is nil
	Zone                   *time.Location // a named zone: its offset at the wall clock applies
	hasDate, textMonth, bc bool
	abbrev                 string // a dynamic abbreviation (MSK) naming Zone
}

// SyntaxError is input PostgreSQL refuses as malformed (SQLSTATE 22007).
type SyntaxError struct{ Type, Input string }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid input syntax for type %s: %q", e.Type, e.Input)
}

// RangeError is a field out of its range, such as February 30 (SQLSTATE
// 22008).
type RangeError struct{ Input string }

func (e *RangeError) Error() string {
	return fmt.Sprintf("date/time field value out of range: %q", e.Input)
}

// DisplacementError is a numeric zone offset out of range, such as
// -0097 (SQLSTATE 22009).
type DisplacementError struct{ Input string }

func (e *DisplacementError) Error() string {
	return fmt.Sprintf("time zone displacement out of range: %q", e.Input)
}

// ZoneError names a time zone PostgreSQL does not know (SQLSTATE 22023).
type ZoneError struct{ Zone string }

func (e *ZoneError) Error() string {
	return fmt.Sprintf("time zone %q not recognized", e.Zone)
}

// Order is the DateStyle field order for ambiguous numeric dates.
type Order int

// The orders of DateStyle.
const (
	MDY Order = iota
	DMY
	YMD
)

// Parse reads s as PostgreSQL reads input for typ ("date", "timestamp"
// or "timestamp with time zone") with the field order of the session's
// DateStyle.
func Parse(s, typ string, order Order) (Value, error) {
	syntax := &SyntaxError{Type: typ, Input: s}
	if t := strings.TrimSpace(s); len(t) > 5 && t[0] == '-' && isDigit(t[1]) && typ != TypeTime && typ != TypeTimetz {
		// -4713-11-24: an ISO date with an astronomical negative year,
		// as the engine writes years before 1 BC (and tsdb's parameters).
		v, err := Parse(t[1:], typ, YMD)
		if err != nil || v.bc || v.Special != Finite {
			return Value{}, syntax
		}
		v.Year = -v.Year
		if v.Year < -4713 || v.Year == -4713 && (v.Month < 11 || v.Month == 11 && v.Day < 24) {
			return Value{}, &RangeError{Input: s}
		}
		return v, nil
	}
	fields, ok := tokenize(s)
	if !ok || len(fields) == 0 {
		return Value{}, syntax
	}
	var v Value
	timeOnly := typ == TypeTime || typ == TypeTimetz
	year, yearDigits := -1, 0
	pm, am, julian, isoT := false, false, false, false
	haveYear, haveMonth, haveDay := false, false, false
	dateDone := func() bool { return haveYear && haveMonth && haveDay }
	// place puts a number into the date as PostgreSQL's DecodeNumber
	// does: a field of three or more digits first is the year (yyyy-mm-dd
	// in any order); else the order decides the first field, and each
	// next field takes the place the ones before leave.
	place := func(n string) bool {
		val, err := strconv.Atoi(n)
		if err != nil {
			return false
		}
		long := len(n) >= 3
		setYear := func() { year, yearDigits, haveYear = val, len(n), true }
		setMonth := func() { v.Month, haveMonth = val, true }
		setDay := func() { v.Day, haveDay = val, true }
		switch {
		case !haveYear && !haveMonth && !haveDay:
			switch {
			case long || order == YMD:
				setYear()
			case order == DMY:
				setDay()
			default:
				setMonth()
			}
		case haveYear && !haveMonth && !haveDay:
			setMonth()
		case !haveYear && haveMonth && !haveDay:
			if v.textMonth && (long || order == YMD) {
				setYear()
			} else {
				setDay()
			}
		case haveYear && haveMonth && !haveDay:
			if v.textMonth && long && yearDigits <= 2 {
				// DD-MON-YYYY read in YMD: the first number was the day.
				v.Day, haveDay = year, true
				setYear()
			} else {
				setDay()
			}
		case !haveYear && !haveMonth && haveDay:
			setMonth()
		case !haveYear && haveMonth && haveDay:
			setYear()
		default:
			return false
		}
		return true
	}
	textMonth := func(m int) bool {
		if v.textMonth {
			return false
		}
		if haveMonth {
			// A number taken for the month is the day after all.
			if haveDay || v.Month > 31 {
				return false
			}
			v.Day, haveDay = v.Month, true
		}
		v.Month, v.textMonth, haveMonth = m, true, true
		return true
	}
	for fi, f := range fields {
		switch f.kind {
		case fDate:
			// With the month and day known, letters run into an offset
			// are a zone ("Wed Jul 11 10:51:14 GMT-4 2001"), as in
			// PostgreSQL's DecodeDateTime.
			if isAlpha(f.text[0]) && (strings.ContainsAny(f.text, "/_") || dateDone() || haveMonth && haveDay) {
				if err := v.setZoneName(f.raw); err != nil {
					return Value{}, err
				}
				continue
			}
			parts := splitDate(f.text)
			if parts == nil || haveYear || haveMonth || haveDay {
				return Value{}, syntax
			}
			// A delimited date stands alone: its month name first, then
			// its numbers, and it must be whole.
			for _, p := range parts {
				if isAlpha(p[0]) {
					m, ok := months[p]
					if !ok || !textMonth(m) {
						return Value{}, syntax
					}
				}
			}
			for _, p := range parts {
				if !isAlpha(p[0]) && !place(p) {
					return Value{}, syntax
				}
			}
			if !dateDone() {
				return Value{}, syntax
			}
		case fTime:
			if v.HasTime {
				return Value{}, syntax
			}
			if err := v.setTime(f.text); err != nil {
				return Value{}, syntax
			}
			isoT = false
		case fZone:
			if fi == 0 {
				return Value{}, syntax
			}
			off, ok := parseOffset(f.text)
			if !ok && !v.HasZone && offsetOverflows(f.text) {
				return Value{}, &DisplacementError{Input: s}
			}
			if !ok || v.HasZone {
				return Value{}, syntax
			}
			v.HasZone, v.Offset = true, off
		case fSpecial:
			switch f.text {
			case "-infinity":
				v.Special = NegInfinity
			case "+infinity":
				v.Special = Infinity
			default:
				return Value{}, syntax
			}
		case fNumber:
			switch {
			case julian:
				jd, err := strconv.Atoi(f.text)
				if err != nil || haveYear || haveMonth || haveDay {
					return Value{}, syntax
				}
				y, m, d := fromJulian(jd)
				year, yearDigits, v.Month, v.Day = y, 4, m, d
				haveYear, haveMonth, haveDay = true, true, true
				julian = false
			case isoT || ((dateDone() || timeOnly && !haveYear && !haveMonth && !haveDay) && !v.HasTime && (len(f.text) == 6 || len(f.text) == 4) && !strings.Contains(f.text, ".")):
				// hhmm[ss] after a whole date, or after ISO's T
				if len(f.text) != 4 && len(f.text) != 6 {
					return Value{}, syntax
				}
				t := f.text[0:2] + ":" + f.text[2:4]
				if len(f.text) == 6 {
					t += ":" + f.text[4:6]
				}
				if err := v.setTime(t); err != nil {
					return Value{}, syntax
				}
				isoT = false
			case strings.Contains(f.text, "."):
				// yyyy.ddd: a year and its day of the year
				y, doy, ok := strings.Cut(f.text, ".")
				if !ok || len(y) < 4 || len(doy) != 3 || haveYear || haveMonth || haveDay {
					return Value{}, syntax
				}
				d := time.Date(atoi(y), 1, atoi(doy), 0, 0, 0, 0, time.UTC)
				if atoi(doy) < 1 || atoi(doy) > 366 || d.Year() != atoi(y) {
					return Value{}, &RangeError{Input: s}
				}
				year, yearDigits, v.Month, v.Day = d.Year(), 4, int(d.Month()), d.Day()
				haveYear, haveMonth, haveDay = true, true, true
			case !haveYear && !haveMonth && !haveDay && len(f.text) >= 6 && len(f.text) <= 10:
				// yyyymmdd or yymmdd run together: the last two digits
				// the day, two the month, the rest the year (100000312 is
				// 10000-03-12), as PostgreSQL's DecodeNumberField reads it
				n := len(f.text) - 4
				year, yearDigits, v.Month, v.Day = atoi(f.text[:n]), n, atoi(f.text[n:n+2]), atoi(f.text[n+2:])
				haveYear, haveMonth, haveDay = true, true, true
			default:
				if !place(f.text) {
					return Value{}, syntax
				}
			}
		case fString:
			w := f.text
			if m, ok := months[w]; ok {
				if timeOnly || !textMonth(m) {
					// time_in reads no month names (Jan 8 1999 04:05:06
					// is not a time).
					return Value{}, syntax
				}
				continue
			}
			if weekdays[w] {
				continue
			}
			switch w {
			case "am":
				am = true
			case "pm":
				pm = true
			case "bc":
				v.bc = true
			case "ad":
			case "t":
				isoT = true
			case "j":
				julian = true
			case "at", "on":
			case "infinity":
				v.Special = Infinity
			case "epoch":
				year, yearDigits, v.Month, v.Day = 1970, 4, 1, 1
				haveYear, haveMonth, haveDay = true, true, true
				v.HasZone = true // the epoch is an instant
			case "now":
				v.Special = Now
			case "today":
				v.Special = Today
			case "tomorrow":
				v.Special = Tomorrow
			case "yesterday":
				v.Special = Yesterday
			case "allballs":
				if err := v.setTime("00:00:00"); err != nil {
					return Value{}, syntax
				}
				v.HasZone = true
			case "z", "zulu", "utc", "ut", "gmt":
				if v.HasZone && (v.Zone != nil || v.Offset != 0) {
					return Value{}, syntax
				}
				v.HasZone = true
			default:
				if a, ok := abbreviations()[w]; ok {
					if v.HasZone {
						return Value{}, syntax
					}
					if a.zone != "" {
						loc, err := time.LoadLocation(a.zone)
						if err != nil {
							return Value{}, &ZoneError{Zone: f.raw}
						}
						v.HasZone, v.Zone, v.abbrev = true, loc, f.raw
					} else {
						v.HasZone, v.Offset = true, a.offset
					}
					continue
				}
				if err := v.setZoneName(f.raw); err != nil {
					return Value{}, syntax
				}
			}
		}
	}
	if v.Special != Finite {
		if haveYear || haveMonth || haveDay || v.HasTime || v.bc || timeOnly && v.Special != Now {
			return Value{}, syntax
		}
		return v, nil
	}
	if timeOnly && !haveYear && !haveMonth && !haveDay {
		// A time of day alone: no date to check.
		if !v.HasTime || v.bc {
			return Value{}, syntax
		}
		if err := v.meridiem(am, pm, s); err != nil {
			return Value{}, err
		}
		return v, v.checkClock(s)
	}
	if !haveYear || !haveMonth || !haveDay {
		return Value{}, syntax
	}
	if yearDigits <= 2 && !v.bc {
		// Two-digit years: 70–99 are 1970–1999, 00–69 are 2000–2069.
		if year < 70 {
			year += 2000
		} else {
			year += 1900
		}
	}
	if v.bc {
		if year <= 0 {
			return Value{}, &RangeError{Input: s}
		}
		year = 1 - year
	}
	v.Year = year
	v.hasDate = true
	if err := v.meridiem(am, pm, s); err != nil {
		return Value{}, err
	}
	if v.Month < 1 || v.Month > 12 || v.Day < 1 || v.Day > daysIn(v.Year, v.Month) || year == 0 && !v.bc {
		return Value{}, &RangeError{Input: s}
	}
	if v.Hour > 24 || v.Minute > 59 || v.Second > 60 || v.Hour == 24 && (v.Minute > 0 || v.Second > 0 || v.Micro > 0) {
		return Value{}, &RangeError{Input: s}
	}
	// PostgreSQL's ranges: dates from 4714-11-24 BC to 5874897-12-31,
	// timestamps to 294276-12-31.
	first := v.Year > -4713 || v.Year == -4713 && (v.Month > 11 || v.Month == 11 && v.Day >= 24)
	if typ == "timestamp with time zone" && v.HasZone && v.Year == -4713 && v.Month == 11 && v.Day >= 23 && v.Day <= 24 {
		// PostgreSQL checks a timestamptz's instant: 23 November 4714 BC
		// 16:00-08 is the first hour it takes, 00:00 UTC on the 24th, and
		// 00:30+01 on the 24th is before it.
		first = !v.instant(time.UTC).Before(time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC))
	}
	last := 5874897
	if typ != "date" {
		last = 294276
	}
	if !first || v.Year > last {
		return Value{}, &RangeError{Input: s}
	}
	return v, nil
}

// meridiem applies AM or PM to the hour.
func (v *Value) meridiem(am, pm bool, input string) error {
	if !am && !pm {
		return nil
	}
	if !v.HasTime || v.Hour > 12 {
		return &RangeError{Input: input}
	}
	if pm && v.Hour != 12 {
		v.Hour += 12
	} else if am && v.Hour == 12 {
		v.Hour = 0
	}
	return nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func splitDate(s string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '/' || r == '.' })
	if strings.Contains("-/.", s[len(s)-1:]) {
		return nil // 1999-08- (a month name after it is another field)
	}
	var out []string
	for _, p := range parts {
		// 08jan: digits and letters run together split apart
		j := 0
		for j < len(p) && isDigit(p[j]) {
			j++
		}
		if j > 0 && j < len(p) {
			out = append(out, p[:j], p[j:])
			continue
		}
		out = append(out, p)
	}
	if len(out) < 2 || len(out) > 3 {
		return nil
	}
	return out
}

func (v *Value) setTime(t string) error {
	parts := strings.Split(t, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return errors.New("time")
	}
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		// mm:ss.frac, as PostgreSQL reads two fields with a fraction
		parts = []string{"0", parts[0], parts[1]}
	}
	h, m := atoi(parts[0]), atoi(parts[1])
	if h < 0 || m < 0 || len(parts[1]) > 2 || len(parts[0]) > 2 {
		return errors.New("time")
	}
	v.Hour, v.Minute = h, m
	if len(parts) == 3 {
		sec, frac, _ := strings.Cut(parts[2], ".")
		s := atoi(sec)
		if s < 0 || len(sec) > 2 {
			return errors.New("time")
		}
		v.Second = s
		if frac != "" {
			f, err := strconv.ParseFloat("0."+frac, 64)
			if err != nil || !isNumber(frac) {
				return errors.New("time")
			}
			v.Micro = int(math.RoundToEven(f * 1e6))
			if v.Micro >= 1e6 {
				// .9999999 rounds up into the next second
				v.Micro -= 1e6
				v.Second++
			}
		}
	}
	v.HasTime = true
	return nil
}

// fromJulian converts a Julian day number into a Gregorian date.
func fromJulian(jd int) (y, m, d int) {
	// Richards' algorithm, valid for Julian days ≥ 0.
	f := jd + 1401 + (((4*jd+274277)/146097)*3)/4 - 38
	e := 4*f + 3
	g := (e % 1461) / 4
	h := 5*g + 2
	d = (h%153)/5 + 1
	m = (h/153+2)%12 + 1
	y = e/1461 - 4716 + (12+2-m)/12
	return y, m, d
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
