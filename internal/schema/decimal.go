package schema

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// ErrNumericOverflow is wrapped by the errors of values too wide for their
// numeric(p, s) column (PostgreSQL's numeric_value_out_of_range, 22003).
var ErrNumericOverflow = errors.New("numeric field overflow")

// ParseDecimal reads numeric input (digits with an optional point and
// exponent, surrounding spaces) as a value of numeric(p, scale): rounded to
// scale digits after the point, half away from zero, as PostgreSQL rounds
// numeric; a value with more than p-scale digits before the point is
// ErrNumericOverflow. NaN and infinities, which numeric(p, s) columns of
// the engine cannot hold, are refused.
func ParseDecimal(s string, p, scale int) (decimal128.Num, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsAny(t, "_xXoObBpP/") {
		return decimal128.Num{}, fmt.Errorf("invalid input syntax for type numeric: %q", s)
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		switch strings.ToLower(strings.TrimLeft(t, "+-")) {
		case "nan", "infinity", "inf":
			return decimal128.Num{}, fmt.Errorf("numeric value %q is not supported in a numeric(%d,%d) column", s, p, scale)
		}
		return decimal128.Num{}, fmt.Errorf("invalid input syntax for type numeric: %q", s)
	}
	return DecimalFromRat(r, p, scale)
}

// DecimalFromRat rounds r to numeric(p, scale) as ParseDecimal does.
func DecimalFromRat(r *big.Rat, p, scale int) (decimal128.Num, error) {
	ten := big.NewInt(10)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(int64(scale)), nil)))
	// Round half away from zero: |x| + 1/2, truncated, signed.
	num, den := new(big.Int).Abs(scaled.Num()), scaled.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(m, big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if scaled.Sign() < 0 {
		q.Neg(q)
	}
	if new(big.Int).Abs(q).Cmp(new(big.Int).Exp(ten, big.NewInt(int64(p)), nil)) >= 0 {
		return decimal128.Num{}, fmt.Errorf("%w: a field with precision %d, scale %d must round to an absolute value less than 10^%d", ErrNumericOverflow, p, scale, p-scale)
	}
	return decimal128.FromBigInt(q), nil
}

// FormatDecimal prints v of the given scale as PostgreSQL prints numeric:
// every digit of the scale.
func FormatDecimal(v decimal128.Num, scale int) string {
	b := v.BigInt()
	neg := b.Sign() < 0
	digits := new(big.Int).Abs(b).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// DecimalFromPGBinary reads PostgreSQL's binary numeric (what drivers send
// in binary COPY and parameters: digit count, weight, sign and display
// scale as 16-bit integers, then base-10000 digits) as numeric(p, scale).
func DecimalFromPGBinary(b []byte, p, scale int) (decimal128.Num, error) {
	if len(b) < 8 {
		return decimal128.Num{}, fmt.Errorf("%d bytes for type numeric", len(b))
	}
	u16 := func(i int) int { return int(b[i])<<8 | int(b[i+1]) }
	ndigits, weight, sign := u16(0), int(int16(u16(2))), u16(4)
	if len(b) != 8+2*ndigits {
		return decimal128.Num{}, fmt.Errorf("%d bytes for a numeric of %d digits", len(b), ndigits)
	}
	switch sign {
	case 0x0000, 0x4000:
	default:
		return decimal128.Num{}, fmt.Errorf("numeric NaN and infinities are not supported in a numeric(%d,%d) column", p, scale)
	}
	v := new(big.Int)
	base := big.NewInt(10000)
	for i := 0; i < ndigits; i++ {
		d := u16(8 + 2*i)
		if d > 9999 {
			return decimal128.Num{}, fmt.Errorf("invalid digit %d in binary numeric", d)
		}
		v.Mul(v, base).Add(v, big.NewInt(int64(d)))
	}
	// v holds the digits as an integer; its last digit has weight
	// weight-ndigits+1 (in powers of 10000).
	r := new(big.Rat).SetInt(v)
	exp := weight - ndigits + 1
	pow := new(big.Rat).SetInt(new(big.Int).Exp(base, big.NewInt(int64(abs(exp))), nil))
	if exp >= 0 {
		r.Mul(r, pow)
	} else {
		r.Quo(r, pow)
	}
	if sign == 0x4000 {
		r.Neg(r)
	}
	return DecimalFromRat(r, p, scale)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
