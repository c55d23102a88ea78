package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/s3test"
)

// newS3Root starts versitygw and returns a root under s3://tsdb/prefix.
func newS3Root(t *testing.T) (*S3Root, *s3test.Server) {
	t.Helper()
	srv := s3test.Start(t, "tsdb")
	root, err := NewS3Root(context.Background(), S3Config{Endpoint: srv.Endpoint, Region: "us-east-1", AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true}, "tsdb", "some/prefix", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root, srv
}

// TestStoreContract runs the Store contract against the local filesystem
// and against a real S3-compatible server.
func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	s3root, _ := newS3Root(t)
	localRoot, err := NewLocalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []Root{localRoot, s3root} {
		t.Run(fmt.Sprintf("%T", root), func(t *testing.T) {
			store, err := root.Table(ctx, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Get(ctx, "_delta_log/00000000000000000000.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("get of a missing object: %v, want fs.ErrNotExist", err)
			}
			if names, err := store.List(ctx, "_delta_log"); err != nil || len(names) != 0 {
				t.Fatalf("list of an empty dir: %v %v", names, err)
			}
			if err := store.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("first")); err != nil {
				t.Fatal(err)
			}
			if err := store.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("second")); !errors.Is(err, ErrExists) {
				t.Fatalf("second put-if-absent: %v, want ErrExists", err)
			}
			if b, err := store.Get(ctx, "_delta_log/00000000000000000000.json"); err != nil || string(b) != "first" {
				t.Fatalf("the first commit must survive: %q %v", b, err)
			}
			if err := store.Put(ctx, "part-1.parquet", []byte("data")); err != nil {
				t.Fatal(err)
			}
			if err := store.Fetch(ctx, "part-1.parquet"); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(store.LocalPath("part-1.parquet")); err != nil || string(b) != "data" {
				t.Fatalf("local copy: %q %v", b, err)
			}
			if names, err := store.List(ctx, "_delta_log"); err != nil || strings.Join(names, ",") != "00000000000000000000.json" {
				t.Fatalf("list: %v %v", names, err)
			}
			if names, err := root.Tables(ctx); err != nil || strings.Join(names, ",") != "cpu" {
				t.Fatalf("tables: %v %v", names, err)
			}
			if err := store.Delete(ctx, "part-1.parquet"); err != nil {
				t.Fatal(err)
			}
			if err := store.Delete(ctx, "part-1.parquet"); err != nil {
				t.Fatalf("deleting a missing object: %v", err)
			}
			if _, err := os.Stat(store.LocalPath("part-1.parquet")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the local copy must go with the object: %v", err)
			}
			if err := root.DropTable(ctx, "cpu"); err != nil {
				t.Fatal(err)
			}
			if names, err := root.Tables(ctx); err != nil || len(names) != 0 {
				t.Fatalf("tables after drop: %v %v", names, err)
			}
		})
	}
}

// TestS3PutIfAbsentRace: of many writers racing for one key, exactly one
// wins and the object holds its bytes. This is what makes a commit version
// belong to one writer.
func TestS3PutIfAbsentRace(t *testing.T) {
	ctx := context.Background()
	root, _ := newS3Root(t)
	store, _ := root.Table(ctx, "t")
	for round := 0; round < 5; round++ {
		key := fmt.Sprintf("_delta_log/%020d.json", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []int
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := store.PutIfAbsent(ctx, key, []byte(fmt.Sprint(w)))
				if err != nil && !errors.Is(err, ErrExists) {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if err == nil {
					mu.Lock()
					winners = append(winners, w)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d writers won (%v), want exactly 1", round, len(winners), winners)
		}
		if b, err := store.Get(ctx, key); err != nil || string(b) != fmt.Sprint(winners[0]) {
			t.Fatalf("round %d: object holds %q (%v), want the winner's %d", round, b, err, winners[0])
		}
	}
}

// TestTwoWritersCommit: two Table handles (as two processes would hold) on
// one S3 table commit concurrently; every commit lands at its own version,
// each sees the other's files, and a remove of a file the other writer
// already removed is a conflict, not a lost update.
func TestTwoWritersCommit(t *testing.T) {
	ctx := context.Background()
	root, _ := newS3Root(t)
	sch := testTable(t)
	storeA, _ := root.Table(ctx, "cpu")
	a, err := Create(ctx, storeA, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	storeB, _ := root.Table(ctx, "cpu")
	b, err := Open(ctx, storeB, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	const perWriter = 12
	var wg sync.WaitGroup
	for w, tbl := range []*Table{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				rec := batch(sch, []int64{int64(w*1000+i) * 1_000_000}, []string{fmt.Sprintf("w%d", w)})
				add, err := WriteDataFile(ctx, tbl.Store(), sch, []arrow.RecordBatch{rec})
				rec.Release()
				if err != nil {
					t.Error(err)
					return
				}
				txn := &Txn{AppID: fmt.Sprintf("writer-%d", w), Version: int64(i + 1)}
				if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}, {Txn: txn}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	snapA, err := a.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snapB, err := b.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snapA.Version != 2*perWriter || snapB.Version != 2*perWriter {
		t.Fatalf("versions %d and %d, want %d: a commit was lost or doubled", snapA.Version, snapB.Version, 2*perWriter)
	}
	if len(snapA.Files) != 2*perWriter || len(snapB.Files) != 2*perWriter {
		t.Fatalf("files %d and %d, want %d", len(snapA.Files), len(snapB.Files), 2*perWriter)
	}
	if snapA.Txns["writer-0"] != perWriter || snapA.Txns["writer-1"] != perWriter {
		t.Fatalf("txns %v", snapA.Txns)
	}
	// A's copy of B's file comes from the store.
	f := snapA.Files[len(snapA.Files)-1]
	if err := storeA.Fetch(ctx, f.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(storeA.LocalPath(f.Path)); err != nil {
		t.Fatal(err)
	}

	// Both remove the same file; the second commit must conflict.
	paths := make([]string, 0, len(snapA.Files))
	for _, f := range snapA.Files {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	rm := []Action{{Remove: &Remove{Path: paths[0], DataChange: true}}}
	if _, err := a.Commit(ctx, "DELETE", rm); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, "DELETE", rm); !errors.Is(err, ErrConflict) {
		t.Fatalf("second remove of %s: %v, want ErrConflict", paths[0], err)
	}
	if snap := b.Snapshot(); snap.Version != 2*perWriter+1 || len(snap.Files) != 2*perWriter-1 {
		t.Fatalf("after the conflict B is at version %d with %d files", snap.Version, len(snap.Files))
	}
}

// The local mirror loses copies of files that left the table, once they
// are an hour old (a younger copy may serve a query of a newer commit).
func TestS3PruneMirror(t *testing.T) {
	ctx := context.Background()
	root, _ := newS3Root(t)
	st, _ := root.Table(ctx, "cpu")
	store := st.(*S3Store)
	for _, p := range []string{"live.parquet", "gone.parquet", "young.parquet"} {
		if err := store.Put(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{"live.parquet", "gone.parquet"} {
		if err := os.Chtimes(store.LocalPath(p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	n, err := store.PruneMirror(map[string]bool{"live.parquet": true})
	if err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want 1", n, err)
	}
	for p, want := range map[string]bool{"live.parquet": true, "gone.parquet": false, "young.parquet": true} {
		if _, err := os.Stat(store.LocalPath(p)); (err == nil) != want {
			t.Errorf("%s cached: %v, want %v", p, err == nil, want)
		}
	}
}
