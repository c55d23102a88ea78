package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/membuffer"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{DataDir: dir, BucketDuration: 10 * time.Minute, IdleFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// crash stops the store the way kill -9 would leave it: nothing flushed.
func (s *Store) crash() {
	s.closeOnce.Do(func() {
		s.bg.Stop()
		s.wal.Close()
	})
}

func cpuTable(t *testing.T) schema.Table {
	tbl, err := schema.New("cpu", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "v", Type: schema.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func rows(t schema.Table, times ...time.Time) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.ArrowSchema())
	for i, ts := range times {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

func count(t *testing.T, s *Store) (files int, buffered int64) {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range snap.Files {
		n += f.NumRecords
	}
	for _, b := range snap.Batches {
		buffered += b.Rec.NumRows()
	}
	return int(n), buffered
}

func TestExactlyOnceAcrossFlushAndCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Three buckets in one insert, one of them before 1970.
	if n, err := s.Insert(ctx, "cpu", rows(tbl, base, base.Add(time.Hour), time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC))); err != nil || n != 3 {
		t.Fatalf("insert: %d, %v", n, err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if f, b := count(t, s); f != 3 || b != 0 {
		t.Fatalf("after checkpoint: %d in files, %d buffered", f, b)
	}
	// Late row for a flushed bucket, and a new bucket; then a crash.
	if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(time.Minute), base.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	s.crash()

	s = openStore(t, dir)
	if f, b := count(t, s); f != 3 || b != 2 {
		t.Fatalf("after crash and replay: %d in files, %d buffered; want 3 and 2", f, b)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	s.crash() // WAL entries deleted after the flush: nothing to replay
	s = openStore(t, dir)
	defer s.Close(ctx)
	if f, b := count(t, s); f != 5 || b != 0 {
		t.Fatalf("after second restart: %d in files, %d buffered; want 5 and 0", f, b)
	}
}

func TestReplaySkipsEntriesWhoseFlushCommitted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, "cpu", rows(tbl, time.Now())); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash between the Delta commit and the WAL deletion: commit
	// the flush, then put the WAL back by not deleting (re-insert is not
	// possible, so flush with a WAL whose delete we skip).
	ts, _ := s.state("cpu")
	sealed := s.buf.Seal("cpu", func(b membuffer.BucketInfo) bool { return true })
	if len(sealed) != 1 {
		t.Fatalf("sealed %d buckets", len(sealed))
	}
	seqs := sealed[0].Seqs()
	if err := s.flushGroup(ctx, ts, sealed); err != nil {
		t.Fatal(err)
	}
	// Undo the WAL deletion by writing the same entry back under its seq is
	// not possible through the API; instead check the txn covers the seq.
	if v := ts.published.Txns[s.appID(sealed[0].Key)]; uint64(v) < seqs[0] {
		t.Fatalf("txn version %d does not cover wal entry %d", v, seqs[0])
	}
	s.crash()
	s = openStore(t, dir)
	defer s.Close(ctx)
	if f, b := count(t, s); f != 1 || b != 0 {
		t.Fatalf("after restart: %d in files, %d buffered", f, b)
	}
}

// After everything was flushed and the WAL is empty, rows written after a
// restart must not be mistaken for flushed ones at the next restart.
func TestRowsAfterFullFlushAndRestartSurvive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if _, err := s.Insert(ctx, "cpu", rows(tbl, ts, ts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	s.crash()
	s = openStore(t, dir)
	if _, err := s.Insert(ctx, "cpu", rows(tbl, ts)); err != nil { // same bucket key
		t.Fatal(err)
	}
	s.crash()
	s = openStore(t, dir)
	defer s.Close(ctx)
	if f, b := count(t, s); f+int(b) != 7 {
		t.Fatalf("%d rows in files + %d buffered, want 7", f, b)
	}
}

func TestInsertRejectsNullTimeAndUnknownTable(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close(ctx)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	b.Field(0).AppendNull()
	b.Field(1).(*array.Int64Builder).Append(1)
	_, err := s.Insert(ctx, "cpu", b.NewRecordBatch())
	if KindOf(err) != KindNotNull {
		t.Fatalf("null time: %v (kind %d)", err, KindOf(err))
	}
	if f, n := count(t, s); f != 0 || n != 0 {
		t.Fatal("rejected row landed")
	}
	if _, err := s.Insert(ctx, "nope", rows(tbl, time.Now())); KindOf(err) != KindNoSuchTable {
		t.Fatalf("unknown table: %v", err)
	}
	if _, err := s.CreateTable(ctx, tbl, false); KindOf(err) != KindTableExists {
		t.Fatalf("duplicate create: %v", err)
	}
}

func TestDropAndRecreateDoesNotResurrectRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	tbl := cpuTable(t)
	if _, err := s.CreateTable(ctx, tbl, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, "cpu", rows(tbl, time.Now(), time.Now())); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DropTable(ctx, "cpu", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DropTable(ctx, "cpu", false); KindOf(err) != KindNoSuchTable {
		t.Fatalf("second drop: %v", err)
	}
	if _, err := s.CreateTable(ctx, cpuTable(t), false); err != nil {
		t.Fatal(err)
	}
	s.crash()
	s = openStore(t, dir)
	defer s.Close(ctx)
	if f, b := count(t, s); f != 0 || b != 0 {
		t.Fatalf("recreated table has %d+%d rows of the dropped one", f, b)
	}
	_ = errors.New
}

// A write the WAL cannot take for want of space is PostgreSQL's 53100, and
// the store says it does not accept writes for a while after.
func TestDiskFullIsReported(t *testing.T) {
	s := openWith(t, t.TempDir(), Options{})
	defer s.Close(context.Background())
	if ok, _ := s.AcceptingWrites(); !ok {
		t.Fatal("a new store does not accept writes")
	}
	err := s.storageError(fmt.Errorf("write wal/x.wal: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}))
	if KindOf(err) != KindDiskFull {
		t.Fatalf("ENOSPC: %v (kind %d), want disk full", err, KindOf(err))
	}
	if ok, why := s.AcceptingWrites(); ok || !strings.Contains(why, "disk is full") {
		t.Fatalf("after ENOSPC: %v %q", ok, why)
	}
	if KindOf(s.storageError(errors.New("EIO"))) != KindIO {
		t.Fatal("other write errors are not 58030")
	}
}

// A bucket's txn is needed only while flushed entries of the bucket may be
// in the WAL: checkpoints leave the settled ones out (all but the newest
// of this writer), so a table's state does not grow by a txn per bucket
// for good; after a failed WAL delete every txn stays. Rows stay exactly
// once across restarts either way.
func TestBucketTxnsExpireAtCheckpoints(t *testing.T) {
	for _, deleteFailed := range []bool{false, true} {
		ctx := context.Background()
		dir := t.TempDir()
		s := openStore(t, dir)
		s.opts.ExpireTxns = true
		tbl := cpuTable(t)
		if _, err := s.CreateTable(ctx, tbl, false); err != nil {
			t.Fatal(err)
		}
		s.walDeleteFailed.Store(deleteFailed)
		base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		for i := range 12 { // commits 1-12; the checkpoint is at version 10
			if _, err := s.Insert(ctx, "cpu", rows(tbl, base.Add(time.Duration(i)*10*time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := s.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s = openStore(t, dir)
		ts, _ := s.state("cpu")
		buckets := 0
		for app := range ts.published.Txns {
			if strings.HasPrefix(app, s.appPrefix()+"bucket-") {
				buckets++
			}
		}
		// From the checkpoint the newest of its ten, then commits 11 and 12.
		want := 3
		if deleteFailed {
			want = 12
		}
		if buckets != want {
			t.Errorf("delete failed %v: %d bucket txns after reopening, want %d", deleteFailed, buckets, want)
		}
		if _, err := s.Insert(ctx, "cpu", rows(tbl, base)); err != nil {
			t.Fatal(err)
		}
		s.crash()
		s = openStore(t, dir)
		if f, b := count(t, s); f != 12 || b != 1 {
			t.Errorf("delete failed %v: %d rows in files, %d buffered, want 12 and 1", deleteFailed, f, b)
		}
		s.Close(ctx)
	}
}
