package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// character(n) columns answer as PostgreSQL 15 does: testdata/character.sql
// run by psql (unaligned, so that trailing spaces show) on tsdb gives the
// output recorded from PostgreSQL in testdata/character.pg15.out — values
// padded where PostgreSQL shows them padded (columns, *, views, CTEs,
// subqueries, min/max, COALESCE with a constant, arrays, rows, concat,
// COPY TO), without the spaces where it computes without them (length,
// comparisons, casts, ||, GROUP BY), LIKE and regular expressions over
// the padded value in SELECT, UPDATE and DELETE alike, 22001 for a value
// too long, on a table of the store and on a temporary table.
func TestCharacterColumns(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	checkRecordedScript(t, s, "testdata/character.sql", "testdata/character.pg15.out", lines)

	// What tsdb refuses rather than answer unlike PostgreSQL: a set
	// operation of character columns of two lengths.
	out, err := s.psqlErr("CREATE TABLE c2 (a char(2), b char(3), ts timestamptz NOT NULL);\nSELECT a FROM c2 UNION SELECT b FROM c2;\n")
	if err == nil || !strings.Contains(out, "mixes character(n) values") {
		t.Errorf("UNION of char(2) and char(3): %v\n%s", err, out)
	}
	// A COALESCE of the column and a constant, read through a subquery,
	// whose rows PostgreSQL shows each as it is: refused too.
	out, err = s.psqlErr("SELECT x FROM (SELECT COALESCE(a, 'zzz') AS x FROM c2) s;\n")
	if err == nil || !strings.Contains(out, "mixes character(n) values") {
		t.Errorf("COALESCE through a subquery: %v\n%s", err, out)
	}

	// Drivers see character(n) (bpchar, its typmod) and the padded value
	// in text and in binary.
	ctx := context.Background()
	binaryConn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer binaryConn.Close(ctx)
	if _, err := binaryConn.Exec(ctx, "INSERT INTO c2 VALUES ('x', 'yz', '2026-01-01')"); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*pgx.Conn{"binary": binaryConn, "text": s.connect(ctx)} {
		rows, err := conn.Query(ctx, "SELECT a, b FROM c2 WHERE a = $1", "x ")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fds := rows.FieldDescriptions()
		var a, b string
		n := 0
		for rows.Next() {
			if err := rows.Scan(&a, &b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fds[0].DataTypeOID != 1042 || fds[0].TypeModifier != 6 || fds[1].TypeModifier != 7 {
			t.Errorf("%s: columns described as OID %d typmod %d, typmod %d; PostgreSQL says bpchar (1042), 6 and 7",
				name, fds[0].DataTypeOID, fds[0].TypeModifier, fds[1].TypeModifier)
		}
		if n != 1 || a != "x " || b != "yz " {
			t.Errorf("%s: %d rows, %q %q; want 1 row, \"x \" \"yz \"", name, n, a, b)
		}
	}
}
