package session

import (
	"testing"
)

// FuzzParams decodes arbitrary bytes as a Bind parameter of every type the
// executor reads, in both formats, and as a binary numeric: nothing may
// panic, and a numeric decodes to text that encodes again, or fails
// cleanly.
func FuzzParams(f *testing.F) {
	for _, s := range []string{"0", "-12.5", "3298534883331", "0.0001"} {
		b, _ := encodeNumeric(s)
		f.Add(b)
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte("2026-01-01 00:00:00+00"))
	// A binary int4[] of two elements, {1,2}.
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := decodeNumeric(data); err == nil {
			if s, ok := v.(string); ok && s != "NaN" {
				if _, err := encodeNumeric(s); err != nil {
					t.Fatalf("decoded %q does not encode: %v", s, err)
				}
			}
		}
		for _, format := range []int16{0, 1} {
			for _, oid := range []uint32{16, 20, 21, 23, 700, 701, 1082, 1114, 1184, 1186, 1700, 25, 2950, 3802, 1007, 1009, 1016, 1185} {
				decodeParam(data, format, oid)
			}
		}
	})
}
