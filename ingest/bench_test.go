package ingest

import (
	"context"
	"testing"
	"time"
)

// BenchmarkReplay measures how fast a restart rebuilds the MemBuffer from
// the WAL: 1,000-row entries of a 3-column table, reported as rows/s.
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	const entries, perEntry = 500, 1000
	dir := b.TempDir()
	s, err := Open(ctx, Options{DataDir: dir, BucketDuration: 24 * time.Hour, IdleFlush: time.Hour, MemoryLimit: 4 << 30})
	if err != nil {
		b.Fatal(err)
	}
	tbl := tableB(b, s)
	base := time.Now()
	for i := 0; i < entries; i++ {
		if _, err := s.Insert(ctx, "cpu", batchAt(tbl, base.Add(time.Duration(i)*time.Millisecond), perEntry, 16)); err != nil {
			b.Fatal(err)
		}
	}
	s.crash()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		s, err := Open(ctx, Options{DataDir: dir, BucketDuration: 24 * time.Hour, IdleFlush: time.Hour, MemoryLimit: 4 << 30})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if got := s.BufferedBytes(); got == 0 {
			b.Fatal("nothing replayed")
		}
		s.crash()
	}
	b.ReportMetric(float64(entries*perEntry*b.N)/total.Seconds(), "rows/s")
}
