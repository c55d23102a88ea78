package schema

import (
	"bytes"
	"testing"
)

// bit_send's format: the length in bits, then the bits, first highest,
// the last byte padded with zeros; read back to the same text.
func TestBitsPGBinary(t *testing.T) {
	for _, tc := range []struct {
		bits string
		wire []byte
	}{
		{"0101", []byte{0, 0, 0, 4, 0x50}},
		{"101010101", []byte{0, 0, 0, 9, 0xaa, 0x80}},
		{"00000000", []byte{0, 0, 0, 8, 0}},
		{"000000000101", []byte{0, 0, 0, 12, 0x00, 0x50}},
	} {
		if got := AppendPGBinaryBits(nil, tc.bits); !bytes.Equal(got, tc.wire) {
			t.Errorf("AppendPGBinaryBits(%q) = %x, want %x", tc.bits, got, tc.wire)
		}
		if got, err := BitsFromPGBinary(tc.wire); err != nil || got != tc.bits {
			t.Errorf("BitsFromPGBinary(%x) = %q, %v; want %q", tc.wire, got, err, tc.bits)
		}
	}
	for _, bad := range [][]byte{{0, 0, 0}, {0, 0, 0, 9, 0xaa}, {0xff, 0xff, 0xff, 0xff}} {
		if got, err := BitsFromPGBinary(bad); err == nil {
			t.Errorf("BitsFromPGBinary(%x) = %q, want an error", bad, got)
		}
	}
	for s, ok := range map[string]bool{"0101": true, "": false, "012": false, "1": true} {
		if err := CheckBitText(s); (err == nil) != ok {
			t.Errorf("CheckBitText(%q) = %v", s, err)
		}
	}
}
