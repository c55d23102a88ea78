package delta

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/otherwriter"
	"tsdb/internal/schema"
)

// foreignRecord builds a record of the given fields, one appender per
// field filling its column.
func foreignRecord(fields []arrow.Field, fill ...func(b array.Builder)) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, f := range fill {
		f(b.Field(i))
	}
	return b.NewRecordBatch()
}

// writeForeignFile writes rec into store as another writer would and
// returns its path.
func writeForeignFile(t *testing.T, store *LocalStore, name string, rec arrow.RecordBatch, int96 bool) string {
	t.Helper()
	otherwriter.WriteFile(t, store.LocalPath(name), rec, int96)
	return name
}

func foreignTable(t *testing.T, cols ...schema.Column) schema.Table {
	t.Helper()
	tbl, err := schema.New("f", append([]schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}}, cols...))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

var (
	usUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	nsUTC = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	msNTZ = &arrow.TimestampType{Unit: arrow.Millisecond}
)

func times(unit int64, vs ...int64) func(b array.Builder) {
	return func(b array.Builder) {
		for _, v := range vs {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(v * unit))
		}
	}
}

// Files of other writers are read by their columns' names into the
// table's types: other order and case, missing and extra columns, INT96,
// milli- and nanosecond timestamps (rounded to microseconds), narrower and
// unsigned integers, strings without the UTF8 annotation, decimals of a
// wider precision; deleted rows are left out by position.
func TestReadFileByName(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	tbl := foreignTable(t,
		schema.Column{Name: "host", Type: schema.Text},
		schema.Column{Name: "v", Type: schema.Int64},
		schema.Column{Name: "x", Type: schema.Float64},
		schema.Column{Name: "n", Type: schema.Decimal, Digits: 10, Scale: 2},
		schema.Column{Name: "gone", Type: schema.Int32})

	spark := foreignRecord([]arrow.Field{
		{Name: "V", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "HOST", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "junk", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "time", Type: usUTC},
		{Name: "x", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "n", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
	},
		func(b array.Builder) { b.(*array.Int32Builder).AppendValues([]int32{-7, 8, 9}, nil) },
		func(b array.Builder) {
			b.(*array.BinaryBuilder).AppendValues([][]byte{[]byte("é-1"), nil, []byte("c")}, []bool{true, false, true})
		},
		func(b array.Builder) { b.(*array.Float64Builder).AppendValues([]float64{1, 2, 3}, nil) },
		times(1, base+1, base-1_000_001, base+3),
		func(b array.Builder) { b.(*array.Float32Builder).AppendValues([]float32{0.1, 2.5, -0}, nil) },
		func(b array.Builder) {
			b.(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(12345), decimal128.FromI64(-1), decimal128.FromI64(99999_99)}, nil)
		})
	defer spark.Release()
	rs := foreignRecord([]arrow.Field{
		{Name: "time", Type: nsUTC},
		{Name: "v", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	},
		// Parts of a microsecond are rounded half away from zero, as
		// the engine rounds them.
		times(1, base*1000+1999, -1500, 1500),
		func(b array.Builder) { b.(*array.Uint32Builder).AppendValues([]uint32{4_000_000_000, 0, 1}, nil) })
	defer rs.Release()
	ms := foreignRecord([]arrow.Field{
		{Name: "time", Type: msNTZ},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
	},
		times(1, base/1000+5, -2),
		func(b array.Builder) { b.(*array.StringBuilder).AppendValues([]string{"ms", "before"}, nil) })
	defer ms.Release()

	for _, tc := range []struct {
		name    string
		rec     arrow.RecordBatch
		int96   bool
		deleted RowSet
		want    string
	}{
		{"spark-like, INT96", spark, true, NewRowSet(1),
			"2026-12-01T00:00:00.000001Z|é-1|-7|0.10000000149011612|123.45|(null);" +
				"2026-12-01T00:00:00.000003Z|c|9|0|99999.99|(null)"},
		{"spark-like, microseconds, every row", spark, false, RowSet{},
			"2026-12-01T00:00:00.000001Z|é-1|-7|0.10000000149011612|123.45|(null);" +
				"2026-11-30T23:59:58.999999Z|(null)|8|2.5|-0.01|(null);" +
				"2026-12-01T00:00:00.000003Z|c|9|0|99999.99|(null)"},
		{"delta-rs-like, nanoseconds and unsigned", rs, false, RowSet{},
			"2026-12-01T00:00:00.000002Z|(null)|4000000000|(null)|(null)|(null);" +
				"1970-01-01T00:00:00.000002Z|(null)|1|(null)|(null)|(null);" +
				"1969-12-31T23:59:59.999998Z|(null)|0|(null)|(null)|(null)"},
		{"milliseconds without zone", ms, false, NewRowSet(5),
			"2026-12-01T00:00:00.005Z|ms|(null)|(null)|(null)|(null);" +
				"1969-12-31T23:59:59.998Z|before|(null)|(null)|(null)|(null)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeForeignFile(t, store, strings.ReplaceAll(tc.name, " ", "_")+".parquet", tc.rec, tc.int96)
			rec, err := ReadFileByName(ctx, store, tbl, path, tc.deleted)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			got := rowsOf(rec)
			// Sorted by time for a stable comparison.
			if strings.Join(sortedStrings(got), ";") != strings.Join(sortedStrings(strings.Split(tc.want, ";")), ";") {
				t.Fatalf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.ReplaceAll(tc.want, ";", "\n"))
			}
		})
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// What would change a value, or what the Delta protocol does not give a
// column's type, is refused with the column named, never read with loss.
func TestReadFileByNameRefuses(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := times(1, 1_700_000_000_000_000)
	for _, tc := range []struct {
		name  string
		col   schema.Column
		field arrow.Field
		fill  func(b array.Builder)
		want  string
	}{
		{"number stored as text", schema.Column{Name: "v", Type: schema.Int64},
			arrow.Field{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
			func(b array.Builder) { b.(*array.StringBuilder).Append("1") }, "column v: stored as"},
		{"double into real", schema.Column{Name: "v", Type: schema.Float32},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			func(b array.Builder) { b.(*array.Float64Builder).Append(0.1) }, "column v: stored as"},
		{"bigint out of integer's range", schema.Column{Name: "v", Type: schema.Int32},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.(*array.Int64Builder).Append(1 << 40) }, "out of range"},
		{"unsigned beyond bigint", schema.Column{Name: "v", Type: schema.Int64},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
			func(b array.Builder) { b.(*array.Uint64Builder).Append(1 << 63) }, "out of range"},
		{"text that is not UTF-8", schema.Column{Name: "v", Type: schema.Text},
			arrow.Field{Name: "v", Type: arrow.BinaryTypes.Binary, Nullable: true},
			func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{0xff, 'a'}) }, "not UTF-8"},
		{"decimal of another scale", schema.Column{Name: "v", Type: schema.Decimal, Digits: 10, Scale: 2},
			arrow.Field{Name: "v", Type: &arrow.Decimal128Type{Precision: 10, Scale: 3}, Nullable: true},
			func(b array.Builder) { b.(*array.Decimal128Builder).Append(decimal128.FromI64(1)) }, "column v: stored as"},
		{"decimal beyond the precision", schema.Column{Name: "v", Type: schema.Decimal, Digits: 4, Scale: 2},
			arrow.Field{Name: "v", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
			func(b array.Builder) { b.(*array.Decimal128Builder).Append(decimal128.FromI64(10000)) }, "out of range"},
		{"date into a timestamp column", schema.Column{Name: "v", Type: schema.Timestamptz},
			arrow.Field{Name: "v", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
			func(b array.Builder) { b.(*array.Date32Builder).Append(1) }, "column v: stored as"},
		{"a NULL in a NOT NULL column", schema.Column{Name: "v", Type: schema.Int64, NotNull: true},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.AppendNull() }, "refuses"},
		{"a required column missing", schema.Column{Name: "v", Type: schema.Int64, NotNull: true},
			arrow.Field{Name: "other", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.(*array.Int64Builder).Append(1) }, "column v: the file has no such column"},
		{"bytea from an annotated string", schema.Column{Name: "v", Type: schema.Bytea},
			arrow.Field{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
			func(b array.Builder) { b.(*array.StringBuilder).Append(`\x41`) }, "column v: stored as"},
		{"bit string of bytes beyond ASCII", schema.Column{Name: "v", Type: schema.Bit},
			arrow.Field{Name: "v", Type: arrow.BinaryTypes.Binary, Nullable: true},
			func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte("é")) }, "beyond ASCII"},
		{"two columns but for case", schema.Column{Name: "v", Type: schema.Int64},
			arrow.Field{Name: "V", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.(*array.Int64Builder).Append(1) }, "2 columns named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, fill := []arrow.Field{{Name: "time", Type: usUTC}, tc.field}, []func(array.Builder){now, tc.fill}
			if tc.field.Name == "V" {
				fields, fill = append(fields, arrow.Field{Name: "v", Type: tc.field.Type, Nullable: true}), append(fill, tc.fill)
			}
			rec := foreignRecord(fields, fill...)
			defer rec.Release()
			path := writeForeignFile(t, store, strings.ReplaceAll(tc.name, " ", "_")+".parquet", rec, false)
			got, err := ReadFileByName(ctx, store, foreignTable(t, tc.col), path, RowSet{})
			if err == nil {
				got.Release()
				t.Fatalf("read without an error, want one containing %q", tc.want)
			}
			var fe *ForeignFileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Column != "v" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want a ForeignFileError of column v saying %q", err, tc.want)
			}
		})
	}
}
