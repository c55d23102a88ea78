package schema

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// The text forms in which Parquet files hold the types Delta lacks:
// intervals, and times of day with or without their offset.

// IntervalText is how an interval is stored in a Parquet file: exact, and
// what the engine's cast to INTERVAL reads.
func IntervalText(v arrow.MonthDayNanoInterval) string {
	return fmt.Sprintf("%d months %d days %d microseconds", v.Months, v.Days, v.Nanoseconds/1000)
}

// ParseIntervalText reads IntervalText.
func ParseIntervalText(s string) (arrow.MonthDayNanoInterval, error) {
	var months, days int32
	var micros int64
	if n, err := fmt.Sscanf(s, "%d months %d days %d microseconds", &months, &days, &micros); n != 3 || err != nil {
		return arrow.MonthDayNanoInterval{}, fmt.Errorf("schema: not a stored interval: %q", s)
	}
	return IntervalValue(months, days, micros)
}

// ErrIntervalRange is an interval whose time part is too long for a
// column: Arrow's month_day_nano interval counts nanoseconds in 64 bits,
// about 292 years of hours (PostgreSQL's reaches 2,562,047,788 hours).
var ErrIntervalRange = errors.New("interval out of range for a column: its hours, minutes and seconds must stay within 292 years")

// IntervalValue is an interval of months, days and microseconds as a
// column holds it.
func IntervalValue(months, days int32, micros int64) (arrow.MonthDayNanoInterval, error) {
	if micros > math.MaxInt64/1000 || micros < math.MinInt64/1000 {
		return arrow.MonthDayNanoInterval{}, ErrIntervalRange
	}
	return arrow.MonthDayNanoInterval{Months: months, Days: days, Nanoseconds: micros * 1000}, nil
}

// TimeText is how a time (withZone false) or timetz value is held:
// HH:MM:SS.ffffff, and for timetz the offset as +HH:MM:SS, which keep
// their order as text for a time and which the engine's casts read.
// micros is the time since midnight (up to 24:00:00), east the offset in
// seconds east of UTC.
func TimeText(micros int64, east int, withZone bool) string {
	sec := micros / 1_000_000
	s := fmt.Sprintf("%02d:%02d:%02d.%06d", sec/3600, sec/60%60, sec%60, micros%1_000_000)
	if !withZone {
		return s
	}
	sign := '+'
	if east < 0 {
		sign, east = '-', -east
	}
	return s + fmt.Sprintf("%c%02d:%02d:%02d", sign, east/3600, east/60%60, east%60)
}

// CheckTimeText reports whether s is TimeText: every write path makes it
// so, and the store refuses anything else, which the engine's cast would
// fail on when the table is read.
func CheckTimeText(s string, withZone bool) error {
	if !validTimeText(s, withZone) {
		return fmt.Errorf("not a stored time of day: %q", s)
	}
	return nil
}

// validTimeText is CheckTimeText's test, which every value written to a
// time column passes: it builds no error for a good one. A time without
// zone stops before 24:00 (every writer refuses that, 0A000); a timetz
// reaches it.
func validTimeText(s string, withZone bool) bool {
	n := 15
	if withZone {
		n = 24
	}
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		switch i {
		case 2, 5, 18, 21:
			if c != ':' {
				return false
			}
		case 8:
			if c != '.' {
				return false
			}
		case 15:
			if c != '+' && c != '-' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	hh, mm, ss := atoi2(s[0:2]), atoi2(s[3:5]), atoi2(s[6:8])
	if mm > 59 || ss > 59 || hh > 24 || hh == 24 && (!withZone || s[3:15] != "00:00.000000") {
		return false
	}
	// PostgreSQL's offsets reach ±15:59:59.
	return !withZone || atoi2(s[16:18]) <= 15 && atoi2(s[19:21]) <= 59 && atoi2(s[22:24]) <= 59
}

func atoi2(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }
