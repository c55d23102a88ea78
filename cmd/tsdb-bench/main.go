// Command tsdb-bench runs the Time Series Benchmark Suite's DevOps cpu-only
// workload against tsdb, PostgreSQL and DuckDB directly over tsdb's Parquet
// files (the engine ceiling), in one run on one machine, and reports load
// rates, query latencies and their ratios (see docs/benchmarks.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

type config struct {
	hosts    int
	duration time.Duration
	runs     int
	loadRuns int
	binary   string
	out      string
	workDir  string
	noPG     bool
	batch    int
	// inserts runs the multi-row INSERT loads; walDay the simulated
	// days of the WAL's disk use.
	inserts, walDay bool
	// resend sends the line-protocol data set again into the dedup table.
	resend bool

	profile        string
	profileSeconds int
}

func main() {
	var c config
	flag.IntVar(&c.hosts, "hosts", 100, "simulated hosts")
	flag.DurationVar(&c.duration, "duration", 24*time.Hour, "time span of the data set (one row per host every 10 s)")
	flag.IntVar(&c.runs, "runs", 9, "timed runs of each query (after one warm-up); the median is reported")
	flag.IntVar(&c.loadRuns, "load-runs", 3, "loads of each path into each engine, each into a fresh table; the median is reported")
	flag.StringVar(&c.binary, "tsdb", "bin/tsdb", "the tsdb binary")
	flag.StringVar(&c.out, "out", "bench-results", "directory for bench.json and bench.png")
	flag.StringVar(&c.workDir, "work-dir", "", "scratch directory for the servers' data (default: a temporary directory)")
	flag.BoolVar(&c.noPG, "no-postgres", false, "skip PostgreSQL")
	flag.IntVar(&c.batch, "insert-batch", 1000, "rows per multi-row INSERT")
	flag.BoolVar(&c.inserts, "inserts", true, "run the multi-row INSERT loads (PostgreSQL takes minutes for millions of rows)")
	flag.BoolVar(&c.walDay, "wal-day", true, "simulate a day of the WAL's disk use at the hosts and ten times as many")
	flag.BoolVar(&c.resend, "resend", true, "send the line-protocol data set again into the dedup table (every point replaced: minutes at 1,000 hosts)")
	flag.StringVar(&c.profile, "profile", "", "directory for CPU profiles of tsdb during each load (go tool pprof)")
	flag.IntVar(&c.profileSeconds, "profile-seconds", 5, "length of each load profile")
	chartFrom := flag.String("chart-from", "", "only redraw --out/bench.png from this bench.json")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if c.runs < 1 || c.loadRuns < 1 {
		logger.Error("--runs and --load-runs must be at least 1")
		os.Exit(2)
	}
	if *chartFrom != "" {
		if err := redraw(*chartFrom, filepath.Join(c.out, "bench.png")); err != nil {
			logger.Error("chart failed", "err", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c, logger); err != nil {
		logger.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, logger *slog.Logger) error {
	work := c.workDir
	if work == "" {
		d, err := os.MkdirTemp("", "tsdb-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	// PostgreSQL runs as its own user when the bench runs as root: it must
	// be able to reach its directory inside the work directory.
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	ds := newDataset(c.hosts, c.duration)
	logger.Info("generating data set", "set", ds.String())
	data, err := generate(ds, c.batch, c.inserts, work)
	if err != nil {
		return err
	}
	defer data.lines.remove()
	defer data.linesGzip.remove()
	// PostgreSQL's psql runs as the invoking user; the file must be
	// readable to it (it is, 0644) and to nobody's surprise left behind.
	defer os.Remove(data.csvFile)
	rep := newReport(c, ds)
	rep.ArrowBytesPerRow = data.arrowBytes / float64(ds.rows())
	qs := queries(ds, "cpu", c.runs+1)
	results := map[string]map[string][][]any{} // engine → query → rows

	if err := benchTSDB(ctx, c, logger, filepath.Join(work, "tsdb"), data, qs, rep, results); err != nil {
		return err
	}
	if err := benchReplay(ctx, c, logger, filepath.Join(work, "replay"), data, rep); err != nil {
		return fmt.Errorf("WAL replay: %w", err)
	}
	os.RemoveAll(filepath.Join(work, "replay"))
	// The simulated day's 1,000-row entries are live ingest (INSERT, line
	// protocol), which the WAL keeps uncompressed: the replayed load's
	// bytes per row are a COPY's, text split and LZ4-compressed (half as
	// many), so its rows are weighed as Arrow holds them.
	perRow := max(float64(rep.WALReplay.WALBytes)/float64(rep.WALReplay.Rows), rep.ArrowBytesPerRow)
	for _, hosts := range []int{c.hosts, 10 * c.hosts} {
		if !c.walDay {
			break
		}
		d, err := benchWALDay(ctx, logger, filepath.Join(work, "walday"), hosts, perRow)
		if err != nil {
			return fmt.Errorf("WAL day: %w", err)
		}
		rep.WALDays = append(rep.WALDays, d)
	}
	if !c.noPG {
		if err := benchPostgres(ctx, c, logger, filepath.Join(work, "pg"), data, qs, rep, results); err != nil {
			return err
		}
	}
	mismatches := rep.compare(qs, results)
	rep.print(os.Stdout)
	if err := rep.writeJSON(filepath.Join(c.out, "bench.json")); err != nil {
		return err
	}
	if err := rep.writePNG(filepath.Join(c.out, "bench.png")); err != nil {
		return err
	}
	logger.Info("wrote results", "json", filepath.Join(c.out, "bench.json"), "png", filepath.Join(c.out, "bench.png"))
	if mismatches > 0 {
		return fmt.Errorf("%d query results differ between engines", mismatches)
	}
	return nil
}

// redraw draws the chart of a saved bench.json.
func redraw(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	return r.writePNG(to)
}
