package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// dedupRows renders a table's rows, ordered, one line each.
func dedupRows(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	return strings.Join(readerRows(t, c, q), "\n")
}

// A table WITH (dedup_keys = …) keeps one row per point (time and keys)
// whichever way the second row of a point arrives: in the same
// statement, in a later one while the first is buffered, after it was
// flushed, by COPY, inside a transaction block (and not after ROLLBACK),
// and after a crash. What cannot keep that promise is refused.
func TestDedupKeysSQL(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer func() { c.Close(ctx) }()
	const all = "SELECT time, host, cpu, v, w FROM m ORDER BY time, host, cpu NULLS FIRST"
	execAll(t, c, "CREATE TABLE m (time timestamptz, host text, cpu text, v float8, w int) WITH (dedup_keys = 'host, cpu')")
	if got := dedupRows(t, c, "SELECT array_to_string(reloptions, ';') FROM pg_class WHERE relname = 'm'"); got != "dedup_keys=time,host,cpu" {
		t.Fatalf("reloptions: %s", got)
	}
	steps := []struct {
		name  string
		stmts []string
		want  string
	}{
		{"one statement: the last row of a point wins; a NULL key is a value",
			[]string{`INSERT INTO m VALUES ('2026-01-01 00:00:00+00', 'a', 'c0', 1, 10), ('2026-01-01 00:00:00+00', 'b', 'c0', 2, 20),
				('2026-01-01 00:00:00+00', 'a', NULL, 3, 30), ('2026-01-01 00:00:00+00', 'a', 'c0', 4, 40), ('2026-01-01 00:00:00+00', 'a', NULL, 5, 50)`},
			"2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|4|40\n2026-01-01 00:00:00 +0000 UTC|b|c0|2|20"},
		{"a later statement replaces the buffered row, NULLs included",
			[]string{`INSERT INTO m VALUES ('2026-01-01 00:00:00+00', 'a', 'c0', 6, NULL), ('2026-01-01 00:00:01+00', 'a', 'c0', 7, 70)`},
			"2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|6|NULL\n2026-01-01 00:00:00 +0000 UTC|b|c0|2|20\n2026-01-01 00:00:01 +0000 UTC|a|c0|7|70"},
		{"after a flush, the row in the file is replaced",
			[]string{"CHECKPOINT", `INSERT INTO m VALUES ('2026-01-01 00:00:00+00', 'b', 'c0', 22, 220)`},
			"2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|6|NULL\n2026-01-01 00:00:00 +0000 UTC|b|c0|22|220\n2026-01-01 00:00:01 +0000 UTC|a|c0|7|70"},
		{"ROLLBACK keeps the old row",
			[]string{"BEGIN", `INSERT INTO m VALUES ('2026-01-01 00:00:01+00', 'a', 'c0', 0, 0)`, "ROLLBACK"},
			"2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|6|NULL\n2026-01-01 00:00:00 +0000 UTC|b|c0|22|220\n2026-01-01 00:00:01 +0000 UTC|a|c0|7|70"},
		{"a block replaces its own rows and the table's",
			[]string{"BEGIN", `INSERT INTO m VALUES ('2026-01-01 00:00:02+00', 'z', 'c0', 1, 1)`, `INSERT INTO m VALUES ('2026-01-01 00:00:02+00', 'z', 'c0', 2, 2), ('2026-01-01 00:00:01+00', 'a', 'c0', 8, 80)`, "COMMIT"},
			"2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|6|NULL\n2026-01-01 00:00:00 +0000 UTC|b|c0|22|220\n2026-01-01 00:00:01 +0000 UTC|a|c0|8|80\n2026-01-01 00:00:02 +0000 UTC|z|c0|2|2"},
	}
	for _, st := range steps {
		execAll(t, c, st.stmts...)
		if got := dedupRows(t, c, all); got != st.want {
			t.Fatalf("%s:\n%s\nwant\n%s", st.name, got, st.want)
		}
	}
	// The block sees one row of its point before COMMIT.
	execAll(t, c, "BEGIN", `INSERT INTO m VALUES ('2026-01-01 00:00:03+00', 'y', 'c0', 1, 1)`, `INSERT INTO m VALUES ('2026-01-01 00:00:03+00', 'y', 'c0', 2, 2)`)
	if got := dedupRows(t, c, "SELECT v FROM m WHERE host = 'y'"); got != "2" {
		t.Fatalf("inside the block: %q, want one row, v 2", got)
	}
	execAll(t, c, "COMMIT")

	// COPY: the tag counts the rows read.
	file := filepath.Join(t.TempDir(), "m.tsv")
	os.WriteFile(file, []byte("2026-01-01 00:00:05+00\ta\tc0\t1\t1\n2026-01-01 00:00:05+00\ta\tc0\t2\t2\n2026-01-01 00:00:00+00\tb\tc0\t99\t99\n"), 0o644)
	for range 2 {
		if out := s.psql(fmt.Sprintf(`\copy m FROM '%s'`, file)); !strings.Contains(out, "COPY 3") {
			t.Fatalf("\\copy: %s", out)
		}
	}
	want := "2026-01-01 00:00:00 +0000 UTC|a|NULL|5|50\n2026-01-01 00:00:00 +0000 UTC|a|c0|6|NULL\n2026-01-01 00:00:00 +0000 UTC|b|c0|99|99\n2026-01-01 00:00:01 +0000 UTC|a|c0|8|80\n" +
		"2026-01-01 00:00:02 +0000 UTC|z|c0|2|2\n2026-01-01 00:00:03 +0000 UTC|y|c0|2|2\n2026-01-01 00:00:05 +0000 UTC|a|c0|2|2"
	if got := dedupRows(t, c, all); got != want {
		t.Fatalf("after COPY:\n%s\nwant\n%s", got, want)
	}

	// Refused: what would give a point two rows, or mean something else.
	for _, q := range []struct{ sql, code string }{
		{"UPDATE m SET host = 'q' WHERE host = 'a'", "0A000"},
		{"UPDATE m SET time = time + interval '1 hour'", "0A000"},
		{"INSERT INTO m VALUES ('2026-01-01 00:00:00+00', 'a', 'c0', 1, 1) ON CONFLICT DO NOTHING", "0A000"},
		{"ALTER TABLE m SET (dedup_keys = 'host, nope')", "42703"},
		{"ALTER TABLE m SET (dedup_keys = 'v')", "22023"},
		{"CREATE TABLE k (time timestamptz, id int PRIMARY KEY) WITH (dedup_keys = 'id')", "0A000"},
	} {
		wantSQLState(t, c, q.sql, q.code)
	}
	// UPDATE of other columns works, and the point keeps one row.
	execAll(t, c, "UPDATE m SET v = v * 10 WHERE host = 'z'")
	// A bad key in an ALTER that adds a column changes nothing.
	wantSQLState(t, c, "ALTER TABLE m ADD COLUMN extra int, SET (dedup_keys = 'host, nope')", "42703")
	if n := queryInt(t, c, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'm' AND column_name = 'extra'"); n != 0 {
		t.Fatal("a refused ALTER added its column")
	}

	// Another identity: the rows must not repeat it already (23505, as
	// PostgreSQL refuses a unique index over duplicates).
	execAll(t, c, "ALTER TABLE m RESET (dedup_keys)", `INSERT INTO m VALUES ('2026-01-01 00:00:02+00', 'z', 'c0', 3, 3)`)
	// A block that wrote rows unchecked cannot commit them once the
	// table has keys (40001), nor can a COPY.
	// Also when the block writes the table again after the keys came
	// (with a column added, which the block's rows then have).
	for _, again := range []bool{false, true} {
		other := s.connect(ctx)
		execAll(t, other, "BEGIN", `INSERT INTO m VALUES ('2026-01-01 00:00:06+00', 'x', 'c0', 1, 1), ('2026-01-01 00:00:06+00', 'x', 'c0', 2, 2)`)
		execAll(t, c, fmt.Sprintf("ALTER TABLE m ADD COLUMN IF NOT EXISTS extra%v int, SET (dedup_keys = 'host,cpu,w')", again))
		if again {
			other.Exec(ctx, `INSERT INTO m (time, host, cpu, v) VALUES ('2026-01-01 00:00:07+00', 'x', 'c0', 3)`)
		}
		if _, err := other.Exec(ctx, "COMMIT"); err == nil || !strings.Contains(err.Error(), "40001") {
			t.Fatalf("COMMIT of rows written before dedup_keys (written again: %v): %v, want 40001", again, err)
		}
		other.Close(ctx)
		if n := queryInt(t, c, "SELECT count(*) FROM m WHERE host = 'x'"); n != 0 {
			t.Fatalf("%d rows of the refused block landed", n)
		}
		execAll(t, c, "ALTER TABLE m RESET (dedup_keys)")
	}
	wantSQLState(t, c, "ALTER TABLE m SET (dedup_keys = 'host,cpu')", "23505")
	execAll(t, c, "DELETE FROM m WHERE host = 'z' AND v = 3", "ALTER TABLE m SET (dedup_keys = 'host,cpu')")
	if n := queryInt(t, c, "SELECT count(*) FROM m WHERE host = 'z'"); n != 1 {
		t.Fatalf("%d rows of z", n)
	}

	// After a crash, replay keeps what each statement did.
	execAll(t, c, `INSERT INTO m VALUES ('2026-01-01 00:00:05+00', 'a', 'c0', 3, 3)`)
	want = dedupRows(t, c, all)
	c.Close(ctx)
	s.kill9()
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	if got := dedupRows(t, c, all); got != want {
		t.Fatalf("after kill -9:\n%s\nwant\n%s", got, want)
	}

	// Any Delta reader sees one row per point.
	execAll(t, c, "CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "m"))
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT count(*) AS n, uniqExact(toString(time) || host || ifNull(cpu, '~')) AS p, sum(w) AS w FROM deltaLakeLocal('%s')", table)), []string{"n", "p", "w"})
	if want := dedupRows(t, c, "SELECT count(*), count(DISTINCT (time, host, cpu)), sum(w) FROM m"); len(got) != 1 || got[0] != want || !strings.HasPrefix(want, "7|7|") {
		t.Fatalf("chDB read %v, tsdb %s", got, want)
	}
}

// Tables line protocol creates identify a point by its tag set and time,
// as InfluxDB does: a point written again replaces it, fields written in
// two parts merge (a field the second part lacks keeps its value), in the
// buffer and after a flush; a tag that appears later joins the identity.
func TestDedupLineProtocol(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	s := startServer(t, dir, []string{"--http-addr", httpAddr})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	url := "http://" + httpAddr + "/write?db=tsdb&precision=s"
	write := func(body string) {
		t.Helper()
		if code, msg := post(t, url, body); code != http.StatusNoContent {
			t.Fatalf("write %q: %d %s", body, code, msg)
		}
	}
	const all = "SELECT time, host, region, dc, usage, idle, sys FROM cpu ORDER BY time, host, dc NULLS FIRST"
	write("cpu,host=a,region=eu usage=1,idle=9 1767225600\ncpu,host=b usage=2 1767225600\ncpu,host=a,region=eu usage=3 1767225600")
	write("cpu,host=a,region=eu sys=4 1767225600\ncpu,host=b,dc=x usage=5 1767225600")
	want := "2026-01-01 00:00:00 +0000 UTC|a|eu|NULL|3|9|4\n2026-01-01 00:00:00 +0000 UTC|b|NULL|NULL|2|NULL|NULL\n2026-01-01 00:00:00 +0000 UTC|b|NULL|x|5|NULL|NULL"
	if got := dedupRows(t, c, all); got != want {
		t.Fatalf("buffered:\n%s\nwant\n%s", got, want)
	}
	if got := dedupRows(t, c, "SELECT array_to_string(reloptions, ';') FROM pg_class WHERE relname = 'cpu'"); got != "cluster_by=host;dedup_keys=time,host,region,dc" {
		t.Fatalf("reloptions: %s", got)
	}
	execAll(t, c, "CHECKPOINT")
	write("cpu,host=a,region=eu idle=7 1767225600\ncpu,host=b usage=6 1767225600")
	want = "2026-01-01 00:00:00 +0000 UTC|a|eu|NULL|3|7|4\n2026-01-01 00:00:00 +0000 UTC|b|NULL|NULL|6|NULL|NULL\n2026-01-01 00:00:00 +0000 UTC|b|NULL|x|5|NULL|NULL"
	if got := dedupRows(t, c, all); got != want {
		t.Fatalf("after a flush:\n%s\nwant\n%s", got, want)
	}
	// A SQL write into the table replaces whole rows.
	execAll(t, c, "INSERT INTO cpu (time, host, region, usage) VALUES ('2026-01-01 00:00:00+00', 'a', 'eu', 10)")
	if got := dedupRows(t, c, "SELECT usage, idle, sys FROM cpu WHERE host = 'a'"); got != "10|NULL|NULL" {
		t.Fatalf("after a SQL insert: %s", got)
	}
	execAll(t, c, "CHECKPOINT")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "cpu"))
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT count(*) AS n, sum(usage) AS u FROM deltaLakeLocal('%s')", table)), []string{"n", "u"})
	if len(got) != 1 || got[0] != "3|21" {
		t.Fatalf("chDB read %v, want 3|21", got)
	}

	// A tag whose column the table has already (made for a string
	// field) joins the identity too: points with two values of it are
	// two points.
	write("disk,host=a mode=\"rw\",used=1 1767225600")
	write("disk,host=a,mode=ro used=2 1767225600\ndisk,host=a,mode=rw used=3 1767225600")
	if got := dedupRows(t, c, "SELECT mode, used FROM disk ORDER BY mode"); got != "ro|2\nrw|3" {
		t.Fatalf("disk:\n%s", got)
	}

	// Writers at once, each sending its hosts' points over the same
	// times, every request twice: one row per point.
	var bodies []string
	for h := range 8 {
		var b strings.Builder
		for i := range 300 {
			fmt.Fprintf(&b, "fleet,host=h%d v=%d,w=%d %d\n", h, i, h, 1767225600+i)
		}
		bodies = append(bodies, b.String(), b.String())
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(bodies))
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(bodies); i += 4 {
				// Not post: t.Fatal must not run outside the test's goroutine.
				resp, err := http.Post(url, "text/plain", strings.NewReader(bodies[i]))
				if err != nil {
					errs <- err.Error()
					return
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					errs <- fmt.Sprintf("%d %s", resp.StatusCode, msg)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if got := dedupRows(t, c, "SELECT count(*), count(DISTINCT (time, host)), sum(v), sum(w) FROM fleet"); got != "2400|2400|358800|8400" {
		t.Fatalf("fleet: %s, want 2400|2400|358800|8400", got)
	}
}
