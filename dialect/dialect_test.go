package dialect

import (
	"encoding/hex"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
)

// deparsed is an expression node as SQL text.
func deparsed(t *testing.T, n *pg_query.Node) string {
	t.Helper()
	base, err := pg_query.Parse("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	tree := &pg_query.ParseResult{Version: base.Version, Stmts: []*pg_query.RawStmt{{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: n}}}}}}}}}}
	out, err := pg_query.Deparse(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseArrayText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{1,2}`, `SELECT ARRAY['1', '2']`},
		{` { a , "b c" , NULL , "NULL", "x\"y" } `, `SELECT ARRAY['a', 'b c', NULL, 'NULL', 'x"y']`},
		{`{{1,2},{3,4}}`, `SELECT ARRAY[ARRAY['1', '2'], ARRAY['3', '4']]`},
		{`{}`, `SELECT ARRAY[]`},
	} {
		n, err := ParseArrayText(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := deparsed(t, n); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`1,2`, `{1,2`, `{1,,2}`, `{1,2}x`, `{"a}`, `{{{{{{{1}}}}}}}`} {
		if _, err := ParseArrayText(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestRegexGroups(t *testing.T) {
	for p, want := range map[string]int{`(bar)(beque)`: 2, `bar`: 0, `(?:a)(b)`: 1, `\(a\)`: 0, `[(]a`: 0, `[]()]`: 0, `((a)b)`: 2} {
		if got := RegexGroups(p); got != want {
			t.Errorf("%s: %d groups, want %d", p, got, want)
		}
	}
}

func TestFloatInputError(t *testing.T) {
	for in, refused := range map[string]bool{"10e400": true, "-10e400": true, "10e-400": true, "0e-400": false, "1e-300": false, "inf": false, "-Infinity": false, "NaN": false, "1.5": false} {
		if got := FloatInputError(in, 64) != nil; got != refused {
			t.Errorf("%s: refused %v, want %v", in, got, refused)
		}
	}
	if FloatInputError("1e39", 32) == nil {
		t.Error("1e39 as real: accepted")
	}
}

func TestParseBytea(t *testing.T) {
	for _, tt := range []struct {
		in, want, code string
	}{
		{`\xDeAdBeEf`, "deadbeef", ""},
		{`\x de ad`, "dead", ""},
		{`\x`, "", ""},
		{`abc`, "616263", ""},
		{`a\\b\001\377`, "615c6201ff", ""},
		{`\xDeAdBeE`, "", "22023"},
		{`\xDeAdBeEx`, "", "22023"},
		{`a\b`, "", "22P02"},
		{`\400`, "", "22P02"},
	} {
		b, err := ParseBytea(tt.in)
		if tt.code != "" {
			if err == nil {
				t.Errorf("%q: accepted as %x", tt.in, b)
			} else if c := sqlerr.Code(err); c != tt.code {
				t.Errorf("%q: code %s, want %s", tt.in, c, tt.code)
			}
			continue
		}
		if err != nil || hex.EncodeToString(b) != tt.want {
			t.Errorf("%q: got %x %v, want %s", tt.in, b, err, tt.want)
		}
	}
}
