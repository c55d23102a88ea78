package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/jackc/pgx/v5"

	"tsdb/delta"
)

// Tables shared with other Delta writers: what Spark, delta-rs or
// Databricks commit into a tsdb table is read as they mean it, or the
// table (only it) says what tsdb lacks.

// commitAsOtherWriter appends actions to a table's log as the next version,
// the way another engine commits: the JSON lines of the protocol, written
// next to tsdb's own commits.
func commitAsOtherWriter(t *testing.T, tableDir string, actions ...delta.Action) int64 {
	t.Helper()
	ctx := context.Background()
	store, err := delta.NewLocalStore(tableDir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := delta.Open(ctx, store, filepath.Base(tableDir))
	if err != nil {
		t.Fatal(err)
	}
	v := tbl.Snapshot().Version + 1
	actions = append(actions, delta.Action{CommitInfo: &delta.CommitInfo{Timestamp: time.Now().UnixMilli(), Operation: "DELETE",
		OperationParameters: map[string]string{}, EngineInfo: "Apache-Spark/3.5.1 Delta-Lake/3.2.0"}})
	var b strings.Builder
	for _, a := range actions {
		line, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := store.PutIfAbsent(ctx, fmt.Sprintf("_delta_log/%020d.json", v), []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	return v
}

// liveFiles returns a table's live files as its log says.
func liveFiles(t *testing.T, tableDir string) *delta.Snapshot {
	t.Helper()
	store, err := delta.NewLocalStore(tableDir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := delta.Open(context.Background(), store, filepath.Base(tableDir))
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Snapshot()
}

// A DELETE committed as Databricks commits one (the file again, with an
// inline deletion vector, and the protocol's deletionVectors feature):
// tsdb hides the deleted rows as chDB does, and tsdb's own DELETE and
// UPDATE on that file carry the vector in their remove, so no reader sees
// a row twice.
func TestDeletionVectorsOfAnotherWriter(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	// Two files (two flushes): v 0-359 and v 1000-1359.
	execAll(t, c, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)",
		`INSERT INTO m SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + g * INTERVAL '1 second', 'h' || (g % 3), g FROM generate_series(0, 359) AS t(g)`,
		"CHECKPOINT",
		`INSERT INTO m SELECT TIMESTAMPTZ '2026-12-01 06:00:00+00' + g * INTERVAL '1 second', 'h' || (g % 3), 1000 + g FROM generate_series(0, 359) AS t(g)`,
		"CHECKPOINT")
	c.Close(ctx)
	s.stop()

	table, _ := filepath.Abs(filepath.Join(dir, "tables", "m"))
	snap := liveFiles(t, table)
	if len(snap.Files) != 2 {
		t.Fatalf("%d files after flushing two buckets", len(snap.Files))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Each file loses the rows at some positions. Files are sorted by
	// their cluster column (host), so positions are not v: the engine
	// says which v each deleted position holds.
	deletedV := map[int64]bool{}
	var deletedSum int64
	actions := []delta.Action{{Protocol: &delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}}}
	for i, pos := range []string{"file_row_number IN (0, 5) OR file_row_number BETWEEN 100 AND 109", "file_row_number IN (1, 2, 200)"} {
		f := snap.Files[i].Add
		// And the newest row of the file's host whose newest row is the
		// oldest: the row the newest-row bound starts from, which it
		// must not trust once a vector deletes it.
		path := filepath.Join(table, f.Path)
		pos += fmt.Sprintf(" OR (host, time) IN (SELECT (host, max(time)) FROM read_parquet('%s') GROUP BY host ORDER BY max(time), host LIMIT 1)", path)
		rs, err := db.Query(fmt.Sprintf("SELECT file_row_number, v FROM read_parquet('%s', file_row_number = true) WHERE %s", path, pos))
		if err != nil {
			t.Fatal(err)
		}
		var rows []uint64
		for rs.Next() {
			var r uint64
			var v int64
			if err := rs.Scan(&r, &v); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
			deletedV[v] = true
			deletedSum += v
		}
		rs.Close()
		dv, err := delta.EncodeInlineDeletionVector(delta.NewRowSet(rows...))
		if err != nil {
			t.Fatal(err)
		}
		withDV := f
		withDV.DeletionVector = dv
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f, time.Now().UnixMilli(), true)}, delta.Action{Add: &withDV})
	}
	if len(deletedV) != 17 {
		t.Fatalf("%d rows to delete", len(deletedV))
	}
	countKept := func(pred func(v int64) bool) int {
		n := 0
		for v := range int64(1360) {
			if (v < 360 || v >= 1000) && pred(v) && !deletedV[v] {
				n++
			}
		}
		return n
	}
	commitAsOtherWriter(t, table, actions...)

	s = startServer(t, dir, []string{"--compact-interval", "-1s", "--refresh-interval", "50ms"})
	c = s.connect(ctx)
	defer c.Close(ctx)
	agree := func(stage string, wantRows int) {
		t.Helper()
		chdbAgrees(t, c, table, stage, wantRows, "SELECT epoch_us(time) AS us, host, v FROM m ORDER BY time", "SELECT toUnixTimestamp64Micro(time) AS us, host, v FROM deltaLakeLocal('%s') ORDER BY time", []string{"us", "host", "v"})
	}
	agree("after the vector", countKept(func(int64) bool { return true }))
	// The newest row of each host, and the hosts: the statements the
	// newest-row bound serves answer as over the whole table (the bound
	// gives up on another writer's vector rather than read past it).
	for _, q := range []string{
		"SELECT DISTINCT ON (host) host, v, time FROM m %s ORDER BY host, time DESC",
		"SELECT DISTINCT host FROM m %s ORDER BY 1",
	} {
		bounded := readerRows(t, c, strings.Replace(q, "%s", "", 1))
		whole := readerRows(t, c, strings.Replace(q, "%s", "WHERE true", 1))
		if strings.Join(bounded, ",") != strings.Join(whole, ",") {
			t.Fatalf("%s with a deletion vector: %v, the whole table %v", q, bounded, whole)
		}
	}
	var sum int64
	if err := c.QueryRow(ctx, "SELECT sum(v) FROM m").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if want := int64(359*360/2+360*1000+359*360/2) - deletedSum; sum != want {
		t.Fatalf("sum(v) %d, want %d", sum, want)
	}
	// A transaction reads through its own views, and its DELETE rewrites
	// the first file keeping the vector's rows deleted.
	execAll(t, c, "BEGIN")
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m WHERE v <= 20").Scan(&n); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "DELETE FROM m WHERE v = 7 OR v = 17", "COMMIT")
	if want := countKept(func(v int64) bool { return v <= 20 }); n != int64(want) {
		t.Fatalf("in a transaction: %d rows of v 0-20, want %d", n, want)
	}
	agree("after a transaction's DELETE", countKept(func(v int64) bool { return v != 7 && v != 17 }))
	// Statements outside a transaction rewrite the second file, whose
	// vector is still there.
	execAll(t, c, "DELETE FROM m WHERE v % 10 = 3")
	agree("after tsdb's DELETE", countKept(func(v int64) bool { return v != 7 && v != 17 && v%10 != 3 }))
	execAll(t, c, "UPDATE m SET host = 'moved' WHERE v % 100 < 50")
	agree("after tsdb's UPDATE", countKept(func(v int64) bool { return v != 7 && v != 17 && v%10 != 3 }))
	for _, a := range liveFiles(t, table).Files {
		if a.DeletionVector != nil {
			t.Fatalf("file %s still has a vector after tsdb rewrote every file", a.Path)
		}
	}

	// Another vector DELETE while tsdb runs, then VACUUM: compaction
	// rewrites the file without the deleted rows and without a vector.
	var total int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&total); err != nil {
		t.Fatal(err)
	}
	f := liveFiles(t, table).Files[0].Add
	dv, err := delta.EncodeInlineDeletionVector(delta.NewRowSet(0, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	withDV := f
	withDV.DeletionVector = dv
	commitAsOtherWriter(t, table, delta.Action{Remove: delta.RemoveOf(f, time.Now().UnixMilli(), true)}, delta.Action{Add: &withDV})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == total-3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows after a vector deleting 3 of %d", n, total)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rowsBefore := readerRows(t, c, "SELECT epoch_us(time) AS us, host, v FROM m ORDER BY time")
	execAll(t, c, "VACUUM m")
	if got := readerRows(t, c, "SELECT epoch_us(time) AS us, host, v FROM m ORDER BY time"); strings.Join(got, ",") != strings.Join(rowsBefore, ",") {
		t.Fatalf("VACUUM changed the rows: %d before, %d after", len(rowsBefore), len(got))
	}
	for _, a := range liveFiles(t, table).Files {
		if a.DeletionVector != nil {
			t.Fatalf("file %s still has a vector after VACUUM", a.Path)
		}
	}
	agree("after VACUUM of a file with a vector", int(total-3))
}

// A table another writer gave a feature tsdb cannot write is read-only
// (0A000 naming the feature, nothing taken into the WAL); one with a
// feature tsdb cannot read is unavailable with that name; other tables
// work throughout.
func TestUnsupportedFeaturesStayWithTheirTable(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE ro (time TIMESTAMPTZ NOT NULL, v BIGINT)", "CREATE TABLE gone (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"CREATE TABLE fine (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO ro VALUES ('2026-12-01 00:00:00+00', 1)", "INSERT INTO gone VALUES ('2026-12-01 00:00:00+00', 1)", "CHECKPOINT")
	c.Close(ctx)
	s.stop()
	commitAsOtherWriter(t, filepath.Join(dir, "tables", "ro"),
		delta.Action{Protocol: &delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}}})
	commitAsOtherWriter(t, filepath.Join(dir, "tables", "gone"),
		delta.Action{Protocol: &delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}})
	// A column of a type tsdb lacks, added by another writer's ALTER.
	md := liveFiles(t, filepath.Join(dir, "tables", "fine")).Metadata
	md.SchemaString = strings.Replace(md.SchemaString, `]}`, `,{"name":"tags","type":{"type":"map","keyType":"string","valueType":"string","valueContainsNull":true},"nullable":true,"metadata":{}}]}`, 1)
	commitAsOtherWriter(t, filepath.Join(dir, "tables", "fine"), delta.Action{MetaData: &md})

	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM ro").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read-only table: %d rows, %v", n, err)
	}
	for _, stmt := range []string{"INSERT INTO ro VALUES ('2026-12-01 00:00:01+00', 2)", "DELETE FROM ro", "UPDATE ro SET v = 3",
		"ALTER TABLE ro ADD COLUMN w TEXT", "VACUUM ro"} {
		_, err := c.Exec(ctx, stmt)
		if pgCode(err) != "0A000" || !strings.Contains(err.Error(), "rowTracking") {
			t.Errorf("%s: %v, want 0A000 naming rowTracking", stmt, err)
		}
	}
	for table, names := range map[string]string{"gone": "v2Checkpoint", "fine": `"tags"`} {
		_, err := c.Exec(ctx, "SELECT count(*) FROM "+table)
		if pgCode(err) != "0A000" || !strings.Contains(err.Error(), names) {
			t.Errorf("unreadable table %s: %v, want 0A000 naming %s", table, err, names)
		}
	}
	execAll(t, c, "CREATE TABLE other (time TIMESTAMPTZ NOT NULL, v BIGINT)", "INSERT INTO other VALUES ('2026-12-01 00:00:00+00', 1)")
	if err := c.QueryRow(ctx, "SELECT count(*) FROM other").Scan(&n); err != nil || n != 1 {
		t.Fatalf("another table: %d rows, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
}

// On local storage too, another engine's commits become visible without a
// restart: an append, and an OPTIMIZE whose replaced file a VACUUM then
// deletes (queries keep working: they read the new file).
func TestOtherWritersSeenOnLocalStorage(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--refresh-interval", "50ms", "--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE e (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO e SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + g * INTERVAL '1 second', g FROM generate_series(1, 100) AS t(g)", "CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "e"))
	store, err := delta.NewLocalStore(table)
	if err != nil {
		t.Fatal(err)
	}
	snap := liveFiles(t, table)
	write := func(from, to int64) delta.Add {
		b := array.NewRecordBuilder(memory.DefaultAllocator, snap.Schema.ArrowSchema())
		defer b.Release()
		for g := from; g <= to; g++ {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMicro() + g*1_000_000))
			b.Field(1).(*array.Int64Builder).Append(g)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		add, err := delta.WriteDataFile(ctx, store, snap.Schema, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		return add
	}
	waitFor := func(what string, want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int64
			err := c.QueryRow(ctx, "SELECT sum(v) FROM e").Scan(&n)
			if err == nil && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: sum(v) %d, %v; want %d", what, n, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	appended := write(101, 200)
	commitAsOtherWriter(t, table, delta.Action{Add: &appended})
	waitFor("an external append", 200*201/2)

	// OPTIMIZE: both files replaced by one; VACUUM deletes the old ones.
	cur := liveFiles(t, table)
	merged := write(1, 200)
	actions := []delta.Action{{Add: &merged}}
	for _, f := range cur.Files {
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, time.Now().UnixMilli(), false)})
	}
	commitAsOtherWriter(t, table, actions...)
	for _, f := range cur.Files {
		if err := os.Remove(filepath.Join(table, f.Path)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("an external OPTIMIZE and VACUUM", 200*201/2)
	execAll(t, c, "INSERT INTO e VALUES ('2026-12-01 01:00:00+00', 1000)", "CHECKPOINT")
	waitFor("a write after them", 200*201/2+1000)
}

// Files as Spark and delta-rs write them are read by their columns' names,
// not by position or statistics: columns in another order, optional
// fields, INT96 timestamps, strings without the UTF8 annotation, an
// extra column, statistics for only some columns; and a column another
// writer inserted in the middle of the schema (ADD COLUMNS … AFTER) leaves
// the older files' later columns where they are. chDB and tsdb agree row
// for row, also after tsdb's DELETE and UPDATE of those files.
func TestForeignFilesReadByName(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s", "--refresh-interval", "50ms"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE f (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)",
		"INSERT INTO f SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + g * INTERVAL '1 second', 'own-' || (g % 2), g FROM generate_series(1, 50) AS t(g)", "CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "f"))
	store, err := delta.NewLocalStore(table)
	if err != nil {
		t.Fatal(err)
	}

	// A Spark-like file: v, host as plain binary, time as INT96, an extra
	// column, every field optional.
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "extra", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for g := int64(1); g <= 30; g++ {
		b.Field(0).(*array.Int64Builder).Append(1000 + g)
		b.Field(1).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("spark-é-%d", g%3)))
		b.Field(2).(*array.Float64Builder).Append(float64(g))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC).UnixMicro() + g*1_000_000))
	}
	rec := b.NewRecordBatch()
	b.Release()
	// Statistics for the time column only, as with a narrow
	// dataSkippingNumIndexedCols.
	add := putForeignFile(t, store, "part-00000-spark-like.c000.snappy.parquet", rec,
		`{"numRecords":30,"minValues":{"time":"2026-12-01T01:00:01.000Z"},"maxValues":{"time":"2026-12-01T01:00:30.000Z"},"nullCount":{"time":0}}`,
		parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithDeprecatedInt96Timestamps(true)))
	commitAsOtherWriter(t, table, delta.Action{Add: &add})

	// A delta-rs-like file: nanosecond timestamps, v as a 32-bit integer,
	// no statistics at all.
	nsSch := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	nb := array.NewRecordBuilder(memory.DefaultAllocator, nsSch)
	for g := int64(1); g <= 10; g++ {
		nb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC).UnixNano() + g*1_000_000_000 + 123))
		nb.Field(1).(*array.StringBuilder).Append("rs")
		nb.Field(2).(*array.Int32Builder).Append(int32(2000 + g))
	}
	nsRec := nb.NewRecordBatch()
	nb.Release()
	nsAdd := putForeignFile(t, store, "part-00000-rs-like.parquet", nsRec, "", parquet.NewWriterProperties(parquet.WithVersion(parquet.V2_6)), pqarrow.NewArrowWriterProperties())
	commitAsOtherWriter(t, table, delta.Action{Add: &nsAdd})

	agree := func(stage string, wantRows int) {
		t.Helper()
		chdbAgrees(t, c, table, stage, wantRows, "SELECT epoch_us(time) AS us, host, v FROM f ORDER BY time", "SELECT toUnixTimestamp64Micro(time) AS us, host, v FROM deltaLakeLocal('%s') ORDER BY time", []string{"us", "host", "v"})
	}
	var n int64
	deadline := time.Now().Add(10 * time.Second)
	for n != 90 && time.Now().Before(deadline) {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM f").Scan(&n); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	agree("with Spark- and delta-rs-like files", 90)
	var hosts int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM f WHERE host LIKE 'spark-é-%' AND v > 1000").Scan(&hosts); err != nil || hosts != 30 {
		t.Fatalf("text and numbers of the foreign file: %d rows, %v", hosts, err)
	}

	// ADD COLUMNS (mid DOUBLE AFTER host), committed by another writer.
	md := liveFiles(t, table).Metadata
	md.SchemaString = strings.Replace(md.SchemaString, `{"name":"v"`, `{"name":"mid","type":"double","nullable":true,"metadata":{}},{"name":"v"`, 1)
	commitAsOtherWriter(t, table, delta.Action{MetaData: &md})
	deadline = time.Now().Add(10 * time.Second)
	for {
		var cols int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'f'").Scan(&cols); err != nil {
			t.Fatal(err)
		}
		if cols == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the added column did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var nonNull int64
	if err := c.QueryRow(ctx, "SELECT count(v) FROM f").Scan(&nonNull); err != nil || nonNull != 90 {
		t.Fatalf("after a column was inserted before v: %d non-NULL v, %v", nonNull, err)
	}
	agree("after ADD COLUMNS … AFTER", 90)
	execAll(t, c, "VACUUM f")
	agree("after VACUUM", 90)
	// Compaction rewrote the other writers' files in tsdb's layout.
	for _, lf := range liveFiles(t, table).Files {
		if !delta.OwnLayout(lf) {
			t.Errorf("after VACUUM %s is still of another layout", lf.Path)
		}
	}
	execAll(t, c, "DELETE FROM f WHERE v % 5 = 0")
	agree("after tsdb's DELETE", 90-10-6-2)
	execAll(t, c, "UPDATE f SET host = 'moved' WHERE v % 7 = 0")
	agree("after tsdb's UPDATE", 72)
}

// Another writer's file that holds a column in an encoding tsdb would
// have to convert with a possible change of value (a number stored as
// text) is queried as the engine reads it, but never rewritten: a DELETE
// of its rows is refused with 0A000 and changes nothing, VACUUM leaves the
// file as it is, and the rest of the table works.
func TestForeignFileNotRewrittenWithLoss(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s", "--refresh-interval", "50ms"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE g (time TIMESTAMPTZ NOT NULL, v BIGINT)",
		"INSERT INTO g VALUES ('2026-12-01 00:00:00+00', 1), ('2026-12-01 00:00:01+00', 2)", "CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "g"))
	store, err := delta.NewLocalStore(table)
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for g := int64(1); g <= 3; g++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC).UnixMicro() + g))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(100 + g))
	}
	rec := b.NewRecordBatch()
	b.Release()
	add := putForeignFile(t, store, "part-00000-text-numbers.parquet", rec, "", parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	commitAsOtherWriter(t, table, delta.Action{Add: &add})
	sum := func() (n, total int64) {
		t.Helper()
		if err := c.QueryRow(ctx, "SELECT count(*), sum(v) FROM g").Scan(&n, &total); err != nil {
			t.Fatal(err)
		}
		return n, total
	}
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := sum(); n != 5; n, _ = sum() {
		if time.Now().After(deadline) {
			t.Fatalf("the other writer's rows did not appear: %d rows", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantSQLState(t, c, "DELETE FROM g WHERE v = 102", "0A000")
	execAll(t, c, "VACUUM g")
	if n, total := sum(); n != 5 || total != 1+2+101+102+103 {
		t.Fatalf("after the refused DELETE and VACUUM: %d rows, sum %d", n, total)
	}
	if !slices.ContainsFunc(liveFiles(t, table).Files, func(f delta.File) bool { return f.Path == add.Path }) {
		t.Fatal("VACUUM rewrote or removed the other writer's file")
	}
	execAll(t, c, "DELETE FROM g WHERE v = 2")
	if n, total := sum(); n != 4 || total != 1+101+102+103 {
		t.Fatalf("after a DELETE of tsdb's own file: %d rows, sum %d", n, total)
	}
}

// chDB's own Delta writer (delta-kernel-rs) appends to a table tsdb
// serves, with files of its own shape (strings without the UTF8
// annotation, every field required, statistics of only the row count):
// tsdb sees the rows without a restart, DELETEs, UPDATEs and VACUUMs
// across both writers' files, and chDB appends again after tsdb's
// commits. Both read the same rows at every step.
func TestChDBWriterSharesATable(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--refresh-interval", "50ms", "--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE w (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)",
		"INSERT INTO w SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + g * INTERVAL '1 second', 'ts-' || (g % 3), g FROM generate_series(1, 100) AS t(g)",
		"CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "w"))
	chdbAppend := func(from int) {
		t.Helper()
		chdbQuery(t, filepath.Dir(table), fmt.Sprintf(`INSERT INTO TABLE FUNCTION deltaLakeLocal('%s') SETTINGS allow_experimental_delta_lake_writes = 1
			SELECT toDateTime64('2026-12-01 01:00:00', 6, 'UTC') + number AS time, concat('ch-', toString(number %% 2)) AS host, toInt64(number + %d) AS v FROM numbers(20)`, table, from))
	}
	sumV := func() int64 {
		var n int64
		if err := c.QueryRow(ctx, "SELECT coalesce(sum(v), 0) FROM w").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitSum := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for sumV() != want {
			if time.Now().After(deadline) {
				t.Fatalf("sum(v) %d, want %d", sumV(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	agree := func(stage string) {
		t.Helper()
		chdbAgrees(t, c, table, stage, -1, "SELECT epoch_us(time) AS us, host, v FROM w ORDER BY time, v", "SELECT toUnixTimestamp64Micro(time) AS us, host, v FROM deltaLakeLocal('%s') ORDER BY time, v", []string{"us", "host", "v"})
	}
	chdbAppend(1000)
	waitSum(5050 + 20*1000 + 190)
	agree("after chDB's append")
	execAll(t, c, "DELETE FROM w WHERE v % 3 = 0")
	agree("after tsdb's DELETE")
	execAll(t, c, "UPDATE w SET host = 'moved' WHERE v >= 1010")
	agree("after tsdb's UPDATE")
	execAll(t, c, "VACUUM w")
	agree("after VACUUM")
	for _, lf := range liveFiles(t, table).Files {
		if !delta.OwnLayout(lf) {
			t.Errorf("after VACUUM chDB's %s is still of its layout", lf.Path)
		}
	}
	before := sumV()
	chdbAppend(2000)
	waitSum(before + 20*2000 + 190)
	agree("after chDB's second append")
	var moved int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM w WHERE host = 'moved'").Scan(&moved); err != nil || moved == 0 {
		t.Fatalf("moved rows: %d, %v", moved, err)
	}
}

// A wide table as line protocol makes them, written by a Spark-like
// writer with statistics for its first 32 columns only (Spark's and
// delta-rs' dataSkippingNumIndexedCols): columns 33-36 read their values,
// not NULL; a date column of the other writer reads as dates.
func TestWideForeignFileWithPartialStats(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--refresh-interval", "50ms", "--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	cols := []string{"time TIMESTAMPTZ NOT NULL", "day DATE"}
	for i := 1; i <= 34; i++ {
		cols = append(cols, fmt.Sprintf("f%02d DOUBLE PRECISION", i))
	}
	execAll(t, c, "CREATE TABLE wide ("+strings.Join(cols, ", ")+")")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "wide"))
	store, err := delta.NewLocalStore(table)
	if err != nil {
		t.Fatal(err)
	}
	fields := []arrow.Field{{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}, {Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true}}
	for i := 1; i <= 34; i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("f%02d", i), Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	sch := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for r := int64(0); r < 200; r++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMicro() + r*1_000_000))
		b.Field(1).(*array.Date32Builder).Append(arrow.Date32(20788 + r%3)) // 2026-12-01 and the two days after
		for i := 1; i <= 34; i++ {
			b.Field(1 + i).(*array.Float64Builder).Append(float64(i*1000) + float64(r))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	// Statistics for the first 32 columns: time, day, f01-f30.
	nulls := map[string]int{"time": 0, "day": 0}
	for i := 1; i <= 30; i++ {
		nulls[fmt.Sprintf("f%02d", i)] = 0
	}
	stats, _ := json.Marshal(map[string]any{"numRecords": 200, "minValues": map[string]any{"time": "2026-12-01T00:00:00.000Z"}, "maxValues": map[string]any{"time": "2026-12-01T00:03:19.000Z"}, "nullCount": nulls})
	add := putForeignFile(t, store, "part-00000-wide.c000.snappy.parquet", rec, string(stats), parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	commitAsOtherWriter(t, table, delta.Action{Add: &add})

	deadline := time.Now().Add(10 * time.Second)
	var n int64
	for n != 200 && time.Now().Before(deadline) {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM wide").Scan(&n); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var nonNull31, nonNull34 int64
	var sum34 float64
	var days int64
	if err := c.QueryRow(ctx, "SELECT count(f31), count(f34), sum(f34), count(DISTINCT day) FROM wide WHERE day BETWEEN '2026-12-01' AND '2026-12-03'").Scan(&nonNull31, &nonNull34, &sum34, &days); err != nil {
		t.Fatal(err)
	}
	if nonNull31 != 200 || nonNull34 != 200 || sum34 != 34000*200+199*200/2 || days != 3 {
		t.Fatalf("columns past the statistics: count(f31) %d, count(f34) %d, sum(f34) %v, %d days", nonNull31, nonNull34, sum34, days)
	}
}

// putForeignFile writes rec as a Parquet file the way another writer would
// (its properties), puts it into the table's store and returns its add
// action with stats (may be empty); rec is released.
func putForeignFile(t *testing.T, store delta.Store, name string, rec arrow.RecordBatch, stats string, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties) delta.Add {
	t.Helper()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, aprops)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), name, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return delta.Add{Path: name, PartitionValues: map[string]string{}, Size: int64(buf.Len()), ModificationTime: time.Now().UnixMilli(), DataChange: true, Stats: stats}
}

// A table another writer put under Delta column mapping (mode name), as
// Spark does on `delta.columnMapping.mode = 'name'`: it renamed a column
// (its files keep the old physical name) and added one with a physical
// name of its own, then wrote a file under the physical names. tsdb
// reads every file by the physical names, writes its own files and
// statistics under them, gives a column it adds whose name is taken as a
// physical name one of its own, compacts, deletes and updates; chDB
// (delta-kernel-rs) reads the same rows at every step.
func TestColumnMappingOfAnotherWriter(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s", "--refresh-interval", "50ms"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE sp (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)",
		"INSERT INTO sp SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + g * INTERVAL '1 second', 'own-' || (g % 2), g FROM generate_series(1, 39) AS t(g)", "CHECKPOINT",
		// A row still buffered when the other writer renames its column.
		"INSERT INTO sp VALUES ('2026-12-01 00:00:40+00', 'own-0', 40)")
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(host) FROM sp").Scan(&n); err != nil || n != 40 {
		t.Fatalf("before the rename: %d, %v", n, err)
	}
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "sp"))
	store, err := delta.NewLocalStore(table)
	if err != nil {
		t.Fatal(err)
	}
	// ALTER TABLE sp SET TBLPROPERTIES ('delta.columnMapping.mode' =
	// 'name'), RENAME COLUMN host TO `Host Name`; then ADD COLUMN
	// `Load 1`.
	md := liveFiles(t, table).Metadata
	var st struct {
		Type   string           `json:"type"`
		Fields []map[string]any `json:"fields"`
	}
	if err := json.Unmarshal([]byte(md.SchemaString), &st); err != nil {
		t.Fatal(err)
	}
	for i, f := range st.Fields {
		m := f["metadata"].(map[string]any)
		m["delta.columnMapping.id"], m["delta.columnMapping.physicalName"] = i+1, f["name"]
	}
	st.Fields[1]["name"] = "Host Name"
	commitSchema := func(maxID string, actions ...delta.Action) {
		t.Helper()
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		md.SchemaString = string(b)
		md.Configuration = maps.Clone(md.Configuration)
		md.Configuration["delta.columnMapping.mode"], md.Configuration["delta.columnMapping.maxColumnId"] = "name", maxID
		commitAsOtherWriter(t, table, append(actions, delta.Action{MetaData: &md})...)
	}
	commitSchema("3", delta.Action{Protocol: &delta.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}})
	// The rename alone: tsdb takes the new name for its files and its
	// buffered row.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.QueryRow(ctx, `SELECT count(*) FROM sp WHERE "Host Name" LIKE 'own-%'`).Scan(&n)
		if err == nil && n == 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renamed column, in files and buffered: %d, %v", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st.Fields = append(st.Fields, map[string]any{"name": "Load 1", "type": "double", "nullable": true,
		"metadata": map[string]any{"delta.columnMapping.id": 4, "delta.columnMapping.physicalName": "col-5c1d0b6a-7e29-4f3e-9a55-0c2b1f3e8d10"}})
	commitSchema("4")

	// Spark's next file, under the physical names.
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "col-5c1d0b6a-7e29-4f3e-9a55-0c2b1f3e8d10", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for g := int64(1); g <= 20; g++ {
		rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC).UnixMicro() + g*1_000_000))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("spark-%d", g%2))
		rb.Field(2).(*array.Int64Builder).Append(1000 + g)
		rb.Field(3).(*array.Float64Builder).Append(float64(g) / 4)
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	add := putForeignFile(t, store, "part-00000-mapped.c000.snappy.parquet", rec,
		`{"numRecords":20,"minValues":{"time":"2026-12-01T01:00:01.000Z","host":"spark-0","v":1001,"col-5c1d0b6a-7e29-4f3e-9a55-0c2b1f3e8d10":0.25},"maxValues":{"time":"2026-12-01T01:00:20.000Z","host":"spark-1","v":1020,"col-5c1d0b6a-7e29-4f3e-9a55-0c2b1f3e8d10":5.0},"nullCount":{"time":0,"host":0,"v":0,"col-5c1d0b6a-7e29-4f3e-9a55-0c2b1f3e8d10":0}}`,
		parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	commitAsOtherWriter(t, table, delta.Action{Add: &add})

	agree := func(stage string, wantRows int) {
		t.Helper()
		chdbAgrees(t, c, table, stage, wantRows, `SELECT epoch_us(time) AS us, "Host Name" AS h, v, "Load 1" AS l FROM sp ORDER BY time`, "SELECT toUnixTimestamp64Micro(time) AS us, `Host Name` AS h, v, `Load 1` AS l FROM deltaLakeLocal('%s') ORDER BY time", []string{"us", "h", "v", "l"})
	}
	n = 0
	deadline = time.Now().Add(10 * time.Second)
	for n != 20 && time.Now().Before(deadline) {
		if err := c.QueryRow(ctx, `SELECT count("Load 1") FROM sp`).Scan(&n); err != nil {
			time.Sleep(20 * time.Millisecond) // the renamed column may not be seen yet
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	execAll(t, c, "CHECKPOINT") // the buffered row too, for chDB
	agree("with Spark's mapped file", 60)

	// tsdb's own writes: a column whose name is the renamed column's
	// physical name, rows in every column, a flush.
	execAll(t, c, "ALTER TABLE sp ADD COLUMN host TEXT",
		`INSERT INTO sp (time, "Host Name", v, "Load 1", host) VALUES ('2026-12-01 02:00:00+00', 'tsdb', 7, 1.5, 'not the old host')`, "CHECKPOINT")
	snap := liveFiles(t, table)
	if snap.Metadata.Configuration["delta.columnMapping.maxColumnId"] != "5" {
		t.Fatalf("configuration %v", snap.Metadata.Configuration)
	}
	added := snap.Schema.Columns[4]
	if added.Name != "host" || added.FieldID != 5 || !strings.HasPrefix(added.FileName(), "col-") {
		t.Fatalf("the added column: %+v", added)
	}
	var host string
	if err := c.QueryRow(ctx, `SELECT "Host Name" || '/' || host FROM sp WHERE v = 7`).Scan(&host); err != nil || host != "tsdb/not the old host" {
		t.Fatalf("the new row: %q, %v", host, err)
	}
	agree("after tsdb's INSERT", 61)
	execAll(t, c, "VACUUM sp")
	agree("after VACUUM", 61)
	for _, lf := range liveFiles(t, table).Files {
		if !delta.OwnLayout(lf) || !strings.Contains(lf.Stats, `"`+added.FileName()+`"`) || strings.Contains(lf.Stats, `"Host Name"`) {
			t.Errorf("after VACUUM %s: own layout %v, stats %s", lf.Path, delta.OwnLayout(lf), lf.Stats)
		}
	}
	execAll(t, c, "DELETE FROM sp WHERE v % 5 = 0")
	agree("after tsdb's DELETE", 61-8-4)
	execAll(t, c, `UPDATE sp SET "Host Name" = 'moved', "Load 1" = -1 WHERE v % 7 = 0`)
	agree("after tsdb's UPDATE", 49)
	if err := c.QueryRow(ctx, `SELECT count(*) FROM sp WHERE "Host Name" = 'moved' AND "Load 1" = -1`).Scan(&n); err != nil || n != 7 {
		t.Fatalf("updated rows: %d, %v", n, err)
	}
}

// chdbAgrees checks that chDB reads, with chdbSQL (a format of the
// table's directory), the rows tsdb returns for tsdbQuery, row for row;
// wantRows, unless negative, is how many there must be.
func chdbAgrees(t *testing.T, c *pgx.Conn, table, stage string, wantRows int, tsdbQuery, chdbSQL string, cols []string) {
	t.Helper()
	want := readerRows(t, c, tsdbQuery)
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(chdbSQL, table)), cols)
	if (wantRows >= 0 && len(want) != wantRows) || len(got) != len(want) {
		t.Fatalf("%s: tsdb %d rows, chDB %d, want %d\ntsdb %v\nchDB %v", stage, len(want), len(got), wantRows, want, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d: chDB %q, tsdb %q", stage, i, got[i], want[i])
		}
	}
}
