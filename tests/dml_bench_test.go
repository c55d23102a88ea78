package tests

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkInsertBesideDML measures the latency of 100-row INSERTs alone
// and while 16 sessions run UPDATEs and DELETEs of the same table, whose
// rows are mostly in Delta files (each statement rewrites files). It
// reports the median and p99 latency of both and their ratios: a DML
// statement takes its place in the log in line with inserts, but reads and
// rewrites files while inserts go on, so the ratio of medians stays near 1
// (issue #20 asked ≤ 2; before, inserts waited behind every DML: 2.8 s at
// the median against 35 ms idle).
func BenchmarkInsertBesideDML(b *testing.B) {
	s := startServerB(b, b.TempDir())
	ctx := context.Background()
	c := s.connect(ctx)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.Exec(ctx, "CREATE TABLE mx (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)"); err != nil {
		b.Fatal(err)
	}
	// 200,000 rows over 4 hours in files, as a day of a small fleet.
	if _, err := c.Exec(ctx, "INSERT INTO mx SELECT TIMESTAMPTZ '2026-01-01' + i * INTERVAL '72 milliseconds', 'host-' || (i % 50), i FROM range(200000) t(i)"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
	insert := func(i int) string {
		q := "INSERT INTO mx VALUES "
		for r := 0; r < 100; r++ {
			if r > 0 {
				q += ","
			}
			q += fmt.Sprintf("('%s', 'host-%d', %d)", base.Add(time.Duration(i*100+r)*time.Millisecond).Format(time.RFC3339Nano), r%50, r)
		}
		return q
	}
	measure := func(n int) []time.Duration {
		var lat []time.Duration
		for i := 0; i < n; i++ {
			q := insert(i)
			start := time.Now()
			if _, err := c.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ResetTimer()
	for range b.N {
		idle := measure(200)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var dml sync.Map
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := s.tryConnect(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					q := fmt.Sprintf("UPDATE mx SET v = v + 1 WHERE host = 'host-%d' AND time < '2026-01-01 02:00:00+00'", (w*7+i)%50)
					if i%4 == 3 {
						q = fmt.Sprintf("DELETE FROM mx WHERE host = 'host-%d' AND v < 0", (w+i)%50)
					}
					if _, err := conn.Exec(ctx, q); err != nil {
						b.Error(err)
						return
					}
					n, _ := dml.LoadOrStore(w, new(int))
					*n.(*int)++
				}
			}()
		}
		time.Sleep(time.Second)
		loaded := measure(200)
		close(stop)
		wg.Wait()
		statements := 0
		dml.Range(func(_, v any) bool { statements += *v.(*int); return true })
		b.ReportMetric(pct(idle, 0.5), "idle-p50-ms")
		b.ReportMetric(pct(idle, 0.99), "idle-p99-ms")
		b.ReportMetric(pct(loaded, 0.5), "dml-p50-ms")
		b.ReportMetric(pct(loaded, 0.99), "dml-p99-ms")
		b.ReportMetric(pct(loaded, 0.5)/pct(idle, 0.5), "p50-ratio")
		b.ReportMetric(float64(statements), "dml-statements")
	}
	b.StopTimer()
	s.stop()
}
