package pgdatetime

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTimeInputLikePostgres reads time and timetz input as PostgreSQL 15
// answered it (testdata/times.tsv: its output, or its SQLSTATE), with the
// session's TimeZone PST8PDT on a winter day.
func TestTimeInputLikePostgres(t *testing.T) {
	raw, err := os.ReadFile("testdata/times.tsv")
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation("PST8PDT")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 20, 0, 0, 0, time.UTC)
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("bad line %q", line)
		}
		for i, withZone := range []bool{false, true} {
			want := f[1+i]
			got := "?"
			v, err := ParseTime(f[0], withZone, MDY, loc, now)
			var re *RangeError
			var se *SyntaxError
			switch {
			case err == nil:
				got = pgText(v, withZone)
			case errors.As(err, &re):
				got = "ERROR 22008"
			case errors.As(err, &se):
				got = "ERROR 22007"
			default:
				got = "ERROR " + err.Error()
			}
			if got != want {
				t.Errorf("%q as %s: %s, PostgreSQL %s", f[0], map[bool]string{false: "time", true: "timetz"}[withZone], got, want)
			}
		}
	}
}

// pgText writes v as PostgreSQL's output does (the wire layer's own
// writer is in pgtext, which this package may not import).
func pgText(v TimeOfDay, withZone bool) string {
	sec := v.Micros / 1_000_000
	clock := fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	if f := v.Micros % 1_000_000; f != 0 {
		clock += strings.TrimRight(fmt.Sprintf(".%06d", f), "0")
	}
	if !withZone {
		return clock
	}
	sign, east := "+", v.Offset
	if east < 0 {
		sign, east = "-", -east
	}
	zone := fmt.Sprintf("%s%02d:%02d:%02d", sign, east/3600, east/60%60, east%60)
	zone = strings.TrimSuffix(strings.TrimSuffix(zone, ":00"), ":00")
	return clock + zone
}
