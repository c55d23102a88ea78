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

// DELETE and UPDATE are logged in the WAL in order with inserts: after
// kill -9 the replay applies each exactly once, to the rows inserted before
// it and not to those inserted after.
func TestDMLReplaysInOrderAfterKill9(t *testing.T) {
	for _, checkpointBetween := range []bool{false, true} {
		dir := t.TempDir()
		s := startServer(t, dir, nil)
		ctx := context.Background()
		c := s.connect(ctx)
		exec := func(q string, tag string) {
			t.Helper()
			ct, err := c.Exec(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if tag != "" && ct.String() != tag {
				t.Fatalf("%s: tag %q, want %q", q, ct, tag)
			}
		}
		exec("CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)", "")
		exec("INSERT INTO m SELECT '2026-01-01'::timestamptz + i * interval '1 minute', 'x', i FROM range(0, 50) t(i)", "INSERT 0 50")
		exec("INSERT INTO m SELECT '2026-01-01'::timestamptz + i * interval '1 minute', 'y', i FROM range(0, 50) t(i)", "INSERT 0 50")
		if checkpointBetween {
			exec("CHECKPOINT", "")
		}
		exec("DELETE FROM m WHERE host = 'x' AND v < 40", "DELETE 40")
		exec("UPDATE m SET v = v + 1000 WHERE host = 'y' AND time < now()", "UPDATE 50")
		// Rows inserted after the DML match its WHERE but must survive it.
		exec("INSERT INTO m SELECT '2026-01-01'::timestamptz + i * interval '1 minute', 'x', i FROM range(0, 10) t(i)", "INSERT 0 10")
		exec("INSERT INTO m VALUES ('2026-01-01', 'y', 5)", "INSERT 0 1")
		s.kill9()

		s = startServer(t, dir, nil)
		c = s.connect(ctx)
		var x, y, ySum, big int64
		if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE host = 'x'), count(*) FILTER (WHERE host = 'y'), sum(v) FILTER (WHERE host = 'y'), count(*) FILTER (WHERE v >= 1000) FROM m").Scan(&x, &y, &ySum, &big); err != nil {
			t.Fatal(err)
		}
		// x: 10 left of the first 50, plus 10 inserted after the DELETE.
		// y: 50 updated (+1000 each) plus one inserted after the UPDATE.
		if x != 20 || y != 51 || ySum != 50*1000+49*50/2+5 || big != 50 {
			t.Fatalf("checkpoint=%v: after replay x=%d y=%d sum(y)=%d big=%d", checkpointBetween, x, y, ySum, big)
		}
		s.stop()
		// And once more after a clean restart (everything flushed).
		s = startServer(t, dir, nil)
		c = s.connect(ctx)
		if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE host = 'x'), count(*) FILTER (WHERE host = 'y') FROM m").Scan(&x, &y); err != nil {
			t.Fatal(err)
		}
		if x != 20 || y != 51 {
			t.Fatalf("checkpoint=%v: after clean restart x=%d y=%d", checkpointBetween, x, y)
		}
		s.stop()
	}
}

// TestDMLBesideConcurrentInserts: DELETE and UPDATE evaluate and rewrite
// files while inserts go on (they take only their place in the log in line
// with inserts). Each row is seen exactly once throughout, rows of one
// class are never touched, and what a kill -9 and replay give back is
// exactly what the server showed before it.
func TestDMLBesideConcurrentInserts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--bucket-duration", "10s", "--idle-flush", "50ms"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE cc (time TIMESTAMPTZ NOT NULL, id BIGINT, v BIGINT)")
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				failed.Store(err)
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				var sb strings.Builder
				for j := 0; j < 50; j++ {
					id := next.Add(1)
					if j > 0 {
						sb.WriteString(",")
					}
					fmt.Fprintf(&sb, "(now() - interval '%d seconds', %d, 0)", id%40, id)
				}
				if _, err := conn.Exec(ctx, "INSERT INTO cc VALUES "+sb.String()); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.tryConnect(ctx)
			if err != nil {
				failed.Store(err)
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := "UPDATE cc SET v = v + 1 WHERE id % 3 = 1"
				if (w+i)%2 == 0 {
					q = "DELETE FROM cc WHERE id % 3 = 0"
				}
				if _, err := conn.Exec(ctx, q); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		// Mid-run: every row at most once.
		if n := queryInt(t, c, "SELECT count(*) - count(DISTINCT id) FROM cc"); n != 0 {
			t.Fatalf("%d rows seen twice while DML and inserts run", n)
		}
	}
	close(stop)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		var n, twice, twos, touched2, neg int64
		var sum int64
		if err := c.QueryRow(ctx, "SELECT count(*), count(*) - count(DISTINCT id), count(*) FILTER (WHERE id % 3 = 2), count(*) FILTER (WHERE id % 3 = 2 AND v <> 0), count(*) FILTER (WHERE v < 0), coalesce(sum(v), 0) FROM cc").Scan(&n, &twice, &twos, &touched2, &neg, &sum); err != nil {
			t.Fatal(err)
		}
		if twice != 0 || touched2 != 0 || neg != 0 || twos != (next.Load()+1)/3 {
			t.Fatalf("rows %d, seen twice %d, of class 2: %d of %d (%d touched), negative %d", n, twice, twos, (next.Load()+1)/3, touched2, neg)
		}
		return fmt.Sprint(n, sum)
	}
	before := state()
	s.kill9()
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	if after := state(); after != before {
		t.Fatalf("after kill -9 and replay: %s, before: %s", after, before)
	}
}
