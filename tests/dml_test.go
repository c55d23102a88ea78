package tests

import (
	"context"
	"testing"
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
