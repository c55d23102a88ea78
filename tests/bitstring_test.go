package tests

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Bit strings answer as PostgreSQL 15 does: testdata/bitstring.sql run by
// psql on tsdb gives the output recorded from PostgreSQL in
// testdata/bitstring.pg15.out — B'…' and X'…' constants, casts to bit(n)
// and bit varying(n) from text, integers and bit strings (fitted when
// explicit), the operators and aggregates, 22026 and 22001 for a value of
// the wrong length written to a column, bit(n) columns in a table of the
// store (before and after a flush to Parquet, under UPDATE and DELETE)
// and in a temporary table, and the catalogs. tsdb gives no error
// position for a bad constant nor the HINT of 42804, and names the COPY
// line in its message, not in a CONTEXT: those lines are not compared.
func TestBitStrings(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	checkRecordedScript(t, s, "testdata/bitstring.sql", "testdata/bitstring.pg15.out", comparedLines)

	// Drivers read and send bit strings in text and in binary (bit_send's
	// length and bytes), as pgx's pgtype.Bits.
	ctx := context.Background()
	binaryConn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer binaryConn.Close(ctx)
	execAll(t, binaryConn, "CREATE TABLE bits (time timestamptz NOT NULL, b bit(12), v varbit)")
	param := pgtype.Bits{Bytes: []byte{0b10110000, 0b10100000}, Len: 12, Valid: true}
	if _, err := binaryConn.Exec(ctx, "INSERT INTO bits VALUES ('2026-01-01', $1, $2)", param, "X1"); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*pgx.Conn{"binary": binaryConn, "text": s.connect(ctx)} {
		var b, v pgtype.Bits
		var text string
		err := conn.QueryRow(ctx, "SELECT b, v, b::text FROM bits WHERE b = $1", param).Scan(&b, &v, &text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.Len != 12 || b.Bytes[0] != 0b10110000 || b.Bytes[1] != 0b10100000 || v.Len != 4 || v.Bytes[0] != 0b00010000 || text != "101100001010" {
			t.Errorf("%s: b %+v, v %+v, b::text %q; want 101100001010, 0001", name, b, v, text)
		}
	}
}

var reCopyWhere = regexp.MustCompile(`ERROR:  COPY [^,]+, line \d+, column [^:]+: `)

// comparedLines are the lines of psql's output but for error positions
// (LINE 1: and its caret), CONTEXT and HINT lines.
func comparedLines(out string) []string {
	var keep []string
	skipCaret := false
	for _, l := range lines(out) {
		switch {
		case strings.HasPrefix(l, "LINE "):
			skipCaret = true
			continue
		case skipCaret && strings.TrimSpace(l) == "^":
			skipCaret = false
			continue
		case strings.HasPrefix(l, "CONTEXT:  "), strings.HasPrefix(l, "HINT:  "):
			continue
		}
		skipCaret = false
		// tsdb names the COPY line in the message, PostgreSQL in CONTEXT.
		l = reCopyWhere.ReplaceAllString(l, "ERROR:  ")
		keep = append(keep, l)
	}
	return keep
}
