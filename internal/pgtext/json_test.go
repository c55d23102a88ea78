package pgtext

import "testing"

// The engine's bare NaN and infinities become PostgreSQL's strings, only
// outside strings; everything else passes as it is.
func TestAppendJSONText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b": 1, "a": [1, 2]}`, `{"b": 1, "a": [1, 2]}`},
		{`NaN`, `"NaN"`},
		{`[1.5,NaN,Infinity,-Infinity,-1]`, `[1.5,"NaN","Infinity","-Infinity",-1]`},
		{`{"NaN":"Infinity","e":"x \"NaN\" \\","f":NaN}`, `{"NaN":"Infinity","e":"x \"NaN\" \\","f":"NaN"}`},
		{`"Infinity"`, `"Infinity"`},
		{``, ``},
	} {
		if got := string(AppendJSONText([]byte("<"), []byte(c.in))); got != "<"+c.want {
			t.Errorf("%s: %s, want %s", c.in, got[1:], c.want)
		}
	}
}
