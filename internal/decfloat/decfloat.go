// Package decfloat reads the decimal text loads send (metrics as the
// shortest text of a float64: "37.954254324644715") into float64 without
// strconv, bit for bit as strconv.ParseFloat would, and says when it
// cannot, so that the caller takes strconv's path.
package decfloat

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"unsafe"
)

// Decimal text to float64 without strconv for the forms loads send.
//
// Metrics arrive as the shortest text that round-trips a float64, which for
// values like usage_user = 37.954254324644715 is 16 or 17 significant
// digits: an integer above 2^53, out of reach of the exact fast path
// (Parse). strconv.ParseFloat handles them correctly but spends most
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
	// from subnormals and overflow, and mant has exactly 53 bits: the
	// float's fields are written directly (math.Ldexp, which handles every
	// case, was a sixth of the parse).
	return math.Float64frombits(uint64(exp+52+1023)<<52 | mant&(1<<52-1)), true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Parse reads the form metrics almost always take, an optional
// minus, digits and an optional fraction ("-12.5", "0.0417"), whose digits
// as one integer stay below 2^64 (any 19 digits, some 20-digit ones) with
// at most 22 after the point, and returns what strconv.ParseFloat would,
// bit for bit, at a fraction of its cost. When the digits as an
// integer are at most 2^53, the integer and the power of ten are exact
// float64s and IEEE division rounds their quotient correctly (Clinger's
// fast path); longer digit strings, such as the 17 digits of a random
// float's shortest text, take wideDecimal's 128-bit product. Anything else,
// and the rare product 128 bits do not decide, reports false and takes the
// general path.
func Parse(s string) (float64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	i, m, digits, ok := accumulate(s, i, 0, 0)
	if !ok {
		return 0, false
	}
	frac := 0
	if i < len(s) && s[i] == '.' {
		var whole int
		whole = digits
		if i, m, digits, ok = accumulate(s, i+1, m, digits); !ok {
			return 0, false
		}
		frac = digits - whole
	}
	if i != len(s) {
		return 0, false
	}
	if digits == 0 || frac >= len(pow10) {
		return 0, false
	}
	var f float64
	if m <= 1<<53 {
		f = float64(m) / pow10[frac]
	} else {
		var ok bool
		if f, ok = wideDecimal(m, frac); !ok {
			return 0, false
		}
	}
	if neg {
		f = -f
	}
	return f, true
}

// ParseBytes is Parse of b's text; b is only read during the call.
func ParseBytes(b []byte) (float64, bool) {
	return Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}

// accumulate reads the decimal digits of s from i on into m (which holds
// digits of them already) and returns where they end; ok is false when m
// would pass 2^64.
//
// Why eight at a time: a random float's shortest text has 16 or 17
// digits, and a digit-by-digit loop with an overflow check per digit was
// most of a COPY's float conversion. Eight ASCII digits in a word are
// checked and converted with a few multiplications (the SWAR method fast
// float parsers use) while m stays small enough to take them; the rest go
// one at a time.
func accumulate(s string, i int, m uint64, digits int) (int, uint64, int, bool) {
	for len(s)-i >= 8 && m <= (math.MaxUint64-99_999_999)/100_000_000 {
		v := load8(s, i)
		if !eightDigits(v) {
			break
		}
		m = m*100_000_000 + eightValue(v)
		digits += 8
		i += 8
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if m > (math.MaxUint64-9)/10 {
			return i, 0, 0, false
		}
		m = m*10 + uint64(c-'0')
		digits++
	}
	return i, m, digits, true
}

// load8 is the eight bytes of s at i as a little-endian word: the first
// byte lowest. The compiler makes it one load.
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:i+8]), 8))
}

// eightDigits reports whether every byte of v is an ASCII digit: the high
// nibble is 3, and adding 6 to the low one does not carry out of it.
func eightDigits(v uint64) bool {
	return v&0xF0F0F0F0F0F0F0F0|(v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0>>4 == 0x3333333333333333
}

// eightValue is the number eight ASCII digits in v spell, the first digit
// in the lowest byte: pairs, then quadruples, are combined by multiplying
// each by its power of ten in the same word.
func eightValue(v uint64) uint64 {
	const mask = 0x000000FF000000FF
	const mul1 = 100 + 1_000_000<<32
	const mul2 = 1 + 10_000<<32
	v -= 0x3030303030303030
	v = v*10 + v>>8
	return uint64(uint32((v&mask*mul1 + (v>>16)&mask*mul2) >> 32))
}
