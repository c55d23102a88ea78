package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// tsdb import loads CSV and Parquet files into a running server in
// batches, reports progress in plain lines when not on a terminal, and
// reports how far a failed import got.
func TestImport(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE imp (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT)"); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr)
	importFile := func(args ...string) (string, string, error) {
		cmd := exec.Command(binary, append([]string{"import", "--url", url, "--table", "imp"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}

	// CSV with a header, a quoted field holding a comma, a quote and a
	// newline, and an empty (NULL) field.
	var csv strings.Builder
	csv.WriteString("time,host,v,n\n")
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2500 {
		host := fmt.Sprintf("h%d", i%4)
		if i == 7 {
			host = "\"odd, \"\"quoted\"\"\nhost\""
		}
		v := fmt.Sprint(float64(i) / 2)
		if i == 8 {
			v = ""
		}
		fmt.Fprintf(&csv, "%s,%s,%s,%d\n", base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05+00"), host, v, i)
	}
	csvPath := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(csvPath, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, progress, err := importFile("--batch-rows", "1000", "--progress-every", "1ns", csvPath)
	if err != nil || !strings.Contains(out, "imported 2500 rows into imp") {
		t.Fatalf("CSV import: %v\n%s%s", err, out, progress)
	}
	// Not a terminal: plain lines, one per batch here, the last at 100%.
	if lines := strings.Split(strings.TrimSpace(progress), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "progress: 100.0% of") ||
		!strings.Contains(lines[2], "2500 rows") || !strings.Contains(lines[0], "rows/s, ETA") {
		t.Fatalf("progress lines:\n%s", progress)
	}
	var n, sumN int64
	var host string
	var nullV bool
	if err := c.QueryRow(ctx, "SELECT count(*), sum(n) FROM imp").Scan(&n, &sumN); err != nil || n != 2500 || sumN != 2500*2499/2 {
		t.Fatalf("after CSV import: %d rows, sum %d, %v", n, sumN, err)
	}
	if err := c.QueryRow(ctx, "SELECT host FROM imp WHERE n = 7").Scan(&host); err != nil || host != "odd, \"quoted\"\nhost" {
		t.Fatalf("quoted field: %q, %v", host, err)
	}
	if err := c.QueryRow(ctx, "SELECT v IS NULL FROM imp WHERE n = 8").Scan(&nullV); err != nil || !nullV {
		t.Fatalf("empty field is not NULL: %v", err)
	}

	// Parquet, columns matched by name (in another order than the table's).
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 1200 {
		bld.Field(0).(*array.Int64Builder).Append(int64(10000 + i))
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Hour + time.Duration(i)*time.Second).UnixMicro()))
		if i%10 == 0 {
			bld.Field(2).AppendNull()
		} else {
			bld.Field(2).(*array.StringBuilder).Append("")
		}
	}
	rec := bld.NewRecordBatch()
	var pq bytes.Buffer
	w, err := pqarrow.NewFileWriter(sch, &pq, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pqPath := filepath.Join(t.TempDir(), "data.parquet")
	if err := os.WriteFile(pqPath, pq.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Both limits set, the bytes' cutting batches first (about 40 bytes
	// a row) and across the file's records.
	out, progress, err = importFile("--batch-rows", "500", "--batch-bytes", "3KiB", pqPath)
	if err != nil || !strings.Contains(out, "imported 1200 rows") {
		t.Fatalf("Parquet import: %v\n%s%s", err, out, progress)
	}
	var nulls, empties int64
	if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE host IS NULL), count(*) FILTER (WHERE host = '') FROM imp WHERE n >= 10000").Scan(&nulls, &empties); err != nil || nulls != 120 || empties != 1080 {
		t.Fatalf("Parquet strings: %d NULL, %d empty, %v", nulls, empties, err)
	}

	// A bad row fails its batch; the batches before it stay and the
	// message says how many rows landed, and the bad row's line in the
	// file: line 8, the second batch's third row, after a row whose quoted
	// field spans two lines. The file starts with a byte order mark, as
	// Excel writes CSV.
	// The batches after the bad one must not land either.
	bad := "\xef\xbb\xbftime,host,v,n\n" + strings.Repeat("2026-03-02 00:00:00+00,x,1,1\n", 3) +
		"2026-03-02 00:00:00+00,\"two\nlines\",1,1\n" + "2026-03-02 00:00:00+00,x,1,1\n" + "2026-03-02 00:00:00+00,x,notanumber,1\n" +
		strings.Repeat("2026-03-02 00:00:01+00,after,1,1\n", 3000)
	badPath := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(badPath, []byte(bad), 0o644)
	_, msg, err := importFile("--batch-rows", "3", badPath)
	if err == nil || !strings.Contains(msg, "3 rows were imported before the error") || !strings.Contains(msg, "22P02") ||
		!strings.Contains(msg, "line 8,") {
		t.Fatalf("bad import: %v\n%s", err, msg)
	}
	var landed, after int64
	if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE host = 'x'), count(*) FILTER (WHERE host = 'after') FROM imp WHERE time >= '2026-03-02'").Scan(&landed, &after); err != nil || landed != 3 || after != 0 {
		t.Fatalf("after the bad import: %d rows of the first batch, %d of the batches after the bad one landed, %v", landed, after, err)
	}

	// Batches cut by bytes end at a row's end, never inside a quoted
	// field: with --batch-bytes 20 every row is its own batch (a row is
	// 29 bytes), and the quoted row's first line, 28 bytes, reaches the
	// limit inside its quotes. Rows 1-5 land, row 6 fails alone.
	bad = strings.ReplaceAll(bad, "2026-03-02", "2026-03-03")
	os.WriteFile(badPath, []byte(bad), 0o644)
	_, msg, err = importFile("--batch-bytes", "20", badPath)
	if err == nil || !strings.Contains(msg, "5 rows were imported before the error") || !strings.Contains(msg, "22P02") ||
		!strings.Contains(msg, "line 8,") {
		t.Fatalf("bad import in batches cut by bytes: %v\n%s", err, msg)
	}
	var quoted int64
	if err := c.QueryRow(ctx, "SELECT count(*) FILTER (WHERE host = 'x'), count(*) FILTER (WHERE host = e'two\\nlines'), count(*) FILTER (WHERE host = 'after') FROM imp WHERE time >= '2026-03-03' AND time < '2026-03-04'").Scan(&landed, &quoted, &after); err != nil || landed != 4 || quoted != 1 || after != 0 {
		t.Fatalf("after the bad import in batches cut by bytes: %d rows 'x' (want 4), %d quoted (want 1), %d after the bad one, %v", landed, quoted, after, err)
	}
	if _, msg, err := importFile("--batch-bytes", "lots", badPath); err == nil || !strings.Contains(msg, "--batch-bytes") {
		t.Fatalf("import with --batch-bytes lots: %v\n%s", err, msg)
	}

	// Many batches land, completely.
	var many strings.Builder
	many.WriteString("time,host,v,n\n")
	for i := range 5000 {
		fmt.Fprintf(&many, "%s,many,%d,%d\n", base.Add(48*time.Hour+time.Duration(i)*time.Second).Format("2006-01-02 15:04:05+00"), i, i)
	}
	manyPath := filepath.Join(t.TempDir(), "many.csv")
	os.WriteFile(manyPath, []byte(many.String()), 0o644)
	if out, msg, err := importFile("--batch-rows", "97", manyPath); err != nil || !strings.Contains(out, "imported 5000 rows") {
		t.Fatalf("import in 52 batches: %v\n%s%s", err, out, msg)
	}
	if err := c.QueryRow(ctx, "SELECT count(*), sum(n) FROM imp WHERE host = 'many'").Scan(&n, &sumN); err != nil || n != 5000 || sumN != 5000*4999/2 {
		t.Fatalf("after the import in 52 batches: %d rows, sum %d, %v", n, sumN, err)
	}
}
