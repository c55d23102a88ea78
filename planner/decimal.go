package planner

import (
	"math"
	"math/big"
	"math/bits"
)

// Decimal text to float64 without strconv for the forms loads send.
//
// Metrics arrive as the shortest text that round-trips a float64, which for
// values like usage_user = 37.954254324644715 is 16 or 17 significant
// digits: an integer above 2^53, out of reach of the exact fast path
// (exactDecimal). strconv.ParseFloat handles them correctly but spends most
// of its time on its general reader (signs, exponents, underscores, hex),
// and took as long as the rest of a COPY's float conversion together.
//
// wideDecimal rounds m × 10^-k correctly for any m < 2^64 and k ≤ 22 with
// 128-bit arithmetic, the method of Eisel and Lemire (Lemire, "Number
// Parsing at a Gigabyte per Second", 2021): multiply the normalised m by a
// 128-bit truncation of 10^-k, keep the top 54 bits, and round. The
// truncation leaves the product short by less than m, so the few products
// where that error could change the kept bits or decide a tie are refused
// and take strconv's path.

// pow10Neg128 is 10^-k as a 128-bit mantissa and binary exponent:
// 10^-k = (hi·2^64 + lo + ε) · 2^-shift with 0 ≤ ε < 1 and hi's top bit set.
type pow10Neg128 struct {
	hi, lo uint64
	shift  int
}

// negPow10 holds 10^-k for k = 0…22, computed once with exact big
// integers rather than written out: floor(2^shift / 10^k) with the
// smallest shift that gives 128 bits.
var negPow10 = func() (t [23]pow10Neg128) {
	ten := big.NewInt(10)
	mask := new(big.Int).SetUint64(math.MaxUint64)
	for k := range t {
		p := new(big.Int).Exp(ten, big.NewInt(int64(k)), nil)
		shift := 127 + p.BitLen() - 1
		q := new(big.Int).Lsh(big.NewInt(1), uint(shift))
		q.Quo(q, p)
		for q.BitLen() < 128 {
			shift++
			q.Lsh(big.NewInt(1), uint(shift))
			q.Quo(q, p)
		}
		lo := new(big.Int).And(q, mask).Uint64()
		hi := new(big.Int).Rsh(q, 64).Uint64()
		t[k] = pow10Neg128{hi: hi, lo: lo, shift: shift}
	}
	return t
}()

// wideDecimal returns m × 10^-k rounded to the nearest float64 (ties to
// even), exactly as strconv.ParseFloat would, or false where 128 bits do
// not decide the rounding. m must be non-zero and k at most 22.
func wideDecimal(m uint64, k int) (float64, bool) {
	if m == 0 || k < 0 || k >= len(negPow10) {
		return 0, false
	}
	p := negPow10[k]
	lz := bits.LeadingZeros64(m)
	w := m << uint(lz)
	// The 192-bit product w·(hi·2^64 + lo) as zHi:zMid:zLo.
	zHi, zMid := bits.Mul64(w, p.hi)
	yHi, zLo := bits.Mul64(w, p.lo)
	var carry uint64
	zMid, carry = bits.Add64(zMid, yHi, 0)
	zHi += carry
	// The exact product is short of this one by ε·w < 2^64 in zLo's
	// word. zHi ≥ 2^62 since both factors have their top bit set: keep its
	// top 54 bits (53 and a rounding bit).
	drop := 9 + uint(zHi>>63)
	below := zHi & (1<<drop - 1)
	// The missing part could carry into the kept bits only if everything
	// below them is all ones up to the last word.
	if below == 1<<drop-1 && zMid == math.MaxUint64 && zLo+w < zLo {
		return 0, false
	}
	mant := zHi >> drop
	// An exact tie between two floats rounds to even; the product cannot
	// tell an exact tie from a value just above one, so leave those.
	if below == 0 && zMid == 0 && zLo == 0 && mant&3 == 1 {
		return 0, false
	}
	exp := int(drop) + 129 - p.shift - lz
	mant = (mant + mant&1) >> 1
	if mant == 1<<53 {
		mant >>= 1
		exp++
	}
	// m < 2^64 and k ≤ 22 keep the value between 10^-22 and 2^64, far
	// from subnormals and overflow: Ldexp only places the exponent.
	return math.Ldexp(float64(mant), exp), true
}
