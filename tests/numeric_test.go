package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// numeric(p, s) columns: every way a value arrives (literals, text and
// binary parameters, COPY text and binary, INSERT … SELECT, UPDATE) keeps
// it to the column's scale, rounding half away from zero as PostgreSQL
// does; a value too wide is 22003; the values survive a restart and a
// flush, read back by chDB as Delta decimals.
func TestNumericColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE px (time TIMESTAMPTZ NOT NULL, sym TEXT, price NUMERIC(10,2), qty DECIMAL(18))",
		"INSERT INTO px VALUES ('2026-12-01 00:00:01+00', 'lit', 1.005, 100), ('2026-12-01 00:00:02+00', 'str', '-2.345', '7')")
	if _, err := c.Exec(ctx, "INSERT INTO px VALUES ($1, $2, $3, $4)", time.Date(2026, 12, 1, 0, 0, 3, 0, time.UTC), "param", "12345678.994", 1); err != nil {
		t.Fatal(err)
	}
	var bin pgtype.Numeric
	if err := bin.Scan("0.125"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO px VALUES ($1, $2, $3::numeric, 2)", time.Date(2026, 12, 1, 0, 0, 4, 0, time.UTC), "binary", bin); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"px"}, []string{"time", "sym", "price", "qty"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "copy-binary", bin, int64(3)},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:06+00\tcopy-text\t-0.005\t4\n"), "COPY px FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO px SELECT time + interval '1 hour', sym || '-x2', price * 2, qty FROM px WHERE sym = 'lit'")
	for _, stmt := range []string{
		"INSERT INTO px VALUES ('2026-12-01 00:00:09+00', 'wide', 123456789.5, 1)",
		"INSERT INTO px VALUES ('2026-12-01 00:00:09+00', 'wide', '99999999.995', 1)",
	} {
		if _, err := c.Exec(ctx, stmt); pgCode(err) != "22003" {
			t.Errorf("%s: %v, want 22003", stmt, err)
		}
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:09+00\twide\t100000000\t1\n"), "COPY px FROM STDIN"); pgCode(err) != "22003" {
		t.Errorf("COPY of a value too wide: %v, want 22003", err)
	}
	want := []string{
		"lit|1.01|100", "str|-2.35|7", "param|12345678.99|1", "binary|0.13|2", "copy-binary|0.13|3", "copy-text|-0.01|4", "lit-x2|2.02|100",
	}
	check := func(stage string) {
		t.Helper()
		got := readerRows(t, c, "SELECT sym, price::text, qty::text FROM px ORDER BY time")
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %v, want %v", stage, got, want)
		}
	}
	check("buffered")
	var typ string
	if err := c.QueryRow(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'px'::regclass AND attname = 'price'").Scan(&typ); err != nil || typ != "numeric(10,2)" {
		t.Fatalf("format_type: %q, %v", typ, err)
	}
	c.Close(ctx)
	s.stop()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	c = s.connect(ctx)
	defer c.Close(ctx)
	check("after a restart (WAL replay)")
	execAll(t, c, "CHECKPOINT", "UPDATE px SET price = price + 0.004 WHERE sym = 'str'")
	want[1] = "str|-2.35|7" // -2.346 rounds back to -2.35
	check("flushed, after UPDATE")
	execAll(t, c, "VACUUM px")
	check("after VACUUM")

	table, _ := filepath.Abs(filepath.Join(dir, "tables", "px"))
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(
		"SELECT sym, toString(price) AS price, toString(qty) AS qty FROM deltaLakeLocal('%s') ORDER BY time", table)), []string{"sym", "price", "qty"})
	var trimmed []string
	for _, w := range want {
		// chDB prints decimals without trailing zeros.
		parts := strings.Split(w, "|")
		if strings.Contains(parts[1], ".") {
			parts[1] = strings.TrimSuffix(strings.TrimRight(parts[1], "0"), ".")
		}
		trimmed = append(trimmed, strings.Join(parts, "|"))
	}
	if strings.Join(got, ",") != strings.Join(trimmed, ",") {
		t.Fatalf("chDB: %v, want %v", got, trimmed)
	}
}

// bytea columns: text by PostgreSQL's input rules (hex and escape formats)
// whichever path a value takes (literals, expressions evaluated by the
// engine, parameters, COPY text and binary), bytes kept exactly through a
// restart and a flush, and chDB reading the same bytes from the Delta
// binary column.
func TestByteaColumns(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE bl (time TIMESTAMPTZ NOT NULL, k TEXT, b BYTEA)",
		`INSERT INTO bl VALUES ('2026-12-01 00:00:01+00', 'hex', '\x00ff10'), ('2026-12-01 00:00:02+00', 'escape', 'abc\000\\')`,
		`INSERT INTO bl VALUES (TIMESTAMPTZ '2026-12-01 00:00:03+00' + INTERVAL '0 s', 'engine', '\x0a0b'), (TIMESTAMPTZ '2026-12-01 00:00:04+00' + INTERVAL '0 s', 'decode', decode('c0ffee', 'hex'))`)
	if _, err := c.Exec(ctx, "INSERT INTO bl VALUES ($1, $2, $3)", time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC), "param", []byte{0, 1, 2, 255}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"bl"}, []string{"time", "k", "b"}, pgx.CopyFromRows([][]any{
		{time.Date(2026, 12, 1, 0, 0, 6, 0, time.UTC), "copy-binary", []byte{'\\', 'x', 0}},
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("2026-12-01 00:00:07+00\tcopy-text\t\\\\x7f80\n"), "COPY bl FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "UPDATE bl SET b = b || '\\x99'::bytea WHERE k = 'hex'")
	want := []string{"hex|00ff1099", "escape|616263005c", "engine|0a0b", "decode|c0ffee", "param|000102ff", "copy-binary|5c7800", "copy-text|7f80"}
	check := func(stage string) {
		t.Helper()
		got := readerRows(t, c, "SELECT k, encode(b, 'hex') FROM bl ORDER BY time")
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %v, want %v", stage, got, want)
		}
	}
	check("buffered")
	c.Close(ctx)
	s.stop()
	s = startServer(t, dir, []string{"--compact-interval", "-1s"})
	c = s.connect(ctx)
	defer c.Close(ctx)
	check("after a restart")
	execAll(t, c, "CHECKPOINT")
	check("flushed")
	table, _ := filepath.Abs(filepath.Join(dir, "tables", "bl"))
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(
		"SELECT k, lower(hex(b)) AS h FROM deltaLakeLocal('%s') ORDER BY time", table)), []string{"k", "h"})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("chDB: %v, want %v", got, want)
	}
}

// avg of integers and numerics, and their variances and standard
// deviations, are numeric in PostgreSQL, computed exactly and printed
// with a scale chosen per value; of doubles they stay double. Every
// expected answer is PostgreSQL 15's, in text (simple protocol) and in
// binary (pgx's extended protocol, which also describes the columns
// first).
func TestExactAggregates(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE ea (time timestamptz NOT NULL, host text, i int, b bigint, n numeric(10,2), d double precision)",
		"INSERT INTO ea VALUES ('2026-12-01 00:00:01+00', 'a', 1, 7, 1.25, 1.5), ('2026-12-01 00:00:02+00', 'a', 2, -8, 2.50, 2.5), "+
			"('2026-12-01 00:00:03+00', 'b', 4, 9, 400000.13, 3.25), ('2026-12-01 00:00:04+00', 'b', NULL, NULL, NULL, NULL)")
	for _, tc := range []struct {
		query string
		oids  []uint32
		want  []string
	}{
		{"SELECT avg(i), var_pop(i), var_samp(i), stddev_pop(i), stddev_samp(i), variance(b), stddev(b) FROM ea",
			[]uint32{1700, 1700, 1700, 1700, 1700, 1700, 1700},
			[]string{"2.3333333333333333|1.5555555555555556|2.3333333333333333|1.2472191289246471|1.5275252316519467|86.3333333333333333|9.2915732431775693"}},
		{"SELECT avg(n), var_pop(n), stddev(n), avg(d), stddev(d) FROM ea",
			[]uint32{1700, 1700, 1700, 701, 701},
			[]string{"133334.626666666667|35555245334.27042222|230939.10020048|2.4166666666666665|0.8779711460710616"}},
		// ORDER BY an output column sorts by its value, not by the sums.
		{"SELECT host, avg(i) AS a, avg(DISTINCT i) FILTER (WHERE i > 1) FROM ea GROUP BY host ORDER BY a DESC",
			[]uint32{25, 1700, 1700},
			[]string{"b|4.0000000000000000|4.0000000000000000", "a|1.5000000000000000|2.0000000000000000"}},
		{"SELECT host, variance(i) FROM ea GROUP BY host ORDER BY 2",
			[]uint32{25, 1700},
			[]string{"a|0.50000000000000000000", "b|NULL"}},
		{"SELECT time, avg(i) OVER (ORDER BY time ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM ea ORDER BY time",
			[]uint32{1184, 1700},
			[]string{"2026-12-01 00:00:01+00|2.3333333333333333", "2026-12-01 00:00:02+00|3.0000000000000000", "2026-12-01 00:00:03+00|4.0000000000000000", "2026-12-01 00:00:04+00|NULL"}},
		{"SELECT avg(i) FROM ea WHERE false", []uint32{1700}, []string{"NULL"}},
		// The engine has no sum of intervals: avg of one runs as written.
		{"SELECT avg(x) FROM (VALUES (interval '1 day'), (interval '2 days')) v(x)", []uint32{1186}, []string{"1 day 12:00:00"}},
	} {
		// Text, as psql reads it.
		var got []string
		res := c.PgConn().Exec(ctx, tc.query)
		results, err := res.ReadAll()
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		var oids []uint32
		for _, f := range results[0].FieldDescriptions {
			oids = append(oids, f.DataTypeOID)
		}
		for _, row := range results[0].Rows {
			var vals []string
			for _, v := range row {
				if v == nil {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, string(v))
				}
			}
			got = append(got, strings.Join(vals, "|"))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(oids) != fmt.Sprint(tc.oids) {
			t.Errorf("%s (text):\n got %q %v\nwant %q %v", tc.query, got, oids, tc.want, tc.oids)
		}
		// Binary numeric through pgx, after a Describe.
		rows, err := c.Query(ctx, tc.query, pgx.QueryExecModeDescribeExec)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		got = nil
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				switch x := v.(type) {
				case nil:
					parts = append(parts, "NULL")
				case pgtype.Numeric:
					dv, _ := x.Value()
					parts = append(parts, fmt.Sprint(dv))
				case time.Time:
					parts = append(parts, x.UTC().Format("2006-01-02 15:04:05+00"))
				case pgtype.Interval:
					parts = append(parts, fmt.Sprintf("%dd%dus", x.Days, x.Microseconds))
				default:
					parts = append(parts, fmt.Sprint(x))
				}
			}
			got = append(got, strings.Join(parts, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s (binary): %v", tc.query, err)
			continue
		}
		want := fmt.Sprint(tc.want)
		if strings.Contains(tc.query, "interval") {
			want = "[1d43200000000us]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%s (binary):\n got %q\nwant %s", tc.query, got, want)
		}
	}
}

// A column of number literals made by a set operation or VALUES keeps each
// value's scale, as PostgreSQL's numeric does (answers from PostgreSQL
// 15), in text and in binary.
func TestNumericLiteralScales(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	for _, tc := range []struct{ query, want string }{
		{"SELECT 1.1 AS two UNION SELECT 2 ORDER BY 1", "1.1 2"},
		{"SELECT 1.1 AS three UNION SELECT 2 UNION ALL SELECT 2 ORDER BY 1", "1.1 2 2"},
		{"VALUES (1, 2), (3, 4 + 4), (7, 77.7)", "1|2 3|8 7|77.7"},
		{"SELECT 2.50 UNION ALL SELECT 2 UNION ALL SELECT -0.5 ORDER BY 1 DESC", "2.50 2 -0.5"},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
			rows, err := c.Query(ctx, tc.query, mode)
			if err != nil {
				t.Fatalf("%s: %v", tc.query, err)
			}
			var got []string
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				var parts []string
				for _, v := range vals {
					if n, ok := v.(pgtype.Numeric); ok {
						dv, _ := n.Value()
						v = dv
					}
					parts = append(parts, fmt.Sprint(v))
				}
				got = append(got, strings.Join(parts, "|"))
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", tc.query, err)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("%s (mode %v): %s, PostgreSQL %s", tc.query, mode, g, tc.want)
			}
		}
	}
}
