package lineproto

import (
	"strings"
	"testing"
	"time"

	"tsdb/internal/schema"
)

// build turns points into rows of their table: runs of points with one
// key shape column by column, a point that does not fit (an int4 out of
// range inside a run, a NOT NULL column it lacks) left out with its
// reason, missing tags and fields NULL.
func TestBuild(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "host", Type: schema.Text},
		{Name: "v", Type: schema.Float64},
		{Name: "n", Type: schema.Int32, NotNull: true},
		{Name: "s", Type: schema.Text},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join([]string{
		"m,host=a v=1,n=1i 1000",
		"m,host=b v=2,n=2i 2000",
		"m,host=c v=3,n=99999999999i 3000", // int4 out of range, inside the run
		"m,host=d v=4i,n=4i 4000",          // an integer into the float column
		"m v=5,n=5i 5000",                  // no host
		"m,host=e n=6i,s=\"x\" 6000",       // no v
		"m,host=f v=7 7000",                // no n: NOT NULL
		"m,host=g v=8,n=8i 8000",
		"m,host=h v=9,n=9i 9000",
	}, "\n")
	rows, kept, rejected := buildRows(t, tbl, body, 0)
	want := []string{
		"1970-01-01T00:00:00.000001Z|a|1|1|(null)",
		"1970-01-01T00:00:00.000002Z|b|2|2|(null)",
		"1970-01-01T00:00:00.000004Z|d|4|4|(null)",
		"1970-01-01T00:00:00.000005Z|(null)|5|5|(null)",
		"1970-01-01T00:00:00.000006Z|e|(null)|6|x",
		"1970-01-01T00:00:00.000008Z|g|8|8|(null)",
		"1970-01-01T00:00:00.000009Z|h|9|9|(null)",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if len(kept) != len(want) || kept[2].Line != 4 || kept[6].Line != 9 {
		t.Fatalf("kept %d points: %+v", len(kept), kept)
	}
	if len(rejected) != 2 || !strings.Contains(rejected[0], "line 3") || !strings.Contains(rejected[0], "int4") ||
		!strings.Contains(rejected[1], "line 7") || !strings.Contains(rejected[1], "NOT NULL") {
		t.Fatalf("rejected %q", rejected)
	}
}

// Runs of one key shape, broken by other shapes and by a point whose
// field is of another kind than its column's.
func TestBuildRuns(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "host", Type: schema.Text},
		{Name: "v", Type: schema.Float64},
		{Name: "w", Type: schema.Int64},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join([]string{
		"m,host=a v=1.5,w=1i 1000",
		"m,host=b v=2.5,w=2i 2000",
		"m,host=c v=3.5,w=3i 3000",
		"m v=4 4000",
		"m v=5 5000",
		"m,host=f v=\"x\",w=6i 6000", // a string into the float column
		"m,host=g v=7.5,w=7i 7000",
		"m,host=h v=8.5,w=8i 8000",
		"m,host=i v=1,v=-0,w=9i 9000", // a repeated key: the last value counts
		"m,host=j v=2,v=-0,w=10i 10000",
	}, "\n")
	rows, kept, rejected := buildRows(t, tbl, body, 1)
	want := "a|1.5|1 b|2.5|2 c|3.5|3 (null)|4|(null) (null)|5|(null) g|7.5|7 h|8.5|8 i|-0|9 j|-0|10"
	if got := strings.Join(rows, " "); got != want || len(kept) != 9 {
		t.Fatalf("rows %s (%d kept)\nwant %s", got, len(kept), want)
	}
	if len(rejected) != 1 || !strings.Contains(rejected[0], "line 6") {
		t.Fatalf("rejected %q", rejected)
	}
}

// buildRows parses body and builds its rows for tbl: each row's values
// from column from on, joined by '|'.
func buildRows(t *testing.T, tbl schema.Table, body string, from int) (rows []string, kept []Point, rejected []string) {
	t.Helper()
	pts, bad, err := Parse([]byte(body), "ns", time.Unix(0, 0))
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	rec, kept, rejected := build(tbl, pts)
	defer rec.Release()
	for r := 0; r < int(rec.NumRows()); r++ {
		var cells []string
		for c := from; c < int(rec.NumCols()); c++ {
			cells = append(cells, rec.Column(c).ValueStr(r))
		}
		rows = append(rows, strings.Join(cells, "|"))
	}
	return rows, kept, rejected
}
