package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in   string
		want Type
		ok   bool
	}{
		{"TIMESTAMPTZ", Timestamptz, true},
		{"timestamp with time zone", Timestamptz, true},
		{"timestamp", Timestamp, true},
		{"DOUBLE PRECISION", Float64, true},
		{"float8", Float64, true},
		{"BIGINT", Int64, true},
		{"int", Int32, true},
		{"varchar(20)", Text, true},
		{"pg_catalog.int8", Int64, true},
		{"boolean", Bool, true},
		{"jsonb", Invalid, false},
	}
	for _, tt := range tests {
		got, err := ParseType(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseType(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestNewChoosesFirstTimestampAsTimeColumn(t *testing.T) {
	tbl, err := New("cpu", []Column{{Name: "host", Type: Text}, {Name: "ts", Type: Timestamptz}, {Name: "t2", Type: Timestamp}})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.TimeIndex != 1 || !tbl.Columns[1].NotNull || tbl.Columns[2].NotNull {
		t.Fatalf("time column %d, columns %+v", tbl.TimeIndex, tbl.Columns)
	}
	if _, err := New("cpu", []Column{{Name: "host", Type: Text}}); err == nil {
		t.Fatal("table without timestamp column accepted")
	}
	if _, err := New("cpu", []Column{{Name: "t", Type: Timestamp}, {Name: "t", Type: Text}}); err == nil {
		t.Fatal("duplicate column accepted")
	}
}

// Any name PostgreSQL takes quoted, except what the engine cannot tell
// apart or tsdb's own views use.
func TestNames(t *testing.T) {
	ts := Column{Name: "time", Type: Timestamptz}
	for _, tt := range []struct {
		table string
		cols  []string
		ok    bool
	}{
		{"Disk-IO", []string{"Used %", "a\"q", "x.y", "température"}, true},
		{strings.Repeat("x", 63), []string{strings.Repeat("é", 31)}, true},
		{"", nil, false},
		{strings.Repeat("x", 64), nil, false},
		{"nul\x00", nil, false},
		{"bad\xff", nil, false},
		{"cpu", []string{strings.Repeat("é", 32)}, false},
		{"cpu", []string{"Load", "load"}, false},
		{"cpu", []string{"TIME"}, false},
		{"cpu", []string{"_B"}, false},
		{"cpu", []string{"_TSDB_id"}, false},
	} {
		cols := []Column{ts}
		for _, c := range tt.cols {
			cols = append(cols, Column{Name: c, Type: Text})
		}
		_, err := New(tt.table, cols)
		if (err == nil) != tt.ok {
			t.Errorf("New(%q, %q): %v, want ok %v", tt.table, tt.cols, err, tt.ok)
		}
	}
	var dup *DuplicateColumnError
	if _, err := New("cpu", []Column{ts, {Name: "Load", Type: Text}, {Name: "load", Type: Text}}); !errors.As(err, &dup) || dup.Other != "Load" {
		t.Errorf("columns differing in case: %v", err)
	}
	for name, reserved := range map[string]bool{"pg_x": true, "PG_X": true, "_tsdb_id_cpu": true, "_TSDBx": true, "pgx": false, "cpu_pg_": false} {
		if err := CheckNewTableName(name); (err != nil) != reserved {
			t.Errorf("CheckNewTableName(%q): %v", name, err)
		}
	}
}

func TestTypeNames(t *testing.T) {
	for ty, info := range typeInfos {
		c := Column{Type: ty, Digits: 10, Scale: 2}
		if ty.OID() == 0 || c.ArrowType() == nil || c.DeltaType() == "" || c.DuckDBType() == "" {
			t.Errorf("%v incomplete: %+v", ty, info)
		}
		back, ok := TypeFromUDTName(ty.UDTName())
		if !ok || back != ty {
			t.Errorf("udt round trip of %v gave %v", ty, back)
		}
	}
}

func TestClusterIndex(t *testing.T) {
	cols := []Column{{Name: "time", Type: Timestamptz}, {Name: "v", Type: Float64}, {Name: "cpu", Type: Text}, {Name: "host", Type: Text}}
	tests := []struct {
		cluster string
		cols    []Column
		want    int
	}{
		{"", cols, 2},         // the first TEXT column
		{"host", cols, 3},     // the named one
		{"v", cols, 2},        // not TEXT: the default
		{"gone", cols, 2},     // not a column: the default
		{"", cols[:2], -1},    // no TEXT column
		{"host", cols[:3], 2}, // named column not (yet) there
	}
	for _, tt := range tests {
		tbl := Table{Name: "t", Columns: tt.cols, Cluster: tt.cluster}
		if got := tbl.ClusterIndex(); got != tt.want {
			t.Errorf("ClusterIndex with Cluster %q over %d columns = %d, want %d", tt.cluster, len(tt.cols), got, tt.want)
		}
	}
}

func TestFromDuckDB(t *testing.T) {
	tests := []struct {
		name string
		want Type
		ok   bool
	}{
		{"DOUBLE", Float64, true}, {"INT64", Int64, true}, {"INTEGER", Int32, true}, {"VARCHAR", Text, true},
		{"TIMESTAMP WITH TIME ZONE", Timestamptz, true}, {"TIMESTAMPTZ", Timestamptz, true}, {"FLOAT", Float32, true},
		{"DATE", Date, true}, {"INTERVAL", Interval, true}, {"TIME", Time, true}, {"TIME WITH TIME ZONE", TimeTZ, true}, {"UUID", Invalid, false},
	}
	for _, tt := range tests {
		if got, ok := FromDuckDB(tt.name); ok != tt.ok || got != tt.want {
			t.Errorf("FromDuckDB(%q) = %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTimeText(t *testing.T) {
	for _, c := range []struct {
		micros   int64
		east     int
		withZone bool
		want     string
	}{
		{0, 0, false, "00:00:00.000000"},
		{39_600_500_000, 0, false, "11:00:00.500000"},
		{86_400_000_000, 3600, true, "24:00:00.000000+01:00:00"},
		{39_600_000_000, -(5*3600 + 30*60 + 15), true, "11:00:00.000000-05:30:15"},
	} {
		got := TimeText(c.micros, c.east, c.withZone)
		if got != c.want {
			t.Errorf("TimeText(%d, %d) = %q, want %q", c.micros, c.east, got, c.want)
		}
		if err := CheckTimeText(got, c.withZone); err != nil {
			t.Errorf("CheckTimeText(%q): %v", got, err)
		}
	}
	for _, bad := range []string{"", "11:00:00", "11:00:00.00000x", "24:00:00.000001", "24:00:00.000000", "11:60:00.000000", "1:00:00.0000000"} {
		if CheckTimeText(bad, false) == nil {
			t.Errorf("CheckTimeText(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"11:00:00.000000", "11:00:00.000000 01:00:00", "11:00:00.000000+16:00:00", "11:00:00.000000+01:60:00"} {
		if CheckTimeText(bad, true) == nil {
			t.Errorf("CheckTimeText(%q, timetz) accepted", bad)
		}
	}
}

// Tables name their columns alike only with the same names, physical
// names and ids: a rename under column mapping differs.
func TestSameNames(t *testing.T) {
	base := Table{MaxColumnID: 2, Columns: []Column{{Name: "time", FieldID: 1}, {Name: "host", FieldID: 2}}}
	renamed := base
	renamed.Columns = []Column{{Name: "time", FieldID: 1}, {Name: "Host Name", Physical: "host", FieldID: 2}}
	samePhysical := base
	samePhysical.Columns = []Column{{Name: "time", FieldID: 1}, {Name: "host", Physical: "host", FieldID: 2}}
	for _, c := range []struct {
		o    Table
		same bool
	}{{base, true}, {samePhysical, true}, {renamed, false}, {Table{Columns: base.Columns}, false}} {
		if got := base.SameNames(c.o); got != c.same {
			t.Errorf("%+v: %v, want %v", c.o, got, c.same)
		}
	}
}
