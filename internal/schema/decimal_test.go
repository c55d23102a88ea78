package schema

import (
	"errors"
	"testing"
)

// numeric(p, s) input as PostgreSQL reads it: rounded half away from zero
// to the scale, refused beyond the precision (22003) or when not a number.
func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in        string
		p, s      int
		want      string
		overflow  bool
		malformed bool
	}{
		{"1.005", 10, 2, "1.01", false, false},
		{"-1.005", 10, 2, "-1.01", false, false},
		{"  42 ", 5, 0, "42", false, false},
		{"1.5e3", 10, 2, "1500.00", false, false},
		{"0.0001", 6, 3, "0.000", false, false},
		{"-0.0005", 6, 3, "-0.001", false, false},
		{"99999999.994", 10, 2, "99999999.99", false, false},
		{"99999999.995", 10, 2, "", true, false},
		{"123456789", 10, 2, "", true, false},
		{"12345678901234567890123456789012345678", 38, 0, "12345678901234567890123456789012345678", false, false},
		{"NaN", 10, 2, "", false, true},
		{"abc", 10, 2, "", false, true},
		{"0x10", 10, 2, "", false, true},
		{"", 10, 2, "", false, true},
	}
	for _, c := range cases {
		v, err := ParseDecimal(c.in, c.p, c.s)
		switch {
		case c.overflow:
			if !errors.Is(err, ErrNumericOverflow) {
				t.Errorf("%q as numeric(%d,%d): %v, want overflow", c.in, c.p, c.s, err)
			}
		case c.malformed:
			if err == nil || errors.Is(err, ErrNumericOverflow) {
				t.Errorf("%q as numeric(%d,%d): %v, want an input error", c.in, c.p, c.s, err)
			}
		case err != nil:
			t.Errorf("%q as numeric(%d,%d): %v", c.in, c.p, c.s, err)
		default:
			if got := FormatDecimal(v, c.s); got != c.want {
				t.Errorf("%q as numeric(%d,%d): %s, want %s", c.in, c.p, c.s, got, c.want)
			}
		}
	}
}

// PostgreSQL's binary numeric: 1234.5678 is digits [1234, 5678], weight
// 0, scale 4; -0.0012 is digits [12], weight -1; 10000 is [1], weight 1.
func TestDecimalFromPGBinary(t *testing.T) {
	enc := func(weight int, sign uint16, dscale int, digits ...int) []byte {
		b := []byte{byte(len(digits) >> 8), byte(len(digits)), byte(uint16(weight) >> 8), byte(weight), byte(sign >> 8), byte(sign), byte(dscale >> 8), byte(dscale)}
		for _, d := range digits {
			b = append(b, byte(d>>8), byte(d))
		}
		return b
	}
	cases := []struct {
		b    []byte
		want string
	}{
		{enc(0, 0, 4, 1234, 5678), "1234.568"},
		{enc(-1, 0x4000, 4, 12), "-0.001"},
		{enc(1, 0, 0, 1), "10000.000"},
		{enc(0, 0, 0), "0.000"},
	}
	for _, c := range cases {
		v, err := DecimalFromPGBinary(c.b, 12, 3)
		if err != nil {
			t.Fatalf("%x: %v", c.b, err)
		}
		if got := FormatDecimal(v, 3); got != c.want {
			t.Errorf("%x: %s, want %s", c.b, got, c.want)
		}
	}
	if _, err := DecimalFromPGBinary(enc(0, 0xC000, 0), 12, 3); err == nil {
		t.Error("NaN was taken")
	}
}
