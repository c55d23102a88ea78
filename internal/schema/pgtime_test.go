package schema

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestPGMicros(t *testing.T) {
	date := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMicro() }
	for _, tc := range []struct {
		pg   int64
		unix int64
		inf  int
		err  error
	}{
		{0, PGEpochUnixMicros, 0, nil},
		{math.MaxInt64, math.MaxInt64, 1, nil},
		{math.MinInt64, -math.MaxInt64, -1, nil},
		{PGMinMicros, date(-4713, 11, 24), 0, nil},
		{PGMinMicros - 1, 0, 0, ErrTimestampRange},
		{date(2300, 6, 1) - PGEpochUnixMicros, date(2300, 6, 1), 0, nil},
		{math.MaxInt64 - PGEpochUnixMicros - 1, math.MaxInt64 - 1, 0, nil}, // the engine's latest
		{math.MaxInt64 - PGEpochUnixMicros, 0, 0, ErrTimestampRange},
		{PGEndMicros - 1, 0, 0, ErrTimestampRange},
	} {
		unix, inf, err := FromPGMicros(tc.pg)
		if !errors.Is(err, tc.err) || (err == nil && (unix != tc.unix || inf != tc.inf)) {
			t.Errorf("FromPGMicros(%d) = %d, %d, %v; want %d, %d, %v", tc.pg, unix, inf, err, tc.unix, tc.inf, tc.err)
		}
		if err != nil {
			continue
		}
		if back, err := ToPGMicros(unix); err != nil || back != tc.pg {
			t.Errorf("ToPGMicros(%d) = %d, %v; want %d", unix, back, err, tc.pg)
		}
	}
	if _, err := ToPGMicros(-math.MaxInt64 + 1); !errors.Is(err, ErrTimestampRange) {
		t.Errorf("ToPGMicros of 290308 BC: %v, want ErrTimestampRange", err)
	}
}

func TestPGDays(t *testing.T) {
	for _, tc := range []struct {
		pg   int32
		unix int64
		err  error
	}{
		{0, PGEpochUnixDays, nil},
		{math.MaxInt32, math.MaxInt32, nil},
		{math.MinInt32, -math.MaxInt32, nil},
		{PGMinDays, time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC).Unix() / 86400, nil},
		{PGMinDays - 1, 0, ErrDateRange},
		{PGEndDays - 1, time.Date(5874897, 12, 31, 0, 0, 0, 0, time.UTC).Unix() / 86400, nil},
		{PGEndDays, 0, ErrDateRange},
	} {
		unix, _, err := FromPGDays(tc.pg)
		if !errors.Is(err, tc.err) || (err == nil && unix != tc.unix) {
			t.Errorf("FromPGDays(%d) = %d, %v; want %d, %v", tc.pg, unix, err, tc.unix, tc.err)
		}
		if err == nil {
			if back, err := ToPGDays(unix); err != nil || back != tc.pg {
				t.Errorf("ToPGDays(%d) = %d, %v; want %d", unix, back, err, tc.pg)
			}
		}
	}
}
