package dialect

import (
	"testing"

	"tsdb/internal/sqlerr"
)

// PostgreSQL 15's bit_in, bit() and bitfromint8, answers taken from it.
func TestBitStrings(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		varying bool
		want    string
		code    string // the error's SQLSTATE, if any
	}{
		{"0101", 0, false, "0101", ""},
		{"B0101", 4, false, "0101", ""},
		{"b1", 1, false, "1", ""},
		{"X1f", 8, false, "00011111", ""},
		{"x1F", 0, true, "00011111", ""},
		{"0101", 3, false, "", "22026"}, // bit string length 4 does not match type bit(3)
		{"0101", 3, true, "", "22001"},  // bit string too long for type bit varying(3)
		{"01", 3, true, "01", ""},
		{"012", 0, false, "", sqlerr.InvalidTextRep},
		{"X1G", 0, false, "", sqlerr.InvalidTextRep},
		{"0121", 3, false, "", "22026"}, // the length is checked first
	} {
		got, err := BitInput(tc.in, tc.n, tc.varying)
		if sqlerr.Code(err) != tc.code && !(err == nil && tc.code == "") || got != tc.want {
			t.Errorf("BitInput(%q, %d, %v) = %q, %v; want %q, %s", tc.in, tc.n, tc.varying, got, err, tc.want, tc.code)
		}
	}
	for _, tc := range []struct {
		bits    string
		n       int
		varying bool
		want    string
	}{
		{"0101", 3, false, "010"}, {"01", 4, false, "0100"}, {"0101", 2, true, "01"}, {"01", 4, true, "01"}, {"0101", 0, false, "0101"},
	} {
		if got := FitBit(tc.bits, tc.n, tc.varying); got != tc.want {
			t.Errorf("FitBit(%q, %d, %v) = %q, want %q", tc.bits, tc.n, tc.varying, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    int64
		n    int
		want string
	}{
		{5, 4, "0101"}, {5, 0, "1"}, {-5, 40, "1111111111111111111111111111111111111011"},
		{5000000000, 40, "0000000100101010000001011111001000000000"},
		{-1, 66, "111111111111111111111111111111111111111111111111111111111111111111"}, {255, 8, "11111111"},
	} {
		if got := BitFromInt(tc.v, tc.n); got != tc.want {
			t.Errorf("BitFromInt(%d, %d) = %q, want %q", tc.v, tc.n, got, tc.want)
		}
	}
}
