package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"

	"tsdb/delta"
)

// loadData is the data set rendered once for every engine: CSV for COPY
// (with the byte offset where the first part ends), multi-row INSERTs and
// line-protocol request bodies. The CSV and the bodies are spooled to
// files in the work directory and read back as each load sends them (from
// the page cache, as a file a user loads would be): at 1,000 hosts they
// are gigabytes, and the bench held them all in memory beside tsdb and
// PostgreSQL until the kernel killed one of them.
type loadData struct {
	csvFile string // the CSV rows, for COPY, psql's \copy and tsdb import
	csvSize int64
	splitAt int64 // byte offset of the first row of the second COPY part
	rows    int
	// inserts are the multi-row INSERTs, rendered only for the INSERT
	// loads (--inserts).
	inserts    []string
	arrowBytes float64 // what the rows take as Arrow arrays
	// lines and linesGzip are the rows as line-protocol request bodies
	// (see lineBodies).
	lines, linesGzip *bodyFile
}

// csvPart opens bytes [from, to) of the CSV file.
func (d *loadData) csvPart(from, to int64) (io.Reader, func(), error) {
	f, err := os.Open(d.csvFile)
	if err != nil {
		return nil, nil, err
	}
	return io.NewSectionReader(f, from, to-from), func() { f.Close() }, nil
}

// copyFile streams bytes [from, to) of the CSV file through COPY.
func (d *loadData) copyFile(ctx context.Context, c *pgx.Conn, table string, from, to int64) error {
	r, done, err := d.csvPart(from, to)
	if err != nil {
		return err
	}
	defer done()
	return copyIn(ctx, c, table, r)
}

// psqlCopy loads the CSV file into table as a user does from a shell:
// psql's \copy, which streams the file through COPY FROM STDIN.
func psqlCopy(ctx context.Context, url, table, file string) error {
	cmd := exec.CommandContext(ctx, "psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
		"-c", fmt.Sprintf(`\copy %s FROM '%s' WITH (FORMAT csv)`, table, file))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("psql \\copy: %w: %s", err, out)
	}
	return nil
}

// tsdbImport loads the CSV file into table with tsdb's own loader.
func tsdbImport(ctx context.Context, binary, url, table, file string) error {
	cmd := exec.CommandContext(ctx, binary, "import", "--table", table, "--url", url, "--header=false", file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tsdb import: %w: %s", err, out)
	}
	return nil
}

// fileTable is the table of the loads from the file, dropped after each.
func fileTable(bool) string { return "cpu_file" }

// splitFraction of the rows is flushed before the rest is loaded, so that
// queries run over files and buffer together.
const splitFraction = 0.75

// generate renders the data set into dir (see loadData); the INSERT
// statements only when inserts is set.
func generate(d *dataset, batch int, inserts bool, dir string) (*loadData, error) {
	out := &loadData{rows: d.rows(), csvFile: filepath.Join(dir, "cpu.csv")}
	split := int(float64(d.rows()) * splitFraction)
	// Keep the split on a time step, so files and buffer hold whole steps.
	split -= split % len(d.hosts)
	f, err := os.Create(out.csvFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var vals, line []byte
	n, inBatch := 0, 0
	prefix := "INSERT INTO " + insertTable(false) + " VALUES "
	err = d.each(func(t time.Time, h *host) error {
		if n == split {
			out.splitAt = out.csvSize
		}
		line = appendCSV(line[:0], t, h)
		if _, err := w.Write(line); err != nil {
			return err
		}
		out.csvSize += int64(len(line))
		if inserts {
			if inBatch == 0 {
				vals = append(vals[:0], prefix...)
			} else {
				vals = append(vals, ',')
			}
			vals = appendValues(vals, t, h)
			inBatch++
			if inBatch == batch {
				out.inserts = append(out.inserts, string(vals))
				inBatch = 0
			}
		}
		// Arrow: 8 bytes of time, 8 per metric, a 4-byte offset and the
		// bytes of each tag (validity bitmaps are a bit per value).
		out.arrowBytes += 8 + 80 + 21.0/8
		for _, tag := range h.tags {
			out.arrowBytes += 4 + float64(len(tag))
		}
		n++
		return nil
	})
	if err == nil {
		err = w.Flush()
	}
	// Written back before the loads start, so that the kernel's
	// writeback of gigabytes of dirty pages does not share the disk with
	// the first loads' WAL syncs.
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		os.Remove(out.csvFile)
		return nil, fmt.Errorf("writing %s: %w", out.csvFile, err)
	}
	if inBatch > 0 {
		out.inserts = append(out.inserts, string(vals))
	}
	if out.lines, out.linesGzip, err = lineBodies(d, dir); err != nil {
		os.Remove(out.csvFile)
		return nil, err
	}
	return out, nil
}

// copyIn streams CSV rows through COPY FROM STDIN.
func copyIn(ctx context.Context, c *pgx.Conn, table string, csv io.Reader) error {
	_, err := c.PgConn().CopyFrom(ctx, csv, "COPY "+table+" FROM STDIN WITH (FORMAT csv)")
	return err
}

// insertAll runs the multi-row INSERTs one after another.
func insertAll(ctx context.Context, c *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
	}
	return nil
}

// txStatements is how many of the multi-row INSERTs one transaction of
// the "INSERT in transactions" load holds: with the default batch of 1,000
// rows, 100,000 rows a COMMIT.
const txStatements = 100

// txLoad times loading the INSERTs in transactions (insertTx) on one
// engine and records the runs in rep.
func txLoad(ctx context.Context, logger *slog.Logger, conn *pgx.Conn, runs int, rep *report, engine string, data *loadData) error {
	txs, err := loadRuns(ctx, conn, runs, false, insertTable, func(string, bool) (time.Duration, error) {
		return timed(func() error { return insertTx(ctx, conn, data.inserts) })
	})
	if err != nil {
		return fmt.Errorf("%s INSERT-in-transactions load: %w", engine, err)
	}
	rep.addLoad(engine, "INSERT in tx", data.rows, txs)
	logger.Info("INSERT-in-transactions load", "engine", engine, "rows", data.rows, "seconds", median(txs).Seconds(), "runs", txs)
	return nil
}

// insertTx runs the multi-row INSERTs in transactions of txStatements.
func insertTx(ctx context.Context, c *pgx.Conn, stmts []string) error {
	for len(stmts) > 0 {
		n := min(txStatements, len(stmts))
		if _, err := c.Exec(ctx, "BEGIN", pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		if err := insertAll(ctx, c, stmts[:n]); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "COMMIT", pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		stmts = stmts[n:]
	}
	return nil
}

// loadRuns times n loads, each into a fresh table of the bench's columns
// named by table. load does one load and returns the time it counts, which
// may leave out untimed steps between its parts. Every table is dropped
// after its load except, with keepLast, the last one, which the queries
// read.
func loadRuns(ctx context.Context, conn *pgx.Conn, n int, keepLast bool, table func(last bool) string, load func(table string, last bool) (time.Duration, error)) ([]time.Duration, error) {
	var runs []time.Duration
	for i := range n {
		last := i == n-1
		t := table(last)
		if _, err := conn.Exec(ctx, createTable(t)); err != nil {
			return nil, err
		}
		d, err := load(t, last)
		if err != nil {
			return nil, err
		}
		if !last || !keepLast {
			if _, err := conn.Exec(ctx, "DROP TABLE "+t); err != nil {
				return nil, err
			}
		}
		runs = append(runs, d)
	}
	return runs, nil
}

// insertTable is the table every multi-row INSERT of generate names.
func insertTable(bool) string { return "cpu_insert" }

// copyTable loads the table the queries read last, and scratch copies of
// it before.
func copyTable(last bool) string {
	if last {
		return "cpu"
	}
	return "cpu_copy"
}

// timed runs fn and returns how long it took.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

func benchTSDB(ctx context.Context, c config, logger *slog.Logger, dir string, data *loadData, qs []benchQuery, rep *report, results map[string]map[string][][]any) error {
	logger.Info("starting tsdb", "binary", c.binary)
	// Nothing flushes on its own during the run: the bench decides what is
	// in files and what is buffered.
	s, err := startTSDB(ctx, c.binary, dir, []string{"--memory-limit", "4GiB", "--idle-flush", "24h", "--max-bucket-bytes", "1GiB", "--compact-interval", "-1s", "--log-level", "warn"})
	if err != nil {
		return err
	}
	defer s.stop()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)

	// From the CSV file, as users load one: psql's \copy and tsdb
	// import. Each path's loads are measured for the server's peak
	// memory too.
	for _, fl := range []struct {
		path string
		load func() error
	}{
		{"psql \\copy", func() error { return psqlCopy(ctx, s.url, fileTable(false), data.csvFile) }},
		{"tsdb import", func() error { return tsdbImport(ctx, c.binary, s.url, fileTable(false), data.csvFile) }},
	} {
		s.resetPeakRSS()
		runs, err := loadRuns(ctx, conn, c.loadRuns, false, fileTable, func(string, bool) (time.Duration, error) {
			return timed(fl.load)
		})
		if err != nil {
			return fmt.Errorf("tsdb %s load: %w", fl.path, err)
		}
		rep.addLoad("tsdb", fl.path, data.rows, runs).PeakRSS = s.peakRSS()
		logger.Info("tsdb "+fl.path+" load", "rows", data.rows, "seconds", median(runs).Seconds(), "runs", runs)
	}

	if c.inserts {
		// Multi-row INSERT into its own table, dropped afterwards. The
		// profile, if any, covers the last load.
		s.resetPeakRSS()
		ins, err := loadRuns(ctx, conn, c.loadRuns, false, insertTable, func(_ string, last bool) (time.Duration, error) {
			prof := func() {}
			if last {
				prof = startProfile(ctx, c, s, "insert")
			}
			defer prof()
			return timed(func() error { return insertAll(ctx, conn, data.inserts) })
		})
		if err != nil {
			return fmt.Errorf("tsdb INSERT load: %w", err)
		}
		rep.addLoad("tsdb", "INSERT", data.rows, ins).PeakRSS = s.peakRSS()
		logger.Info("tsdb INSERT load", "rows", data.rows, "seconds", median(ins).Seconds(), "runs", ins)

		// The same INSERTs, 100 to a transaction: each COMMIT logs 100,000
		// rows at once.
		if err := txLoad(ctx, logger, conn, c.loadRuns, rep, "tsdb", data); err != nil {
			return err
		}
	}

	// Line protocol, as Telegraf sends it, plain and gzip-compressed, into
	// a table of its own; then into a table that identifies points by
	// their tags and time (dedup_keys, what line protocol gives the
	// tables it creates), once and sent again (every point replaced).
	for _, lp := range []struct {
		path   string
		bodies *bodyFile
		gzip   bool
		dedup  bool
		again  bool
	}{
		{"line protocol", data.lines, false, false, false},
		{"line protocol (gzip)", data.linesGzip, true, false, false},
		{"line protocol (dedup)", data.lines, false, true, false},
		{"line protocol (dedup, sent again)", data.lines, false, true, true},
	} {
		if lp.again && !c.resend {
			continue
		}
		s.resetPeakRSS()
		runs, err := loadRuns(ctx, conn, c.loadRuns, false, func(bool) string { return lineTable }, func(table string, last bool) (time.Duration, error) {
			if lp.dedup {
				// A point is its tags and time, as in the tables line
				// protocol creates.
				if _, err := conn.Exec(ctx, "ALTER TABLE "+table+" SET (dedup_keys = '"+strings.Join(tagNames, ",")+"')"); err != nil {
					return 0, err
				}
			}
			if lp.again {
				if err := postLines(ctx, s.httpURL, lp.bodies, lp.gzip); err != nil {
					return 0, err
				}
			}
			prof := func() {}
			if last && lp.gzip {
				prof = startProfile(ctx, c, s, "lineprotocol")
			}
			defer prof()
			return timed(func() error { return postLines(ctx, s.httpURL, lp.bodies, lp.gzip) })
		})
		if err != nil {
			return fmt.Errorf("tsdb %s load: %w", lp.path, err)
		}
		rep.addLoad("tsdb", lp.path, data.rows, runs).PeakRSS = s.peakRSS()
		logger.Info("tsdb "+lp.path+" load", "rows", data.rows, "seconds", median(runs).Seconds(), "runs", runs)
	}

	// COPY: the first part, then a flush and compaction (not timed), then
	// the rest, so that queries see files and buffered rows together. The
	// flushed part is compacted, as the background compactor does in a
	// running server long before its files are a day old: queries over
	// files and buffer then see what a live system has, a few large files
	// and the recent rows buffered. Every load does the same; the last one
	// is the table the queries read.
	s.resetPeakRSS()
	copies, err := loadRuns(ctx, conn, c.loadRuns, true, copyTable, func(table string, last bool) (time.Duration, error) {
		prof := func() {}
		if last {
			prof = startProfile(ctx, c, s, "copy")
		}
		d1, err := timed(func() error { return data.copyFile(ctx, conn, table, 0, data.splitAt) })
		prof()
		if err != nil {
			return 0, err
		}
		if last {
			bufBytes, bufRows, err := bufferStats(ctx, s.httpURL, table)
			if err != nil {
				return 0, err
			}
			rep.BufferBytesPerRow = bufBytes / bufRows
			rep.TSDBRSSAfterLoad = s.rssBytes()
			rep.TSDBFileRSSAfterLoad = s.fileRSSBytes()
		}
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			return 0, err
		}
		if _, err := conn.Exec(ctx, "VACUUM "+table); err != nil {
			return 0, fmt.Errorf("VACUUM: %w", err)
		}
		d2, err := timed(func() error { return data.copyFile(ctx, conn, table, data.splitAt, data.csvSize) })
		return d1 + d2, err
	})
	if err != nil {
		return fmt.Errorf("tsdb COPY load: %w", err)
	}
	rep.addLoad("tsdb", "COPY", data.rows, copies).PeakRSS = s.peakRSS()
	logger.Info("tsdb COPY load", "rows", data.rows, "seconds", median(copies).Seconds(), "runs", copies)

	if err := runQueries(ctx, logger, pgxRunner{conn}, "tsdb-mixed", qs, c.runs, rep, results); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return err
	}
	if err := runQueries(ctx, logger, pgxRunner{conn}, "tsdb-flushed", qs, c.runs, rep, results); err != nil {
		return err
	}
	rep.ParquetFiles, rep.ParquetBytes, err = fileStats(ctx, dir)
	if err != nil {
		return err
	}
	// Compaction merges the flushed buckets' files, as the background
	// compactor would.
	d, err := timed(func() error { _, err := conn.Exec(ctx, "VACUUM cpu"); return err })
	if err != nil {
		return fmt.Errorf("tsdb VACUUM: %w", err)
	}
	rep.CompactSeconds = d.Seconds()
	prof := startProfile(ctx, c, s, "queries")
	err = runQueries(ctx, logger, pgxRunner{conn}, "tsdb-compacted", qs, c.runs, rep, results)
	prof()
	if err != nil {
		return err
	}

	// The ceiling: DuckDB alone, in this process, over the same Parquet
	// files, each query prepared once and run with its parameters.
	store, err := delta.NewLocalStore(filepath.Join(dir, "tables", "cpu"))
	if err != nil {
		return err
	}
	tbl, err := delta.Open(ctx, store, "cpu")
	if err != nil {
		return err
	}
	snap := tbl.Snapshot()
	rep.CompactedFiles = len(snap.Files)
	for _, f := range snap.Files {
		rep.CompactedBytes += f.Size
	}
	var files []string
	for _, f := range snap.Files {
		files = append(files, "'"+store.LocalPath(f.Path)+"'")
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The same engine settings tsdb uses for reading files.
	for _, q := range []string{"SET TimeZone = 'UTC'", "SET parquet_metadata_cache = true", "CREATE VIEW cpu AS SELECT * FROM read_parquet([" + strings.Join(files, ", ") + "])"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("ceiling: %s: %w", q, err)
		}
	}
	return runPrepared(ctx, logger, db, "ceiling", qs, c.runs, rep, results)
}

// startProfile records a CPU profile of tsdb while a load runs (at most
// --profile-seconds from its start) into the --profile directory; the
// returned function waits for it.
func startProfile(ctx context.Context, c config, s *tsdbServer, name string) (wait func()) {
	if c.profile == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", s.httpURL, c.profileSeconds)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			slog.Warn("profile failed", "err", err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == http.StatusOK {
			err = os.WriteFile(filepath.Join(c.profile, "tsdb-"+name+".pprof"), b, 0o644)
		}
		if err != nil {
			slog.Warn("profile failed", "err", err, "status", resp.Status)
		}
	}()
	return func() { <-done }
}

// fileCount is the number of data files of the cpu table.
func fileStats(ctx context.Context, dir string) (files int, bytes int64, err error) {
	store, err := delta.NewLocalStore(filepath.Join(dir, "tables", "cpu"))
	if err != nil {
		return 0, 0, err
	}
	tbl, err := delta.Open(ctx, store, "cpu")
	if err != nil {
		return 0, 0, err
	}
	for _, f := range tbl.Snapshot().Files {
		bytes += f.Size
	}
	return len(tbl.Snapshot().Files), bytes, nil
}

// bufferStats reads the MemBuffer's bytes and rows of a table from /metrics.
func bufferStats(ctx context.Context, base, table string) (bytes, rows float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case `tsdb_membuffer_table_bytes{table="` + table + `"}`:
			bytes = v
		case `tsdb_membuffer_table_rows{table="` + table + `"}`:
			rows = v
		}
	}
	if rows == 0 {
		return 0, 0, fmt.Errorf("no buffered rows of %s in /metrics", table)
	}
	return bytes, rows, nil
}

func benchPostgres(ctx context.Context, c config, logger *slog.Logger, dir string, data *loadData, qs []benchQuery, rep *report, results map[string]map[string][][]any) error {
	p, err := startPostgres(ctx, dir)
	if err != nil {
		return err
	}
	defer p.Stop()
	rep.PostgresVersion = p.Major
	logger.Info("started PostgreSQL", "version", p.Major)
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET TimeZone = 'UTC'"); err != nil {
		return err
	}
	if c.inserts {
		ins, err := loadRuns(ctx, conn, c.loadRuns, false, insertTable, func(string, bool) (time.Duration, error) {
			return timed(func() error { return insertAll(ctx, conn, data.inserts) })
		})
		if err != nil {
			return fmt.Errorf("PostgreSQL INSERT load: %w", err)
		}
		rep.addLoad("postgres", "INSERT", data.rows, ins)
		logger.Info("PostgreSQL INSERT load", "rows", data.rows, "seconds", median(ins).Seconds(), "runs", ins)
		if err := txLoad(ctx, logger, conn, c.loadRuns, rep, "postgres", data); err != nil {
			return err
		}
	}
	copies, err := loadRuns(ctx, conn, c.loadRuns, true, copyTable, func(table string, _ bool) (time.Duration, error) {
		return timed(func() error { return data.copyFile(ctx, conn, table, 0, data.csvSize) })
	})
	if err != nil {
		return fmt.Errorf("PostgreSQL COPY load: %w", err)
	}
	rep.addLoad("postgres", "COPY", data.rows, copies)
	logger.Info("PostgreSQL COPY load", "rows", data.rows, "seconds", median(copies).Seconds(), "runs", copies)
	files, err := loadRuns(ctx, conn, c.loadRuns, false, fileTable, func(table string, _ bool) (time.Duration, error) {
		return timed(func() error { return psqlCopy(ctx, p.URL, table, data.csvFile) })
	})
	if err != nil {
		return fmt.Errorf("PostgreSQL psql \\copy load: %w", err)
	}
	rep.addLoad("postgres", "psql \\copy", data.rows, files)
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE cpu"); err != nil {
		return err
	}
	if err := runQueries(ctx, logger, pgxRunner{conn}, "postgres", qs, c.runs, rep, results); err != nil {
		return err
	}
	// The suite's indexes for PostgreSQL.
	for _, q := range []string{"CREATE INDEX ON cpu (hostname, time DESC)", "CREATE INDEX ON cpu (time DESC)", "ANALYZE cpu"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return err
		}
	}
	return runQueries(ctx, logger, pgxRunner{conn}, "postgres-indexed", qs, c.runs, rep, results)
}
