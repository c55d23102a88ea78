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
