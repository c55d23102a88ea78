package tests

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tables and columns take any name PostgreSQL takes quoted — upper case,
// dashes, dots, spaces, quotes, non-ASCII — from SQL and from the line
// protocol (Telegraf's apache, linux_sysctl_fs and SNMP inputs write such
// names), through every layer: buffered rows, flushed files, DML, the
// catalog psql reads, a restart. Names the engine cannot tell apart
// (they differ only in case) are refused, never merged.
func TestAnyNames(t *testing.T) {
	httpAddr := freeAddr(t)
	dir := t.TempDir()
	s := startServer(t, dir, []string{"--http-addr", httpAddr})
	ctx := context.Background()
	c := s.connect(ctx)
	exec := func(q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows := func(q string) string {
		t.Helper()
		r, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for r.Next() {
			vals, _ := r.Values()
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = fmt.Sprint(v)
			}
			out = append(out, strings.Join(cells, " "))
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(out, "; ")
	}
	exec(`CREATE TABLE "Disk-IO" (time timestamptz NOT NULL, "Host Name" text, "Used %" float8, "a""q" int, "température" float8, "x.y" text)`)
	exec(`INSERT INTO "Disk-IO" VALUES ('2026-01-01 00:00:00+00', 'srv1', 12.5, 1, 20.5, 'p'), ('2026-01-01 00:01:00+00', 'srv2', 50, 2, 21, 'q')`)
	exec(`UPDATE "Disk-IO" SET "Used %" = 13 WHERE "Host Name" = 'srv1'`)
	exec(`CHECKPOINT`) // the rows go to a Parquet file of the table
	exec(`INSERT INTO "Disk-IO" ("time", "Host Name", "a""q") VALUES ('2026-01-01 00:02:00+00', 'srv3', 3)`)
	exec(`DELETE FROM "Disk-IO" WHERE "a""q" = 2`)
	const want = "srv1 13 1 20.5 p; srv3 <nil> 3 <nil> <nil>"
	q := `SELECT "Host Name", "Used %", "a""q", "température", "x.y" FROM "Disk-IO" ORDER BY time`
	if got := rows(q); got != want {
		t.Fatalf("rows: %s, want %s", got, want)
	}
	// What psql's \d and Grafana's column picker read.
	if got := rows(`SELECT attname FROM pg_attribute WHERE attrelid = '"Disk-IO"'::regclass AND attnum > 0 ORDER BY attnum`); got != `time; Host Name; Used %; a"q; température; x.y` {
		t.Fatalf("pg_attribute: %s", got)
	}
	if got := rows(`SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'Disk%'`); got != "Disk-IO" {
		t.Fatalf("information_schema.tables: %s", got)
	}
	// Names the engine would take for each other, or the catalog's.
	for _, tt := range []struct{ q, code string }{
		{`CREATE TABLE "disk-io" (time timestamptz NOT NULL)`, "42P07"},
		{`CREATE TABLE t (time timestamptz NOT NULL, "A" int, a int)`, "42701"},
		{`ALTER TABLE "Disk-IO" ADD COLUMN "host name" text`, "42701"},
		{`CREATE TABLE "PG_Thing" (time timestamptz NOT NULL)`, "42939"},
		{`SELECT * FROM "disk-IO"`, "42P01"},
		{`SELECT * FROM "missing.csv"`, "42P01"},
		{`SELECT "Used Percent" FROM "Disk-IO"`, "42703"},
	} {
		wantSQLState(t, c, tt.q, tt.code)
	}
	// A name longer than 63 bytes is cut there, as PostgreSQL cuts it
	// (between characters).
	exec(`CREATE TABLE "` + strings.Repeat("é", 32) + `" (time timestamptz NOT NULL)`)
	if got := rows(`SELECT count(*) FROM "` + strings.Repeat("é", 31) + `"`); got != "0" {
		t.Fatalf("the cut name: %s", got)
	}
	exec(`DROP TABLE "` + strings.Repeat("é", 31) + `"`)

	// Telegraf's names, as InfluxDB keeps them.
	url := "http://" + httpAddr + "/write?db=tsdb&precision=s"
	code, body := post(t, url, "apache,host=a BusyWorkers=3i,IdleWorkers=5i 1767225600\n"+
		"linux_sysctl_fs,host=a aio-max-nr=65536i 1767225600\n"+
		"cpu.load,Host\\ Name=a Load\\ 1=0.5 1767225600\n"+
		"Apache,host=b BusyWorkers=1i 1767225600\n"+ // another table in case only
		"apache,host=c busyworkers=1i 1767225600\n"+ // another column in case only
		"apache,host=d Time=1i 1767225600\n") // the time column in another case
	if code != http.StatusBadRequest || strings.Count(body, "differs only in case") != 3 || !strings.Contains(body, "dropped=3") {
		t.Fatalf("write: %d %s", code, body)
	}
	for q, want := range map[string]string{
		`SELECT host, "BusyWorkers", "IdleWorkers" FROM apache`: "a 3 5",
		`SELECT "aio-max-nr" FROM linux_sysctl_fs`:              "65536",
		`SELECT "Host Name", "Load 1" FROM "cpu.load"`:          "a 0.5",
	} {
		if got := rows(q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	// A name Spark refuses without Delta column mapping, added to a
	// table of plain names with files: the table turns mapping on, its
	// old files keep their names, the new column has a physical name.
	exec(`ALTER TABLE apache ADD COLUMN "Busy Ratio (%)" float8`)
	exec(`INSERT INTO apache (time, host, "Busy Ratio (%)") VALUES ('2026-01-01 00:00:01+00', 'e', 37.5)`)
	exec(`CHECKPOINT`)
	exec(`UPDATE apache SET "Busy Ratio (%)" = "Busy Ratio (%)" * 2 WHERE host = 'e'`)
	exec(`VACUUM apache`) // compaction merges the file written before mapping with the others
	for q, want := range map[string]string{
		`SELECT host, "BusyWorkers", "Busy Ratio (%)" FROM apache ORDER BY host`:                                "a 3 <nil>; e <nil> 75",
		`SELECT DISTINCT ON (host) host, "Busy Ratio (%)" FROM apache ORDER BY host, time DESC`:                 "a <nil>; e 75",
		`SELECT "Host Name", max("Used %") FROM "Disk-IO" WHERE time >= '2026-01-01' GROUP BY 1 ORDER BY 1`:     "srv1 13; srv3 <nil>",
		`SELECT DISTINCT ON ("Host Name") "Host Name", "Used %" FROM "Disk-IO" ORDER BY "Host Name", time DESC`: "srv1 13; srv3 <nil>",
	} {
		if got := rows(q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	// A mapped time column, in files and in buffered rows: the newest
	// rows of each host are read from a time on, in both.
	exec(`CREATE TABLE "m t" ("the time" timestamptz NOT NULL, "h o" text, "v=v" float8) WITH (cluster_by = 'h o')`)
	exec(`INSERT INTO "m t" SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 minute', 'h' || (g % 3), g FROM generate_series(0, 99) AS s(g)`)
	exec(`CHECKPOINT`)
	exec(`INSERT INTO "m t" VALUES ('2026-01-01 02:00:00+00', 'h1', 1000)`)
	for q, want := range map[string]string{
		`SELECT DISTINCT ON ("h o") "h o", "v=v" FROM "m t" ORDER BY "h o", "the time" DESC`:                              "h0 99; h1 1000; h2 98",
		`SELECT "h o", count(*), max("v=v") FROM "m t" WHERE "the time" < '2026-01-01 01:00:00+00' GROUP BY 1 ORDER BY 1`: "h0 20 57; h1 20 58; h2 20 59",
	} {
		if got := rows(q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	// Every path answered as planned: none fell back after a failure
	// (the files' newest rows are kept by a statement of their own).
	if logs := s.logs.String(); strings.Contains(logs, "level=WARN") || strings.Contains(logs, "level=ERROR") {
		t.Errorf("the server warned:\n%s", logs)
	}
	exec(`CHECKPOINT`)
	s.stop()
	// The Delta log says which tables map their columns, and files hold
	// no name Spark would refuse.
	for tbl, mapped := range map[string]bool{"m~20t": true, "~44isk-~49~4F": true, "cpu~2Eload": true, "apache": true, "linux_sysctl_fs": false} {
		log, err := os.ReadFile(filepath.Join(dir, "tables", tbl, "_delta_log", "00000000000000000000.json"))
		if err != nil {
			t.Fatal(err)
		}
		if tbl == "apache" {
			log, err = os.ReadFile(filepath.Join(dir, "tables", tbl, "_delta_log", "00000000000000000001.json"))
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Contains(string(log), `"delta.columnMapping.mode":"name"`) && strings.Contains(string(log), `"columnMapping"`); got != mapped {
			t.Errorf("table %s: column mapping %v, want %v:\n%s", tbl, got, mapped, log)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "tables", tbl, "*.parquet"))
		if len(files) == 0 {
			t.Fatalf("table %s has no data files", tbl)
		}
		for _, f := range files {
			for _, name := range parquetColumnNames(t, f) {
				if strings.ContainsAny(name, " ,;{}()\n\t=") {
					t.Errorf("%s: column %q in a data file", f, name)
				}
			}
		}
	}
	// Each table is one directory, whatever its name: none escapes the
	// tables directory or clashes with another where case is ignored.
	ents, err := os.ReadDir(filepath.Join(dir, "tables"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		dirs = append(dirs, e.Name())
	}
	if got := strings.Join(dirs, " "); got != "apache cpu~2Eload linux_sysctl_fs m~20t ~44isk-~49~4F" {
		t.Fatalf("table directories: %s", got)
	}
	// An independent Delta reader (delta-kernel-rs, in chDB) finds the
	// table where its name put it and reads the columns by their names.
	table := filepath.Join(dir, "tables", "~44isk-~49~4F")
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT `Host Name` AS h, `a\"q` AS q, `x.y` AS x FROM deltaLakeLocal('%s') ORDER BY q", table)), []string{"h", "q", "x"})
	if strings.Join(got, "; ") != "srv1|1|p; srv3|3|NULL" {
		t.Fatalf("chDB reads %q", got)
	}
	table = filepath.Join(dir, "tables", "apache")
	got = chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT host, `BusyWorkers` AS b, `Busy Ratio (%%)` AS r FROM deltaLakeLocal('%s') ORDER BY host", table)), []string{"host", "b", "r"})
	if strings.Join(got, "; ") != "a|3|NULL; e|NULL|75" {
		t.Fatalf("chDB reads %q", got)
	}
	s = startServer(t, dir, nil)
	c = s.connect(ctx)
	if got := rows(q); got != want {
		t.Fatalf("rows after a restart: %s, want %s", got, want)
	}
	if got := rows(`SELECT "Host Name", "Load 1" FROM "cpu.load"`); got != "a 0.5" {
		t.Fatalf("cpu.load after a restart: %s", got)
	}
}

// parquetColumnNames returns the column names of a Parquet file's schema,
// as the engine reads its footer.
func parquetColumnNames(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf("SELECT name FROM parquet_schema('%s') WHERE num_children IS NULL OR num_children = 0", path))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
