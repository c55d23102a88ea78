package viewdef

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/pgdatetime"
)

// testColumns are the columns of testdata/record.py's table m.
var testColumns = []Column{
	{"time", tTimestamptz}, {"host", tText}, {"v", tFloat8}, {"n", tInt4}, {"b", tInt8}, {"s", tInt2},
	{"d", Type{OID: OIDNumeric, Mod: 10<<16 | 2 + 4}}, {"f", tFloat4}, {"ok", tBool}, {"dt", tDate},
	{"ts", tTimestamp}, {"iv", tInterval}, {"Host Name", tText},
}

func testEnv(t *testing.T) Env {
	loc, err := time.LoadLocation("PST8PDT")
	if err != nil {
		t.Fatal(err)
	}
	return Env{
		Relation: func(name string) ([]Column, bool) {
			if name == "m" {
				return testColumns, true
			}
			return nil, false
		},
		Loc: loc, FloatDigits: 1,
	}
}

// TestAgainstPostgres writes the views of testdata/views.sql as
// PostgreSQL 15 wrote them (testdata/views.json, recorded by record.py),
// from the text tsdb keeps of each (its query deparsed), in both modes.
func TestAgainstPostgres(t *testing.T) {
	raw, err := os.ReadFile("testdata/views.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Query  string   `json:"query"`
		Names  []string `json:"names"`
		Def    string   `json:"def"`
		Pretty string   `json:"pretty"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("only %d recorded views", len(cases))
	}
	env := testEnv(t)
	for _, c := range cases {
		tree, err := pg_query.Parse(c.Query)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := pg_query.Deparse(tree)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []struct {
			pretty bool
			want   string
		}{{false, c.Def}, {true, c.Pretty}} {
			got, err := Def(kept, c.Names, env, mode.pretty)
			if err != nil {
				t.Errorf("%s (pretty %v): %v", c.Query, mode.pretty, err)
				continue
			}
			if got != mode.want {
				t.Errorf("%s (pretty %v):\n got %q\nwant %q", c.Query, mode.pretty, got, mode.want)
			}
		}
	}
}

// TestRefused: what the analysis cannot write as PostgreSQL would is
// ErrUnsupported, never a guess.
func TestRefused(t *testing.T) {
	env := testEnv(t)
	for _, q := range []string{
		"SELECT host FROM m UNION SELECT host FROM m",
		"SELECT host FROM m JOIN m x USING (host)",
		"SELECT (SELECT 1) AS x FROM m",
		"SELECT host::varchar AS h FROM m",
		"SELECT time FROM m WHERE time > 'now'",
		"SELECT time FROM m WHERE dt > time",
		"SELECT s % n AS r FROM m",
		"SELECT unknown_function(v) AS u FROM m",
		"SELECT min(ok) AS b FROM m",
		"SELECT host FROM nowhere",
		"SELECT array_agg(v ORDER BY time) AS a FROM m",
		"SELECT CASE WHEN ok THEN host ELSE 1.5 END AS c FROM m",
	} {
		_, err := Def(q, []string{"x"}, env, false)
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", q, err)
		}
	}
}

var _ = pgdatetime.ISODates
