package pgtext

import (
	"testing"
	"time"
)

// Arrays as PostgreSQL's array_out writes them: elements quoted when
// empty, NULL-like or holding syntax, NULL bare, a dimension in braces.
func TestArrayText(t *testing.T) {
	utc := Style{Loc: time.UTC, ExtraDigits: 1}
	for _, tc := range []struct {
		v    []any
		oid  uint32
		want string
	}{
		{[]any{int32(1), nil}, 1007, `{1,NULL}`},
		{[]any{"a b", "", "NULL", `x"y`, `back\slash`, "plain"}, 1009, `{"a b","","NULL","x\"y","back\\slash",plain}`},
		{[]any{[]any{int32(1), int32(2)}, []any{int32(3), nil}}, 25, `{{1,2},{3,NULL}}`},
		{[]any{[]any{"a b", "c"}}, 25, `{{"a b",c}}`},
		{[]any{true, false}, 1000, `{t,f}`},
		{[]any{0.1, 1.5}, 1022, `{0.1,1.5}`},
		{[]any{}, 1007, `{}`},
	} {
		if got := string(Encode(tc.v, tc.oid, utc)); got != tc.want {
			t.Errorf("%v as %d: %s, want %s", tc.v, tc.oid, got, tc.want)
		}
	}
}

// Times of day as the driver hands them over (1 January of year 1, in the
// value's own offset), written as PostgreSQL writes time and timetz.
func TestTimeOfDayText(t *testing.T) {
	day := func(h, m, s, ns int, loc *time.Location) time.Time {
		return time.Date(1, time.January, 1, h, m, s, ns, loc)
	}
	for _, c := range []struct {
		v    time.Time
		oid  uint32
		want string
	}{
		{day(11, 0, 0, 0, time.UTC), OIDTime, "11:00:00"},
		{day(23, 59, 59, 123_000_000, time.UTC), OIDTime, "23:59:59.123"},
		{day(0, 0, 0, 1000, time.UTC), OIDTime, "00:00:00.000001"},
		{day(11, 0, 0, 500_000_000, time.FixedZone("", 3600)), OIDTimeTZ, "11:00:00.5+01"},
		{day(11, 0, 0, 0, time.FixedZone("", -(5*3600+30*60))), OIDTimeTZ, "11:00:00-05:30"},
		{day(11, 0, 0, 0, time.FixedZone("", 5*3600+45*60+30)), OIDTimeTZ, "11:00:00+05:45:30"},
		{day(24, 0, 0, 0, time.FixedZone("", 3600)), OIDTimeTZ, "24:00:00+01"},
		{day(9, 5, 0, 0, time.UTC), OIDTimeTZ, "09:05:00+00"},
	} {
		if got := string(Encode(c.v, c.oid, Style{Loc: time.UTC})); got != c.want {
			t.Errorf("%v as %d: %q, want %q", c.v, c.oid, got, c.want)
		}
	}
}
