package planner

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

// dedupRow is one row of the fold tests: time, host (nil: NULL), value
// (nil: NULL).
type dedupRow struct {
	time int64
	host *string
	v    *float64
}

func foldRecord(t *testing.T, tbl schema.Table, rows []dedupRow) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.time))
		if r.host == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.host)
		}
		if r.v == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(*r.v)
		}
	}
	return b.NewRecordBatch()
}

func renderFolded(recs []arrow.RecordBatch) string {
	var out []string
	for _, rec := range recs {
		for i := range int(rec.NumRows()) {
			var parts []string
			for c := range int(rec.NumCols()) {
				parts = append(parts, rec.Column(c).ValueStr(i))
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	return strings.Join(out, " ")
}

func TestFoldPoints(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "host", Type: schema.Text}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	tbl.Dedup = []string{"time", "host"}
	a, b := "a", "b"
	one, two := 1.0, 2.0
	cases := []struct {
		name  string
		recs  [][]dedupRow
		merge bool
		want  string
	}{
		{"distinct points stay as they are", [][]dedupRow{{{1, &a, &one}, {1, &b, &two}, {2, &a, nil}}}, false,
			"1970-01-01T00:00:00.000001Z|a|1 1970-01-01T00:00:00.000001Z|b|2 1970-01-01T00:00:00.000002Z|a|(null)"},
		{"the last row of a point replaces it, NULLs too", [][]dedupRow{{{1, &a, &one}, {1, &b, &two}}, {{1, &a, nil}}}, false,
			"1970-01-01T00:00:00.000001Z|a|(null) 1970-01-01T00:00:00.000001Z|b|2"},
		{"merge keeps the newest value a column has", [][]dedupRow{{{1, &a, &one}, {1, &a, &two}, {1, &a, nil}}}, true,
			"1970-01-01T00:00:00.000001Z|a|2"},
		{"points of three keys, each written more than once", [][]dedupRow{{{1, &a, &one}, {1, &b, nil}, {2, &a, &one}}, {{1, &b, &two}, {1, &a, nil}, {2, &a, &two}, {1, &b, nil}}}, true,
			"1970-01-01T00:00:00.000001Z|a|1 1970-01-01T00:00:00.000001Z|b|2 1970-01-01T00:00:00.000002Z|a|2"},
		{"NULL keys are one point, apart from values", [][]dedupRow{{{1, nil, &one}, {1, &a, &one}, {1, nil, &two}}}, false,
			"1970-01-01T00:00:00.000001Z|(null)|2 1970-01-01T00:00:00.000001Z|a|1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var recs []arrow.RecordBatch
			for _, rows := range tc.recs {
				recs = append(recs, foldRecord(t, tbl, rows))
			}
			got, err := foldPoints(tbl, recs, tc.merge)
			if err != nil {
				t.Fatal(err)
			}
			if s := renderFolded(got); s != tc.want {
				t.Fatalf("got  %s\nwant %s", s, tc.want)
			}
			// Every key under one hash: the keys tell the points apart.
			got, err = foldPointsHashed(tbl, recs, tc.merge, func([]byte) uint64 { return 7 })
			if err != nil {
				t.Fatal(err)
			}
			if s := renderFolded(got); s != tc.want {
				t.Fatalf("colliding hashes: got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestParseDedupKeys(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "Host", Type: schema.Text}, {Name: "v", Type: schema.Float64},
		{Name: "i", Type: schema.Interval}, {Name: "tz", Type: schema.TimeTZ}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want, code string }{
		{"Host", "time,Host", ""},
		{" Host , time ", "time,Host", ""},
		{"", "", ""},
		{"host", "", "42703"},
		{"v", "", "22023"},
		{"i", "", "22023"}, // '1 day' and '24 hours' are one value
		{"tz", "", "22023"},
		{"Host,,", "", "22023"},
		{"Host, Host", "", "22023"},
	} {
		cols, err := parseDedupKeys(tbl, tc.in)
		if tc.code != "" {
			if err == nil || sqlerr.Code(err) != tc.code {
				t.Errorf("%q: %v, want SQLSTATE %s", tc.in, err, tc.code)
			}
			continue
		}
		if err != nil || strings.Join(cols, ",") != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.in, cols, err, tc.want)
		}
	}
}

func TestPointIndex(t *testing.T) {
	tbl, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "host", Type: schema.Text}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	tbl.Dedup = []string{"time", "host"}
	a, b, c := "a", "b", "c"
	one := 1.0
	b1 := membuffer.Batch{ID: 1, Rec: foldRecord(t, tbl, []dedupRow{{1, &a, &one}, {2, nil, &one}})}
	b2 := membuffer.Batch{ID: 2, Rec: foldRecord(t, tbl, []dedupRow{{1, &b, nil}})}
	var x pointIndex
	for _, tc := range []struct {
		name string
		all  []membuffer.Batch
		rows []dedupRow
		want bool
	}{
		{"a point of a batch", []membuffer.Batch{b1, b2}, []dedupRow{{1, &c, nil}, {1, &b, &one}}, true},
		{"a NULL key matches NULL", []membuffer.Batch{b1, b2}, []dedupRow{{2, nil, nil}}, true},
		{"other points", []membuffer.Batch{b1, b2}, []dedupRow{{1, &c, nil}, {2, &a, nil}, {3, &a, nil}}, false},
		{"a batch that left the buffer counts no more", []membuffer.Batch{b1}, []dedupRow{{1, &b, nil}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := x.mayContain(tbl, tc.all, tc.all, []arrow.RecordBatch{foldRecord(t, tbl, tc.rows)}); got != tc.want {
				t.Fatalf("mayContain = %v, want %v", got, tc.want)
			}
		})
	}
	// Another identity hashes anew: host is no longer part of it.
	tbl.Dedup = []string{"time"}
	if !x.mayContain(tbl, []membuffer.Batch{b1}, []membuffer.Batch{b1}, []arrow.RecordBatch{foldRecord(t, tbl, []dedupRow{{1, &c, nil}})}) {
		t.Fatal("time 1 is in batch 1 under the identity (time)")
	}
}
