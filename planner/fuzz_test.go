package planner

import (
	"math"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/decfloat"
	"tsdb/internal/schema"
)

// FuzzSQL runs arbitrary text through the INSERT/COPY value parsers of
// every stored type (convert or report an error) and through the statement
// router (split, parse, sandbox walk, column naming). Nothing may panic.
func FuzzSQL(f *testing.F) {
	for _, s := range []string{"2026-01-01 20:16:22.646325 +0000", "2026-01-01T10:00:00.5Z", "2026-01-01", "-9223372036854775808", "1e308", "NaN", "t", "héllo", "2026-13-45", "2026-01-01 10:00:00+05:30"} {
		f.Add(s)
	}
	for _, s := range []string{"SELECT 1; SELECT 2", "-- c\n;", "INSERT INTO t VALUES ($1, 'a''b')", "COPY t FROM STDIN", "SELECT * FROM read_csv('/etc/passwd')", "/* x */ SELECT $$a;b$$", "WITH x AS (SELECT 1) SELECT * FROM x",
		"INSERT INTO t (a, \"B\") VALUES ('x''y', -1.5e3, 2147483648, NULL, DEFAULT, true), ('z', .5, 7, 'a', 1, FALSE);"} {
		f.Add(s)
	}
	types := []schema.Type{schema.Timestamptz, schema.Timestamp, schema.Int64, schema.Int32, schema.Int16, schema.Float64, schema.Float32, schema.Bool, schema.Text}
	known := everyTable{}
	f.Fuzz(func(t *testing.T, s string) {
		parseTimestamp(s)
		if us, zone, ok := isoTimestamp(s); ok {
			wantUS, wantZone, wantOK := parseTimestampForms(s)
			if !wantOK || us != wantUS || zone != wantZone {
				t.Fatalf("isoTimestamp(%q) = %d, %v; parseTimestampForms says %d, %v, %v", s, us, zone, wantUS, wantZone, wantOK)
			}
		}
		parseFloat(s)
		if f, ok := decfloat.Parse(s); ok {
			want, err := strconv.ParseFloat(s, 64)
			if err != nil || math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("decfloat.Parse(%q) = %v, strconv says %v (%v)", s, f, want, err)
			}
		}
		for _, ty := range types {
			b := array.NewBuilder(memory.DefaultAllocator, ty.Arrow())
			if err := appendText(b, ty, s, utcInput()); err == nil && b.Len() != 1 {
				t.Fatalf("%v %q: accepted without a value", ty, s)
			}
			b.Release()
		}
		// Whatever the INSERT scanner accepts, PostgreSQL's parser must
		// read the same way.
		scanAgreesWithParser(t, s)
		stmts, err := splitStatements(s, true)
		if err != nil {
			return
		}
		for _, st := range stmts {
			if st.node == nil {
				continue
			}
			if sel := st.node.GetSelectStmt(); sel != nil {
				collectRefs(sel, known)
				pgColumnNames(sel, 3)
			}
			firstKeyword(st.text)
		}
	})
}

// everyTable is a tableLookup that knows every name.
type everyTable struct{}

func (everyTable) known(string) bool    { return true }
func (everyTable) missing(string) error { return nil }
