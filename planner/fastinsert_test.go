package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// scanAgreesWithParser fails t when the fast-path scanner accepted s but
// PostgreSQL's parser reads s differently: another statement, table,
// column list or constant.
func scanAgreesWithParser(t *testing.T, s string) bool {
	t.Helper()
	ins, ok := scanInsert(s)
	// Read in parts as small as can be, the statement reads the same.
	split, splitOK := scanInsertParts(s, 1, 8, nil)
	if splitOK != ok || ok && !sameScan(ins, split) {
		t.Fatalf("%q: read in parts (%v, %d parts) differs from read whole (%v)", s, splitOK, partsOf(split), ok)
	}
	if !ok {
		return false
	}
	tree, err := pg_query.Parse(s)
	if err != nil {
		t.Fatalf("%q: scanner accepted what the parser rejects: %v", s, err)
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetInsertStmt() == nil {
		t.Fatalf("%q: scanner accepted a statement that is not one INSERT", s)
	}
	st := tree.Stmts[0].Stmt.GetInsertStmt()
	if st.Relation.Relname != ins.table || (st.Relation.Schemaname != "" && st.Relation.Schemaname != "public") {
		t.Fatalf("%q: table %q, parser says %s.%s", s, ins.table, st.Relation.Schemaname, st.Relation.Relname)
	}
	if len(st.Cols) != len(ins.cols) {
		t.Fatalf("%q: %d columns, parser says %d", s, len(ins.cols), len(st.Cols))
	}
	for i, c := range st.Cols {
		if c.GetResTarget().Name != ins.cols[i] {
			t.Fatalf("%q: column %d is %q, parser says %q", s, i, ins.cols[i], c.GetResTarget().Name)
		}
	}
	sel := st.SelectStmt.GetSelectStmt()
	if sel == nil || len(sel.ValuesLists) != ins.n {
		t.Fatalf("%q: %d rows, parser disagrees", s, ins.n)
	}
	for r, row := range sel.ValuesLists {
		items := row.GetList().GetItems()
		if len(items) != len(ins.row(r)) {
			t.Fatalf("%q: row %d has %d values, parser says %d", s, r, len(ins.row(r)), len(items))
		}
		for i, item := range items {
			got := ins.row(r)[i]
			if item.GetSetToDefault() != nil {
				if got.kind != 'n' {
					t.Fatalf("%q: DEFAULT read as %+v", s, got)
				}
				continue
			}
			want, ok := constOf(item, 0)
			if !ok || want != got {
				t.Fatalf("%q: row %d value %d is %+v, parser says %+v (constant: %v)", s, r, i, got, want, ok)
			}
		}
	}
	return true
}

// row returns the values of row r.
func (ins *insertScan) row(r int) []literal {
	for _, p := range ins.parts {
		if n := len(p) / ins.width; r >= n {
			r -= n
			continue
		}
		return p[r*ins.width : (r+1)*ins.width]
	}
	return nil
}

func partsOf(ins *insertScan) int {
	if ins == nil {
		return 0
	}
	return len(ins.parts)
}

// sameScan reports whether two scans read the same statement.
func sameScan(a, b *insertScan) bool {
	if a.table != b.table || a.width != b.width || a.n != b.n || !slices.Equal(a.cols, b.cols) {
		return false
	}
	for r := range a.n {
		if !slices.Equal(a.row(r), b.row(r)) {
			return false
		}
	}
	return true
}

// TestScanInsertInParts: large statements are cut at row ends only, never
// inside a literal that looks like one, and read the same in parts.
func TestScanInsertInParts(t *testing.T) {
	var b strings.Builder
	b.WriteString("INSERT INTO t VALUES ")
	for i := range 400 {
		if i > 0 {
			b.WriteString(", \n ")
		}
		fmt.Fprintf(&b, "('2026-01-01', 'h%d),(''x'' ), (', %d.5, NULL, TRUE)", i, i)
	}
	b.WriteString(" ;")
	stmt := b.String()
	whole, ok := scanInsertParts(stmt, len(stmt), 1, nil)
	if !ok || whole.n != 400 || len(whole.parts) != 1 {
		t.Fatalf("whole: ok %v, %d rows, %d parts", ok, whole.n, partsOf(whole))
	}
	for _, parts := range []int{2, 3, 8} {
		split, ok := scanInsertParts(stmt, 64, parts, nil)
		if !ok || len(split.parts) != parts || !sameScan(whole, split) {
			t.Fatalf("in %d parts: ok %v, %d parts, same %v", parts, ok, partsOf(split), ok && sameScan(whole, split))
		}
		if got := split.row(123)[1].text; got != "h123),('x' ), (" {
			t.Fatalf("in %d parts: row 123 host %q", parts, got)
		}
	}
	// A statement the scanner refuses is refused in parts too, wherever
	// the bad row is.
	for _, bad := range []string{"(1, 2)", "(now())", "('open"} {
		for _, at := range []int{1, 200, 399} {
			st := strings.Replace(stmt, fmt.Sprintf("('2026-01-01', 'h%d),(", at), bad+", ('2026-01-01', 'x),(", 1)
			if _, ok := scanInsertParts(st, 64, 4, nil); ok {
				t.Errorf("bad row %s at %d accepted in parts", bad, at)
			}
		}
	}
}

func TestScanInsert(t *testing.T) {
	accept := []string{
		"INSERT INTO cpu VALUES ('2026-01-01 00:00:00+00', 'a', 1.5)",
		"insert into CPU (time, host, usage) values ('2026-01-01', 'b''c', -2), ('2026-01-02', NULL, DEFAULT);",
		"INSERT INTO public.cpu(\"Host\", v) VALUES ('x', 1e3),('y', .5),('z', 5.),('w', -0.0)  ;  ",
		"INSERT INTO t VALUES (2147483647, 2147483648, -2147483648, -2147483649, 007, TRUE, false)",
		"INSERT INTO t VALUES ('a;b', 'it''s', '', 'line\nbreak', '\\x')",
		"INSERT INTO t (time) VALUES ('2026-01-01')",
		"INSERT INTO t VALUES (- 5, -1.5e-3)",
	}
	for _, s := range accept {
		if !scanAgreesWithParser(t, s) {
			t.Errorf("%q: scanner declined", s)
		}
	}
	decline := []string{
		"INSERT INTO t VALUES (1) RETURNING *",
		"INSERT INTO t VALUES (1); SELECT 1",
		"INSERT INTO t VALUES (1 + 1)",
		"INSERT INTO t VALUES ('1'::int)",
		"INSERT INTO t VALUES (E'\\n')",
		"INSERT INTO t VALUES ('a'\n'b')",
		"INSERT INTO t VALUES (now())",
		"INSERT INTO t VALUES ($1)",
		"INSERT INTO t VALUES (--1\n2)",
		"INSERT INTO t VALUES (/* c */ 1)",
		"INSERT INTO t VALUES (1_000)",
		"INSERT INTO t VALUES (0x1f)",
		"INSERT INTO t VALUES (1), (1, 2)",
		"INSERT INTO t (user) VALUES (1)",
		"INSERT INTO select VALUES (1)",
		"INSERT INTO other.t VALUES (1)",
		"INSERT INTO t SELECT 1",
		"INSERT INTO t DEFAULT VALUES",
		"INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING",
		"INSERT INTO t VALUES ('unterminated)",
		"INSERT INTO t VALUES (+1)",
		"WITH x AS (SELECT 1) INSERT INTO t VALUES (1)",
		"INSERT INTO t VALUES (1.2.3)",
		"INSERT INTO t VALUES (1e)",
	}
	for _, s := range decline {
		if _, ok := scanInsert(s); ok {
			t.Errorf("%q: scanner accepted it; it must take the general path", s)
		}
	}
}

// The fast path and the general path store the same rows.
func TestFastInsertMatchesGeneralPath(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE a (time TIMESTAMPTZ NOT NULL, host TEXT, n BIGINT, v DOUBLE PRECISION, ok BOOLEAN)")
	e.must("CREATE TABLE b (time TIMESTAMPTZ NOT NULL, host TEXT, n BIGINT, v DOUBLE PRECISION, ok BOOLEAN)")
	stmts := []string{
		"INSERT INTO %s VALUES ('2026-01-01 00:00:00+00', 'a', 1, 1.5, true), ('2026-01-01 00:10:00Z', 'it''s', -7, -2, false)",
		"INSERT INTO %s (time, v) VALUES ('2026-01-01 01:00:00.123456+02', 1e3), ('2026-01-01', .5)",
		"INSERT INTO %s (host, time, n) VALUES (NULL, '2025-12-31 23:59:59', 9007199254740993), ('x', '2026-01-02 00:00', DEFAULT)",
		"INSERT INTO %s VALUES ('2026-01-03 00:00:00+00', 'fewer', 3)", // fills the first columns
	}
	ctx := context.Background()
	for _, st := range stmts {
		fast := fmtTable(st, "a")
		res, ok, err := e.s.fastInsert(ctx, fast)
		if !ok || err != nil {
			t.Fatalf("%s: fast path declined or failed: %v", fast, err)
		}
		_ = res
		// The general path: the parsed statement, as Execute would run it
		// if the scanner had declined.
		tree, err := pg_query.Parse(fmtTable(st, "b"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.execute(ctx, statement{text: fmtTable(st, "b"), node: tree.Stmts[0].Stmt}); err != nil {
			t.Fatal(err)
		}
	}
	q := "SELECT time, host, n, v, ok FROM %s ORDER BY time, host"
	if a, b := e.rows(fmtTable(q, "a")), e.rows(fmtTable(q, "b")); a != b || a == "" {
		t.Fatalf("fast path stored\n%s\ngeneral path stored\n%s", a, b)
	}
	// A value the scanner reads but cannot convert itself goes the general
	// way and gets the general path's error.
	if _, ok, _ := e.s.fastInsert(ctx, "INSERT INTO a (time, n) VALUES ('2026-01-01', 'abc')"); ok {
		t.Fatal("fast path took a value it cannot convert")
	}
	if _, err := e.run("INSERT INTO a (time, n) VALUES ('2026-01-01', 'abc')"); err == nil {
		t.Fatal("INSERT of 'abc' into BIGINT succeeded")
	}
}

func fmtTable(s, table string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+1 < len(s) && s[i+1] == 's' {
			out = append(out, table...)
			i++
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}
