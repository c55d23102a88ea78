package planner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/internal/slabs"
)

// copyColumns makes the records Arrow's builders make from the same
// values: NULLs first, late and everywhere, columns that outgrow what was
// reserved, text that outgrows its estimate, with Go's allocator and the
// slabs, and records cut when a text column is full.
func TestCopyColumnsMatchBuilders(t *testing.T) {
	tbl := schema.Table{Name: "t", TimeIndex: 0, Columns: []schema.Column{
		{Name: "time", Type: schema.Timestamptz},
		{Name: "host", Type: schema.Text},
		{Name: "v", Type: schema.Float64},
		{Name: "n", Type: schema.Int64},
		{Name: "at", Type: schema.Timestamptz},
		{Name: "note", Type: schema.Text},
	}}
	for _, tc := range []struct {
		name      string
		rows      int
		reserve   int // rows reserved for each record
		textBytes int // sixteenths of a byte a row reserved for text
		nullEvery int // a row in nullEvery has NULLs (0: none)
		nullFrom  int // rows before it have none
		textLimit int // 0: copyRecordTextBytes
		slabs     bool
		builders  bool // every column through Arrow's builders, as binary COPY has them
	}{
		{name: "no NULLs", rows: 1000, reserve: 1000, textBytes: 16},
		{name: "NULL first", rows: 500, reserve: 500, textBytes: 16, nullEvery: 3},
		{name: "NULL late", rows: 700, reserve: 700, textBytes: 16, nullEvery: 5, nullFrom: 650},
		{name: "all NULL", rows: 90, reserve: 90, nullEvery: 1},
		{name: "outgrow reserve", rows: 5000, reserve: 7, textBytes: 1, nullEvery: 11, nullFrom: 300},
		{name: "no text estimate", rows: 3000, reserve: 3000, nullEvery: 13},
		{name: "slabs", rows: 20000, reserve: 64, textBytes: 4, nullEvery: 17, nullFrom: 1000, slabs: true},
		{name: "text full", rows: 2000, reserve: 100, textBytes: 8, nullEvery: 7, textLimit: 4000},
		{name: "builders", rows: 3000, reserve: 100, textBytes: 8 * 16, nullEvery: 9, nullFrom: 100, builders: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var alloc memory.Allocator = memory.NewGoAllocator()
			if tc.slabs {
				alloc = new(slabs.Allocator)
			}
			cc := newCopyColumns(alloc, &tbl, !tc.builders)
			if tc.textLimit > 0 {
				cc.textLimit = tc.textLimit
			}
			want := array.NewRecordBuilder(memory.NewGoAllocator(), tbl.ArrowSchema())
			defer want.Release()
			rng := rand.New(rand.NewPCG(1, uint64(tc.rows)))
			var got, wants []arrow.RecordBatch
			cut := func() {
				got = append(got, cc.record())
				wants = append(wants, want.NewRecordBatch())
			}
			for r := range tc.rows {
				if cc.len() > 0 && (cc.full || rng.IntN(997) == 0) {
					cut()
				}
				if cc.len() == 0 {
					cc.reserve(tc.reserve, func(int) int { return tc.textBytes }, 1<<20)
				}
				cc.newRow()
				null := func(ci int) bool {
					return tc.nullEvery > 0 && r >= tc.nullFrom && (r+ci)%tc.nullEvery == 0
				}
				for ci := range tbl.Columns {
					if null(ci) {
						cc.appendNull(ci)
						want.Field(ci).AppendNull()
						continue
					}
					switch ci {
					case 0:
						us := int64(r)*1_000_000 + rng.Int64N(1000)
						if cc.kind(ci) == colBuilder {
							cc.builder(ci).(*array.TimestampBuilder).Append(arrow.Timestamp(us))
						} else {
							cc.appendTime(ci, us)
						}
						want.Field(ci).(*array.TimestampBuilder).Append(arrow.Timestamp(us))
					case 1, 5:
						s := fmt.Sprintf("host_%d", rng.IntN(50))
						if ci == 5 {
							s = strings.Repeat("é", rng.IntN(40))
						}
						if cc.kind(ci) == colBuilder {
							cc.builder(ci).(*array.StringBuilder).Append(s)
						} else {
							cc.appendText(ci, s)
						}
						want.Field(ci).(*array.StringBuilder).Append(s)
					case 2:
						v := rng.NormFloat64()
						if cc.kind(ci) == colBuilder {
							cc.builder(ci).(*array.Float64Builder).Append(v)
						} else {
							cc.appendFloat(ci, v)
						}
						want.Field(ci).(*array.Float64Builder).Append(v)
					case 3:
						v := rng.Int64()
						cc.builder(ci).(*array.Int64Builder).Append(v)
						want.Field(ci).(*array.Int64Builder).Append(v)
					case 4:
						v := arrow.Timestamp(rng.Int64N(1 << 50))
						cc.builder(ci).(*array.TimestampBuilder).Append(v)
						want.Field(ci).(*array.TimestampBuilder).Append(v)
					}
				}
				cc.endRow()
			}
			// What the next records' text is reserved by.
			if tc.nullEvery != 1 && cc.textBytes(1) == 0 {
				t.Fatal("the text column's bytes are not known")
			}
			cut()
			defer cc.release()
			total := 0
			for i := range got {
				g, w := got[i], wants[i]
				total += int(g.NumRows())
				for ci := range tbl.Columns {
					if v, ok := g.Column(ci).(interface{ ValidateFull() error }); ok {
						if err := v.ValidateFull(); err != nil {
							t.Fatalf("record %d column %d: %v", i, ci, err)
						}
					}
					if cc.kind(ci) != colBuilder && g.Column(ci).NullN() == 0 && g.Column(ci).Data().Buffers()[0] != nil {
						t.Fatalf("record %d column %d: a validity bitmap without NULLs", i, ci)
					}
				}
				if !array.RecordEqual(g, w) {
					t.Fatalf("record %d differs:\ngot  %v\nwant %v", i, g, w)
				}
				g.Release()
				w.Release()
			}
			if total != tc.rows {
				t.Fatalf("%d rows in the records, want %d", total, tc.rows)
			}
			if tc.textLimit > 0 && len(got) < tc.rows*8/tc.textLimit {
				t.Fatalf("%d records: full text columns were not cut", len(got))
			}
		})
	}
}

// A text column's reservation is bounded by the input left, whatever the
// estimate from earlier rows: two rows of 600 KB before a chunk of short
// rows must not reserve 600 KB for each of them.
func TestCopyColumnsReserveBoundedByInput(t *testing.T) {
	tbl := schema.Table{Name: "t", TimeIndex: 0, Columns: []schema.Column{
		{Name: "time", Type: schema.Timestamptz},
		{Name: "host", Type: schema.Text},
	}}
	const rows, perRow, input = 21_000, 600_000, 1 << 20
	for _, direct := range []bool{true, false} {
		cc := newCopyColumns(memory.NewGoAllocator(), &tbl, direct)
		cc.reserve(rows, func(int) int { return perRow * 16 }, input)
		got := len(cc.cols[1].data)
		if !direct {
			got = cc.builder(1).(*array.StringBuilder).DataCap()
		}
		if got > 2*input {
			t.Fatalf("direct %v: %d bytes reserved for %d bytes of input", direct, got, input)
		}
		cc.release()
	}
}
