package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"

	"tsdb/internal/schema"
)

// fileColumns returns the column names and field ids of a data file's
// Parquet schema.
func fileColumns(t *testing.T, path string) ([]string, []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var ids []int
	for _, c := range pf.Root().Columns() {
		names = append(names, c.Name())
		ids = append(ids, c.ID())
	}
	return names, ids
}

// A table whose names Spark refuses without column mapping gets it (mode
// name): ids and physical names in the schema, the protocol's feature,
// files and statistics under the physical names, and every column read
// back by its name; plain names keep a table without mapping, and a
// mapped name added later turns it on with the old columns keeping their
// names in files.
func TestColumnMapping(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		create []schema.Column
		add    []schema.Column
		// mapped: the columns (by position from 1) whose physical name must be
		// col-<uuid>; nil: the table must stay without mapping.
		mapped []int
	}{
		{"plain names", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "Disk-IO.used", Type: schema.Text}, {Name: "Ünïcode", Type: schema.Float64}}, nil, nil},
		{"mapped at creation", []schema.Column{{Name: "time stamp", Type: schema.Timestamptz}, {Name: "host", Type: schema.Text}, {Name: "used (%)", Type: schema.Float64}, {Name: "a=b,c;d{e}\tf\ng", Type: schema.Int64}}, nil, []int{1, 3, 4}},
		{"mapped by a column added", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "host", Type: schema.Text}, {Name: "v", Type: schema.Float64}}, []schema.Column{{Name: "Used Percent", Type: schema.Int64}}, []int{4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, err := NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sch, err := schema.New("m", c.create)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := Create(ctx, store, sch, nil)
			if err != nil {
				t.Fatal(err)
			}
			snap := tbl.Snapshot()
			if c.add != nil {
				if snap.Schema.ColumnMapping() {
					t.Fatalf("mapped before the column was added: %+v", snap.Schema)
				}
				// A file written before, under the names.
				add, err := WriteDataFile(ctx, store, snap.Schema, []arrow.RecordBatch{batch(snap.Schema, []int64{1_000_000}, []string{"before"})})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}}); err != nil {
					t.Fatal(err)
				}
				if snap, err = tbl.AddColumns(ctx, "ADD COLUMNS", c.add); err != nil {
					t.Fatal(err)
				}
			}
			got := snap.Schema
			if c.mapped == nil {
				if got.ColumnMapping() || strings.Contains(snap.Metadata.SchemaString, fieldPhysicalKey) || snap.Metadata.Configuration[confMappingMode] != "" || snap.Protocol.MinReaderVersion != 1 {
					t.Fatalf("plain names got column mapping: %+v %s", snap.Protocol, snap.Metadata.SchemaString)
				}
			} else {
				if !got.ColumnMapping() || snap.Metadata.Configuration[confMappingMode] != "name" || snap.Metadata.Configuration[confMaxColumnID] != fmt.Sprint(len(got.Columns)) {
					t.Fatalf("no column mapping: %+v", snap.Metadata.Configuration)
				}
				if p := snap.Protocol; p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Contains(p.ReaderFeatures, "columnMapping") || !slices.Contains(p.WriterFeatures, "columnMapping") {
					t.Fatalf("protocol %+v", p)
				}
				if err := snap.Writable(); err != nil {
					t.Fatal(err)
				}
				for i, col := range got.Columns {
					want := slices.Contains(c.mapped, i+1)
					if col.FieldID != i+1 || strings.HasPrefix(col.FileName(), physicalNamePrefix) != want || (!want && col.FileName() != col.Name) {
						t.Errorf("column %d %q: id %d, physical name %q", i, col.Name, col.FieldID, col.FileName())
					}
				}
				// Reopened from the log: the same schema.
				reopened, err := Open(ctx, store, "m")
				if err != nil {
					t.Fatal(err)
				}
				if r := reopened.Snapshot().Schema; fmt.Sprint(r.Columns) != fmt.Sprint(got.Columns) || r.MaxColumnID != got.MaxColumnID {
					t.Fatalf("reopened %+v, want %+v", r, got)
				}
			}

			// A file of the schema: columns under their physical names
			// with their ids, statistics under the same names, rows read
			// back.
			b := array.NewRecordBuilder(memory.DefaultAllocator, got.ArrowSchema())
			for i := range got.Columns {
				switch fb := b.Field(i).(type) {
				case *array.TimestampBuilder:
					fb.Append(2_000_000)
				case *array.StringBuilder:
					fb.Append("h")
				case *array.Float64Builder:
					fb.Append(1.5)
				case *array.Int64Builder:
					fb.Append(int64(i))
				}
			}
			rec := b.NewRecordBatch()
			add, err := WriteDataFile(ctx, store, got, []arrow.RecordBatch{rec})
			if err != nil {
				t.Fatal(err)
			}
			names, ids := fileColumns(t, store.LocalPath(add.Path))
			var stats Stats
			if err := json.Unmarshal([]byte(add.Stats), &stats); err != nil {
				t.Fatal(err)
			}
			for i, col := range got.Columns {
				if names[i] != col.FileName() || ids[i] != col.FieldID {
					t.Errorf("file column %d: %q id %d, want %q id %d", i, names[i], ids[i], col.FileName(), col.FieldID)
				}
				if _, ok := stats.NullCount[col.FileName()]; !ok {
					t.Errorf("stats lack %q: %s", col.FileName(), add.Stats)
				}
				if _, ok := stats.MinValues[col.Name]; ok && col.Name != col.FileName() {
					t.Errorf("stats name %q by its logical name: %s", col.Name, add.Stats)
				}
			}
			if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}}); err != nil {
				t.Fatal(err)
			}
			reopened, err := Open(ctx, store, "m")
			if err != nil {
				t.Fatal(err)
			}
			rs := reopened.Snapshot()
			i := slices.IndexFunc(rs.Files, func(f File) bool { return f.Path == add.Path })
			if i < 0 {
				t.Fatalf("%s not in %+v", add.Path, rs.Files)
			}
			last := rs.Files[i]
			if last.MinTime != 2_000_000 || last.Columns != len(got.Columns) || !last.Prefix {
				t.Fatalf("file from its stats: %+v", last)
			}
			back, err := ReadDataFile(ctx, store, got, add.Path)
			if err != nil {
				t.Fatal(err)
			}
			if len(back) != 1 || !array.RecordEqual(back[0], rec) {
				t.Fatalf("read back %v, want %v", back, rec)
			}
			if c.add != nil {
				first := rs.Files[1-i]
				if first.Columns != len(c.create) {
					t.Fatalf("the file written before mapping: %+v", first)
				}
				old, err := ReadDataFile(ctx, store, got, first.Path)
				if err != nil || len(old) != 1 || old[0].NumRows() != 1 {
					t.Fatalf("the file written before mapping: %v %v", old, err)
				}
			}
		})
	}
}

// Under mapping every column added gets a physical name of its own, also
// one of a plain name: another writer may have dropped a column of that
// name (or renamed one from it), whose data old files still hold.
// Columns added with the commit that turns mapping on keep plain names:
// no column was dropped before mapping.
func TestColumnMappingPhysicalNames(t *testing.T) {
	sch, err := schema.New("m", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	sch.Columns = append(sch.Columns, schema.Column{Name: "a b", Type: schema.Text}, schema.Column{Name: "plain", Type: schema.Text})
	on := withColumnMapping(sch, 2)
	for i, want := range []string{"time", "v", "", "plain"} {
		if c := on.Columns[i]; c.FieldID != i+1 || (want != "" && c.FileName() != want) || (want == "" && !strings.HasPrefix(c.FileName(), physicalNamePrefix)) {
			t.Fatalf("turning mapping on, column %d: %q id %d", i, c.FileName(), c.FieldID)
		}
	}
	on.Columns = append(on.Columns, schema.Column{Name: "fresh", Type: schema.Text})
	next := withColumnMapping(on, 4)
	if c := next.Columns[4]; !strings.HasPrefix(c.FileName(), physicalNamePrefix) || c.FieldID != 5 || next.MaxColumnID != 5 {
		t.Fatalf("plain column under mapping: %q id %d, max %d", c.FileName(), c.FieldID, next.MaxColumnID)
	}
	if on.Columns[4].FieldID != 0 {
		t.Fatal("withColumnMapping changed its argument's columns")
	}
}

// A line-protocol table whose tags are its identity, given a tag whose
// name needs mapping: the commit that adds it keeps both the identity's
// new key and the mapping's settings.
func TestColumnMappingWithTagIdentity(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New("lp", []schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}, {Name: "host", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	sch.Dedup, sch.DedupTags = []string{"time", "host"}, true
	tbl, err := Create(ctx, store, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.AddTagColumns(ctx, "ADD COLUMNS", []schema.Column{{Name: "Host Name", Type: schema.Text}}, []string{"Host Name"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := snap.Metadata.Configuration
	if cfg[confMappingMode] != "name" || cfg[confMaxColumnID] != "3" || !snap.Schema.ColumnMapping() || !slices.Equal(snap.Schema.Dedup, []string{"time", "host", "Host Name"}) {
		t.Fatalf("configuration %v, schema %+v", cfg, snap.Schema)
	}
}
