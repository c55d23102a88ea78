// Package pgnumeric computes what PostgreSQL's numeric type answers where
// the engine has no equivalent: the result scale of a division, chosen per
// value from the operands (select_div_scale in PostgreSQL's numeric.c),
// and the avg, variance and standard deviation of exact sums, rounded as
// PostgreSQL rounds them.
//
// A value is an integer v and a display scale d, meaning v·10^-d: the
// scale is part of the value (1.50 and 1.5 print differently), as in
// PostgreSQL.
package pgnumeric

import (
	"math/big"
	"strconv"
)

// PostgreSQL's constants (numeric.c): digits are base 10,000, so 4
// decimal digits each, and a quotient gets at least 16 significant digits.
const (
	decDigits    = 4
	minSigDigits = 16
	maxDispScale = 1000
	minDispScale = 0
)

// Value is v·10^-Scale with Scale ≥ 0.
type Value struct {
	V     *big.Int
	Scale int
}

// String prints the value with all its scale digits, as PostgreSQL prints
// numeric.
func (x Value) String() string {
	s := new(big.Int).Abs(x.V).String()
	sign := ""
	if x.V.Sign() < 0 {
		sign = "-"
	}
	if x.Scale == 0 {
		return sign + s
	}
	if len(s) <= x.Scale {
		s = string(zeros(x.Scale-len(s)+1)) + s
	}
	return sign + s[:len(s)-x.Scale] + "." + s[len(s)-x.Scale:]
}

func zeros(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return b
}

var ten = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(ten, big.NewInt(int64(n)), nil) }

// Rescale returns x at scale s ≥ x.Scale (exact: only zeros are added).
func (x Value) Rescale(s int) Value {
	if s <= x.Scale {
		return x
	}
	return Value{V: new(big.Int).Mul(x.V, pow10(s-x.Scale)), Scale: s}
}

// Trimmed returns x without trailing fractional zeros.
func (x Value) Trimmed() Value {
	v, s := new(big.Int).Set(x.V), x.Scale
	r := new(big.Int)
	for s > 0 {
		q, m := new(big.Int).QuoRem(v, ten, r)
		if m.Sign() != 0 {
			break
		}
		v, s = q, s-1
	}
	return Value{V: v, Scale: s}
}

// weight returns the position of x's first non-zero base-10,000 digit
// (0 for 1…9999, 1 for 10,000…, -1 for 0.0001…0.9999) and that digit; 0
// and 0 for zero, as select_div_scale takes them.
func weight(x Value) (int, int) {
	if x.V.Sign() == 0 {
		return 0, 0
	}
	d := new(big.Int).Abs(x.V).String()
	intLen := len(d) - x.Scale
	if intLen > 0 {
		w := (intLen - 1) / decDigits
		first, _ := strconv.Atoi(d[:intLen-decDigits*w])
		return w, first
	}
	// A fraction: its digits after the point, grouped by 4 from the point.
	frac := string(zeros(-intLen)) + d
	for len(frac)%decDigits != 0 {
		frac += "0"
	}
	for g := 0; g < len(frac)/decDigits; g++ {
		if v, _ := strconv.Atoi(frac[g*decDigits : (g+1)*decDigits]); v != 0 {
			return -(g + 1), v
		}
	}
	return 0, 0
}

// DivScale is the scale PostgreSQL gives the quotient a / b: at least 16
// significant digits, and no fewer than either operand's scale.
func DivScale(a, b Value) int {
	w1, f1 := weight(a)
	w2, f2 := weight(b)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := minSigDigits - qweight*decDigits
	rscale = max(rscale, a.Scale, b.Scale, minDispScale)
	return min(rscale, maxDispScale)
}

// Div returns a / b at scale rscale, rounded half away from zero as
// PostgreSQL's div_var rounds. b must not be zero.
func Div(a, b Value, rscale int) Value {
	// a/b·10^rscale = a.V·10^(rscale+b.Scale) / (b.V·10^a.Scale).
	num := new(big.Int).Mul(a.V, pow10(rscale+b.Scale))
	den := new(big.Int).Mul(b.V, pow10(a.Scale))
	return Value{V: roundQuo(num, den), Scale: rscale}
}

// roundQuo is num/den rounded half away from zero.
func roundQuo(num, den *big.Int) *big.Int {
	neg := (num.Sign() < 0) != (den.Sign() < 0)
	n, d := new(big.Int).Abs(num), new(big.Int).Abs(den)
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Lsh(r, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q
}

// Sqrt returns the square root of x ≥ 0 at scale rscale, rounded half up.
func Sqrt(x Value, rscale int) Value {
	// sqrt(v·10^-s)·10^(rscale+1) = sqrt(v·10^(2·rscale+2-s)); the floor of
	// an integer square root keeps one digit more, which rounds.
	e := 2*rscale + 2 - x.Scale
	v := new(big.Int).Set(x.V)
	if e >= 0 {
		v.Mul(v, pow10(e))
	} else {
		v.Quo(v, pow10(-e))
	}
	r := new(big.Int).Sqrt(v)
	last := new(big.Int)
	r.QuoRem(r, ten, last)
	if last.Int64() >= 5 {
		r.Add(r, big.NewInt(1))
	}
	return Value{V: r, Scale: rscale}
}

// Avg is sum / n as PostgreSQL's avg of integers or numerics answers it;
// sum carries the inputs' largest scale. n must be positive.
func Avg(sum Value, n int64) Value {
	count := Value{V: big.NewInt(n), Scale: 0}
	return Div(sum, count, DivScale(sum, count))
}

// Kind names one of PostgreSQL's variance and standard deviation
// aggregates.
type Kind int

// The aggregates Variance computes: variance is var_samp and stddev is
// stddev_samp in PostgreSQL.
const (
	VarPop Kind = iota
	VarSamp
	StddevPop
	StddevSamp
)

// Variance computes PostgreSQL's var_pop, var_samp, stddev_pop or
// stddev_samp from n inputs of scale at most scale, their sum and the sum
// of their squares, as numeric_stddev_internal does: the numerator
// n·Σx² − (Σx)² exactly, divided at DivScale, the square root at that same
// scale. It reports false where PostgreSQL answers NULL (no rows; one row
// for the sample forms).
func Variance(k Kind, n int64, sum, sumSquares Value, scale int) (Value, bool) {
	sample := k == VarSamp || k == StddevSamp
	if n == 0 || (sample && n <= 1) {
		return Value{}, false
	}
	// The numerator at scale 2·scale, exact: Σx has scale ≤ scale and Σx²
	// ≤ 2·scale (a caller's scale too small for the sums is raised).
	sum, sumSquares = sum.Trimmed(), sumSquares.Trimmed()
	scale = max(scale, sum.Scale, (sumSquares.Scale+1)/2)
	s2 := 2 * scale
	sx := sum.Rescale(scale)
	sxx := sumSquares.Rescale(s2)
	N := big.NewInt(n)
	num := new(big.Int).Mul(N, sxx.V)
	num.Sub(num, new(big.Int).Mul(sx.V, sx.V))
	if num.Sign() <= 0 {
		return Value{V: new(big.Int), Scale: 0}, true
	}
	den := new(big.Int).Set(N)
	if sample {
		den.Mul(den, big.NewInt(n-1))
	} else {
		den.Mul(den, N)
	}
	a, b := Value{V: num, Scale: s2}, Value{V: den, Scale: 0}
	rscale := DivScale(a, b)
	v := Div(a, b, rscale)
	if k == StddevPop || k == StddevSamp {
		v = Sqrt(v, rscale)
	}
	return v, true
}
