package wal

import (
	"context"
	"fmt"
	"testing"
)

// vlogSizes are the value-log file sizes the benchmarks compare: the
// default (4 MiB, see Options.ValueLogFileBytes) against larger files.
var vlogSizes = []int64{4 << 20, 16 << 20, 64 << 20}

// benchPerVlogSize runs fn as a sub-benchmark per value-log file size,
// with an open WAL (no reclaim loop) and a frame of size payload bytes.
func benchPerVlogSize(b *testing.B, size int, fn func(b *testing.B, w *WAL, frame []byte)) {
	for _, vlog := range vlogSizes {
		b.Run(fmt.Sprintf("vlog=%dMiB", vlog>>20), func(b *testing.B) {
			w, err := Open(context.Background(), b.TempDir(), Options{ReclaimInterval: -1, ValueLogFileBytes: vlog})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			frame := make([]byte, HeaderRoom+size)
			for i := range frame {
				frame[i] = byte(i * 7)
			}
			fn(b, w, frame)
		})
	}
}

// BenchmarkAppend190KB is the WAL's share of a 1,000-row INSERT of the
// bench's 21-column rows: one 190 KB entry appended and synced, one
// writer at a time.
func BenchmarkAppend190KB(b *testing.B) {
	benchPerVlogSize(b, 190<<10, func(b *testing.B, w *WAL, frame []byte) {
		ctx := context.Background()
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, err := w.AppendFramed(ctx, [][]byte{frame}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStage1MBParts is the WAL's share of a COPY: 1 MiB parts
// written through a Stage and committed, 64 MiB per operation.
func BenchmarkStage1MBParts(b *testing.B) {
	benchPerVlogSize(b, 1<<20, func(b *testing.B, w *WAL, frame []byte) {
		ctx := context.Background()
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
	})
}
