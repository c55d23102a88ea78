package delta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"tsdb/internal/schema"
)

func testTable(t *testing.T) schema.Table {
	t.Helper()
	tbl, err := schema.New("cpu", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "host", Type: schema.Text}, {Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// createTestTable creates the cpu table of testTable in a temporary directory.
func createTestTable(t *testing.T) (*LocalStore, schema.Table, *Table) {
	t.Helper()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sch := testTable(t)
	tbl, err := Create(context.Background(), store, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	return store, sch, tbl
}

func batch(t schema.Table, times []int64, hosts []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.ArrowSchema())
	for i, ts := range times {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		b.Field(1).(*array.StringBuilder).Append(hosts[i])
		if i%2 == 0 {
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		} else {
			b.Field(2).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

func TestCreateWriteCommitReopen(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	if _, err := Create(ctx, store, sch, nil); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	b1 := batch(sch, []int64{3_000_500, 1_000_000}, []string{"b", "a"})
	b2 := batch(sch, []int64{2_000_000}, []string{"c"})
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{b1, b2})
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.Unmarshal([]byte(add.Stats), &st); err != nil {
		t.Fatal(err)
	}
	if st.NumRecords != 3 || st.MinValues["time"] != "1970-01-01T00:00:01.000Z" || st.MaxValues["time"] != "1970-01-01T00:00:03.001Z" ||
		st.MinValues["host"] != "a" || st.MaxValues["host"] != "c" || st.NullCount["v"] != float64(1) {
		t.Fatalf("stats %s", add.Stats)
	}
	txn := &Txn{AppID: "app", Version: 7}
	snap, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: txn}, {Add: &add}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 || len(snap.Files) != 1 || snap.Txns["app"] != 7 {
		t.Fatalf("snapshot after commit: %+v", snap)
	}
	if f := snap.Files[0]; f.MinTime != 1_000_000 || f.MaxTime < 3_000_500 {
		t.Fatalf("file time range %d..%d does not cover the rows", f.MinTime, f.MaxTime)
	}
	if _, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: &Txn{AppID: "app", Version: 7}}, {Add: &add}}); !errors.Is(err, ErrTxnAlreadyCommitted) {
		t.Fatalf("replayed txn: %v", err)
	}

	// A second writer (another process) commits version 2 behind our back.
	other, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Commit(ctx, "WRITE", []Action{{Remove: &Remove{Path: add.Path, DeletionTimestamp: time.Now().UnixMilli(), DataChange: true}}}); err != nil {
		t.Fatal(err)
	}
	add2, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{b2})
	if err != nil {
		t.Fatal(err)
	}
	snap, err = tbl.Commit(ctx, "WRITE", []Action{{Add: &add2}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 3 || len(snap.Files) != 1 || snap.Files[0].Path != add2.Path {
		t.Fatalf("commit after conflict: version %d files %+v", snap.Version, snap.Files)
	}

	re, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	rs := re.Snapshot()
	if rs.Version != 3 || rs.Schema.TimeColumn().Name != "time" || rs.Schema.Columns[1].Type != schema.Text || rs.Schema.ID != sch.ID && sch.ID != "" {
		t.Fatalf("reopened snapshot %+v", rs)
	}
	raw, err := os.ReadFile(filepath.Join(store.Root, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"minReaderVersion":1`, `"minWriterVersion":2`, `\"type\":\"timestamp\"`, `"commitInfo"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("commit 0 lacks %s:\n%s", want, raw)
		}
	}
}

func TestOpenWithoutLog(t *testing.T) {
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), store, "x"); !errors.Is(err, ErrNotATable) {
		t.Fatalf("open of empty dir: %v", err)
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 3, 0}} {
		if got := floorDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("floorDiv(%d,%d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// Every 10th commit writes a checkpoint with every file and txn; a table
// opens from it even when the commits before it are gone.
func TestCheckpoints(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	for i := 1; i <= 23; i++ {
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{int64(i) * 1_000_000}, []string{"h"})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: &Txn{AppID: fmt.Sprintf("app-%d", i%3), Version: int64(i)}}, {Add: &add}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{10, 20} {
		if _, err := os.Stat(filepath.Join(store.Root, "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", v))); err != nil {
			t.Fatalf("checkpoint %d: %v", v, err)
		}
	}
	want := tbl.Snapshot()
	// Commits up to the checkpoint are not needed any more.
	for v := 0; v <= 20; v++ {
		os.Remove(filepath.Join(store.Root, "_delta_log", fmt.Sprintf("%020d.json", v)))
	}
	re, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatalf("open from checkpoint: %v", err)
	}
	got := re.Snapshot()
	if got.Version != want.Version || len(got.Files) != len(want.Files) || fmt.Sprint(got.Txns) != fmt.Sprint(want.Txns) ||
		got.Schema.TimeColumn().Name != "time" || got.Metadata.ID != want.Metadata.ID {
		t.Fatalf("from checkpoint: version %d, %d files, txns %v; want %d, %d, %v", got.Version, len(got.Files), got.Txns, want.Version, len(want.Files), want.Txns)
	}
	for i := range got.Files {
		if got.Files[i].Path != want.Files[i].Path || got.Files[i].MinTime != want.Files[i].MinTime || got.Files[i].Stats != want.Files[i].Stats {
			t.Fatalf("file %d differs: %+v vs %+v", i, got.Files[i], want.Files[i])
		}
	}
}

// Removed files are remembered as tombstones, also across a checkpoint,
// and deleted only once they are older than the retention period.
func TestTombstonesAndDeleteRemovedFiles(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	var adds []Add
	for i := range 3 {
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{int64(i+1) * 1_000_000}, []string{"h"})})
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, add)
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}}); err != nil {
			t.Fatal(err)
		}
	}
	removedAt := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, err := tbl.Commit(ctx, "DELETE", []Action{{Remove: &Remove{Path: adds[0].Path, DeletionTimestamp: removedAt.UnixMilli(), DataChange: true, Size: adds[0].Size}}}); err != nil {
		t.Fatal(err)
	}
	// Enough commits for a checkpoint, then open from it alone.
	for tbl.Snapshot().Version < 10 {
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: &Txn{AppID: "x", Version: tbl.Snapshot().Version + 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	for v := 0; v <= 10; v++ {
		os.Remove(filepath.Join(store.Root, "_delta_log", fmt.Sprintf("%020d.json", v)))
	}
	re, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if tb := re.Snapshot().Tombstones; len(tb) != 1 || tb[0].Path != adds[0].Path || tb[0].DeletionTimestamp != removedAt.UnixMilli() {
		t.Fatalf("tombstones from the checkpoint: %+v", tb)
	}
	exists := func(p string) bool {
		_, err := os.Stat(store.LocalPath(p))
		return err == nil
	}
	// Within the retention period nothing is deleted.
	if n, err := re.DeleteRemovedFiles(ctx, 7*24*time.Hour, removedAt.Add(24*time.Hour)); err != nil || n != 0 || !exists(adds[0].Path) {
		t.Fatalf("within retention: %d deleted, %v", n, err)
	}
	if n, err := re.DeleteRemovedFiles(ctx, 7*24*time.Hour, removedAt.Add(8*24*time.Hour)); err != nil || n != 1 || exists(adds[0].Path) {
		t.Fatalf("after retention: %d deleted, %v", n, err)
	}
	for _, a := range adds[1:] {
		if !exists(a.Path) {
			t.Fatalf("live file %s deleted", a.Path)
		}
	}
}

// CleanLog drops commits and checkpoints older than the newest checkpoint
// past the retention; the table opens to the same snapshot afterwards.
func TestCleanLog(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	for i := 1; i <= 24; i++ {
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{int64(i) * 1_000_000}, []string{"h"})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: &Txn{AppID: "app", Version: int64(i)}}, {Add: &add}}); err != nil {
			t.Fatal(err)
		}
	}
	logFiles := func() int {
		n, _ := store.List(ctx, "_delta_log")
		return len(n)
	}
	before := logFiles() // 25 commits, checkpoints 10 and 20, _last_checkpoint
	if n, err := tbl.CleanLog(ctx, 30*24*time.Hour, time.Now()); err != nil || n != 0 {
		t.Fatalf("young log cleaned: %d, %v", n, err)
	}
	n, err := tbl.CleanLog(ctx, 30*24*time.Hour, time.Now().Add(31*24*time.Hour))
	if err != nil || n != 21 || logFiles() != before-21 { // commits 0–19 and checkpoint 10
		t.Fatalf("cleaned %d (%v); %d of %d log entries left", n, err, logFiles(), before)
	}
	if ok, err := Exists(ctx, store); !ok || err != nil {
		t.Fatalf("table no longer exists after cleaning: %v", err)
	}
	re, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	want, got := tbl.Snapshot(), re.Snapshot()
	if got.Version != want.Version || len(got.Files) != len(want.Files) || fmt.Sprint(got.Txns) != fmt.Sprint(want.Txns) {
		t.Fatalf("after cleaning: version %d, %d files, %v; want %d, %d, %v", got.Version, len(got.Files), got.Txns, want.Version, len(want.Files), want.Txns)
	}
}

// The configuration survives commits, a checkpoint and a reopen, and a
// change keeps the schema.
func TestSetConfiguration(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	if _, err := tbl.SetConfiguration(ctx, "SET TBLPROPERTIES", map[string]string{"tsdb.retention": "720h", "x": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.SetConfiguration(ctx, "SET TBLPROPERTIES", map[string]string{"x": ""}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < CheckpointInterval; i++ {
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Txn: &Txn{AppID: "a", Version: int64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	snap := again.Snapshot()
	if got := snap.Metadata.Configuration; got["tsdb.retention"] != "720h" || got["x"] != "" || got["tsdb.timeColumn"] != "time" {
		t.Fatalf("configuration after reopen: %v", got)
	}
	if len(snap.Schema.Columns) != len(sch.Columns) || snap.Schema.ID != tbl.Snapshot().Schema.ID {
		t.Fatalf("schema changed: %+v", snap.Schema)
	}
}

// DeleteOrphans deletes old files no commit refers to, and only those.
func TestDeleteOrphans(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	write := func() Add {
		t.Helper()
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000}, []string{"h"})})
		if err != nil {
			t.Fatal(err)
		}
		return add
	}
	live, removed, orphan, young := write(), write(), write(), write()
	if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &live}, {Add: &removed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, "DELETE", []Action{{Remove: &Remove{Path: removed.Path, DeletionTimestamp: time.Now().UnixMilli(), DataChange: true}}}); err != nil {
		t.Fatal(err)
	}
	// A temporary file of a write that crashed, and the uncommitted file.
	tmp := filepath.Join(store.Root, "."+orphan.Path+".tmp-123")
	if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{live.Path, removed.Path, orphan.Path, filepath.Base(tmp)} {
		if err := os.Chtimes(filepath.Join(store.Root, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	n, err := tbl.DeleteOrphans(ctx, time.Now().Add(-time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want the orphan and the temporary file", n, err)
	}
	for p, want := range map[string]bool{live.Path: true, removed.Path: true, young.Path: true, orphan.Path: false, filepath.Base(tmp): false} {
		_, err := os.Stat(filepath.Join(store.Root, p))
		if (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
}

// lostReplyStore is a LocalStore whose commit writes land but report an
// error, as when an S3 PUT succeeds and its answer is lost.
type lostReplyStore struct {
	*LocalStore
	err error
}

func (s *lostReplyStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if err := s.LocalStore.PutIfAbsent(ctx, p, data); err != nil {
		return err
	}
	return s.err
}

// A commit whose write landed but whose answer said otherwise (a lost
// reply, or a retry that met the commit itself: 412) is recognised as
// this commit, not retried at the next version or reported as failed.
func TestCommitWithLostReply(t *testing.T) {
	ctx := context.Background()
	for _, replyErr := range []error{errors.New("connection reset by peer"), fmt.Errorf("retry: %w", ErrExists)} {
		local, sch, _ := createTestTable(t)
		store := &lostReplyStore{LocalStore: local, err: replyErr}
		tbl, err := Open(ctx, store, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000}, []string{"h"})})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}, {Txn: &Txn{AppID: "w", Version: 7}}})
		if err != nil {
			t.Fatalf("%v: commit failed: %v", replyErr, err)
		}
		if snap.Version != 1 || len(snap.Files) != 1 || snap.Txns["w"] != 7 {
			t.Fatalf("%v: version %d, %d files, txns %v", replyErr, snap.Version, len(snap.Files), snap.Txns)
		}
		if names, _ := local.List(ctx, "_delta_log"); len(names) != 2 {
			t.Fatalf("%v: log holds %v, want commits 0 and 1 only", replyErr, names)
		}
	}
}

// Two writers that commit the same actions in the same millisecond (both
// remove one file) write different bytes: the loser must meet a conflict,
// not read the winner's commit back and take it for its own.
func TestIdenticalConcurrentCommitsConflict(t *testing.T) {
	ctx := context.Background()
	store, sch, a := createTestTable(t)
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000}, []string{"h"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, "WRITE", []Action{{Add: &add}}); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.UnixMilli(1_700_000_000_000)
	a.now = func() time.Time { return fixed }
	b.now = a.now
	rm := []Action{{Remove: &Remove{Path: add.Path, DeletionTimestamp: fixed.UnixMilli(), DataChange: true}}}
	if _, err := a.Commit(ctx, "DELETE", rm); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, "DELETE", rm); !errors.Is(err, ErrConflict) {
		t.Fatalf("second identical remove: %v, want ErrConflict", err)
	}
}

func TestMergeStats(t *testing.T) {
	sch := testTable(t)
	part := func(n int64, nulls map[string]any, min, max map[string]any) Stats {
		return Stats{NumRecords: n, NullCount: nulls, MinValues: min, MaxValues: max}
	}
	none := map[string]any{}
	tests := []struct {
		name     string
		a, b     Stats
		min, max string // fmt of the merged bounds
	}{
		{"timestamps compare as times, not text",
			part(1, map[string]any{"time": 0, "host": 0, "v": 0}, map[string]any{"time": "2023-12-31T00:00:00.000Z"}, map[string]any{"time": "2023-12-31T00:00:00.000Z"}),
			part(1, map[string]any{"time": 0, "host": 0, "v": 0}, map[string]any{"time": "2024-01-01T00:00:00.000Z"}, map[string]any{"time": "2024-06-01T00:00:00.000Z"}),
			"map[time:2023-12-31T00:00:00.000Z]", "map[time:2024-06-01T00:00:00.000Z]"},
		{"an unparsable timestamp drops the bound",
			part(1, map[string]any{"time": 0, "host": 0, "v": 0}, none, map[string]any{"time": "2023-12-31T00:00:00.000Z"}),
			part(1, map[string]any{"time": 0, "host": 0, "v": 0}, none, map[string]any{"time": "10000-01-01T00:00:00.000Z"}),
			"map[]", "map[]"},
		{"a part with values but no bound (infinite floats) drops it",
			part(2, map[string]any{"time": 0, "host": 0, "v": 0}, none, none),
			part(2, map[string]any{"time": 0, "host": 0, "v": 0}, map[string]any{"v": 5.0}, map[string]any{"v": 6.0}),
			"map[]", "map[]"},
		{"an all-NULL part keeps the other's bounds",
			part(2, map[string]any{"time": 0, "host": 2, "v": 2}, none, none),
			part(3, map[string]any{"time": 0, "host": 0, "v": 1}, map[string]any{"host": "a", "v": 1.5}, map[string]any{"host": "z", "v": 2.5}),
			"map[host:a v:1.5]", "map[host:z v:2.5]"},
	}
	for _, tc := range tests {
		got := mergeStats(sch, tc.a, tc.b)
		if min, max := fmt.Sprint(got.MinValues), fmt.Sprint(got.MaxValues); min != tc.min || max != tc.max {
			t.Errorf("%s: min %s max %s, want %s %s", tc.name, min, max, tc.min, tc.max)
		}
		if got.NumRecords != tc.a.NumRecords+tc.b.NumRecords {
			t.Errorf("%s: %d records", tc.name, got.NumRecords)
		}
	}
}

// A deletion vector as the protocol stores it inline (the example of
// delta-kernel-rs, which deletes rows 3, 4, 7, 11, 18 and 29), and one
// tsdb encodes, read back.
func TestInlineDeletionVector(t *testing.T) {
	ctx := context.Background()
	dv := &DeletionVector{StorageType: "i", PathOrInlineDv: "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 44, Cardinality: 6}
	rows, err := LoadDeletionVector(ctx, nil, dv)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	rows.Runs(func(first, last uint64) {
		for r := first; r <= last; r++ {
			got = append(got, r)
		}
	})
	if fmt.Sprint(got) != "[3 4 7 11 18 29]" {
		t.Fatalf("rows %v", got)
	}
	enc, err := EncodeInlineDeletionVector(NewRowSet(0, 1, 2, 1<<33))
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadDeletionVector(ctx, nil, enc)
	if err != nil || back.Len() != 4 || !back.Contains(1<<33) || back.Contains(3) {
		t.Fatalf("round trip: %v, %d rows", err, back.Len())
	}
	bad := *dv
	bad.Cardinality = 7
	if _, err := LoadDeletionVector(ctx, nil, &bad); err == nil {
		t.Fatal("a vector whose cardinality disagrees was read")
	}
}

// A DELETE committed as Databricks commits one (remove F, add F with a
// vector, in either order) leaves F live with its vector, through a
// checkpoint too; a remove without the vector no longer names the live
// file and conflicts.
func TestDeletionVectorReplay(t *testing.T) {
	ctx := context.Background()
	for _, addFirst := range []bool{false, true} {
		store, sch, tbl := createTestTable(t)
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000, 2_000_000, 3_000_000}, []string{"a", "b", "c"})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}}); err != nil {
			t.Fatal(err)
		}
		dv, err := EncodeInlineDeletionVector(NewRowSet(1))
		if err != nil {
			t.Fatal(err)
		}
		withDV := add
		withDV.DeletionVector = dv
		acts := []Action{{Remove: RemoveOf(add, 1, true)}, {Add: &withDV}}
		if addFirst {
			acts[0], acts[1] = acts[1], acts[0]
		}
		acts = append(acts, Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}})
		snap, err := tbl.Commit(ctx, "DELETE", acts)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Files) != 1 || snap.Files[0].DeletionVector.UniqueID() != dv.UniqueID() {
			t.Fatalf("addFirst %v: files %+v", addFirst, snap.Files)
		}
		if err := writeCheckpoint(ctx, store, snap, nil); err != nil {
			t.Fatal(err)
		}
		reopened, err := Open(ctx, store, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		rs := reopened.Snapshot()
		if len(rs.Files) != 1 || rs.Files[0].DeletionVector.UniqueID() != dv.UniqueID() || !slices.Equal(rs.Protocol.ReaderFeatures, []string{"deletionVectors"}) {
			t.Fatalf("from the checkpoint: files %+v, protocol %+v", rs.Files, rs.Protocol)
		}
		if _, err := reopened.Commit(ctx, "DELETE", []Action{{Remove: RemoveOf(add, 2, true)}}); !errors.Is(err, ErrConflict) {
			t.Fatalf("remove without the vector: %v, want ErrConflict", err)
		}
		if _, err := reopened.Commit(ctx, "DELETE", []Action{{Remove: RemoveOf(withDV, 2, true)}}); err != nil {
			t.Fatalf("remove with the vector: %v", err)
		}
	}
}

// Tables whose protocol asks for what tsdb lacks: unreadable for a reader
// feature (with its name), read-only for a writer feature.
func TestProtocolFeatures(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		proto        Protocol
		conf         map[string]string
		read, write  bool
		wantMentions string
	}{
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, true, true, ""},
		{Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "timestampNtz"}, WriterFeatures: []string{"deletionVectors", "timestampNtz", "appendOnly"}}, nil, true, true, ""},
		{Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}, nil, false, false, "v2Checkpoint"},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}}, nil, true, false, "rowTracking"},
		// Mode name without physical names in the schema: the files use
		// the names (a table that turned mapping on later).
		{Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, map[string]string{"delta.columnMapping.mode": "name"}, true, true, ""},
		{Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, map[string]string{"delta.columnMapping.mode": "id"}, false, false, "columnMapping"},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, map[string]string{"delta.constraints.positive": "v > 0"}, true, false, "checkConstraints"},
		{Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, nil, false, false, "reader version 4"},
	}
	for _, c := range cases {
		store, sch, tbl := createTestTable(t)
		md := tbl.Snapshot().Metadata
		md.Configuration = map[string]string{confTimeColumn: "time"}
		for k, v := range c.conf {
			md.Configuration[k] = v
		}
		// Another writer's commit: tsdb never changes a protocol.
		data, err := encodeCommit([]Action{{Protocol: &c.proto}, {MetaData: &md}})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, commitPath(1), data); err != nil {
			t.Fatal(err)
		}
		reopened, err := Open(ctx, store, "cpu")
		if (err == nil) != c.read {
			t.Errorf("%+v: open: %v, want readable %v", c.proto, err, c.read)
		}
		if err != nil {
			if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), c.wantMentions) {
				t.Errorf("%+v: %v does not name %q", c.proto, err, c.wantMentions)
			}
			continue
		}
		if werr := reopened.Snapshot().Writable(); (werr == nil) != c.write || (werr != nil && !strings.Contains(werr.Error(), c.wantMentions)) {
			t.Errorf("%+v: writable: %v, want %v naming %q", c.proto, werr, c.write, c.wantMentions)
		}
		add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000}, []string{"a"})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = reopened.Commit(ctx, "WRITE", []Action{{Add: &add}})
		if (err == nil) != c.write || (err != nil && !Refused(err)) {
			t.Errorf("%+v: commit: %v, want writable %v and refusal certain", c.proto, err, c.write)
		}
	}
}

// Commits say what they were built on and stamp their txns, and a
// checkpoint keeps the stamps (the protocol's txn.lastUpdated).
func TestCommitProvenance(t *testing.T) {
	ctx := context.Background()
	store, sch, tbl := createTestTable(t)
	add, err := WriteDataFile(ctx, store, sch, []arrow.RecordBatch{batch(sch, []int64{1_000_000}, []string{"h"})})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}, {Txn: &Txn{AppID: "w", Version: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.Get(ctx, commitPath(1))
	if err != nil {
		t.Fatal(err)
	}
	var info *CommitInfo
	var txn *Txn
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var a Action
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatal(err)
		}
		if a.CommitInfo != nil {
			info = a.CommitInfo
		}
		if a.Txn != nil {
			txn = a.Txn
		}
	}
	if info == nil || info.ReadVersion == nil || *info.ReadVersion != 0 || !info.IsBlindAppend || info.OperationParameters["mode"] != "Append" || info.TxnID == "" {
		t.Fatalf("commitInfo %+v", info)
	}
	if txn == nil || txn.LastUpdated != info.Timestamp {
		t.Fatalf("txn %+v, commit time %d", txn, info.Timestamp)
	}
	if err := writeCheckpoint(ctx, store, snap, nil); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(ctx, store, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if got := reopened.Snapshot().TxnUpdated["w"]; got != info.Timestamp {
		t.Fatalf("lastUpdated from the checkpoint: %d, want %d", got, info.Timestamp)
	}
}

// A deletion vector stored in a file of the table ('u'): found by its
// random prefix and UUID, read at its offset, its size and checksum
// checked.
func TestDeletionVectorFile(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inline, err := EncodeInlineDeletionVector(NewRowSet(2, 3, 4, 90))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := z85Decode(inline.PathOrInlineDv)
	if err != nil {
		t.Fatal(err)
	}
	raw = raw[:inline.SizeInBytes]
	// Version byte, another vector first (as files hold several), then ours.
	file := []byte{1}
	other := []byte{9, 9, 9, 9}
	for _, v := range [][]byte{other, raw} {
		file = binary.BigEndian.AppendUint32(file, uint32(len(v)))
		file = append(file, v...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(v))
	}
	id := uuid.New()
	if err := store.Put(ctx, "ab/deletion_vector_"+id.String()+".bin", file); err != nil {
		t.Fatal(err)
	}
	off := int32(1 + 4 + len(other) + 4)
	dv := &DeletionVector{StorageType: "u", PathOrInlineDv: "ab" + z85Encode(id[:]), Offset: &off, SizeInBytes: inline.SizeInBytes, Cardinality: 4}
	rows, err := LoadDeletionVector(ctx, store, dv)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Len() != 4 || !rows.Contains(90) || rows.Contains(5) {
		t.Fatalf("%d rows", rows.Len())
	}
	// A flipped byte fails the checksum; a wrong offset the size check.
	bad := slices.Clone(file)
	bad[off+6] ^= 0xff
	if err := store.Put(ctx, "ab/deletion_vector_"+id.String()+".bin", bad); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDeletionVector(ctx, store, dv); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("damaged vector: %v", err)
	}
	wrong := int32(1)
	dv.Offset = &wrong
	if _, err := LoadDeletionVector(ctx, store, dv); err == nil {
		t.Fatal("a vector read at the wrong offset")
	}

	// The same file named by an absolute URI ('p'), as shallow clones do;
	// one outside the table is refused.
	if err := store.Put(ctx, "ab/deletion_vector_"+id.String()+".bin", file); err != nil {
		t.Fatal(err)
	}
	abs := &DeletionVector{StorageType: "p", PathOrInlineDv: "file://" + filepath.Join(store.Root, "ab", "deletion_vector_"+id.String()+".bin"), Offset: &off, SizeInBytes: inline.SizeInBytes, Cardinality: 4}
	if rows, err := LoadDeletionVector(ctx, store, abs); err != nil || rows.Len() != 4 {
		t.Fatalf("absolute path: %v", err)
	}
	abs.PathOrInlineDv = "file:///etc/deletion_vector_" + id.String() + ".bin"
	if _, err := LoadDeletionVector(ctx, store, abs); err == nil {
		t.Fatal("a vector outside the table was read")
	}
}

// A timestamp column is a Delta timestamp_ntz with its table feature, from
// CREATE TABLE or from ADD COLUMN on a table of protocol (1, 2), whose
// legacy writer features the upgraded protocol lists.
func TestTimestampNTZProtocol(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New("cpu", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "t", Type: schema.Timestamp, NTZ: true}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Create(ctx, store, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.Snapshot()
	if p := snap.Protocol; p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Equal(p.ReaderFeatures, []string{"timestampNtz"}) || !slices.Contains(p.WriterFeatures, "timestampNtz") {
		t.Fatalf("protocol %+v", p)
	}
	if !strings.Contains(snap.Metadata.SchemaString, `"timestamp_ntz"`) || !snap.Schema.Columns[1].NTZ {
		t.Fatalf("schema %s", snap.Metadata.SchemaString)
	}

	_, _, legacy := createTestTable(t)
	next, err := legacy.AddColumns(ctx, "ADD COLUMNS", []schema.Column{{Name: "t", Type: schema.Timestamp, NTZ: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"appendOnly", "invariants", "timestampNtz"}}
	if p := next.Protocol; fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("after ADD COLUMN: %+v, want %+v", p, want)
	}
	if err := next.Writable(); err != nil {
		t.Fatal(err)
	}
}

// A table's keys are kept in its configuration: read back on open and
// after a schema change, and a key naming a column the table lacks makes
// the metadata unreadable rather than unchecked.
func TestKeysInMetadata(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New("k", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "id", Type: schema.Int64, NotNull: true}, {Name: "Host", Type: schema.Text}})
	if err != nil {
		t.Fatal(err)
	}
	sch.Keys = []schema.Key{{Name: "k_pkey", Columns: []string{"id"}, Primary: true}, {Name: "k_Host_time_key", Columns: []string{"Host", "time"}}}
	tbl, err := Create(ctx, store, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	next, err := tbl.AddColumns(ctx, "ADD COLUMNS", []schema.Column{{Name: "v", Type: schema.Float64}})
	if err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(ctx, store, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []schema.Table{tbl.Snapshot().Schema, next.Schema, reopened.Snapshot().Schema} {
		if fmt.Sprint(got.Keys) != fmt.Sprint(sch.Keys) {
			t.Fatalf("keys %v, want %v", got.Keys, sch.Keys)
		}
	}
	md := tbl.Snapshot().Metadata
	md.Configuration = map[string]string{confKeys: `[{"name":"x","columns":["nope"]}]`}
	if _, err := schemaFromMetadata(md); err == nil {
		t.Fatal("a key on a missing column was accepted")
	}
}
