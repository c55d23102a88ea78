package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLargeStatementsSpill: aggregations, DISTINCT, sorts and joins over
// far more data than the engine may hold finish by spilling to disk, as
// in PostgreSQL, with the right answer; the buffered rows the engine holds
// do not take their memory.
func TestLargeStatementsSpill(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 4M rows")
	}
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	s := startServer(t, dir, []string{"--memory-limit", "64MiB", "--engine-memory-limit", "96MiB", "--http-addr", httpAddr})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE sp (time TIMESTAMPTZ NOT NULL, k BIGINT, v DOUBLE PRECISION, pad TEXT)")
	const n, batch = 4_000_000, 200_000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for lo := 0; lo < n; lo += batch {
		rows := make([][]any, 0, batch)
		for i := lo; i < lo+batch; i++ {
			// k is unique; v is k scrambled, so sorting by v reorders.
			rows = append(rows, []any{base.Add(time.Duration(i) * time.Second), int64(i), float64((i * 7919) % n), "padding-padding"})
		}
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"sp"}, []string{"time", "k", "v", "pad"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
	}
	// Part flushed, part buffered: both layers take part.
	execAll(t, c, "CHECKPOINT", "INSERT INTO sp VALUES ('2027-01-01', -1, -1, 'late')")
	for _, q := range []struct {
		sql  string
		want int64
	}{
		// 4M groups: a hash table far larger than the engine's memory.
		{"SELECT count(*) FROM (SELECT k, count(*) AS c, avg(v) AS a FROM sp GROUP BY k) s WHERE c = 1", n + 1},
		{"SELECT count(DISTINCT v) FROM sp", n + 1},
		// A sort of every row, read to its end.
		{"SELECT sum(r) FROM (SELECT k, row_number() OVER (ORDER BY v DESC, pad) AS r FROM sp) s", (n + 1) * (n + 2) / 2},
		// A join of the table with itself on its unique key.
		{"SELECT count(*) FROM sp a JOIN sp b ON a.k = b.k AND a.v = b.v", n + 1},
	} {
		if got := queryInt(t, c, q.sql); got != q.want {
			t.Errorf("%s: %d, want %d", q.sql, got, q.want)
		}
	}
	// The aggregation over files and buffered rows needed the run over a
	// file of the buffered rows.
	if _, m := httpGet("http://" + httpAddr + "/metrics"); strings.Contains(m, "tsdb_planner_spill_retries_total 0") || !strings.Contains(m, "tsdb_planner_spill_retries_total") {
		t.Error("no statement was run again over buffered rows read from a file")
	}
}
