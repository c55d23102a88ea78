package planner

import (
	"math"
	"testing"
)

func TestRoundMicros(t *testing.T) {
	for _, c := range []struct{ v, scale, want int64 }{
		{123_456, 10_000, 120_000},
		{125_000, 10_000, 130_000},   // halves away from zero
		{-125_000, 10_000, -130_000}, // on both sides
		{999_999, 1_000_000, 1_000_000},
		{7, 1, 7},
		{math.MaxInt64, 10_000, math.MaxInt64},   // infinity
		{-math.MaxInt64, 10_000, -math.MaxInt64}, // the engine's -infinity
		{math.MinInt64, 10_000, math.MinInt64},
	} {
		if got := roundMicros(c.v, c.scale); got != c.want {
			t.Errorf("roundMicros(%d, %d) = %d, want %d", c.v, c.scale, got, c.want)
		}
	}
}
