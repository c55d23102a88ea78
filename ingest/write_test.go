package ingest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestCheckStrings(t *testing.T) {
	tests := []struct {
		name   string
		values []string // "\x00null" for NULL
		bad    int      // row of the first bad value, -1 if none
	}{
		{"valid", []string{"a", "zoë", "", "\x00null", "☃"}, -1},
		{"bad byte", []string{"a", "b\xff", "c"}, 1},
		{"NUL", []string{"a", "b", "c\x00d"}, 2},
		// Each value alone is not UTF-8, the bytes of both together are.
		{"character split across values", []string{"ok", "\xe2\x98", "\x83"}, 1},
		{"split across an empty value", []string{"\xc3", "", "\xab"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := array.NewStringBuilder(memory.DefaultAllocator)
			defer b.Release()
			for _, v := range tt.values {
				if v == "\x00null" {
					b.AppendNull()
				} else {
					b.Append(v)
				}
			}
			a := b.NewStringArray()
			defer a.Release()
			for _, arr := range []*array.String{a, array.NewSlice(a, 0, int64(a.Len())).(*array.String)} {
				row, err := checkStrings(arr)
				switch {
				case tt.bad < 0 && err != nil:
					t.Fatalf("got row %d: %v, want none", row, err)
				case tt.bad >= 0 && (err == nil || row != tt.bad):
					t.Fatalf("got row %d: %v, want row %d", row, err, tt.bad)
				}
			}
		})
	}
}

func BenchmarkCheckStrings(b *testing.B) {
	bld := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 65536 {
		bld.Append("host_" + string(rune('0'+i%10)) + string(rune('0'+i/10%10)))
	}
	a := bld.NewStringArray()
	b.SetBytes(int64(len(a.ValueBytes())))
	for b.Loop() {
		if _, err := checkStrings(a); err != nil {
			b.Fatal(err)
		}
	}
}
