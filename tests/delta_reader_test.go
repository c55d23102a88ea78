package tests

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
)

// chdbQuery runs sql through chDB (an independent Delta reader built on
// delta-kernel-rs) and returns its rows as JSON lines.
// chDB only reads files below its working directory, which is workDir.
func chdbQuery(t *testing.T, workDir, query string) []string {
	t.Helper()
	dir, _ := filepath.Abs("clients/chdb")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "chdb")); err != nil {
		t.Fatal("chdb is not installed: `make test` installs it (npm) in tests/clients/chdb")
	}
	cmd := exec.Command("node", filepath.Join(dir, "read.js"), query)
	cmd.Dir = workDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chdb: %v\n%s", err, out)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			rows = append(rows, l)
		}
	}
	return rows
}

// readerRows renders rows of a tsdb query like chdbRows renders chDB's JSON:
// one line per row, values joined by |, NULL for null.
func readerRows(t testing.TB, c *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, renderRow(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func renderRow(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case nil:
			parts[i] = "NULL"
		case float64:
			parts[i] = fmt.Sprintf("%.6g", x)
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return strings.Join(parts, "|")
}

// chdbRows decodes chDB's JSON lines with the columns in order.
func chdbRows(t *testing.T, lines []string, cols []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("chdb row %q: %v", l, err)
		}
		vals := make([]any, len(cols))
		for i, c := range cols {
			switch x := m[c].(type) {
			case json.Number:
				if strings.ContainsAny(x.String(), ".eE") {
					f, _ := x.Float64()
					vals[i] = f
				} else {
					vals[i] = x.String()
				}
			case string:
				// chDB writes 64-bit integers as JSON strings.
				vals[i] = x
			default:
				vals[i] = x
			}
		}
		out = append(out, renderRow(vals))
	}
	return out
}

// TestIndependentDeltaReader checks tsdb's tables with someone else's
// reader after inserts and flushes, DELETE, UPDATE, compaction and more
// flushes: chDB must return every row tsdb returns, and the Parquet files
// must carry the physical types the Delta protocol expects.
func TestIndependentDeltaReader(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--compact-interval", "-1s"})
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	execAll(t, c, "CREATE TABLE readings (time TIMESTAMPTZ NOT NULL, host TEXT, n BIGINT, v DOUBLE PRECISION, ok BOOLEAN, day DATE)")
	for b := range 4 {
		execAll(t, c, fmt.Sprintf(`INSERT INTO readings SELECT TIMESTAMPTZ '2026-12-01 00:00:00+00' + INTERVAL '%d minutes' + g * INTERVAL '1 second',
			CASE WHEN g %% 7 = 0 THEN NULL ELSE 'host-' || (g %% 5) END, g * 1000000007, g / 3.0, g %% 2 = 0,
			CASE WHEN g %% 13 = 0 THEN NULL ELSE DATE '2026-12-01' + g::int END
			FROM generate_series(0, 299) AS t(g)`, b*10))
		execAll(t, c, "CHECKPOINT")
	}
	execAll(t, c, "DELETE FROM readings WHERE n % 11 = 0")
	execAll(t, c, "UPDATE readings SET v = -v, host = 'moved' WHERE time >= '2026-12-01 00:10:00+00' AND time < '2026-12-01 00:12:00+00'")
	execAll(t, c, "VACUUM readings")
	execAll(t, c, "INSERT INTO readings VALUES ('2026-12-01 01:00:00+00', 'late', 1, 1.5, NULL, 'December 2, 2026')")
	execAll(t, c, "CHECKPOINT")

	table, _ := filepath.Abs(filepath.Join(dir, "tables", "readings"))
	cols := []string{"us", "host", "n", "v", "ok", "days"}
	want := readerRows(t, c, "SELECT epoch_us(time) AS us, host, n, v, ok, day - DATE '1970-01-01' AS days FROM readings ORDER BY time")
	got := chdbRows(t, chdbQuery(t, filepath.Dir(table), fmt.Sprintf(
		"SELECT toUnixTimestamp64Micro(time) AS us, host, n, v, ok, dateDiff('day', toDate('1970-01-01'), day) AS days FROM deltaLakeLocal('%s') ORDER BY time", table)), cols)
	if len(want) != 4*300-4*28+1 { // g % 11 = 0 for 28 of each 300
		t.Fatalf("tsdb returned %d rows", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("chDB read %d rows, tsdb returned %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: chDB %q, tsdb %q", i, got[i], want[i])
		}
	}
	t.Logf("chDB read the same %d rows as tsdb", len(got))

	// The physical types of the files, as Delta readers expect them.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT DISTINCT name, type, coalesce(logical_type, '') FROM parquet_schema('%s/*.parquet') WHERE name <> 'duckdb_schema' AND name <> 'schema' ORDER BY name`, table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types := map[string]string{}
	for rows.Next() {
		var name, typ, logical string
		if err := rows.Scan(&name, &typ, &logical); err != nil {
			t.Fatal(err)
		}
		types[name] = typ + " " + logical
	}
	for col, want := range map[string]string{"time": "INT64 TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))", "host": "BYTE_ARRAY StringType()", "n": "INT64 ", "v": "DOUBLE ", "ok": "BOOLEAN ", "day": "INT32 DateType()"} {
		// An integer may carry its IntType annotation (64 bits, signed).
		if types[col] != want && !(col == "n" && strings.HasPrefix(types[col], "INT64 IntType(") && strings.Contains(types[col], "isSigned=1")) {
			t.Errorf("column %s: parquet type %q, want %q", col, types[col], want)
		}
	}
}
