package dialect

import (
	"math"
	"math/big"
	"strconv"
	"strings"

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
		x, ok1 := new(big.Rat).SetString(strings.TrimSpace(operand))
		b1, ok2 := new(big.Rat).SetString(strings.TrimSpace(low))
		b2, ok3 := new(big.Rat).SetString(strings.TrimSpace(high))
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

// bucketFloat is PostgreSQL's width_bucket_float8.
func bucketFloat(x, b1, b2 float64, count int64) (int64, error) {
	switch {
	case math.IsNaN(x) || math.IsNaN(b1) || math.IsNaN(b2):
		return 0, widthBucketError("operand, lower bound, and upper bound cannot be NaN")
	case math.IsInf(b1, 0) || math.IsInf(b2, 0):
		return 0, widthBucketError("lower and upper bounds must be finite")
	case b1 == b2:
		return 0, widthBucketError("lower bound cannot equal upper bound")
	}
	lo, hi, below, above := b1, b2, x < b1, x >= b2
	if b1 > b2 {
		below, above = x > b1, x <= b2
	}
	if n, out, err := outside(below, above, count); out {
		return n, err
	}
	var r float64
	if b1 < b2 {
		if !math.IsInf(hi-lo, 0) {
			r = (x - lo) * float64(count) / (hi - lo)
		} else {
			r = (x/4 - lo/4) * float64(count) / (hi/4 - lo/4)
		}
	} else {
		if !math.IsInf(b1-b2, 0) {
			r = (b1 - x) * float64(count) / (b1 - b2)
		} else {
			r = (b1/4 - x/4) * float64(count) / (b1/4 - b2/4)
		}
	}
	n := int64(r) // C's conversion truncates
	if n >= count {
		n = count - 1 // a quotient rounded up to count would be a lie
	}
	return n + 1, nil
}

// bucketRat is PostgreSQL's width_bucket_numeric: exact.
func bucketRat(x, b1, b2 *big.Rat, count int64) (int64, error) {
	c := b1.Cmp(b2)
	if c == 0 {
		return 0, widthBucketError("lower bound cannot equal upper bound")
	}
	below, above := x.Cmp(b1) < 0, x.Cmp(b2) >= 0
	if c > 0 {
		below, above = x.Cmp(b1) > 0, x.Cmp(b2) <= 0
	}
	if n, out, err := outside(below, above, count); out {
		return n, err
	}
	num, den := new(big.Rat).Sub(x, b1), new(big.Rat).Sub(b2, b1)
	if c > 0 {
		num.Sub(b1, x)
		den.Sub(b1, b2)
	}
	q := new(big.Rat).Quo(new(big.Rat).Mul(num, new(big.Rat).SetInt64(count)), den)
	n := new(big.Int).Quo(q.Num(), q.Denom()).Int64() // non-negative: truncation is floor
	if n >= count {
		n = count - 1
	}
	return n + 1, nil
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
