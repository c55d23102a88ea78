package dialect

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// sqrt, exp, ln, log and log10 of a numeric are numerics in PostgreSQL,
// computed to a scale of their own (at least 16 significant digits, no
// fewer places than the argument: sqrt(2.0) is 1.414213562373095,
// ln(10.0) 2.3025850929940457, log(2, 8) 3.0000000000000000). The engine
// computes them in doubles (1.4142135623730951, 2.302585092994046, 3): a
// different value. For constant arguments, NumericMath computes them here
// as PostgreSQL's numeric.c does and puts the number in the call's place.

// The scale limits of numeric.c.
const (
	numericMinSigDigits   = 16
	numericMaxDisplay     = 1000
	numericMaxResultScale = 2000
)

// numericConst is a numeric constant's value and display scale: a number
// literal with a point or an exponent, possibly negated, or a constant
// cast to numeric.
func numericConst(n *pg_query.Node) (*big.Rat, int, bool) {
	neg := false
	if e := n.GetAExpr(); e != nil && e.Lexpr == nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && sqltree.LastName(e.Name) == "-" {
		neg, n = true, e.Rexpr
	}
	var text string
	switch {
	case n.GetAConst().GetFval() != nil:
		text = n.GetAConst().GetFval().Fval
	case n.GetTypeCast() != nil && len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0 && len(n.GetTypeCast().TypeName.GetTypmods()) == 0:
		name := sqltree.LastName(n.GetTypeCast().TypeName.GetNames())
		c := n.GetTypeCast().Arg.GetAConst()
		if name != "numeric" && name != "decimal" || c == nil {
			return nil, 0, false
		}
		switch {
		case c.GetSval() != nil:
			text = strings.TrimSpace(c.GetSval().Sval)
		case c.GetFval() != nil:
			text = c.GetFval().Fval
		case c.GetIval() != nil:
			text = fmt.Sprint(c.GetIval().Ival)
		default:
			return nil, 0, false
		}
	default:
		return nil, 0, false
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || strings.ContainsAny(strings.ToLower(text), "in") { // no NaN or Infinity
		return nil, 0, false
	}
	if neg {
		r.Neg(r)
	}
	return r, displayScale(text), true
}

// displayScale is the scale numeric input gives text: its digits after
// the point, less the exponent.
func displayScale(text string) int {
	mant, exp := strings.ToLower(strings.TrimLeft(text, "+-")), 0
	if i := strings.IndexByte(mant, 'e'); i >= 0 {
		fmt.Sscan(mant[i+1:], &exp)
		mant = mant[:i]
	}
	scale := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		scale = len(mant) - i - 1
	}
	return max(scale-exp, 0)
}

// nbaseDigits is a positive value's weight and first digit in numeric.c's
// base 10000 (NBASE): x ≈ first · 10000^weight, and the second digit.
func nbaseDigits(x *big.Rat) (weight int, first, second int64, ndigits int) {
	if x.Sign() <= 0 {
		return 0, 0, 0, 0
	}
	// The decimal exponent of the leading digit, exactly: from the
	// lengths of numerator and denominator (a double overflows for
	// 1e400), then corrected.
	e := len(x.Num().String()) - len(x.Denom().String())
	for ratPow10(e+1).Cmp(x) <= 0 {
		e++
	}
	for ratPow10(e).Cmp(x) > 0 {
		e--
	}
	weight = floorDiv(e, 4)
	// The digit groups at weight and weight-1.
	scaled := new(big.Rat).Quo(x, ratPow10(4*(weight-1)))
	q := new(big.Int).Quo(scaled.Num(), scaled.Denom()) // floor: positive
	first = new(big.Int).Quo(q, big.NewInt(10000)).Int64()
	second = new(big.Int).Rem(q, big.NewInt(10000)).Int64()
	ndigits = 1
	if second != 0 || new(big.Rat).Sub(scaled, new(big.Rat).SetInt(q)).Sign() != 0 {
		ndigits = 2
	}
	return weight, first, second, ndigits
}

// floorDiv is a/b rounded toward minus infinity.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// pow10 is 10^e for e ≥ 0.
func pow10(e int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil) }

// ratPow10 is 10^e for any integer e.
func ratPow10(e int) *big.Rat {
	if e >= 0 {
		return new(big.Rat).SetInt(pow10(e))
	}
	return new(big.Rat).SetFrac(big.NewInt(1), pow10(-e))
}

// lnDWeight is numeric.c's estimate_ln_dweight: the decimal weight of
// ln(x), x positive.
func lnDWeight(x *big.Rat) int {
	lo, hi := big.NewRat(9, 10), big.NewRat(11, 10)
	if x.Cmp(lo) >= 0 && x.Cmp(hi) <= 0 {
		d := new(big.Rat).Sub(x, big.NewRat(1, 1))
		if d.Sign() == 0 {
			return 0
		}
		w, first, _, _ := nbaseDigits(new(big.Rat).Abs(d))
		return w*4 + int(math.Log10(float64(first)))
	}
	w, first, second, n := nbaseDigits(x)
	digits, dweight := first, w*4
	if n > 1 {
		digits = digits*10000 + second
		dweight -= 4
	}
	lnVar := math.Log(float64(digits)) + float64(dweight)*2.302585092994046
	return int(math.Log10(math.Abs(lnVar)))
}

// precision is the bits big.Float needs for digits significant decimals
// and a margin.
func precision(digits int) uint { return uint((digits+40)*34/10) + 64 }

// bigExp is e^x to prec bits: e^(x/2^k) by its series, squared k times.
func bigExp(x *big.Float, prec uint) *big.Float {
	r := new(big.Float).SetPrec(prec).Set(x)
	k := 0
	half := big.NewFloat(0.5)
	for r.Cmp(half) > 0 || r.Cmp(new(big.Float).Neg(half)) < 0 {
		r.Quo(r, big.NewFloat(2))
		k++
	}
	k += 8
	r.SetMantExp(r, -8)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	eps := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), -int(prec))
	for i := int64(1); ; i++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(i))
		sum.Add(sum, term)
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for range k {
		sum.Mul(sum, sum)
	}
	return sum
}

// bigLn is ln(x), x > 0, to prec bits: Newton's steps on e^y = x from the
// double's logarithm of the mantissa, plus the exponent's multiple of
// ln 2.
func bigLn(x *big.Float, prec uint) *big.Float {
	mant := new(big.Float).SetPrec(prec)
	exp := x.MantExp(mant) // x = mant · 2^exp, mant in [0.5, 1)
	m, _ := mant.Float64()
	y := new(big.Float).SetPrec(prec).SetFloat64(math.Log(m))
	for range 100 {
		ey := bigExp(y, prec)
		// y ← y + 2 (m − e^y) / (m + e^y)
		num := new(big.Float).SetPrec(prec).Sub(mant, ey)
		den := new(big.Float).SetPrec(prec).Add(mant, ey)
		step := num.Quo(num, den)
		step.Mul(step, big.NewFloat(2))
		y.Add(y, step)
		if step.Sign() == 0 || step.MantExp(nil) < y.MantExp(nil)-int(prec)+8 {
			break
		}
	}
	if exp != 0 {
		ln2 := bigLn2(prec)
		y.Add(y, ln2.Mul(ln2, new(big.Float).SetPrec(prec).SetInt64(int64(exp))))
	}
	return y
}

// bigLn2 is ln 2 to prec bits: 2 atanh(1/3) by its series.
func bigLn2(prec uint) *big.Float {
	third := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1), big.NewFloat(3))
	ninth := new(big.Float).SetPrec(prec).Mul(third, third)
	sum := new(big.Float).SetPrec(prec)
	pow := new(big.Float).SetPrec(prec).Set(third)
	eps := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), -int(prec))
	for k := int64(1); ; k += 2 {
		t := new(big.Float).SetPrec(prec).Quo(pow, new(big.Float).SetPrec(prec).SetInt64(k))
		sum.Add(sum, t)
		if t.Cmp(eps) < 0 {
			break
		}
		pow.Mul(pow, ninth)
	}
	return sum.Mul(sum, big.NewFloat(2))
}

// roundText writes x rounded half away from zero to scale places, as
// numeric.c's round_var.
func roundText(x *big.Float, scale int) string {
	r, _ := x.Rat(nil)
	if r == nil { // ±Inf: not reached, the scale checks come first
		return "NaN"
	}
	neg := r.Sign() < 0
	r.Abs(r)
	r.Mul(r, ratPow10(scale))
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	s := q.String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg && strings.Trim(s, "0.") != "" {
		s = "-" + s
	}
	return s
}

// clampScale is the end of numeric.c's scale choice: no fewer places than
// the arguments show, within the display limits.
func clampScale(rscale int, dscales ...int) int {
	for _, d := range dscales {
		rscale = max(rscale, d)
	}
	return min(max(rscale, 0), numericMaxDisplay)
}

// NumericMath computes sqrt, exp, ln, log (of one or two arguments) and
// log10 of numeric constants as PostgreSQL does, as the text of the
// numeric; ok is false for any other call. A result wider than the
// engine's 38 digits is 22003.
func NumericMath(name string, args []*pg_query.Node) (text string, ok bool, err error) {
	text, ok, err = numericMath(name, args)
	if err == nil && ok && !fitsEngine(text) {
		return "", true, errNumericWidth
	}
	return text, ok, err
}

// maxEngineDigits is the widest decimal the engine holds.
const maxEngineDigits = 38

// errNumericWidth is a numeric result wider than the engine's decimal.
var errNumericWidth = sqlerr.New(sqlerr.NumericOutOfRange, "value overflows numeric format")

// fitsEngine reports whether a numeric's text fits the engine's decimal:
// its integer digits (no leading zeros) and its scale, 38 in all.
func fitsEngine(text string) bool {
	whole, frac, _ := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if strings.Trim(whole+frac, "0123456789") != "" {
		return false
	}
	return len(strings.TrimLeft(whole, "0"))+len(frac) <= maxEngineDigits
}

// numericMath is NumericMath before the width check. A result's scale or
// size that cannot fit the engine is refused before it is computed: a
// constant like exp(1e9) would take the time of 400 million digits.
func numericMath(name string, args []*pg_query.Node) (text string, ok bool, err error) {
	vals := make([]*big.Rat, len(args))
	scales := make([]int, len(args))
	for i, a := range args {
		if vals[i], scales[i], ok = numericConst(a); ok {
			continue
		}
		// log(b, x) has only PostgreSQL's numeric version: integers are
		// numerics there (the one-argument functions take them as
		// double precision).
		iv := a.GetAConst().GetIval()
		if name != "log" || len(args) != 2 || iv == nil {
			return "", false, nil
		}
		vals[i], scales[i] = big.NewRat(int64(iv.Ival), 1), 0
	}
	switch {
	case name == "sqrt" && len(args) == 1:
		x := vals[0]
		if x.Sign() < 0 {
			return "", true, sqlerr.New("2201F", "cannot take square root of a negative number")
		}
		w, _, _, _ := nbaseDigits(x) // 0 for zero, as numeric.c's
		sweight := (w+1)*4/2 - 1
		rscale := clampScale(numericMinSigDigits-sweight, scales[0])
		if rscale+max(sweight+1, 0) > maxEngineDigits+4 {
			return "", true, errNumericWidth
		}
		if x.Sign() == 0 {
			return roundText(new(big.Float), rscale), true, nil
		}
		prec := precision(rscale + 4*max(w, 0) + 8)
		f := new(big.Float).SetPrec(prec).SetRat(x)
		return roundText(f.Sqrt(f), rscale), true, nil
	case name == "exp" && len(args) == 1:
		f64, _ := vals[0].Float64()
		if math.Abs(f64) > 6000 {
			// numeric.c's exp_var: overflow beyond; below, a result of
			// more places than the engine holds.
			return "", true, errNumericWidth
		}
		val := max(min(f64*0.434294481903252, numericMaxResultScale), -numericMaxResultScale)
		rscale := clampScale(numericMinSigDigits-int(val), scales[0])
		if rscale+max(int(val)+1, 0) > maxEngineDigits+4 {
			return "", true, errNumericWidth
		}
		prec := precision(rscale + int(math.Max(val, 0)) + 8)
		return roundText(bigExp(new(big.Float).SetPrec(prec).SetRat(vals[0]), prec), rscale), true, nil
	case name == "ln" && len(args) == 1:
		x := vals[0]
		if err := lnDomain(x); err != nil {
			return "", true, err
		}
		rscale := clampScale(numericMinSigDigits-lnDWeight(x), scales[0])
		if rscale > maxEngineDigits+4 {
			return "", true, errNumericWidth
		}
		prec := precision(rscale + 8)
		return roundText(bigLn(new(big.Float).SetPrec(prec).SetRat(x), prec), rscale), true, nil
	case (name == "log" || name == "log10") && len(args) == 1, name == "log" && len(args) == 2:
		base, x, bs, xs := big.NewRat(10, 1), vals[0], 0, scales[0]
		if len(args) == 2 {
			base, x, bs, xs = vals[0], vals[1], scales[0], scales[1]
		}
		if err := lnDomain(base); err != nil {
			return "", true, err
		}
		if err := lnDomain(x); err != nil {
			return "", true, err
		}
		if base.Cmp(big.NewRat(1, 1)) == 0 {
			return "", true, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
		}
		rscale := clampScale(numericMinSigDigits-(lnDWeight(x)-lnDWeight(base)), bs, xs)
		if rscale > maxEngineDigits+4 {
			return "", true, errNumericWidth
		}
		prec := precision(rscale + 16)
		lx := bigLn(new(big.Float).SetPrec(prec).SetRat(x), prec)
		lb := bigLn(new(big.Float).SetPrec(prec).SetRat(base), prec)
		return roundText(lx.Quo(lx, lb), rscale), true, nil
	}
	return "", false, nil
}

// lnDomain is numeric's refusal of a logarithm of zero or a negative.
func lnDomain(x *big.Rat) error {
	switch x.Sign() {
	case 0:
		return sqlerr.New("2201E", "cannot take logarithm of zero")
	case -1:
		return sqlerr.New("2201E", "cannot take logarithm of a negative number")
	}
	return nil
}
