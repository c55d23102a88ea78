package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPsqlIsInstalled(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is missing: `make test` installs postgresql-client")
	}
}

// The README's quick start, typed into the real psql.
func TestQuickStartWithPsql(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	out := s.psql(`CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION, n BIGINT);
INSERT INTO cpu VALUES (now(), 'a', 0.5, 1), ('2026-01-01 00:00:00+00', 'b', 1.5, 2);
SELECT host, avg(usage) FROM cpu WHERE time > now() - interval '1 day' GROUP BY host;
CHECKPOINT;
SELECT count(*) FROM cpu;
SELECT time, host FROM cpu WHERE host = 'b';
`)
	for _, want := range []string{
		"CREATE TABLE",
		"INSERT 0 2",
		" a    | 0.5",
		"(1 row)",
		"CHECKPOINT",
		"     2",
		" 2026-01-01 00:00:00+00 | b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("psql output lacks %q:\n%s", want, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(s.dataDir, "tables", "cpu", "*.parquet"))
	logs, _ := filepath.Glob(filepath.Join(s.dataDir, "tables", "cpu", "_delta_log", "*.json"))
	// Two tiny buckets (now and 2026-01-01) are merged into one file.
	if len(files) != 1 || len(logs) != 2 {
		t.Fatalf("after CHECKPOINT: %d parquet files, %d commits; want 1 and 2", len(files), len(logs))
	}
	// psql's unaligned output of several statements, errors included.
	out, err := s.psqlErr("SELECT 1 AS one; SELECT * FROM nope;", "-A", "-t")
	if err == nil || !strings.Contains(out, `relation "nope" does not exist`) {
		t.Fatalf("error through psql: %v\n%s", err, out)
	}
}

// Values come back with PostgreSQL's OIDs and text formats: pgx decodes
// each column by its OID, so a wrong format fails the scan.
func TestTypesAndCommandTags(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	tag, err := c.Exec(ctx, `CREATE TABLE m (ts TIMESTAMPTZ, local TIMESTAMP, f8 DOUBLE PRECISION, f4 REAL, i8 BIGINT, i4 INTEGER, i2 SMALLINT, b BOOLEAN, s TEXT, v VARCHAR(10))`)
	if err != nil || tag.String() != "CREATE TABLE" {
		t.Fatalf("create: %q %v", tag, err)
	}
	tag, err = c.Exec(ctx, `INSERT INTO m VALUES
		('2026-01-01 12:00:00.123456+02', '2026-01-01 12:00:00', 1.5, 2.25, 9007199254740993, -7, 3, true, 'héllo', 'x'),
		('1969-12-31 23:59:59+00', '1900-01-01 00:00:00', -0.1, NULL, NULL, NULL, NULL, false, NULL, NULL),
		('2026-01-02T00:00:00Z', NULL, 'NaN', 'Infinity', 0, 0, 0, NULL, '', '')`)
	if err != nil || tag.String() != "INSERT 0 3" {
		t.Fatalf("insert: %q %v", tag, err)
	}
	for _, stage := range []string{"buffered", "flushed"} {
		rows, err := c.Query(ctx, "SELECT ts, local, f8, f4, i8, i4, i2, b, s, v FROM m ORDER BY ts")
		if err != nil {
			t.Fatal(err)
		}
		wantOIDs := []uint32{1184, 1114, 701, 700, 20, 23, 21, 16, 25, 25}
		for i, fd := range rows.FieldDescriptions() {
			if fd.DataTypeOID != wantOIDs[i] {
				t.Errorf("%s: column %s has OID %d, want %d", stage, fd.Name, fd.DataTypeOID, wantOIDs[i])
			}
		}
		var got []string
		for rows.Next() {
			var (
				ts    time.Time
				local *time.Time
				f8    float64
				f4    *float32
				i8    *int64
				i4    *int32
				i2    *int16
				b     *bool
				str   *string
				v     *string
			)
			if err := rows.Scan(&ts, &local, &f8, &f4, &i8, &i4, &i2, &b, &str, &v); err != nil {
				t.Fatalf("%s: scan: %v", stage, err)
			}
			got = append(got, fmt.Sprintf("%s %v %v %v %v %v %v %v %v %v", ts.UTC().Format(time.RFC3339Nano), fmtp(local), f8, fmtp(f4), fmtp(i8), fmtp(i4), fmtp(i2), fmtp(b), fmtp(str), fmtp(v)))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if tag := rows.CommandTag(); tag.String() != "SELECT 3" {
			t.Errorf("%s: tag %q", stage, tag)
		}
		want := []string{
			"1969-12-31T23:59:59Z 1900-01-01 00:00:00 -0.1 NULL NULL NULL NULL false NULL NULL",
			"2026-01-01T10:00:00.123456Z 2026-01-01 12:00:00 1.5 2.25 9007199254740993 -7 3 true héllo x",
			"2026-01-02T00:00:00Z NULL NaN +Inf 0 0 0 NULL  ",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s rows:\n%s\nwant:\n%s", stage, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
	}
	tag, err = c.Exec(ctx, "DROP TABLE m")
	if err != nil || tag.String() != "DROP TABLE" {
		t.Fatalf("drop: %q %v", tag, err)
	}
}

func fmtp[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	if tm, ok := any(*p).(time.Time); ok {
		return tm.Format("2006-01-02 15:04:05")
	}
	return fmt.Sprint(*p)
}

// Every error has its SQLSTATE and the connection stays usable afterwards.
func TestErrorsKeepConnectionUsable(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, usage DOUBLE PRECISION)"); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ q, code string }{
		{"SELECT * FROM nope", "42P01"},
		{"SELECT nope FROM cpu", "42703"},
		{"INSERT INTO cpu (time, nope) VALUES (now(), 1)", "42703"},
		{"SELEKT 1", "42601"},
		{"INSERT INTO cpu VALUES (now(), 'a', 'zero')", "22P02"},
		{"INSERT INTO cpu VALUES ('yesterday-ish', 'a', 1)", "22007"},
		{"INSERT INTO cpu VALUES ('2026-02-30 00:00:00', 'a', 1)", "22008"},
		{"INSERT INTO cpu VALUES (NULL, 'a', 1)", "23502"},
		{"SELECT * FROM read_csv('/etc/passwd')", "42501"},
		{"COPY cpu TO '/tmp/tsdb-e2e-copy.csv'", "42501"},
		{"ATTACH '/tmp/x.db' AS x", "42501"},
		{"INSTALL httpfs", "42501"},
		{"LOAD 'httpfs'", "42501"},
		// PostgreSQL's SQLSTATEs for what the engine words its own way.
		{"SELECT * FROM cpu WHERE row_number() OVER (ORDER BY time) < 10", "42P20"},
		{"SELECT max(min(usage)) FROM cpu", "42803"},
		{"SELECT * FROM generate_series(1, 5, 0)", "22023"},
		{"SELECT 1 UNION SELECT 1, 2", "42601"},
		{"SELECT * FROM cpu WHERE (host, usage) IN (SELECT host, usage, time FROM cpu)", "42601"},
		{"SELECT sum(usage) OVER (ORDER BY time, host RANGE BETWEEN '1 hour'::interval PRECEDING AND CURRENT ROW) FROM cpu", "42P20"},
	}
	for _, tt := range tests {
		wantSQLState(t, c, tt.q, tt.code)
	}
	if _, err := os.Stat("/tmp/tsdb-e2e-copy.csv"); err == nil {
		t.Error("COPY TO wrote a file")
	}
	// In one query string, statements before an error run, those after do not.
	_, err := c.Exec(ctx, "INSERT INTO cpu VALUES (now(), 'first', 1); SELECT * FROM nope; INSERT INTO cpu VALUES (now(), 'third', 3)")
	if err == nil {
		t.Fatal("multi-statement with an error succeeded")
	}
	var hosts string
	if err := c.QueryRow(ctx, "SELECT string_agg(host, ',') FROM cpu").Scan(&hosts); err != nil || hosts != "first" {
		t.Fatalf("rows after failed multi-statement: %q %v", hosts, err)
	}
	// Empty and comment-only queries get EmptyQueryResponse.
	res := c.PgConn().Exec(ctx, "-- just a comment")
	if _, err := res.ReadAll(); err != nil {
		t.Fatalf("comment-only query: %v", err)
	}
}

// The known trap of DESIGN.md: projections and filters over buffered rows.
func TestBufferedProjections(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE cpu (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)"); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO cpu VALUES ")
	for i := 0; i < 1000; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "('2026-01-01 00:00:00+00'::timestamptz + interval '%d seconds', 'h%d', %d)", i, i%10, i)
	}
	if _, err := c.Exec(ctx, sb.String()); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		q    string
		want string
	}{
		{"SELECT sum(v) FROM cpu", "499500"},
		{"SELECT max(host) FROM cpu", "h9"},
		{"SELECT count(*) FROM cpu WHERE host = 'h7'", "100"},
		{"SELECT host || '/' || n FROM (SELECT v, host, 7 AS n FROM cpu) WHERE host = 'h3' ORDER BY v LIMIT 1", "h3/7"},
		{"SELECT sum(v) FROM (SELECT * FROM cpu)", "499500"},
	}
	for _, ch := range checks {
		var v any
		if err := c.QueryRow(ctx, ch.q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", ch.q, err)
		}
		if got := fmt.Sprint(v); got != ch.want {
			t.Errorf("%s = %s, want %s", ch.q, got, ch.want)
		}
	}
}
