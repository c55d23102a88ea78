package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// psql's \copy in text and CSV, COPY TO STDOUT, and pgx's binary CopyFrom.
func TestCopy(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	s.psql("CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT);")

	dir := t.TempDir()
	text := filepath.Join(dir, "m.txt")
	os.WriteFile(text, []byte("2026-01-01 00:00:00+00\ta\t1.5\t1\n2026-01-01 00:00:01+00\t\\N\t\\N\t2\n2026-01-01 00:00:02.5+00\tc\\tx\tNaN\t3\n"), 0o644)
	csvFile := filepath.Join(dir, "m.csv")
	os.WriteFile(csvFile, []byte("time;host;v;n\n2026-01-02T00:00:00Z;\"semi;colon\";2.5;10\n2026-01-02 00:00:01 +0000;;;11\n"), 0o644)
	out := s.psql(fmt.Sprintf("\\copy m FROM '%s'\n\\copy m (time, host, v, n) FROM '%s' WITH (FORMAT csv, HEADER, DELIMITER ';')\nSELECT count(*), count(host), count(v) FROM m;\n", text, csvFile), "-A", "-t")
	if !strings.Contains(out, "COPY 3") || !strings.Contains(out, "COPY 2") || !strings.Contains(out, "5|3|3") {
		t.Fatalf("psql \\copy:\n%s", out)
	}
	// A bad line fails the whole COPY, names the line, and nothing lands.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("2026-01-03 00:00:00+00\tok\t1\t1\n2026-01-03 00:00:01+00\tbad\tnot-a-number\t2\n"), 0o644)
	out, err := s.psqlErr(fmt.Sprintf("\\copy m FROM '%s'\n", bad))
	if err == nil || !strings.Contains(out, "line 2") {
		t.Fatalf("bad COPY: %v\n%s", err, out)
	}
	// pgx sends the data without waiting for the server to accept the
	// COPY: when the statement fails first, the data that follows is
	// ignored (as PostgreSQL does) and the connection stays usable.
	fc := s.connect(ctx)
	if _, err := fc.PgConn().CopyFrom(ctx, strings.NewReader("1\n2\n"), "COPY nope FROM STDIN"); pgCode(err) != "42P01" {
		t.Fatalf("COPY into a missing table: %v", err)
	}
	var one int
	if err := fc.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after a failed COPY: %v", err)
	}
	fc.Close(ctx)
	// COPY TO STDOUT as CSV with a header.
	out = s.psql("COPY (SELECT host, n FROM m WHERE n < 3 ORDER BY n) TO STDOUT WITH (FORMAT csv, HEADER);\n")
	if !strings.Contains(out, "host,n\na,1\n,2\n") {
		t.Fatalf("COPY TO STDOUT:\n%q", out)
	}
	// The text file's rows come back out as they went in: NULLs, escapes,
	// NaN and fractional seconds.
	out = s.psql("COPY (SELECT * FROM m WHERE n <= 3 ORDER BY n) TO STDOUT;\n")
	if want, _ := os.ReadFile(text); !strings.Contains(out, string(want)) {
		t.Fatalf("text COPY TO of the rows copied in:\n%q\nwant\n%q", out, want)
	}
	out = s.psql("\\copy (SELECT host FROM m WHERE n = 3) TO STDOUT\n")
	if !strings.Contains(out, `c\tx`) {
		t.Fatalf("text COPY TO escapes:\n%q", out)
	}

	// pgx CopyFrom uses the binary format.
	c := s.connect(ctx)
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := 0; i < 1000; i++ {
		var host any = fmt.Sprintf("h%d", i%7)
		if i%100 == 0 {
			host = nil
		}
		rows = append(rows, []any{t0.Add(time.Duration(i) * time.Second), host, float64(i) / 8, int64(i)})
	}
	n, err := c.CopyFrom(ctx, pgx.Identifier{"m"}, []string{"time", "host", "v", "n"}, pgx.CopyFromRows(rows))
	if err != nil || n != 1000 {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}
	var cnt, nulls int64
	var sum float64
	if err := c.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE host IS NULL), sum(v) FROM m WHERE time >= '2026-02-01'").Scan(&cnt, &nulls, &sum); err != nil {
		t.Fatal(err)
	}
	if cnt != 1000 || nulls != 10 || sum != 999*1000/2/8.0 {
		t.Fatalf("after CopyFrom: %d rows, %d NULL hosts, sum %v", cnt, nulls, sum)
	}
	// COPY into an unknown column and a file path are refused.
	var pe *pgconn.PgError
	if _, err := c.Exec(ctx, "COPY m (nope) FROM STDIN"); !errors.As(err, &pe) || pe.Code != "42703" {
		t.Fatalf("unknown column: %v", err)
	}
	if _, err := c.Exec(ctx, "COPY m FROM '/etc/passwd'"); !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("COPY from a file: %v", err)
	}
}

// A COPY larger than --memory-limit fails with 54000 instead of filling
// memory; the connection stays usable and nothing lands.
func TestCopyLargerThanTheLimit(t *testing.T) {
	s := startServer(t, t.TempDir(), []string{"--memory-limit", "1MiB"})
	ctx := context.Background()
	c := s.connect(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, s TEXT)"); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 3<<20; i++ {
		fmt.Fprintf(&sb, "2026-01-01 00:00:%02d+00\t%s\n", i%60, strings.Repeat("x", 200))
	}
	_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY m FROM STDIN")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "54000" {
		t.Fatalf("oversized COPY: %v", err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM m").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the refused COPY: %d rows, %v", n, err)
	}
}

// Booleans read by PostgreSQL's boolin on every path: COPY, INSERT and a
// cast of a constant take 'on', 'of', ' yes ' and unique prefixes, and
// refuse what PostgreSQL refuses ('o').
func TestBooleanInput(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE b (time TIMESTAMPTZ NOT NULL, n INT, v BOOLEAN)"); err != nil {
		t.Fatal(err)
	}
	words := []struct {
		text string
		want bool
	}{{"t", true}, {"TRU", true}, {" yes ", true}, {"on", true}, {"1", true}, {"f", false}, {"fa", false}, {"NO", false}, {"of", false}, {"off", false}, {"0", false}}
	var data strings.Builder
	for i, w := range words {
		fmt.Fprintf(&data, "2026-01-01 00:00:00+00\t%d\t%s\n", i, w.text)
		if _, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO b VALUES ('2026-01-02', %d, '%s')", i, w.text), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("INSERT %q: %v", w.text, err)
		}
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data.String()), "COPY b FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		var copied, inserted, cast bool
		if err := c.QueryRow(ctx, fmt.Sprintf("SELECT (SELECT v FROM b WHERE n = %d AND time = '2026-01-01'), (SELECT v FROM b WHERE n = %d AND time = '2026-01-02'), '%s'::boolean", i, i, w.text), pgx.QueryExecModeSimpleProtocol).Scan(&copied, &inserted, &cast); err != nil {
			t.Fatalf("%q: %v", w.text, err)
		}
		if copied != w.want || inserted != w.want || cast != w.want {
			t.Errorf("%q: COPY %v, INSERT %v, cast %v; want %v", w.text, copied, inserted, cast, w.want)
		}
	}
	_, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-01-03 00:00:00+00\t99\to\n"), "COPY b FROM STDIN")
	if pgCode(err) != "22P02" {
		t.Errorf("COPY of 'o': %v, want 22P02", err)
	}
	if _, err := c.Exec(ctx, "SELECT 'o'::boolean"); pgCode(err) != "22P02" {
		t.Errorf("'o'::boolean: %v, want 22P02", err)
	}
}
