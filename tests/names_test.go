package tests

import (
	"context"
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
	exec(`CHECKPOINT`)
	s.stop()
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
	if got := strings.Join(dirs, " "); got != "apache cpu~2Eload linux_sysctl_fs ~44isk-~49~4F" {
		t.Fatalf("table directories: %s", got)
	}
	// An independent Delta reader (delta-kernel-rs, in chDB) finds the
	// table where its name put it and reads the columns by their names.
	table := filepath.Join(dir, "tables", "~44isk-~49~4F")
	got := chdbRows(t, chdbQuery(t, table, fmt.Sprintf("SELECT `Host Name` AS h, `a\"q` AS q, `x.y` AS x FROM deltaLakeLocal('%s') ORDER BY q", table)), []string{"h", "q", "x"})
	if strings.Join(got, "; ") != "srv1|1|p; srv3|3|NULL" {
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
