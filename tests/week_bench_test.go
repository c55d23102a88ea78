package tests

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// weekQueries read a week of data the ways dashboards do.
var weekQueries = []struct{ name, sql string }{
	{"hourly-avg-week", "SELECT date_trunc('hour', time) AS h, avg(v) FROM %s GROUP BY h ORDER BY h"},
	{"max-per-host-day", "SELECT host, max(v) FROM %s WHERE time >= TIMESTAMPTZ '2026-11-03 00:00:00+00' AND time < TIMESTAMPTZ '2026-11-04 00:00:00+00' GROUP BY host ORDER BY host"},
	{"one-hour-window", "SELECT host, count(*), avg(v) FROM %s WHERE time >= TIMESTAMPTZ '2026-11-05 12:00:00+00' AND time < TIMESTAMPTZ '2026-11-05 13:00:00+00' GROUP BY host ORDER BY host"},
	{"lastpoint", "SELECT DISTINCT ON (host) host, time, v FROM %s ORDER BY host, time DESC"},
	{"one-host-week", "SELECT date_trunc('day', time) AS d, max(v) FROM %s WHERE host = 'host-7' GROUP BY d ORDER BY d"},
}

// BenchmarkSimulatedWeek writes a week of data the way a live system does:
// one 10-minute bucket at a time, each flushed to its own file, 1,008
// flushes, with the background compactor running meanwhile. It reports the
// files per day left at the end, and the week's query times against a
// freshly compacted copy of the same rows (median of 15 alternating runs
// per query).
// Run it alone: go test -run '^$' -bench SimulatedWeek -benchtime 1x ./tests/
func BenchmarkSimulatedWeek(b *testing.B) {
	// The default target holds the whole week in one file; a small one
	// shows how the compactor lays out a table larger than one file.
	for _, target := range []string{"64MiB", "512KiB"} {
		b.Run("target-file-size="+target, func(b *testing.B) { simulateWeek(b, target) })
	}
}

func simulateWeek(b *testing.B, targetFileSize string) {
	const hosts, rowsPerHostPerWindow, windows = 40, 60, 7 * 24 * 6
	s := startServerB(b, b.TempDir(), "--compact-interval", "1s", "--idle-flush", "1h", "--small-file-bytes", "1B", "--target-file-size", targetFileSize)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(b, c, "CREATE TABLE week (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	execAll(b, c, "CREATE TABLE fresh (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	for w := 0; w < windows; w++ {
		from := start.Add(time.Duration(w) * 10 * time.Minute)
		execAll(b, c, fmt.Sprintf(`INSERT INTO week SELECT TIMESTAMPTZ '%s' + (g // %d) * INTERVAL '10 seconds', 'host-' || (g %% %d), (g * 7919 + %d) %% 1000 / 10.0
			FROM generate_series(0, %d) AS t(g)`, from.Format(time.RFC3339), hosts, hosts, w, hosts*rowsPerHostPerWindow-1))
		execAll(b, c, "CHECKPOINT")
	}
	ingest := time.Since(began)
	// Let the background compactor finish what the last flushes left.
	var files int
	for deadline := time.Now().Add(30 * time.Second); ; {
		prev := activeFiles(b, s.dataDir, "week")
		time.Sleep(2500 * time.Millisecond)
		files = activeFiles(b, s.dataDir, "week")
		if files == prev {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the compactor was still merging after 30s (%d files)", files)
		}
	}
	for h := range 7 * 24 {
		from := start.Add(time.Duration(h) * time.Hour)
		execAll(b, c, fmt.Sprintf("INSERT INTO fresh SELECT * FROM week WHERE time >= '%s' AND time < '%s' ORDER BY time", from.Format(time.RFC3339), from.Add(time.Hour).Format(time.RFC3339)))
	}
	execAll(b, c, "CHECKPOINT")
	execAll(b, c, "VACUUM fresh")
	freshFiles := activeFiles(b, s.dataDir, "fresh")

	timeQuery := func(q string) time.Duration {
		t0 := time.Now()
		rows, err := c.Query(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		if rows.Err() != nil {
			b.Fatal(rows.Err())
		}
		return time.Since(t0)
	}
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	// medians runs the two queries alternately, so that the machine's
	// moods hit both alike, and returns their median times.
	medians := func(q1, q2 string) (time.Duration, time.Duration) {
		var d1, d2 []time.Duration
		for range 15 {
			d1 = append(d1, timeQuery(q1))
			d2 = append(d2, timeQuery(q2))
		}
		return median(d1), median(d2)
	}
	b.ResetTimer()
	worst := 0.0
	for range b.N {
		for _, q := range weekQueries {
			if !sameRows(readerRows(b, c, fmt.Sprintf(q.sql, "week")), readerRows(b, c, fmt.Sprintf(q.sql, "fresh"))) {
				b.Fatalf("%s: the week and its fresh copy disagree", q.name)
			}
			wk, fr := medians(fmt.Sprintf(q.sql, "week"), fmt.Sprintf(q.sql, "fresh"))
			ratio := float64(wk) / float64(fr)
			worst = max(worst, ratio)
			b.Logf("%-18s week %7.2f ms  fresh copy %7.2f ms  ratio %.2f", q.name, float64(wk)/1e6, float64(fr)/1e6, ratio)
		}
	}
	b.StopTimer()
	b.Logf("%d flushes of %d rows in %v; files left: %d (%.2f per day); fresh copy: %d files", windows, hosts*rowsPerHostPerWindow, ingest.Round(time.Millisecond), files, float64(files)/7, freshFiles)
	b.ReportMetric(float64(files)/7, "files/day")
	b.ReportMetric(worst, "worst-query-ratio")
}
