package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Bit strings (Bit, VarBit) are held as text of '0' and '1', one
// character a bit, the first bit first.

// CheckBitText checks a value of a bit string column: at least one bit
// (the engine's BIT has no empty string) and nothing but '0' and '1'.
func CheckBitText(s string) error {
	if s == "" {
		return errors.New("schema: empty bit string")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r != '0' && r != '1' }); i >= 0 {
		return fmt.Errorf("schema: %q is not a bit string", s)
	}
	return nil
}

// BitsFromPGBinary reads PostgreSQL's binary format of bit and bit
// varying (bit_send): the length in bits, then the bits, eight to a byte,
// first bit highest.
func BitsFromPGBinary(v []byte) (string, error) {
	if len(v) < 4 {
		return "", fmt.Errorf("schema: bit string of %d bytes", len(v))
	}
	n := int64(int32(binary.BigEndian.Uint32(v)))
	if n < 0 || int64(len(v)-4) != (n+7)/8 {
		return "", fmt.Errorf("schema: bit string of %d bits in %d bytes", n, len(v)-4)
	}
	var b strings.Builder
	b.Grow(int(n))
	for i := range int(n) {
		b.WriteByte('0' + v[4+i/8]>>(7-uint(i%8))&1)
	}
	return b.String(), nil
}

// AppendPGBinaryBits appends bits (text of '0' and '1') in PostgreSQL's
// binary format of bit strings, the last byte padded with zeros.
func AppendPGBinaryBits(dst []byte, bits string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(bits)))
	var cur byte
	for i := 0; i < len(bits); i++ {
		if bits[i] == '1' {
			cur |= 1 << (7 - uint(i%8))
		}
		if i%8 == 7 {
			dst, cur = append(dst, cur), 0
		}
	}
	if len(bits)%8 != 0 {
		dst = append(dst, cur)
	}
	return dst
}
