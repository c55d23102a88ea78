package tests

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's regular expression and text functions that tsdb answers in
// Go (regexp_replace, regexp_instr, substring … SIMILAR, SIMILAR TO,
// unistr, sha224/384/512): each expression's answer, or its SQLSTATE, as
// PostgreSQL 15 gave it (testdata/pg_text_functions.tsv, recorded with
// psql against Debian's server).
func TestPostgresTextFunctions(t *testing.T) {
	f, err := os.Open("testdata/pg_text_functions.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	pc := s.connect(ctx).PgConn()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		expr, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		n++
		got := ""
		res, err := pc.Exec(ctx, "SELECT "+expr).ReadAll()
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe):
			got = "ERROR " + pe.Code
		case err != nil:
			t.Fatalf("%s: %v", expr, err)
		case len(res) != 1 || len(res[0].Rows) != 1:
			t.Fatalf("%s: %d results", expr, len(res))
		case res[0].Rows[0][0] == nil:
			got = `\N`
		default:
			got = string(res[0].Rows[0][0])
		}
		if got != want {
			t.Errorf("SELECT %s = %q, PostgreSQL gives %q", expr, got, want)
		}
	}
	if n < 90 {
		t.Fatalf("only %d cases read", n)
	}
}
