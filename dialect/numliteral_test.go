package dialect

import (
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

func TestNumberLiteral(t *testing.T) {
	tests := []struct {
		literal string
		want    string // the select list after the rewrite; "" when left alone
	}{
		{"1.1e0", "SELECT 1.1"},
		{"1.5e3", `SELECT (1500)::"numeric"`},
		{"1e3", `SELECT (1000)::"numeric"`},
		{"1.50e1", "SELECT 15.0"},
		{"1.5E-3", "SELECT 0.0015"},
		{"12e-1", "SELECT 1.2"},
		{"0.000e5", `SELECT (0)::"numeric"`},
		{"-2.5e2", `SELECT (-250)::"numeric"`},
		{"1e27", `SELECT (1000000000000000000000000000)::"numeric"`},
		{"1e28", ""},  // 29 digits: more than a cast to numeric holds
		{"1e100", ""}, // more than the engine's numeric holds: a double
		{"1e-50", ""},
		{"1.5", ""},
		{"123456789012345678901234567890", ""}, // an integer: the engine keeps its digits
		{"12345678901234567890123456789.012345678", ""},
		{"12345678901234567890123456789.0123456789", "SELECT error('[tsdb 22003]"},
		{"0.1234567890123456789012345678901234567890", "SELECT error('[tsdb 22003]"},
	}
	for _, tt := range tests {
		t.Run(tt.literal, func(t *testing.T) {
			tree, err := pg_query.Parse("SELECT " + tt.literal)
			if err != nil {
				t.Fatal(err)
			}
			rt := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget()
			c := rt.Val.GetAConst()
			if c == nil || c.GetFval() == nil {
				t.Fatalf("%s is not a float constant: %v", tt.literal, rt.Val)
			}
			r, ok := numberLiteral(c, c.Location)
			if tt.want == "" {
				if ok {
					t.Fatalf("%s rewritten to %v, want it left alone", tt.literal, r)
				}
				return
			}
			if !ok {
				t.Fatalf("%s left alone, want %s", tt.literal, tt.want)
			}
			rt.Val = r
			got, err := pg_query.Deparse(tree)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("%s: got %s, want %s…", tt.literal, got, tt.want)
			}
		})
	}
}

func TestBoolInput(t *testing.T) {
	tests := []struct {
		in        string
		value, ok bool
	}{
		{"t", true, true}, {"TRUE", true, true}, {"tru", true, true}, {"truex", false, false},
		{"f", false, true}, {"fAlS", false, true}, {"y", true, true}, {"yes", true, true},
		{"n", false, true}, {"no", false, true}, {"on", true, true}, {"ON", true, true},
		{"o", false, false}, {"of", false, true}, {"off", false, true}, {"offf", false, false},
		{"1", true, true}, {"0", false, true}, {"10", false, false}, {" yes\n", true, true},
		{"", false, false}, {"  ", false, false}, {"maybe", false, false},
	}
	for _, tt := range tests {
		if v, ok := BoolInput(tt.in); v != tt.value || ok != tt.ok {
			t.Errorf("BoolInput(%q) = %v, %v; want %v, %v", tt.in, v, ok, tt.value, tt.ok)
		}
	}
}
