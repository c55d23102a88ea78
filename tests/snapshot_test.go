package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Readers never see a missing or duplicated row while writers insert,
// buckets flush, CHECKPOINT runs and UPDATEs rewrite both layers: every
// query sees each row acknowledged before it started exactly once.
func TestSnapshotIsolationUnderConcurrentWork(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--bucket-duration", "1s", "--idle-flush", "30ms", "--flush-interval", "10ms", "--small-file-bytes", "1KiB"})
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE ev (time TIMESTAMPTZ NOT NULL, w INTEGER, id BIGINT, v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	const writers, perStmt, base = 4, 10, int64(1_000_000_000)
	var acked [writers]atomic.Int64 // ids 0..acked-1 of each writer are acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Value
	fail := func(err error) {
		failed.CompareAndSwap(nil, err)
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				fail(err)
				return
			}
			for k := int64(0); ; k += perStmt {
				select {
				case <-stop:
					return
				default:
				}
				var vals []string
				for j := int64(0); j < perStmt; j++ {
					// Times spread over the last few seconds: closed and open buckets.
					vals = append(vals, fmt.Sprintf("(now() - interval '%d milliseconds', %d, %d, 0)", (k+j)*37%3000, w, int64(w)*base+k+j))
				}
				if _, err := conn.Exec(ctx, "INSERT INTO ev VALUES "+strings.Join(vals, ",")); err != nil {
					fail(err)
					return
				}
				acked[w].Store(k + perStmt)
			}
		}()
	}
	for _, q := range []string{"CHECKPOINT", "UPDATE ev SET v = v + 1 WHERE id % 7 = 0"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				fail(err)
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if _, err := conn.Exec(ctx, q); err != nil {
					fail(fmt.Errorf("%s: %w", q, err))
					return
				}
			}
		}()
	}
	var queries, rowsChecked atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				fail(err)
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				var before [writers]int64
				var cases []string
				for w := range before {
					before[w] = acked[w].Load()
					cases = append(cases, fmt.Sprintf("WHEN %d THEN %d", w, before[w]))
				}
				q := fmt.Sprintf("SELECT w, count(*) FILTER (WHERE id - w::BIGINT * %d < CASE w %s END), count(*), count(DISTINCT id) FROM ev GROUP BY w", base, strings.Join(cases, " "))
				rows, err := conn.Query(ctx, q)
				if err != nil {
					fail(err)
					return
				}
				for rows.Next() {
					var w int32
					var ackedSeen, total, distinct int64
					if err := rows.Scan(&w, &ackedSeen, &total, &distinct); err != nil {
						fail(err)
						return
					}
					if ackedSeen != before[w] {
						fail(fmt.Errorf("writer %d: %d of %d rows acknowledged before the query are visible", w, ackedSeen, before[w]))
					}
					if total != distinct {
						fail(fmt.Errorf("writer %d: %d rows but %d distinct ids: duplicates", w, total, distinct))
					}
					rowsChecked.Add(total)
				}
				if err := rows.Err(); err != nil {
					fail(err)
					return
				}
				queries.Add(1)
			}
		}()
	}
	const duration = 5 * time.Second
	time.Sleep(duration)
	close(stop)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	var total int64
	for w := range acked {
		total += acked[w].Load()
	}
	t.Logf("%v: %d rows acknowledged, %d reader queries checked %d rows, no row missing or duplicated", duration, total, queries.Load(), rowsChecked.Load())
	if queries.Load() < 10 || total < 200 {
		t.Fatalf("too little work to mean anything: %d queries, %d rows", queries.Load(), total)
	}
}
