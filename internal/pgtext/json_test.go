package pgtext

import (
	"errors"
	"testing"
)

// The engine's JSON text passes as written but for its doubles, written
// as PostgreSQL's float8out writes them, and the doubles JSON has no
// literal for, written as PostgreSQL's strings; what is no JSON fails.
func TestAppendJSON(t *testing.T) {
	for _, c := range []struct {
		in, want string
		extra    int
	}{
		{`{"b": 1, "a": [1, 2]}`, `{"b": 1, "a": [1, 2]}`, 1},
		{`9007199254740993`, `9007199254740993`, 1},
		{`[2.0,-0.0,100000000000000000000.0,1.5e-7,0.1,1e300,123456789012345680.0]`, `[2,-0,1e+20,1.5e-07,0.1,1e+300,1.2345678901234568e+17]`, 1},
		{`[0.1,1.0000000000000002]`, `[0.1,1]`, 0},
		{`{"NaN":"Infinity","e":"x \"NaN\" 2.0 \\","f":-1.0}`, `{"NaN":"Infinity","e":"x \"NaN\" 2.0 \\","f":-1}`, 1},
		{`"Infinity"`, `"Infinity"`, 1},
		{`[1e400, -1e400]`, `[1e400, -1e400]`, 1},
		{` {"a" : true, "b":null, "a":false} `, ` {"a" : true, "b":null, "a":false} `, 1},
		{"\"\\u00e9\u00e9\"", "\"\\u00e9\u00e9\"", 1},
	} {
		got, err := AppendJSON([]byte("<"), []byte(c.in), c.extra)
		if err != nil || string(got) != "<"+c.want {
			t.Errorf("%s: %s %v, want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`[1,2,]`, `{"a":1,}`, `NaNa`, `Inf`, `[01]`, `1.`, `{'a':1}`, ``, `[1] [2]`, `-`, `1e`} {
		if got, err := AppendJSON(nil, []byte(bad), 1); !errors.Is(err, ErrJSONSyntax) {
			t.Errorf("%s: %s %v, want %v", bad, got, err, ErrJSONSyntax)
		}
	}
	// A bare NaN or Infinity is the engine's JSON of such a double (which
	// PostgreSQL writes as a string) or its lenient input's (which
	// PostgreSQL refuses): refused, as neither can be told.
	for _, bad := range []string{`NaN`, `[1.5,Infinity]`, `{"a":-Infinity}`} {
		if got, err := AppendJSON(nil, []byte(bad), 1); !errors.Is(err, ErrJSONNonFinite) || !errors.Is(err, ErrJSONSyntax) {
			t.Errorf("%s: %s %v, want %v", bad, got, err, ErrJSONNonFinite)
		}
	}
}
