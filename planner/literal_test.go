package planner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
)

// The literal fast path must give exactly what DuckDB's cast gives, or
// decline. Each literal is converted both ways.
func TestLiteralFastPathMatchesEngine(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		ty  schema.Type
		lit string
	}{
		{schema.Int64, "42"}, {schema.Int64, "-9007199254740993"}, {schema.Int64, "'17'"}, {schema.Int64, "' 17 '"},
		{schema.Int64, "1.5"}, {schema.Int64, "'abc'"}, {schema.Int64, "99999999999999999999"},
		{schema.Int32, "2147483648"}, {schema.Int32, "-5"}, {schema.Int16, "40000"}, {schema.Int16, "'12'"},
		{schema.Float64, "1.5"}, {schema.Float64, "7"}, {schema.Float64, "'NaN'"}, {schema.Float64, "'-Infinity'"},
		{schema.Float64, "'1e-7'"}, {schema.Float64, "'0x10'"}, {schema.Float64, "1e308"}, {schema.Float32, "0.1"},
		{schema.Bool, "true"}, {schema.Bool, "'t'"}, {schema.Bool, "'off'"}, {schema.Bool, "'maybe'"}, {schema.Bool, "1"},
		{schema.Text, "'héllo'"}, {schema.Text, "''"}, {schema.Text, "12"},
		{schema.Timestamptz, "'2026-01-01 00:00:00+00'"}, {schema.Timestamptz, "'2026-01-01T10:00:00.5Z'"},
		{schema.Timestamptz, "'2026-01-01 10:00:00.123456-05:30'"}, {schema.Timestamptz, "'2026-01-01'"},
		{schema.Timestamptz, "'2026-01-01 10:00'"}, {schema.Timestamptz, "'1969-12-31 23:59:59.999999+00'"},
		{schema.Timestamptz, "'2026-01-01 10:00:00+0530'"}, {schema.Timestamptz, "'2026-02-30 00:00:00'"},
		{schema.Timestamptz, "'2026-01-01 10:00:00.1234567'"}, {schema.Timestamptz, "'yesterday'"},
		{schema.Timestamp, "'2026-01-01 10:00:00'"}, {schema.Timestamp, "'2026-01-01 10:00:00+02'"},
		{schema.Int64, "NULL"},
	}
	fast := 0
	for _, c := range cases {
		tbl, err := schema.New("x", []schema.Column{{Name: "t", Type: schema.Timestamptz}, {Name: "c", Type: c.ty}})
		if err != nil {
			t.Fatal(err)
		}
		if c.ty.IsTimestamp() {
			tbl, _ = schema.New("x", []schema.Column{{Name: "c", Type: c.ty}})
		}
		tree, err := pg_query.Parse("INSERT INTO x (c) VALUES (" + c.lit + ")")
		if err != nil {
			t.Fatal(err)
		}
		vals := tree.Stmts[0].Stmt.GetInsertStmt().SelectStmt.GetSelectStmt().ValuesLists
		target := tbl.ColumnIndex("c")
		rec, ok := literalValues(tbl, []int{target}, vals, utcInput())
		lit := c.lit
		if norm := normalizeLiteral(c.ty, vals[0].GetList().Items[0]).GetAConst(); norm != nil && norm.GetSval() != nil {
			lit = "'" + norm.GetSval().GetSval() + "'"
		}
		res, engineErr := e.run(fmt.Sprintf("SELECT CAST(%s AS %s)", lit, c.ty.DuckDB()))
		if !ok {
			continue
		}
		fast++
		if engineErr != nil {
			t.Errorf("%s as %v: fast path accepted what the engine rejects (%v)", c.lit, c.ty, engineErr)
			continue
		}
		want := res[0].rows[0][0]
		col := rec.Column(target)
		var got string
		switch a := col.(type) {
		case *array.Timestamp:
			got = time.UnixMicro(int64(a.Value(0))).UTC().Format("2006-01-02 15:04:05.999999")
		case *array.Float64:
			got = fmt.Sprint(a.Value(0))
			if math.IsNaN(a.Value(0)) {
				got = "NaN"
			}
		default:
			if col.IsNull(0) {
				got = "NULL"
			} else {
				got = fmt.Sprint(col.GetOneForMarshal(0))
			}
		}
		if got != want {
			t.Errorf("%s as %v: fast path %q, engine %q", c.lit, c.ty, got, want)
		}
	}
	if fast < len(cases)/2 {
		t.Fatalf("fast path took only %d of %d cases", fast, len(cases))
	}
}

// TestISOTimestampMatchesGeneralForms checks the timestamp fast path
// against the general parser: random instants from year 1 to 9999 in
// every spelling it takes, and near misses it must leave to the general
// path (or refuse as the general path does).
func TestISOTimestampMatchesGeneralForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	zones := []string{"", "Z", "z", "+00", "-00", "+05", "-11", "+0530", "-09:30", "+15:59"}
	fast := 0
	for range 200_000 {
		tm := time.Date(1+rng.IntN(9999), time.Month(1+rng.IntN(12)), 1+rng.IntN(31), rng.IntN(24), rng.IntN(60), rng.IntN(60), 0, time.UTC)
		s := tm.Format("2006-01-02")
		if rng.IntN(2) == 0 {
			s += " "
		} else {
			s += "T"
		}
		s += tm.Format("15:04:05")
		if n := rng.IntN(8); n > 0 && n <= 6 {
			s += "." + fmt.Sprintf("%06d", rng.IntN(1_000_000))[:n]
		}
		s += zones[rng.IntN(len(zones))]
		// Some dates do not exist: February 30th and the like.
		if rng.IntN(10) == 0 {
			s = s[:8] + fmt.Sprintf("%02d", 28+rng.IntN(4)) + s[10:]
		}
		us, zone, ok := isoTimestamp(s)
		wantUS, wantZone, wantOK := parseTimestampForms(s)
		if ok {
			fast++
			if !wantOK || us != wantUS || zone != wantZone {
				t.Fatalf("isoTimestamp(%q) = %d, %v; parseTimestampForms says %d, %v, %v", s, us, zone, wantUS, wantZone, wantOK)
			}
		}
		if gotUS, gotZone, gotOK := parseTimestamp(s); gotOK != wantOK || gotUS != wantUS || gotZone != wantZone {
			t.Fatalf("parseTimestamp(%q) = %d, %v, %v; parseTimestampForms says %d, %v, %v", s, gotUS, gotZone, gotOK, wantUS, wantZone, wantOK)
		}
	}
	if fast < 150_000 {
		t.Fatalf("only %d of the timestamps took the fast path", fast)
	}
	for _, s := range []string{"2026-01-01 24:00:00", "2026-01-01 23:60:00", "2026-01-01 23:59:60", "2026-02-29 00:00:00", "0000-01-01 00:00:00",
		"2026-01-01 00:00:00.", "2026-01-01 00:00:00.1234567", "2026-01-01 00:00:00+16", "2026-01-01 00:00:00+05:3", "2026-01-01 00:00:00 +00", " 2026-01-01 00:00:00", "2026-1-01 00:00:00"} {
		if _, _, ok := isoTimestamp(s); ok {
			t.Errorf("isoTimestamp took %q", s)
		}
	}
	for _, s := range []string{"2024-02-29 00:00:00", "2000-02-29 12:00:00.5+01", "0001-01-01 00:00:00Z", "9999-12-31T23:59:59.999999-15:59"} {
		us, _, ok := isoTimestamp(s)
		want, _, wantOK := parseTimestampForms(s)
		if !ok || !wantOK || us != want {
			t.Errorf("%q: isoTimestamp %d %v, general %d %v", s, us, ok, want, wantOK)
		}
	}
}
