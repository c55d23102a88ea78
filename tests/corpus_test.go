package tests

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
)

// corpusData returns INSERT statements for cpu and mem: ten hosts in three
// regions every 7 minutes over three days, a few rows before 1970 and in
// 2200, NULLs in every nullable column.
func corpusData() (cpu, mem [][]string) {
	rnd := rand.New(rand.NewSource(42))
	regions := []string{"eu", "us", "ap"}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var batch []string
	flush := func(dst *[][]string) {
		if len(batch) > 0 {
			*dst = append(*dst, batch)
			batch = nil
		}
	}
	ts := func(t time.Time) string { return t.Format("2006-01-02 15:04:05.999999Z07:00") }
	num := func(f float64) string {
		if rnd.Intn(40) == 0 {
			return "NULL"
		}
		return strconv.FormatFloat(f, 'f', 3, 64)
	}
	for step := 0; step < 3*24*60/7; step++ {
		t := base.Add(time.Duration(step*7) * time.Minute)
		for h := 0; h < 10; h++ {
			region := "'" + regions[h%3] + "'"
			if h == 9 && step%5 == 0 {
				region = "NULL"
			}
			batch = append(batch, fmt.Sprintf("('%s', 'h%d', %s, %s, %s, %d)", ts(t.Add(time.Duration(h)*time.Second)), h, region,
				num(rnd.Float64()*100), num(rnd.Float64()*20), rnd.Intn(1000)-100))
		}
		if len(batch) >= 500 {
			flush(&cpu)
		}
	}
	for _, t := range []time.Time{time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC), time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2200, 1, 1, 12, 0, 0, 0, time.UTC)} {
		batch = append(batch, fmt.Sprintf("('%s', 'h0', 'eu', 1.5, 2.5, 3)", ts(t)))
	}
	flush(&cpu)
	for step := 0; step < 3*24*6; step++ {
		t := base.Add(time.Duration(step*10) * time.Minute)
		for h := 0; h < 10; h += 2 {
			batch = append(batch, fmt.Sprintf("('%s', 'h%d', %d, %s)", ts(t), h, rnd.Intn(1<<30), num(rnd.Float64()*1e6)))
		}
		if len(batch) >= 500 {
			flush(&mem)
		}
	}
	flush(&mem)
	return cpu, mem
}

const (
	cpuDDL = "CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, region TEXT, usage_user DOUBLE PRECISION, usage_system DOUBLE PRECISION, n BIGINT)"
	memDDL = "CREATE TABLE mem (time TIMESTAMPTZ NOT NULL, host TEXT, used BIGINT, free DOUBLE PRECISION)"
)

// corpusQueries are typical time-series queries. Every query's result is
// compared as a multiset of rows, so LIMIT is always under a total order.
func corpusQueries() []string {
	var q []string
	aggs := []string{"count(*)", "count(usage_user)", "sum(usage_user)", "avg(usage_system)", "min(usage_user)", "max(n)", "quantile_cont(usage_user, 0.9)", "median(usage_system)"}
	groups := []struct{ sel, by string }{
		{"", ""},
		{"host, ", " GROUP BY host"},
		{"region, ", " GROUP BY region"},
		{"time_bucket(INTERVAL '1 hour', time) AS b, ", " GROUP BY b"},
		{"date_trunc('day', time) AS d, host, ", " GROUP BY d, host"},
	}
	wheres := []string{
		"",
		" WHERE time >= '2026-03-02T00:00:00Z' AND time < '2026-03-02T06:00:00Z'",
		" WHERE host IN ('h1', 'h9') AND time BETWEEN '2026-03-01 12:00:00+00' AND '2026-03-03 12:00:00+00'",
		" WHERE time < '1970-01-01'",
	}
	for _, a := range aggs {
		for _, g := range groups {
			for _, w := range wheres {
				q = append(q, "SELECT "+g.sel+a+" FROM cpu"+w+g.by)
			}
		}
	}
	q = append(q,
		// Empty ranges and NULL handling.
		"SELECT count(*), sum(usage_user), avg(n) FROM cpu WHERE time > '2300-01-01'",
		"SELECT count(*) FROM cpu WHERE region IS NULL",
		"SELECT host, count(*) FILTER (WHERE usage_user IS NULL) FROM cpu GROUP BY host",
		"SELECT coalesce(region, 'none') AS r, count(*) FROM cpu GROUP BY r",
		"SELECT host, avg(coalesce(usage_user, 0)) FROM cpu GROUP BY host",
		"SELECT count(DISTINCT region) FROM cpu",
		"SELECT * FROM cpu WHERE time < '1970-01-01' ORDER BY time",
		"SELECT * FROM cpu WHERE time > '2100-01-01'",
		"SELECT host, max(time) FROM cpu GROUP BY host",
		"SELECT min(time), max(time) FROM cpu",
		// Top-N and last point per series.
		"SELECT host, time, usage_user FROM cpu WHERE usage_user IS NOT NULL ORDER BY usage_user DESC, time, host LIMIT 5",
		"SELECT host, usage_user FROM cpu ORDER BY time DESC, host LIMIT 10",
		"SELECT DISTINCT ON (host) host, time, usage_user FROM cpu WHERE time < '2100-01-01' ORDER BY host, time DESC",
		"SELECT host, arg_max(usage_user, time) FROM cpu WHERE time < '2100-01-01' GROUP BY host",
		"SELECT host, last_t FROM (SELECT host, max(time) AS last_t FROM cpu GROUP BY host) ORDER BY last_t DESC, host LIMIT 3",
		"SELECT * FROM (SELECT host, time, usage_user, row_number() OVER (PARTITION BY host ORDER BY time DESC) AS rn FROM cpu) WHERE rn = 1",
		// Window functions.
		"SELECT host, time, usage_user - lag(usage_user) OVER (PARTITION BY host ORDER BY time) AS d FROM cpu WHERE time < '2026-03-01 02:00:00+00' AND time >= '2026-03-01'",
		"SELECT host, time, avg(usage_user) OVER (PARTITION BY host ORDER BY time ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM cpu WHERE time BETWEEN '2026-03-02 00:00:00+00' AND '2026-03-02 01:00:00+00'",
		"SELECT host, sum(n) OVER (PARTITION BY host) FROM cpu WHERE time BETWEEN '2026-03-02 00:00:00+00' AND '2026-03-02 00:30:00+00'",
		"SELECT time, rank() OVER (ORDER BY usage_user DESC NULLS LAST, time, host) FROM cpu WHERE time < '2026-03-01 01:00:00+00' AND time >= '2026-03-01'",
		"SELECT host, ntile(4) OVER (ORDER BY time, host) FROM cpu WHERE time < '2026-03-01 00:30:00+00' AND time >= '2026-03-01'",
		"SELECT b, avg(u) OVER (ORDER BY b ROWS 3 PRECEDING) FROM (SELECT time_bucket(INTERVAL '6 hours', time) AS b, avg(usage_user) AS u FROM cpu GROUP BY b)",
		"SELECT host, time, first_value(usage_user) OVER (PARTITION BY host ORDER BY time) FROM cpu WHERE time < '2026-03-01 01:00:00+00' AND time >= '2026-03-01'",
		// Joins of two tables.
		"SELECT c.host, count(*) FROM cpu c JOIN mem m ON c.host = m.host AND date_trunc('hour', c.time) = date_trunc('hour', m.time) WHERE c.time < '2026-03-01 12:00:00+00' GROUP BY c.host",
		"SELECT m.host, avg(m.free), max(c.usage_user) FROM mem m LEFT JOIN cpu c USING (host) WHERE m.time >= '2026-03-02' AND m.time < '2026-03-02 02:00:00+00' AND c.time >= '2026-03-02' AND c.time < '2026-03-02 01:00:00+00' GROUP BY m.host",
		"SELECT c.host FROM cpu c LEFT JOIN mem m ON c.host = m.host AND c.time = m.time WHERE m.host IS NULL AND c.time < '2026-03-01 00:10:00+00' AND c.time >= '2026-03-01'",
		"SELECT count(*) FROM cpu c, mem m WHERE c.host = m.host AND c.time = m.time",
		"SELECT c.region, sum(m.used) FROM cpu c JOIN mem m ON c.host = m.host AND c.time = m.time GROUP BY c.region",
		"SELECT m.host, count(*) FROM mem m WHERE m.host IN (SELECT host FROM cpu WHERE region = 'eu') GROUP BY m.host",
		"SELECT host, count(*) FROM mem WHERE NOT EXISTS (SELECT 1 FROM cpu WHERE cpu.host = mem.host AND cpu.region = 'ap') GROUP BY host",
		// CTEs and subqueries.
		"WITH hourly AS (SELECT host, time_bucket(INTERVAL '1 hour', time) AS h, avg(usage_user) AS u FROM cpu GROUP BY ALL) SELECT host, max(u) FROM hourly GROUP BY host",
		"WITH t AS (SELECT * FROM cpu WHERE time < '2026-03-01 06:00:00+00' AND time >= '2026-03-01') SELECT region, count(*) FROM t GROUP BY region",
		"WITH a AS (SELECT host, avg(usage_user) AS u FROM cpu GROUP BY host), b AS (SELECT host, avg(free) AS f FROM mem GROUP BY host) SELECT a.host, a.u, b.f FROM a JOIN b USING (host)",
		"SELECT host, u FROM (SELECT host, avg(usage_user) AS u FROM cpu GROUP BY host) WHERE u > (SELECT avg(usage_user) FROM cpu)",
		"SELECT (SELECT count(*) FROM cpu) - (SELECT count(*) FROM mem)",
		"SELECT host, (SELECT max(used) FROM mem WHERE mem.host = cpu.host) FROM cpu WHERE time = '2026-03-01 00:00:00+00'",
		"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5) SELECT i, (SELECT count(*) FROM cpu WHERE n < i * 100) FROM r",
		// Time functions and zones.
		"SELECT date_trunc('day', time AT TIME ZONE 'America/New_York') AS d, count(*) FROM cpu GROUP BY d",
		"SELECT extract(hour FROM time) AS h, count(*) FROM cpu GROUP BY h",
		"SELECT extract(epoch FROM max(time)) FROM cpu",
		"SELECT time_bucket(INTERVAL '15 minutes', time, TIMESTAMPTZ '2026-03-01 00:05:00+00') AS b, count(*) FROM cpu WHERE time < '2026-03-01 03:00:00+00' AND time >= '2026-03-01' GROUP BY b",
		"SELECT count(*) FROM cpu WHERE time > to_timestamp(1772409600)",
		"SELECT count(*) FROM cpu WHERE time >= TIMESTAMPTZ '2026-03-02 00:00:00+01:00'",
		"SELECT strftime(time, '%Y-%m-%d %H') AS k, count(*) FROM cpu WHERE time < '2026-03-01 05:00:00+00' AND time >= '2026-03-01' GROUP BY k",
		"SELECT count(*) FROM cpu WHERE time > now() - INTERVAL '100 years'",
		"SELECT timezone('Asia/Tokyo', time)::DATE AS d, count(*) FROM cpu GROUP BY d",
		"SELECT age(TIMESTAMPTZ '2026-03-04 00:00:00+00', max(time)) FROM cpu WHERE time < '2100-01-01'",
		// Expressions, casts, CASE, integer division, text.
		"SELECT host, sum(CASE WHEN usage_user > 50 THEN 1 ELSE 0 END) FROM cpu GROUP BY host",
		"SELECT n / 7, count(*) FROM cpu WHERE n BETWEEN 0 AND 50 GROUP BY 1",
		"SELECT upper(host) || '-' || coalesce(region, '?'), count(*) FROM cpu GROUP BY 1",
		"SELECT round(avg(usage_user)::numeric, 2) FROM cpu",
		"SELECT host, string_agg(DISTINCT region, ',' ORDER BY region) FROM cpu GROUP BY host",
		"SELECT count(*) FROM cpu WHERE host LIKE 'h1%' OR region ILIKE 'E%'",
		"SELECT greatest(max(usage_user), max(usage_system)), least(min(usage_user), min(usage_system)) FROM cpu",
		"SELECT usage_user::INTEGER % 10 AS k, count(*) FROM cpu WHERE usage_user IS NOT NULL GROUP BY k",
		"SELECT host, count(*) FROM cpu GROUP BY host HAVING count(*) > 600",
		"SELECT region, host, count(*) FROM cpu GROUP BY ROLLUP (region, host)",
		"SELECT host FROM cpu UNION SELECT host FROM mem",
		"SELECT host FROM cpu INTERSECT SELECT host FROM mem",
		"SELECT host FROM cpu EXCEPT SELECT host FROM mem",
		"SELECT count(*) FROM (SELECT time FROM cpu UNION ALL SELECT time FROM mem)",
		"SELECT corr(usage_user, usage_system) IS NOT NULL FROM cpu",
		"SELECT bool_and(n > -200), bool_or(n > 800) FROM cpu",
		"SELECT histogram(n // 250) FROM cpu WHERE n >= 0",
		"SELECT list(host ORDER BY host) FROM (SELECT DISTINCT host FROM mem)",
		"SELECT host, mode(region) FROM cpu WHERE region IS NOT NULL GROUP BY host",
	)
	return q
}

// canonical renders a tsdb value (PostgreSQL text format) by its type OID.
func canonicalPG(raw []byte, oid uint32) string {
	if raw == nil {
		return "NULL"
	}
	s := string(raw)
	switch oid {
	case 16:
		return map[string]string{"t": "true", "f": "false"}[s]
	case 700, 701, 1700:
		if _, err := strconv.ParseInt(s, 10, 64); err == nil && oid == 1700 {
			return s
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return s
		}
		return canonFloat(f)
	case 1184:
		t, err := time.Parse("2006-01-02 15:04:05.999999-07", s)
		if err != nil {
			t, err = time.Parse("2006-01-02 15:04:05.999999-07:00", s)
		}
		if err != nil {
			return s
		}
		return t.UTC().Format(time.RFC3339Nano)
	case 1114:
		t, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			return s
		}
		return t.UTC().Format(time.RFC3339Nano)
	case 1082:
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return s
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return s
}

func canonFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	if f == 0 {
		return "0"
	}
	return strconv.FormatFloat(f, 'g', 12, 64)
}

// canonicalDuck renders a value of the reference DuckDB.
func canonicalDuck(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return canonFloat(x)
	case float32:
		return canonFloat(float64(x))
	case duckdb.Decimal:
		return canonFloat(x.Float64())
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		if x.IsInt64() {
			return x.String()
		}
		return canonFloat(f)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		return string(x)
	case duckdb.Interval:
		return pgInterval(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canonicalDuck(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v)
}

// pgInterval renders an interval as PostgreSQL prints it (IntervalStyle
// postgres), for the intervals the corpus produces.
func pgInterval(iv duckdb.Interval) string {
	var parts []string
	if y, m := iv.Months/12, iv.Months%12; y != 0 || m != 0 {
		if y != 0 {
			parts = append(parts, fmt.Sprintf("%d year%s", y, plural(int64(y))))
		}
		if m != 0 {
			parts = append(parts, fmt.Sprintf("%d mon%s", m, plural(int64(m))))
		}
	}
	if iv.Days != 0 {
		parts = append(parts, fmt.Sprintf("%d day%s", iv.Days, plural(int64(iv.Days))))
	}
	if iv.Micros != 0 || len(parts) == 0 {
		us, sign := iv.Micros, ""
		if us < 0 {
			us, sign = -us, "-"
		}
		clock := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
		if frac := us % 1_000_000; frac != 0 {
			clock += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
		parts = append(parts, clock)
	}
	return strings.Join(parts, " ")
}

func plural(n int64) string {
	if n == 1 || n == -1 {
		return ""
	}
	return "s"
}

// sameRows compares canonical rows; numbers may differ in the last digits
// (floating-point sums depend on the order rows are added in).
func sameRows(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		g, w := strings.Split(got[i], "|"), strings.Split(want[i], "|")
		if len(g) != len(w) {
			return false
		}
		for j := range g {
			if g[j] == w[j] {
				continue
			}
			a, err1 := strconv.ParseFloat(g[j], 64)
			b, err2 := strconv.ParseFloat(w[j], 64)
			if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-7*math.Max(math.Abs(a), math.Abs(b)) {
				return false
			}
		}
	}
	return true
}

type corpus struct {
	t       *testing.T
	ref     *sql.DB
	queries []string
}

func newCorpus(t *testing.T) *corpus {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := sql.OpenDB(connector)
	t.Cleanup(func() { ref.Close() })
	for _, q := range []string{"SET integer_division = true", "SET TimeZone = 'UTC'"} {
		if _, err := ref.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return &corpus{t: t, ref: ref, queries: corpusQueries()}
}

func (c *corpus) refRows(q string) ([]string, error) {
	rows, err := c.ref.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = canonicalDuck(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out, rows.Err()
}

func tsdbRows(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	var out []string
	for rows.Next() {
		raw := rows.RawValues()
		parts := make([]string, len(raw))
		for i, r := range raw {
			parts[i] = canonicalPG(r, fds[i].DataTypeOID)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out, rows.Err()
}

// run compares every corpus query on tsdb with the reference.
func (c *corpus) run(stage string, conn *pgx.Conn) int {
	ctx := context.Background()
	failures := 0
	for _, q := range c.queries {
		want, err := c.refRows(q)
		if err != nil {
			c.t.Fatalf("reference rejects corpus query %q: %v", q, err)
		}
		got, err := tsdbRows(ctx, conn, q)
		if err != nil {
			c.t.Errorf("%s: %s: %v", stage, q, err)
			failures++
			continue
		}
		if !sameRows(got, want) {
			failures++
			if len(got) > 5 {
				got = got[:5]
			}
			if len(want) > 5 {
				want = want[:5]
			}
			c.t.Errorf("%s: %s\n got  %v\n want %v", stage, q, got, want)
		}
	}
	return failures
}

func (c *corpus) both(conn *pgx.Conn, q string) {
	c.t.Helper()
	if _, err := c.ref.Exec(q); err != nil {
		c.t.Fatalf("reference: %s: %v", q, err)
	}
	if _, err := conn.Exec(context.Background(), q); err != nil {
		c.t.Fatalf("tsdb: %s: %v", q, err)
	}
}

// TestQueryCorpus runs the corpus with data split between several Delta
// files and the MemBuffer, again after DELETE and UPDATE, and again after
// a kill -9 and restart.
func TestQueryCorpus(t *testing.T) {
	c := newCorpus(t)
	if len(c.queries) < 150 {
		t.Fatalf("corpus has %d queries, want at least 150", len(c.queries))
	}
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--bucket-duration", "6h"})
	ctx := context.Background()
	conn := s.connect(ctx)
	c.both(conn, cpuDDL)
	c.both(conn, memDDL)
	cpu, mem := corpusData()
	for i, b := range cpu {
		c.both(conn, "INSERT INTO cpu VALUES "+strings.Join(b, ","))
		if i == len(cpu)/3 || i == 2*len(cpu)/3 {
			if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, b := range mem {
		c.both(conn, "INSERT INTO mem VALUES "+strings.Join(b, ","))
		if i == len(mem)/2 {
			if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Late rows into flushed time ranges.
	c.both(conn, "INSERT INTO cpu VALUES ('2026-03-01 00:00:30+00', 'h3', 'eu', 99.5, 1.5, 7), ('2026-03-01 03:33:00+00', 'h11', NULL, NULL, NULL, 8)")
	failures := c.run("split layers", conn)

	c.both(conn, "DELETE FROM cpu WHERE host = 'h2' AND time >= '2026-03-02' AND time < '2026-03-02 12:00:00+00'")
	c.both(conn, "UPDATE cpu SET usage_user = usage_user * 2, region = 'eu' WHERE host = 'h7' AND time < '2026-03-01 12:00:00+00'")
	c.both(conn, "DELETE FROM mem WHERE free < 1000")
	c.both(conn, "UPDATE cpu SET time = time + INTERVAL '1 hour' WHERE host = 'h5' AND time >= '2026-03-03'")
	failures += c.run("after DELETE/UPDATE", conn)

	s.kill9()
	s = startServer(t, dir, []string{"--bucket-duration", "6h"})
	failures += c.run("after kill -9 and restart", s.connect(ctx))
	t.Logf("corpus: %d queries x 3 stages, %d mismatches", len(c.queries), failures)
	s.stop()
}
