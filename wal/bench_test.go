package wal

import (
	"context"
	"testing"
)

// BenchmarkAppend190KB is the WAL's share of a 1,000-row INSERT of the
// bench's 21-column rows: one 190 KB entry appended and synced, one
// writer at a time.
func BenchmarkAppend190KB(b *testing.B) {
	ctx := context.Background()
	w, err := Open(ctx, b.TempDir(), Options{ReclaimInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	frame := make([]byte, HeaderRoom+190<<10)
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := w.AppendFramed(ctx, [][]byte{frame}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStage1MBParts is the WAL's share of a COPY: 1 MiB parts
// written through a Stage and committed, 64 MiB per operation.
func BenchmarkStage1MBParts(b *testing.B) {
	ctx := context.Background()
	w, err := Open(ctx, b.TempDir(), Options{ReclaimInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	frame := make([]byte, HeaderRoom+1<<20)
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	b.SetBytes(64 << 20)
	for b.Loop() {
		st := w.Stage()
		for range 64 {
			if err := st.Write(ctx, [][]byte{frame}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
