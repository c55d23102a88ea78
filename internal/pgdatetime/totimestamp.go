package pgdatetime

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"tsdb/internal/sqlerr"
)

// ToTimestamp reads text by a to_timestamp/to_date template, as
// PostgreSQL's formatting.c does outside FX mode: a number takes the
// digits that follow (its nominal width when another number follows it
// without a separator: YYYYMMDD), a separator or a literal of the
// template matches one separator of the input or none, spaces around
// values are skipped, names of months and weekdays match in any case,
// a two-digit year is the one nearest 2020, and fields the template does
// not give are those of 0001-01-01 00:00:00. The wall clock is returned
// as UTC fields; offset is the zone TZH/TZM gave (seconds east), hasZone
// whether they did. Patterns PostgreSQL's input reads that this does not
// (ISO weeks, Julian days, Roman numerals, centuries, TZ names, FX) are
// refused by name rather than read otherwise.
func ToTimestamp(text, template string) (wall time.Time, offset int, hasZone bool, err error) {
	nodes, err := parseTemplate(template)
	if err != nil {
		return time.Time{}, 0, false, err
	}
	f := toFields{year: 1, month: 1, day: 1}
	in := []rune(text)
	pos := 0
	skipSpaces := func() {
		for pos < len(in) && unicode.IsSpace(in[pos]) {
			pos++
		}
	}
	for i, n := range nodes {
		if n.literal != "" {
			// A template separator or literal matches one separator
			// (any non-letter, non-digit) of the input, or none; quoted
			// text skips as many characters.
			if n.quoted {
				for range []rune(n.literal) {
					if pos < len(in) {
						pos++
					}
				}
				continue
			}
			for _, r := range n.literal {
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					// Other text skips a character of the input.
					if pos < len(in) {
						pos++
					}
					continue
				}
				// A separator (a space too) matches one separator of
				// the input, with the spaces around it, or none.
				skipSpaces()
				signNext := i+1 < len(nodes) && nodes[i+1].signed
				if pos < len(in) && !unicode.IsLetter(in[pos]) && !unicode.IsDigit(in[pos]) && !(signNext && (in[pos] == '-' || in[pos] == '+')) {
					pos++
				}
				skipSpaces()
			}
			continue
		}
		if pos >= len(in) {
			break // the fields not given keep their defaults
		}
		skipSpaces()
		switch n.kind {
		case kindNumber:
			width := 0
			if i+1 < len(nodes) && nodes[i+1].literal == "" && nodes[i+1].kind == kindNumber {
				width = n.width // run together: the nominal width
			}
			v, digits, neg := 0, 0, false
			if pos < len(in) && (in[pos] == '-' || in[pos] == '+') && n.signed {
				neg, pos = in[pos] == '-', pos+1
			}
			for pos < len(in) && in[pos] >= '0' && in[pos] <= '9' && (width == 0 || digits < width) && digits < 9 {
				v, digits, pos = v*10+int(in[pos]-'0'), digits+1, pos+1
			}
			if digits == 0 {
				return time.Time{}, 0, false, sqlerr.New(sqlerr.InvalidDatetimeFormat, "invalid value %q for %q", rest(in, pos), n.name)
			}
			if neg {
				v = -v
			}
			if err := f.set(n.name, v, digits); err != nil {
				return time.Time{}, 0, false, err
			}
		case kindMonth, kindMonthAbbrev, kindDay, kindDayAbbrev:
			names := fullMonths[:]
			switch n.kind {
			case kindMonthAbbrev:
				names = monthNames[:]
			case kindDay:
				names = fullDays[:]
			case kindDayAbbrev:
				names = dayAbbrevs[:]
			}
			k := -1
			for j, name := range names {
				if pos+len(name) <= len(in) && strings.EqualFold(string(in[pos:pos+len(name)]), name) {
					k = j
					pos += len(name)
					break
				}
			}
			if k < 0 {
				return time.Time{}, 0, false, sqlerr.New(sqlerr.InvalidDatetimeFormat, "invalid value %q for %q", rest(in, pos), n.name)
			}
			if n.kind == kindMonth || n.kind == kindMonthAbbrev {
				f.month = k + 1
			}
		case kindMeridiem:
			word := ""
			for _, w := range []string{"a.m.", "p.m.", "am", "pm"} {
				if pos+len(w) <= len(in) && strings.EqualFold(string(in[pos:pos+len(w)]), w) {
					word = strings.ToLower(w)
					pos += len(w)
					break
				}
			}
			if word == "" {
				return time.Time{}, 0, false, sqlerr.New(sqlerr.InvalidDatetimeFormat, "invalid value %q for %q", rest(in, pos), n.name)
			}
			f.meridiem = word[0]
		}
	}
	return f.result()
}

// rest is a few characters of the input from pos, for an error message.
func rest(in []rune, pos int) string {
	end := min(len(in), pos+len("2026-12-05"))
	return string(in[pos:end])
}

// The kinds of template patterns ToTimestamp reads.
const (
	kindNumber = iota
	kindMonth
	kindMonthAbbrev
	kindDay
	kindDayAbbrev
	kindMeridiem
)

// templateNode is a pattern of a template, or (literal set) text to match.
type templateNode struct {
	name    string
	kind    int
	width   int  // a number's nominal width
	signed  bool // a number that may be written with a sign (TZH)
	literal string
	quoted  bool
}

// inputPatterns are the patterns ToTimestamp reads, longest first among
// those sharing a prefix.
var inputPatterns = []templateNode{
	{name: "HH24", width: 2}, {name: "HH12", width: 2}, {name: "HH", width: 2},
	{name: "MI", width: 2}, {name: "MS", width: 3}, {name: "US", width: 6},
	{name: "SS", width: 2},
	{name: "FF1", width: 1}, {name: "FF2", width: 2}, {name: "FF3", width: 3},
	{name: "FF4", width: 4}, {name: "FF5", width: 5}, {name: "FF6", width: 6},
	{name: "A.M.", kind: kindMeridiem}, {name: "P.M.", kind: kindMeridiem}, {name: "AM", kind: kindMeridiem}, {name: "PM", kind: kindMeridiem},
	{name: "YYYY", width: 4}, {name: "YYY", width: 3}, {name: "YY", width: 2}, {name: "Y", width: 1},
	{name: "MONTH", kind: kindMonth}, {name: "MON", kind: kindMonthAbbrev}, {name: "MM", width: 2},
	{name: "DAY", kind: kindDay}, {name: "DDD", width: 3}, {name: "DD", width: 2}, {name: "DY", kind: kindDayAbbrev},
	{name: "TZH", width: 2, signed: true}, {name: "TZM", width: 2},
}

// unreadPatterns are the patterns of PostgreSQL's input ToTimestamp
// refuses, longest first among those sharing a prefix.
var unreadPatterns = []string{"Y,YYY", "IYYY", "IYY", "IY", "IW", "ID", "I", "SSSSS", "SSSS", "TZ", "OF", "RM", "CC", "WW", "W", "J", "Q", "D", "AD", "BC", "A.D.", "B.C.", "FX"}

// parseTemplate splits a template into patterns and literal text.
func parseTemplate(template string) ([]templateNode, error) {
	var nodes []templateNode
	lit := func(s string, quoted bool) {
		if !quoted && len(nodes) > 0 && nodes[len(nodes)-1].literal != "" && !nodes[len(nodes)-1].quoted {
			nodes[len(nodes)-1].literal += s
			return
		}
		nodes = append(nodes, templateNode{literal: s, quoted: quoted})
	}
	for i := 0; i < len(template); {
		rest := template[i:]
		upper := strings.ToUpper(rest)
		switch {
		case strings.HasPrefix(upper, "FM"):
			i += 2 // fill mode changes nothing in input
			continue
		case rest[0] == '"':
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				end = len(rest) - 1
			}
			lit(rest[1:1+end], true)
			i += end + 2
			continue
		case rest[0] == '\\' && len(rest) > 1:
			lit(rest[1:2], false)
			i += 2
			continue
		}
		// The longest pattern there, read or not.
		best, bestLen, refused := templateNode{}, 0, false
		for _, p := range inputPatterns {
			if strings.HasPrefix(upper, p.name) && len(p.name) > bestLen {
				best, bestLen = p, len(p.name)
			}
		}
		for _, p := range unreadPatterns {
			if strings.HasPrefix(upper, p) && len(p) > bestLen {
				bestLen, refused = len(p), true
			}
		}
		if refused {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "template pattern %q is not supported in to_timestamp and to_date", rest[:bestLen])
		}
		if bestLen > 0 {
			nodes = append(nodes, best)
			i += bestLen
			continue
		}
		lit(rest[:1], false)
		i++
	}
	return nodes, nil
}

var (
	fullMonths = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	fullDays   = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	dayAbbrevs = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
)

// toFields are the values a template gave.
type toFields struct {
	year, month, day, doy        int
	partialYear                  bool
	hour, minute, second, micros int
	hour12                       bool
	meridiem                     byte // 'a', 'p' or 0
	tzh, tzm                     int
	hasZone, tzNegative, hasDoy  bool
	hasYear                      bool
}

// set records a number a pattern read.
func (f *toFields) set(name string, v, digits int) error {
	switch name {
	case "YYYY", "YYY", "YY", "Y":
		f.year, f.hasYear = v, true
		// A year of fewer than four digits for a pattern of fewer is
		// adjusted toward 2020; YYYY takes the year as written.
		f.partialYear = name != "YYYY" && digits < 4
	case "MM":
		f.month = v
	case "DD":
		f.day = v
	case "DDD":
		f.doy, f.hasDoy = v, true
	case "HH", "HH12":
		f.hour, f.hour12 = v, true
	case "HH24":
		f.hour = v
	case "MI":
		f.minute = v
	case "SS":
		f.second = v
	case "MS":
		f.micros = scaleFraction(v, digits, 3) * 1000
	case "US":
		f.micros = scaleFraction(v, digits, 6)
	case "FF1", "FF2", "FF3", "FF4", "FF5", "FF6":
		f.micros = scaleFraction(v, digits, 6)
	case "TZH":
		f.tzh, f.hasZone, f.tzNegative = v, true, v < 0
	case "TZM":
		f.tzm, f.hasZone = v, true
	}
	return nil
}

// scaleFraction reads digits of a fraction of a second as units of
// 10^-scale: MS 5 is 500 ms, as PostgreSQL's input reads it.
func scaleFraction(v, digits, scale int) int {
	for d := digits; d < scale; d++ {
		v *= 10
	}
	return v
}

// result checks the fields and makes the wall clock.
func (f *toFields) result() (time.Time, int, bool, error) {
	year := f.year
	if !f.hasYear {
		year = -1 // PostgreSQL's default: the year 1 BC (the astronomical 0)
	}
	if f.partialYear && year >= 0 {
		// As PostgreSQL's adjust_partial_year_to_2020.
		switch {
		case year < 70:
			year += 2000
		case year < 100:
			year += 1900
		case year < 520:
			year += 2000
		case year < 1000:
			year += 1000
		}
	}
	outOfRange := func() (time.Time, int, bool, error) {
		return time.Time{}, 0, false, sqlerr.New(sqlerr.DatetimeOverflow, "date/time field value out of range")
	}
	if f.hour12 || f.meridiem != 0 {
		// HH, HH12 or an AM/PM make it the 12-hour clock.
		if f.hour < 1 || f.hour > 12 {
			return time.Time{}, 0, false, sqlerr.New(sqlerr.InvalidDatetimeFormat, "hour \"%d\" is invalid for the 12-hour clock", f.hour)
		}
		if f.meridiem == 'p' && f.hour < 12 {
			f.hour += 12
		} else if f.meridiem != 'p' && f.hour == 12 {
			f.hour = 0
		}
	}
	if year == 0 || f.month < 1 || f.month > 12 || f.hour > 23 || f.minute > 59 || f.second > 60 || f.day < 1 || f.day > 31 {
		return outOfRange()
	}
	if year < 0 {
		year++ // -1 is 1 BC, the astronomical year 0
	}
	var wall time.Time
	if f.hasDoy {
		if f.doy < 1 || f.doy > 366 {
			return outOfRange()
		}
		wall = time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, f.doy-1)
		if wall.Year() != year {
			return outOfRange()
		}
	} else {
		wall = time.Date(year, time.Month(f.month), f.day, 0, 0, 0, 0, time.UTC)
		if wall.Day() != f.day {
			return outOfRange()
		}
	}
	wall = wall.Add(time.Duration(f.hour)*time.Hour + time.Duration(f.minute)*time.Minute + time.Duration(f.second)*time.Second + time.Duration(f.micros)*time.Microsecond)
	offset := 0
	if f.hasZone {
		m := f.tzm
		if f.tzNegative {
			m = -m
		}
		offset = f.tzh*3600 + m*60
	}
	return wall, offset, f.hasZone, nil
}

// String is the template node for messages and tests.
func (n templateNode) String() string {
	if n.literal != "" {
		return fmt.Sprintf("%q", n.literal)
	}
	return n.name
}
