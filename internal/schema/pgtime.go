package schema

import (
	"errors"
	"math"
)

// PostgreSQL's binary timestamps count microseconds from 2000-01-01 and
// its dates days from there; DuckDB counts both from 1970-01-01 and marks
// its infinities with the largest magnitudes (±math.MaxInt64 microseconds,
// ±math.MaxInt32 days), where PostgreSQL uses math.MaxInt64 and
// math.MinInt64 (dates: math.MaxInt32 and math.MinInt32).
//
// The conversions here are done in int64 arithmetic, checked against both
// ranges: adding the microseconds as a time.Duration (nanoseconds)
// overflows 292 years from 2000, which once stored 2300-06-01 as
// 1715-11-11 and let a DELETE with a year-3000 bound remove every row.
const (
	// PGEpochUnixMicros is 2000-01-01 in microseconds since 1970.
	PGEpochUnixMicros = 946_684_800_000_000
	// PGEpochUnixDays is 2000-01-01 in days since 1970.
	PGEpochUnixDays = 10_957

	// PGMinMicros is PostgreSQL's earliest timestamp, 4714-11-24 00:00:00
	// BC (Julian day 0), in its binary form.
	PGMinMicros = -211_813_488_000_000_000
	// PGEndMicros is one past PostgreSQL's latest timestamp, 294277-01-01
	// 00:00:00, in its binary form.
	PGEndMicros = 9_223_371_331_200_000_000
	// PGMinDays and PGEndDays bound PostgreSQL's dates (4714-11-24 BC up
	// to 5874897-12-31) in its binary form; PGEndDays is exclusive.
	PGMinDays = -2_451_545
	PGEndDays = 2_145_031_949
)

// ErrTimestampRange is a timestamp PostgreSQL or the engine cannot hold;
// ErrDateRange the same for a date. Both are PostgreSQL's 22008.
var (
	ErrTimestampRange = errors.New("timestamp out of range")
	ErrDateRange      = errors.New("date out of range")
)

// FromPGMicros converts PostgreSQL's binary timestamp into microseconds
// since 1970 as the engine stores them. inf is +1 or -1 for PostgreSQL's
// infinities (unix is then the engine's), 0 for a finite value. A value
// outside PostgreSQL's range, or past the engine's latest timestamp
// (294247-01-10, 30 years before PostgreSQL's), is ErrTimestampRange.
func FromPGMicros(pg int64) (unix int64, inf int, err error) {
	switch pg {
	case math.MaxInt64:
		return math.MaxInt64, 1, nil
	case math.MinInt64:
		return -math.MaxInt64, -1, nil
	}
	if pg < PGMinMicros || pg >= PGEndMicros || pg >= math.MaxInt64-PGEpochUnixMicros {
		return 0, 0, ErrTimestampRange
	}
	return pg + PGEpochUnixMicros, 0, nil
}

// ToPGMicros converts the engine's microseconds since 1970 into
// PostgreSQL's binary timestamp, infinities included. A finite value
// outside PostgreSQL's range is ErrTimestampRange: PostgreSQL cannot hold
// it, and any number sent instead would be a different time.
func ToPGMicros(unix int64) (int64, error) {
	switch unix {
	case math.MaxInt64:
		return math.MaxInt64, nil
	case -math.MaxInt64:
		return math.MinInt64, nil
	}
	if unix < PGMinMicros+PGEpochUnixMicros {
		return 0, ErrTimestampRange
	}
	// The engine's latest timestamp is below PostgreSQL's end: no check
	// is needed above.
	return unix - PGEpochUnixMicros, nil
}

// FromPGDays converts PostgreSQL's binary date into days since 1970, as
// FromPGMicros does timestamps.
func FromPGDays(pg int32) (unix int64, inf int, err error) {
	switch pg {
	case math.MaxInt32:
		return math.MaxInt32, 1, nil
	case math.MinInt32:
		return -math.MaxInt32, -1, nil
	}
	if pg < PGMinDays || pg >= PGEndDays {
		return 0, 0, ErrDateRange
	}
	return int64(pg) + PGEpochUnixDays, 0, nil
}

// ToPGDays converts the engine's days since 1970 into PostgreSQL's binary
// date, as ToPGMicros does timestamps.
func ToPGDays(unix int64) (int32, error) {
	switch unix {
	case math.MaxInt32:
		return math.MaxInt32, nil
	case -math.MaxInt32:
		return math.MinInt32, nil
	}
	pg := unix - PGEpochUnixDays
	if pg < PGMinDays || pg >= PGEndDays {
		return 0, ErrDateRange
	}
	return int32(pg), nil
}
