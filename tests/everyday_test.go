package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// everydaySetup makes the same table with the same rows on both servers.
const everydaySetup = `CREATE TABLE cpu (time timestamptz NOT NULL, host text, region text, usage_user double precision,
	usage_system double precision, cnt bigint, ok boolean, price numeric(10,2));
INSERT INTO cpu SELECT timestamptz '2024-03-09 00:00:00+00' + i * interval '7 minutes', 'host_' || i % 5,
	CASE WHEN i % 3 = 0 THEN 'us' ELSE 'eu' END, i * 37 % 100 + 0.5, i * 13 % 50 / 3.0, i, i % 4 = 0, i % 17 * 1.25
	FROM generate_series(1, 1000) i`

// TestEverydaySideBySide runs everyday statements — aggregates, time
// filters written as clients write them, casts, arrays, regular
// expressions, templates — on PostgreSQL 15 and on tsdb, and requires
// the same answer from both, or the same SQLSTATE. PostgreSQL is the
// referee: no answer is written down here. Each line of the corpus once
// answered differently on tsdb without an error.
func TestEverydaySideBySide(t *testing.T) {
	ctx := context.Background()
	pg := startReferee(t)
	ts := startServer(t, t.TempDir(), nil)
	connect := func(url string) *pgconn.PgConn {
		cfg, err := pgconn.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["TimeZone"] = "PST8PDT"
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	pgc, tsc := connect(pg.URL), connect(fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", ts.pgAddr))
	for _, c := range []*pgconn.PgConn{pgc, tsc} {
		if _, err := c.Exec(ctx, everydaySetup).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join("testdata", "everyday", "queries.sql"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	n := 0
	for lines.Scan() {
		q := strings.TrimSpace(lines.Text())
		if q == "" || strings.HasPrefix(q, "--") {
			continue
		}
		n++
		// "refused CODE: statement": one tsdb refuses on purpose, with
		// CODE, rather than answer otherwise than PostgreSQL.
		refused := ""
		if rest, ok := strings.CutPrefix(q, "refused "); ok {
			refused, q, _ = strings.Cut(rest, ": ")
		}
		a := adapted{SQL: []string{q}}
		p, s := runRegress(ctx, pgc, a), runRegress(ctx, tsc, a)
		if refused != "" {
			if s.Code != refused {
				t.Errorf("%s: tsdb answered %s, want its refusal %s", q, s.summary(), refused)
			}
			continue
		}
		if class := classify(p, s); class != classIdentical && class != classSameError {
			t.Errorf("%s: %s\n  PostgreSQL: %s\n  tsdb:       %s", q, class, p.summary(), s.summary())
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("the corpus holds %d statements", n)
	}
}
