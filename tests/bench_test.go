package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tsdb/internal/proctest"
)

// BenchmarkGroupCommit measures acknowledged rows/s of small INSERTs (10
// rows, durable acknowledgement) from 1 and from 32 connections against the
// real server. Concurrent writers share WAL fsyncs, so 32 connections
// acknowledge several times the rows/s of one.
func BenchmarkGroupCommit(b *testing.B) {
	for _, conns := range []int{1, 32} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			s := startServerB(b, b.TempDir())
			ctx := context.Background()
			c := s.connect(ctx)
			if _, err := c.Exec(ctx, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)"); err != nil {
				b.Fatal(err)
			}
			var stmt strings.Builder
			stmt.WriteString("INSERT INTO m VALUES ")
			for i := 0; i < 10; i++ {
				if i > 0 {
					stmt.WriteString(",")
				}
				// Literal timestamps, as agents send them.
				fmt.Fprintf(&stmt, "('%s', 'host-%d', %d.5)", time.Now().UTC().Format("2006-01-02 15:04:05.000000Z07:00"), i, i)
			}
			q := stmt.String()
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < conns; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conn, err := s.tryConnect(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					for left.Add(-1) >= 0 {
						if _, err := conn.Exec(ctx, q); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*10)/time.Since(start).Seconds(), "rows/s")
			b.StopTimer()
			s.stop()
		})
	}
}

// BenchmarkLargeResult streams a result far larger than the server should
// hold (10M rows, about 500 MB as text) to a client that reads and drops
// each row, and reports rows/s and how far the server's peak resident
// memory rose: results stream from DuckDB's chunks to the socket, so the
// rise stays near DuckDB's small read-ahead, not the result's size.
func BenchmarkLargeResult(b *testing.B) {
	s := startServerB(b, b.TempDir())
	ctx := context.Background()
	c := s.connect(ctx)
	const q = `SELECT i, i::VARCHAR || 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' AS s FROM range(10000000) t(i)`
	before, err := proctest.RSS(s.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, rows := time.Now(), 0
	for range b.N {
		r, err := c.Query(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
			rows++
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
	peak, err := proctest.PeakRSS(s.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(peak-before)/(1<<20), "peak-rss-rise-MiB")
	b.StopTimer()
	s.stop()
}
