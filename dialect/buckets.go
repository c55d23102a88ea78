package dialect

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"tsdb/internal/pgnumeric"
	"tsdb/internal/sqlerr"
)

// width_bucket and div, which the engine lacks, computed as PostgreSQL
// computes them: width_bucket of double precision values in floating
// point (its float8 version), of numeric ones exactly; div as numeric's
// quotient truncated toward zero. The engine hands the values over as
// text (the _tsdb_width_bucket and _tsdb_div macros).

// widthBucketError is PostgreSQL's 2201G.
func widthBucketError(msg string) error {
	return sqlerr.New("2201G", "%s", msg)
}

// WidthBucket is width_bucket(operand, low, high, count): the bucket of
// count equal-width buckets between low and high the operand falls in, 0
// below and count+1 above. exact computes with numeric values, as
// PostgreSQL's numeric version does; else with doubles.
func WidthBucket(operand, low, high string, count int64, exact bool) (int64, error) {
	if count <= 0 {
		return 0, widthBucketError("count must be greater than zero")
	}
	if count > math.MaxInt32 {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
	}
	if exact {
		x, ok1 := parseNumeric(operand)
		b1, ok2 := parseNumeric(low)
		b2, ok3 := parseNumeric(high)
		if ok1 && ok2 && ok3 {
			return bucketRat(x, b1, b2, count)
		}
	}
	x, err1 := strconv.ParseFloat(strings.TrimSpace(operand), 64)
	b1, err2 := strconv.ParseFloat(strings.TrimSpace(low), 64)
	b2, err3 := strconv.ParseFloat(strings.TrimSpace(high), 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, sqlerr.New(sqlerr.InvalidTextRep, "width_bucket of values that are not numbers")
	}
	return bucketFloat(x, b1, b2, count)
}

// bucketFloat is PostgreSQL 15's width_bucket_float8: the bucket is
// ((x - low) · count) / (high - low) + 1, truncated. A quotient that is
// not a finite integer (PostgreSQL 15 answers -2147483648 there, as its
// conversion of an infinity gives) is 22003.
func bucketFloat(x, b1, b2 float64, count int64) (int64, error) {
	switch {
	case math.IsNaN(x) || math.IsNaN(b1) || math.IsNaN(b2):
		return 0, widthBucketError("operand, lower bound, and upper bound cannot be NaN")
	case math.IsInf(b1, 0) || math.IsInf(b2, 0):
		return 0, widthBucketError("lower and upper bounds must be finite")
	case b1 == b2:
		return 0, widthBucketError("lower bound cannot equal upper bound")
	}
	below, above := x < b1, x >= b2
	if b1 > b2 {
		below, above = x > b1, x <= b2
	}
	if n, out, err := outside(below, above, count); out {
		return n, err
	}
	r := (x-b1)*float64(count)/(b2-b1) + 1
	if b1 > b2 {
		r = (b1-x)*float64(count)/(b1-b2) + 1
	}
	if math.IsNaN(r) || r >= math.MaxInt32+1 || r <= math.MinInt32-1 {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
	}
	return int64(r), nil // C's conversion truncates
}

// bucketRat is PostgreSQL 15's width_bucket_numeric (compute_bucket):
// (x - low) · count exactly, divided by (high - low) at the scale numeric
// division takes (select_div_scale, rounded half away from zero), plus
// one, floored.
func bucketRat(x, b1, b2 pgnumeric.Value, count int64) (int64, error) {
	c := numCmp(b1, b2)
	if c == 0 {
		return 0, widthBucketError("lower bound cannot equal upper bound")
	}
	below, above := numCmp(x, b1) < 0, numCmp(x, b2) >= 0
	if c > 0 {
		below, above = numCmp(x, b1) > 0, numCmp(x, b2) <= 0
	}
	if n, out, err := outside(below, above, count); out {
		return n, err
	}
	num, den := numSub(x, b1), numSub(b2, b1)
	if c > 0 {
		num, den = numSub(b1, x), numSub(b1, b2)
	}
	num.V.Mul(num.V, big.NewInt(count))
	q := pgnumeric.Div(num, den, pgnumeric.DivScale(num, den))
	// floor(q + 1), q positive: its integer part plus one.
	return new(big.Int).Quo(q.V, pow10(q.Scale)).Int64() + 1, nil
}

// parseNumeric reads a numeric's text (digits, a point, a sign) with its
// scale.
func parseNumeric(s string) (pgnumeric.Value, bool) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	v, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok || strings.ContainsAny(s, "eE") {
		return pgnumeric.Value{}, false
	}
	return pgnumeric.Value{V: v, Scale: len(frac)}, true
}

// numAligned gives a and b one scale, the larger.
func numAligned(a, b pgnumeric.Value) (*big.Int, *big.Int, int) {
	s := max(a.Scale, b.Scale)
	x := new(big.Int).Mul(a.V, pow10(s-a.Scale))
	y := new(big.Int).Mul(b.V, pow10(s-b.Scale))
	return x, y, s
}

// numCmp compares two numerics.
func numCmp(a, b pgnumeric.Value) int {
	x, y, _ := numAligned(a, b)
	return x.Cmp(y)
}

// numSub is a - b.
func numSub(a, b pgnumeric.Value) pgnumeric.Value {
	x, y, s := numAligned(a, b)
	return pgnumeric.Value{V: x.Sub(x, y), Scale: s}
}

// outside is the bucket of an operand below the first bound (0) or
// beyond the second (count+1); out is false for one between them.
func outside(below, above bool, count int64) (n int64, out bool, err error) {
	switch {
	case below:
		return 0, true, nil
	case above:
		if count+1 > math.MaxInt32 {
			return 0, true, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
		}
		return count + 1, true, nil
	}
	return 0, false, nil
}

// Div is div(a, b) of numerics: the quotient truncated toward zero.
func Div(a, b string) (string, error) {
	x, ok1 := new(big.Rat).SetString(strings.TrimSpace(a))
	y, ok2 := new(big.Rat).SetString(strings.TrimSpace(b))
	if !ok1 || !ok2 {
		return "", sqlerr.New(sqlerr.InvalidTextRep, "div of values that are not numbers")
	}
	if y.Sign() == 0 {
		return "", sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	}
	q := new(big.Rat).Quo(x, y)
	return new(big.Int).Quo(q.Num(), q.Denom()).String(), nil // Quo truncates toward zero
}
