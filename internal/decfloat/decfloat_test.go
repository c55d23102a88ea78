package decfloat

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestParseMatchesStrconv checks the float fast path bit for bit
// against strconv.ParseFloat: chosen edge cases (2^53, exact ties above
// it, 19 and 20 digits, 22 fraction digits, negative zero), the shortest
// text of random floats (what loads send), and random decimals of up to 19
// digits.
func TestParseMatchesStrconv(t *testing.T) {
	cases := []struct {
		in   string
		fast bool // the fast path takes it
	}{
		{"0", true}, {"-0", true}, {"12.5", true}, {"-0.0417", true}, {"1.", true}, {".5", true},
		{"9007199254740992", true}, {"900719925474099.3", true}, {"37.954254324644715", true},
		{"9007199254740993", false},     // 2^53+1: a tie, left to strconv
		{"9007199254740995", true},      // 2^53+3: a tie that rounds up, to even
		{"9007199254740994", true},      // representable
		{"18014398509481985", true},     // 2^54+1: below halfway
		{"9999999999999999999", true},   // 19 digits
		{"18446744073709551615", false}, // 20 digits, 2^64-1: past the guard
		{"12345678901234567890", true},  // 20 digits below it
		{"0.1234567890123456789", true}, // 19 digits, all fraction
		{"1234567890123456789.", true},
		{"0.0000000000000000000001", true}, {"0.00000000000000000000001", false},
		{"0.0000000000000000000001234567890123456789", false},
		{"", false}, {"-", false}, {".", false}, {"1.2.3", false}, {"+1", false}, {"1e5", false},
		{"--1", false}, {" 1", false}, {"1_0", false}, {"NaN", false},
	}
	for _, c := range cases {
		f, ok := Parse(c.in)
		want, err := strconv.ParseFloat(c.in, 64)
		if ok && (err != nil || math.Float64bits(f) != math.Float64bits(want)) {
			t.Errorf("Parse(%q) = %v, strconv.ParseFloat = %v (%v)", c.in, f, want, err)
		}
		if ok != c.fast {
			t.Errorf("Parse(%q) took the fast path: %v, want %v", c.in, ok, c.fast)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	fast, wide := 0, 0
	check := func(s string) {
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("strconv.ParseFloat(%q): %v", s, err)
		}
		if f, ok := Parse(s); ok {
			fast++
			if math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("Parse(%q) = %v (%x), strconv.ParseFloat = %v (%x)", s, f, math.Float64bits(f), want, math.Float64bits(want))
			}
		}
		if f, ok := ParseBytes([]byte(s)); ok && math.Float64bits(f) != math.Float64bits(want) {
			t.Fatalf("Parse([]byte(%q)) = %v, strconv.ParseFloat = %v", s, f, want)
		}
	}
	for range 1_000_000 {
		// The shortest text of a random float of a random magnitude.
		x := rng.Float64() * math.Pow(10, float64(rng.IntN(30)-12))
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		check(s)
		// Random digits, at most 19 of them, wide integers included.
		whole := rng.Uint64N(1 << uint(rng.IntN(64)))
		s = strconv.FormatUint(whole, 10)
		if n := rng.IntN(23); n > 0 {
			frac := make([]byte, n)
			for i := range frac {
				frac[i] = byte('0' + rng.IntN(10))
			}
			s += "." + string(frac)
		}
		if d := len(strings.TrimLeft(strings.ReplaceAll(s, ".", ""), "0")); d > 19 {
			s = s[:len(s)-(d-19)]
			s = strings.TrimSuffix(s, ".")
		}
		if m, _ := strconv.ParseUint(strings.ReplaceAll(s, ".", ""), 10, 64); m > 1<<53 {
			wide++
		}
		check(s)
	}
	if fast < 1_500_000 || wide < 500_000 {
		t.Fatalf("only %d of the random decimals took the fast path, %d with more than 53 bits", fast, wide)
	}
}

// BenchmarkParse reads the shortest text of random floats of a metric's
// magnitude, as a COPY of TSBS rows sends them.
func BenchmarkParse(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	in := make([]string, 1024)
	for i := range in {
		in[i] = strconv.FormatFloat(rng.Float64()*100, 'f', -1, 64)
	}
	b.ResetTimer()
	var sum float64
	for i := 0; i < b.N; i++ {
		f, _ := Parse(in[i%len(in)])
		sum += f
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
