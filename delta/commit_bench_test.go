package delta

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCommitLargeTable is one flush-sized commit (an add and a txn)
// to a table that already has 5,000 files: what a commit costs should not
// grow with the table.
func BenchmarkCommitLargeTable(b *testing.B) {
	ctx := context.Background()
	store := benchStore(b)
	tbl, err := Create(ctx, store, testTable(&testing.T{}), nil)
	if err != nil {
		b.Fatal(err)
	}
	stats := `{"numRecords":100,"minValues":{"time":"2026-01-01T00:00:00.000Z","host":"a","v":1},"maxValues":{"time":"2026-01-01T00:10:00.000Z","host":"z","v":9},"nullCount":{"time":0,"host":0,"v":0}}`
	var actions []Action
	for i := range 5000 {
		actions = append(actions, Action{Add: &Add{Path: fmt.Sprintf("f-%05d.parquet", i), Stats: stats, PartitionValues: map[string]string{}}})
	}
	if _, err := tbl.Commit(ctx, "WRITE", actions); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		add := Add{Path: fmt.Sprintf("g-%08d.parquet", i), Stats: stats, PartitionValues: map[string]string{}}
		if _, err := tbl.Commit(ctx, "WRITE", []Action{{Add: &add}, {Txn: &Txn{AppID: "w", Version: int64(i + 1)}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStore is a local store in the benchmark's temporary directory.
func benchStore(b *testing.B) *LocalStore {
	b.Helper()
	store, err := NewLocalStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return store
}
