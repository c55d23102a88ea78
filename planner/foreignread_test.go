package planner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/delta"
	"tsdb/internal/otherwriter"
	"tsdb/internal/schema"
)

// Storage rewrites other writers' files (compaction, DELETE, UPDATE,
// retention) reading them with parquet-go (delta.ReadFileByName), while
// queries read them through the engine's views (layoutSelectList). A
// rewrite must not change a value a query showed: both read these files,
// in every encoding the conversion distinguishes, to the same rows.
func TestForeignFilesReadAlikeByStorageAndEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	engine, err := NewEngine(ctx, EngineOptions{TablesDir: filepath.Join(dir, "tables"), Threads: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	conn, err := engine.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	store, err := delta.NewLocalStore(filepath.Join(dir, "tables", "f"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.New("f", []schema.Column{
		{Name: "time", Type: schema.Timestamptz, NotNull: true},
		{Name: "wall", Type: schema.Timestamp, NTZ: true},
		{Name: "host", Type: schema.Text},
		{Name: "v", Type: schema.Int64},
		{Name: "small", Type: schema.Int16},
		{Name: "x", Type: schema.Float64},
		{Name: "n", Type: schema.Decimal, Digits: 10, Scale: 2},
		{Name: "d", Type: schema.Date},
		{Name: "absent", Type: schema.Int32},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Times with parts of a microsecond, before and after the epoch.
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	nanos := []int64{base + 1999, base - 1_000_000_001, -1500, 1500, -86_400_000_000_001, 0}
	rows := len(nanos)
	build := func(fields []arrow.Field) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
		defer b.Release()
		for i, f := range fields {
			for r := range rows {
				fb := b.Field(i)
				if r == 2 && f.Nullable {
					fb.AppendNull()
					continue
				}
				switch fb := fb.(type) {
				case *array.TimestampBuilder:
					unit := f.Type.(*arrow.TimestampType).Unit
					fb.Append(arrow.Timestamp(nanos[r] / int64(unit.Multiplier())))
				case *array.Int32Builder:
					fb.Append(int32(r*1000 - 2500))
				case *array.Uint32Builder:
					fb.Append(uint32(r * 7))
				case *array.Int64Builder:
					fb.Append(int64(r) * 3)
				case *array.Float32Builder:
					fb.Append(float32(r) / 3)
				case *array.BinaryBuilder:
					fb.Append([]byte(fmt.Sprintf("hôte-%d", r)))
				case *array.Decimal128Builder:
					fb.Append(decimal128.FromI64(int64(r)*123457 - 300000))
				case *array.Date32Builder:
					fb.Append(arrow.Date32(r*4000 - 9000))
				default:
					t.Fatalf("no values for %T", fb)
				}
			}
		}
		return b.NewRecordBatch()
	}
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		int96  bool
	}{
		{"spark-like: INT96, plain binary, narrower numbers", []arrow.Field{
			{Name: "X", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
			{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_ns},
			{Name: "host", Type: arrow.BinaryTypes.Binary, Nullable: true},
			{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			{Name: "small", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "n", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
			{Name: "extra", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		}, true},
		{"delta-rs-like: nanoseconds with and without zone, unsigned", []arrow.Field{
			{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
			{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
			{Name: "v", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
			{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		}, false},
		{"milliseconds: instants into a wall clock, wall clocks into instants", []arrow.Field{
			{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
			{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
			{Name: "small", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		}, false},
		{"microseconds, as tsdb's own types but by name", []arrow.Field{
			{Name: "host", Type: arrow.BinaryTypes.Binary, Nullable: true},
			{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
			{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
			{Name: "x", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := build(tc.fields)
			defer rec.Release()
			name := strings.NewReplacer(" ", "_", ":", "", ",", "", "'", "").Replace(tc.name) + ".parquet"
			path := store.LocalPath(name)
			otherwriter.WriteFile(t, path, rec, tc.int96)

			l, err := engine.layouts.layout(ctx, conn, path)
			if err != nil {
				t.Fatal(err)
			}
			byEngine, err := scanRecord(ctx, conn, tbl, fmt.Sprintf("SELECT %s FROM read_parquet(%s)", layoutSelectList(tbl, l), schema.QuoteString(path)))
			if err != nil {
				t.Fatal(err)
			}
			defer byEngine.Release()
			byStorage, err := delta.ReadFileByName(ctx, store, tbl, name, delta.RowSet{})
			if err != nil {
				t.Fatal(err)
			}
			defer byStorage.Release()
			if byEngine.NumRows() != int64(rows) || byStorage.NumRows() != int64(rows) {
				t.Fatalf("%d rows by the engine, %d by storage; wrote %d", byEngine.NumRows(), byStorage.NumRows(), rows)
			}
			for c := range tbl.Columns {
				for r := range rows {
					e, s := byEngine.Column(c).ValueStr(r), byStorage.Column(c).ValueStr(r)
					if e != s {
						t.Errorf("row %d, column %s: %s by the engine, %s by storage", r, tbl.Columns[c].Name, e, s)
					}
				}
			}
		})
	}
}
