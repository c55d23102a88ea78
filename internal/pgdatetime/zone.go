package pgdatetime

// Time zones in input: PostgreSQL's abbreviations, zone names, POSIX
// offsets, and the instant a wall clock shows in a zone.

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed tznames.txt
var tznamesText string

type abbrev struct {
	offset int
	zone   string
}

// abbreviations is PostgreSQL's Default set, read once.
var abbreviations = sync.OnceValue(func() map[string]abbrev {
	m := map[string]abbrev{}
	for _, l := range strings.Split(tznamesText, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(l, "#") {
			continue
		}
		if n, err := strconv.Atoi(f[1]); err == nil {
			m[strings.ToLower(f[0])] = abbrev{offset: n}
		} else {
			m[strings.ToLower(f[0])] = abbrev{zone: f[1]}
		}
	}
	return m
})

// setZoneName takes a zone of the time zone database (America/New_York)
// or a POSIX-style name (PST8PDT), as the input names it.
func (v *Value) setZoneName(raw string) error {
	if v.HasZone {
		return &SyntaxError{Input: raw}
	}
	if m := posixOffset.FindStringSubmatch(raw); m != nil {
		// GMT+8 is a POSIX zone: its sign counts west, so it is UTC-8.
		off, ok := parseOffset(m[1])
		if !ok {
			return &ZoneError{Zone: raw}
		}
		v.HasZone, v.Offset = true, -off
		return nil
	}
	loc, err := time.LoadLocation(raw)
	if err != nil {
		return &ZoneError{Zone: raw}
	}
	v.HasZone, v.Zone = true, loc
	return nil
}

// posixOffset is a POSIX zone: a name and an offset west (GMT+8, PST+8,
// MST+7:00); PostgreSQL goes by the offset whatever the name.
var posixOffset = regexp.MustCompile(`(?i)^[a-z][a-z/_]*([+-]\d{1,2}(?::?\d\d)?)$`)

// parseOffset reads +hh, +hhmm, +hh:mm, +hh:mm:ss (and a minus sign).
func parseOffset(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	var h, m, sec int
	switch {
	case strings.Contains(s, ":"):
		p := strings.Split(s, ":")
		if len(p) > 3 {
			return 0, false
		}
		h, m = atoi(p[0]), atoi(p[1])
		if len(p) == 3 {
			sec = atoi(p[2])
		}
	case len(s) <= 2:
		h = atoi(s)
	case len(s) == 4:
		h, m = atoi(s[:2]), atoi(s[2:])
	case len(s) == 6:
		h, m, sec = atoi(s[:2]), atoi(s[2:4]), atoi(s[4:])
	default:
		return 0, false
	}
	if h < 0 || m < 0 || sec < 0 || h > 15 || m > 59 || sec > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60 + sec), true
}

// offsetOverflows reports whether s is a numeric offset well formed but
// out of range (an hour past 15, a minute or second past 59), which
// PostgreSQL refuses as a displacement out of range, not as bad syntax.
func offsetOverflows(s string) bool {
	if _, ok := parseOffset(s); ok || len(s) < 2 {
		return false
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	switch n := len(digits); {
	case strings.Contains(s, ":"), n <= 2, n == 4, n == 6:
		return true
	}
	return false
}

// WallInstant is the instant a wall clock (given as UTC fields) shows in
// zone z, as PostgreSQL picks it where the zone's offset changes: in the
// hour a fall change repeats, and in the hour a spring change skips, the
// later reading (standard time). Go's time.Date picks otherwise in both.
func WallInstant(wall time.Time, z *time.Location) time.Time {
	var valid, all []time.Time
	for _, probe := range []time.Time{wall.Add(-24 * time.Hour), wall, wall.Add(24 * time.Hour)} {
		_, off := probe.In(z).Zone()
		t := wall.Add(-time.Duration(off) * time.Second)
		all = append(all, t)
		if _, o := t.In(z).Zone(); o == off {
			valid = append(valid, t)
		}
	}
	pick := valid
	if len(pick) == 0 {
		pick = all // a wall clock the zone skips
	}
	latest := pick[0]
	for _, t := range pick[1:] {
		if t.After(latest) {
			latest = t
		}
	}
	return latest.UTC()
}

// Abbreviation looks a name up in PostgreSQL's Default set of zone
// abbreviations: a fixed offset (seconds east, EST is -18000), or a
// dynamic one's zone (MSK: Europe/Moscow), whose offset is what the
// abbreviation meant there at the time.
func Abbreviation(name string) (offset int, zone string, ok bool) {
	a, ok := abbreviations()[strings.ToLower(name)]
	return a.offset, a.zone, ok
}

// AbbreviationOffset is the offset (seconds east) a dynamic abbreviation of
// zone z stood for at instant t, as PostgreSQL reads one
// (pg_interpret_timezone_abbrev): its last use at or before t, else its
// first use after (MSK in June 2010, when Moscow showed MSD, is the
// winter's +03; MSD in 2015 its last summer's +04). Zones change names at
// most a few times a year: a week's step finds each use.
func AbbreviationOffset(t time.Time, z *time.Location, abbrev string) (int, bool) {
	for _, step := range []time.Duration{-7 * 24 * time.Hour, 7 * 24 * time.Hour} {
		probe := t
		if step > 0 {
			probe = t.Add(step)
		}
		for range 100 * 53 {
			if name, off := probe.In(z).Zone(); strings.EqualFold(name, abbrev) {
				return off, true
			}
			probe = probe.Add(step)
		}
	}
	return 0, false
}

// MakeTimestamptz is PostgreSQL's make_timestamptz(year, month, day,
// hour, min, sec, zone): the instant the wall clock shows in zone, which
// is a numeric displacement ('+1', '-10:00:01', '+1000'; east of UTC, as
// DecodeTimezone reads it), an abbreviation (EST, or MSK as Moscow meant
// it then), a zone name or a POSIX zone (GMT+8: west; PST8PDT,M3.2.0,M11.1.0
// or FOO8BAR, a specification with its rules, PosixZone).
func MakeTimestamptz(year, month, day, hour, minute int64, sec float64, zone string) (time.Time, error) {
	if year == 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 24 || minute < 0 || minute > 59 ||
		math.IsNaN(sec) || sec < 0 || sec > 60 {
		return time.Time{}, &RangeError{Input: fmt.Sprintf("%d-%02d-%02d %d:%02d:%v", year, month, day, hour, minute, sec)}
	}
	if year < 0 {
		year++ // BC: -1 is 1 BC, astronomical year 0
	}
	micros := int64(math.RoundToEven(sec * 1e6))
	wall := time.Date(int(year), time.Month(month), int(day), int(hour), int(minute), 0, 0, time.UTC).Add(time.Duration(micros) * time.Microsecond)
	if wall.Day() != int(day) && micros < 60e6 && hour < 24 {
		return time.Time{}, &RangeError{Input: fmt.Sprintf("%d-%02d-%02d", year, month, day)}
	}
	z := strings.TrimSpace(zone)
	if z != "" && (z[0] == '+' || z[0] == '-') {
		off, ok := displacement(z)
		if !ok {
			return time.Time{}, &ZoneError{Zone: zone}
		}
		return wall.Add(-time.Duration(off) * time.Second), nil
	}
	if off, dyn, ok := Abbreviation(z); ok {
		if dyn == "" {
			return wall.Add(-time.Duration(off) * time.Second), nil
		}
		loc, err := time.LoadLocation(dyn)
		if err != nil {
			return time.Time{}, &ZoneError{Zone: zone}
		}
		if o, ok := AbbreviationOffset(WallInstant(wall, loc), loc, z); ok {
			return wall.Add(-time.Duration(o) * time.Second), nil
		}
		return time.Time{}, &ZoneError{Zone: zone}
	}
	if m := posixOffset.FindStringSubmatch(z); m != nil {
		if off, ok := parseOffset(m[1]); ok {
			return wall.Add(time.Duration(off) * time.Second), nil // west
		}
	}
	loc, err := time.LoadLocation(z)
	if err != nil || z == "" || strings.EqualFold(z, "local") {
		if ploc, ok := PosixZone(z); ok {
			return WallInstant(wall, ploc), nil
		}
		return time.Time{}, &ZoneError{Zone: zone}
	}
	return WallInstant(wall, loc), nil
}

// displacement reads a numeric zone as PostgreSQL's DecodeTimezone does:
// hours, then ':' minutes and ':' seconds (each may be empty), or hours
// and minutes run together ('+1000'); seconds east of UTC.
func displacement(s string) (int, bool) {
	digits := func(t string) (int, string) {
		n, i := 0, 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' && n < 1e6 {
			n, i = n*10+int(t[i]-'0'), i+1
		}
		return n, t[i:]
	}
	hr, rest := digits(s[1:])
	if len(rest) == len(s)-1 {
		return 0, false // no digits
	}
	mn, sec := 0, 0
	switch {
	case strings.HasPrefix(rest, ":"):
		mn, rest = digits(rest[1:])
		if strings.HasPrefix(rest, ":") {
			sec, rest = digits(rest[1:])
		}
	case rest == "" && len(s) > 3:
		hr, mn = hr/100, hr%100
	}
	if rest != "" || hr > 15 || mn > 59 || sec > 59 {
		return 0, false
	}
	off := hr*3600 + mn*60 + sec
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// posixZone is a POSIX TZ specification, as PostgreSQL takes one for a
// zone name: a standard abbreviation and its offset (hours west), then
// optionally a daylight abbreviation, its offset and the rules of its
// start and end (without rules, the United States' current ones).
var posixZone = regexp.MustCompile(`^(?:[A-Za-z]{3,}|<[+-]?[A-Za-z0-9]+>)[+-]?\d{1,2}(?::\d{2}){0,2}(?:(?:[A-Za-z]{3,}|<[+-]?[A-Za-z0-9]+>)(?:[+-]?\d{1,2}(?::\d{2}){0,2})?(?:,[^,]+,[^,]+)?)?$`)

// PosixZone reads a POSIX TZ specification (FOO8BAR,
// PST8PDT,M3.2.0,M11.1.0) into a location. Go reads such a text at the end
// of a compiled zone file, for the times after its last transition: the
// file made here has one transition, at the beginning of time, so the
// text decides every instant.
func PosixZone(spec string) (*time.Location, bool) {
	if !posixZone.MatchString(spec) {
		return nil, false
	}
	var b []byte
	u32 := func(v uint32) { b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	header := func() {
		b = append(b, "TZif2"...)
		b = append(b, make([]byte, 15)...)
		// isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
		for _, n := range []uint32{0, 0, 0, 1, 1, 4} {
			u32(n)
		}
	}
	header()
	// Version 1 data: one transition (32-bit), its type, one type, "UTC".
	u32(0x80000000) // -2^31
	b = append(b, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, "UTC\x00"...)
	header()
	// Version 2 data: the same with a 64-bit transition.
	u32(0xF0000000) // -2^60, high word
	u32(0)
	b = append(b, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, "UTC\x00"...)
	b = append(b, '\n')
	b = append(b, spec...)
	b = append(b, '\n')
	loc, err := time.LoadLocationFromTZData(spec, b)
	if err != nil {
		return nil, false
	}
	// A text Go could not read leaves the zone at the file's UTC: the
	// names it shows must be the specification's.
	for _, month := range []time.Month{time.January, time.July} {
		if name, _ := time.Date(2001, month, 15, 12, 0, 0, 0, loc).Zone(); name == "UTC" && !strings.Contains(spec, "UTC") {
			return nil, false
		}
	}
	return loc, true
}
