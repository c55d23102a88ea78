package planner

import (
	"testing"

	"tsdb/internal/sqlerr"
)

// format() prints as PostgreSQL's: the expected strings are PostgreSQL
// 15's for the same calls.
func TestFormat(t *testing.T) {
	e := newEnv(t)
	e.must(setup)
	tests := []queryRows{
		{"SELECT format('%s-%s','a',1)", `a-1`},
		{"SELECT format('%s|%s','x',null)", `x|`},
		{"SELECT format('%I.%I', 'public', 'My Table')", `public."My Table"`},
		{"SELECT format('%L, %L, %L', 'it''s', null, 42)", `'it''s', NULL, '42'`},
		{"SELECT format('[%5s][%-5s]', 'ab', 'cd')", `[   ab][cd   ]`},
		{"SELECT format('%2$s %1$s %s', 'a', 'b')", `b a b`},
		{"SELECT format('100%% %s', 'done')", `100% done`},
		{"SELECT format('x')", `x`},
		{"SELECT format('')", ``},
		{"SELECT format(null, 1)", `NULL`},
		{"SELECT format('%s', timestamptz '2026-01-01 00:00+00')", `2026-01-01 00:00:00+00`},
		{"SELECT format('[%3s]', 'abcdef')", `[abcdef]`},
		{"SELECT format('%s=%s', host, n) FROM cpu ORDER BY host", "a=1;b=2;c=;d="},
	}
	e.expectRows("", tests)
	for _, tt := range []struct{ q, code string }{
		{"SELECT format('%s %s', 'a')", sqlerr.InvalidParameterValue},
		{"SELECT format('%d', 1)", sqlerr.InvalidParameterValue},
		{"SELECT format('%', 1)", sqlerr.InvalidParameterValue},
		{"SELECT format('%*s', 3, 'a')", sqlerr.FeatureNotSupported},
		{"SELECT format(host, 1) FROM cpu", sqlerr.FeatureNotSupported},
	} {
		if _, err := e.run(tt.q); sqlerr.Code(err) != tt.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tt.q, err, tt.code)
		}
	}
}
