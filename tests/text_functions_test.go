package tests

import (
	"bufio"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's regular expression and text functions that tsdb answers in
// Go (regexp_replace, regexp_instr, substring … SIMILAR, SIMILAR TO,
// unistr, sha224/384/512, the bytea functions, the hash functions, width_bucket and div, the degree trigonometric
// functions, floats as text): each expression's answer, or its SQLSTATE, as
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
		default:
			var cols []string
			for _, v := range res[0].Rows[0] {
				if v == nil {
					cols = append(cols, `\N`)
				} else {
					cols = append(cols, string(v))
				}
			}
			got = strings.Join(cols, "|")
		}
		if got != want {
			t.Errorf("SELECT %s = %q, PostgreSQL gives %q", expr, got, want)
		}
	}
	if n < 90 {
		t.Fatalf("only %d cases read", n)
	}
}

// The bytea forms of substring, btrim, LIKE and length apply to a bytea
// column too, known from the table (not only to a bytea cast).
func TestByteaColumnFunctions(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE bt (ts timestamptz NOT NULL, b bytea)", `INSERT INTO bt VALUES ('2026-01-01', '\x00616200')`)
	// PostgreSQL 15's answer to the same statement.
	want := []string{`\x6162`, `\x6162`, "t", "4", "97", `\000ab\000`}
	res, err := c.PgConn().Exec(ctx, `SELECT substring(b from 2 for 2), btrim(b, '\x00'::bytea), b LIKE '%ab%'::bytea, length(b), get_byte(b, 1), encode(b, 'escape') FROM bt`).ReadAll()
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	for i, w := range want {
		if got := string(res[0].Rows[0][i]); got != w {
			t.Errorf("column %d = %q, PostgreSQL gives %q", i+1, got, w)
		}
	}
}

// sum() of integer and smallint columns is bigint (OID 20), as in
// PostgreSQL; of bigint, numeric (1700).
func TestIntegerSumTypes(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE si (ts timestamptz NOT NULL, a int, b bigint, c smallint)", "INSERT INTO si VALUES ('2026-01-01', 1, 2, 3)")
	rows, err := c.Query(ctx, "SELECT sum(a), sum(b), sum(c) FROM si")
	if err != nil {
		t.Fatal(err)
	}
	var got []uint32
	for _, f := range rows.FieldDescriptions() {
		got = append(got, f.DataTypeOID)
	}
	rows.Close()
	if want := []uint32{20, 1700, 20}; !slices.Equal(got, want) {
		t.Errorf("sum types %v, want %v", got, want)
	}
}
