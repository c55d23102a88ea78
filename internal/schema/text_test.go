package schema

import (
	"errors"
	"testing"
)

func TestCheckText(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for valid
	}{
		{"", ""},
		{"host_1", ""},
		{"zoë ☃ 𝄞", ""},
		{"ab\xff\xfecd", `invalid byte sequence for encoding "UTF8": 0xff 0xfe`},
		{"ab\x00cd", `invalid byte sequence for encoding "UTF8": 0x00`},
		{"x\xe2\x98", `invalid byte sequence for encoding "UTF8": 0xe2 0x98`},
		{"\xc3", `invalid byte sequence for encoding "UTF8": 0xc3`},
	}
	for _, tt := range tests {
		err := CheckText(tt.in)
		var te *TextError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckText(%q) = %v, want nil", tt.in, err)
		case tt.want != "" && (!errors.As(err, &te) || err.Error() != tt.want):
			t.Errorf("CheckText(%q) = %v, want %s", tt.in, err, tt.want)
		}
	}
}
