package dialect

import (
	"math"
	"strconv"
)

// AppendFloat appends a float8 (bits 64) or float4 (bits 32) as text,
// following PostgreSQL 12+ (extra_float_digits = 1): the
// shortest text that reads back to the same value, NaN, Infinity,
// -Infinity. PostgreSQL writes a float8 in fixed notation when its decimal
// exponent is in [-4, 15) (1709251201, not 1.709251201e+09), a float4 when
// it is in [-4, 6), which is Go's %g. The float8 test on the magnitude is
// exact: 1e15 is a double, so no double below it has a shortest form of
// 1e+15, and the double nearest 1e-4 is the least one printed as 0.0001.
//
// With extra_float_digits at 0 or below, PostgreSQL writes 15 (float4: 6)
// significant digits plus that setting, as C's %g does.
func AppendFloat(dst []byte, f float64, bits, extraDigits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	if extraDigits <= 0 {
		digits := 15
		if bits == 32 {
			digits = 6
		}
		return strconv.AppendFloat(dst, f, 'g', max(digits+extraDigits, 1), bits)
	}
	if bits == 64 {
		if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e15) {
			return strconv.AppendFloat(dst, f, 'f', -1, 64)
		}
		return strconv.AppendFloat(dst, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}
