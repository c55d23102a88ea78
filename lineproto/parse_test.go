package lineproto

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in, precision, want string
	}{
		{"cpu,host=a,region=eu usage=0.5,n=3i,ok=t,msg=\"hi \\\"x\\\"\" 1767225600000000000", "", `cpu map[host:a region:eu] [usage f 0.5 n i 3 ok b true msg s hi "x"] 1767225600000000`},
		{"cpu usage=1", "", `cpu map[] [usage f 1] 1767225600000000`},
		{"my\\ cpu,host=a\\,b value=2u 1767225600", "s", `my cpu map[host:a,b] [value i 2] 1767225600000000`},
		{"old v=1 -1", "ms", `old map[] [v f 1] -1000`},
		{"old v=1 -1", "ns", `old map[] [v f 1] -1`},
	}
	for _, tt := range tests {
		pts, bad, err := Parse([]byte(tt.in), tt.precision, now)
		if err != nil || len(bad) > 0 || len(pts) != 1 {
			t.Fatalf("%q: %v %v %v", tt.in, pts, bad, err)
		}
		p := pts[0]
		var fs []any
		for _, f := range p.Fields {
			fs = append(fs, f.Key, string(f.Kind))
			switch f.Kind {
			case 'f':
				fs = append(fs, f.F)
			case 'i':
				fs = append(fs, f.I)
			case 'b':
				fs = append(fs, f.B)
			case 's':
				fs = append(fs, f.S)
			}
		}
		if got := fmt.Sprintf("%s %v %v %d", p.Measurement, p.Tags, fs, p.Micros); got != tt.want {
			t.Errorf("%q:\n got  %s\n want %s", tt.in, got, tt.want)
		}
	}
	// A bad line is reported with its number and text; the lines around
	// it are read.
	for _, bad := range []string{"cpu", "cpu v=", "cpu v=abc", "cpu v=\"open", "cpu,host v=1", "cpu v=1 notanumber", "cpu v=NaN"} {
		pts, errs, err := Parse([]byte("ok v=1\n"+bad+"\nok v=2"), "", now)
		if err != nil || len(pts) != 2 || len(errs) != 1 || errs[0].Line != 2 || errs[0].Text != bad {
			t.Errorf("%q: %d points, %v, %v; want the two good lines and an error on line 2", bad, len(pts), errs, err)
		}
	}
	if _, _, err := Parse([]byte("ok v=1"), "d", now); !errors.Is(err, ErrPrecision) {
		t.Errorf("precision d: %v", err)
	}
	for prec, micros := range map[string]int64{"m": 60_000_000, "h": 3_600_000_000, "second": 1_000_000} {
		pts, _, err := Parse([]byte("ok v=1 2"), prec, now)
		if err != nil || len(pts) != 1 || pts[0].Micros != 2*micros {
			t.Errorf("precision %s: %v %v", prec, pts, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=0.5,n=3i,s=\"x\" 1767225600000000000\nmem free=1u"))
	f.Fuzz(func(t *testing.T, data []byte) {
		Parse(data, "", time.Unix(0, 0))
	})
}
