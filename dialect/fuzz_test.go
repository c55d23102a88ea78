package dialect

import "testing"

// FuzzArrayText: no array text or pattern panics the readers.
func FuzzArrayText(f *testing.F) {
	for _, s := range []string{`{1,2}`, `{{1,2},{3,4}}`, `{"a\"b",NULL}`, `{`, `}`, `{"`, `{\`, `(a)(?:b)[(]\(`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseArrayText(s)
		_ = RegexGroups(s)
		_ = FloatInputError(s, 64)
	})
}
