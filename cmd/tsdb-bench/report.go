package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// engines in report order: tsdb over compacted files, over the files as
// flushed (one per 10-minute bucket), over files and buffer, DuckDB alone
// over the compacted files, PostgreSQL without and with
// the suite's indexes.
var engines = []string{"tsdb-compacted", "tsdb-flushed", "tsdb-mixed", "ceiling", "postgres", "postgres-indexed"}

type loadResult struct {
	Engine     string  `json:"engine"`
	Path       string  `json:"path"`
	Rows       int     `json:"rows"`
	Seconds    float64 `json:"seconds"` // the median load
	RowsPerSec float64 `json:"rows_per_sec"`
	// RunSeconds are all loads of the path, in the order they ran.
	RunSeconds []float64 `json:"run_seconds"`
	// PeakRSS is tsdb's largest resident memory during the path's loads
	// (0: not measured).
	PeakRSS int64 `json:"peak_rss_bytes,omitempty"`
}

type queryResult struct {
	Name string `json:"name"`
	// MedianMs per engine.
	MedianMs map[string]float64 `json:"median_ms"`
	// Mismatch names the engines whose rows differ from the ceiling's.
	Mismatch []string `json:"mismatch,omitempty"`
}

type report struct {
	Date              string         `json:"date"`
	Machine           string         `json:"machine"`
	Hosts             int            `json:"hosts"`
	Duration          string         `json:"duration"`
	Rows              int            `json:"rows"`
	Runs              int            `json:"runs"`
	LoadRuns          int            `json:"load_runs"`
	PostgresVersion   string         `json:"postgres_version,omitempty"`
	Loads             []loadResult   `json:"loads"`
	Queries           []*queryResult `json:"queries"`
	ParquetFiles      int            `json:"parquet_files_flushed"`
	CompactedFiles    int            `json:"parquet_files_compacted"`
	CompactSeconds    float64        `json:"compact_seconds"`
	ParquetBytes      int64          `json:"parquet_bytes_flushed"`
	CompactedBytes    int64          `json:"parquet_bytes_compacted"`
	BufferBytesPerRow float64        `json:"buffer_bytes_per_row"`
	ArrowBytesPerRow  float64        `json:"arrow_bytes_per_row"`
	TSDBRSSAfterLoad  int64          `json:"tsdb_rss_after_load_bytes"`
	// TSDBFileRSSAfterLoad is the file pages among them (the binary's
	// code, the mapped WAL).
	TSDBFileRSSAfterLoad int64      `json:"tsdb_file_rss_after_load_bytes"`
	WALReplay            *walReplay `json:"wal_replay,omitempty"`
	WALDays              []*walDay  `json:"wal_days,omitempty"`
}

func newReport(c config, d *dataset) *report {
	return &report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), Hosts: c.hosts,
		Duration: c.duration.String(), Rows: d.rows(), Runs: c.runs, LoadRuns: c.loadRuns}
}

// machine describes the CPU and memory the run had.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %d GiB RAM", kb>>20)
	}
	return fmt.Sprintf("%d cores, %s%s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH)
}

// addLoad records the loads of one path into one engine by their median.
func (r *report) addLoad(engine, path string, rows int, runs []time.Duration) *loadResult {
	secs := make([]float64, len(runs))
	for i, d := range runs {
		secs[i] = d.Seconds()
	}
	med := median(runs)
	r.Loads = append(r.Loads, loadResult{Engine: engine, Path: path, Rows: rows, Seconds: med.Seconds(), RowsPerSec: float64(rows) / med.Seconds(), RunSeconds: secs})
	return &r.Loads[len(r.Loads)-1]
}

func (r *report) query(name string) *queryResult {
	for _, q := range r.Queries {
		if q.Name == name {
			return q
		}
	}
	q := &queryResult{Name: name, MedianMs: map[string]float64{}}
	r.Queries = append(r.Queries, q)
	return q
}

func (r *report) addQuery(name, engine string, d time.Duration) {
	r.query(name).MedianMs[engine] = float64(d.Microseconds()) / 1000
}

// peakRSS is tsdb's peak resident memory during a path's loads.
func (r *report) peakRSS(path string) int64 {
	for _, l := range r.Loads {
		if l.Engine == "tsdb" && l.Path == path {
			return l.PeakRSS
		}
	}
	return 0
}

// load returns the median and the first load's rows/s of a path into an
// engine (0 if it did not run).
func (r *report) load(engine, path string) (median, first float64) {
	for _, l := range r.Loads {
		if l.Engine == engine && l.Path == path {
			if len(l.RunSeconds) > 0 {
				first = float64(l.Rows) / l.RunSeconds[0]
			}
			return l.RowsPerSec, first
		}
	}
	return 0, 0
}

// compare checks every engine's rows against the ceiling's (order-free,
// floats equal to 1e-9 relative) and returns how many differ.
func (r *report) compare(qs []benchQuery, results map[string]map[string][][]any) int {
	n := 0
	for _, q := range qs {
		want := canonical(results["ceiling"][q.Name])
		for _, e := range engines {
			got, ok := results[e][q.Name]
			if !ok || e == "ceiling" {
				continue
			}
			if !sameRows(canonical(got), want) {
				r.query(q.Name).Mismatch = append(r.query(q.Name).Mismatch, e)
				n++
			}
		}
	}
	return n
}

// canonical turns rows into comparable values, sorted.
func canonical(rows [][]any) [][]any {
	out := make([][]any, len(rows))
	keys := make([]string, len(rows))
	for i, row := range rows {
		c := make([]any, len(row))
		var key strings.Builder
		for j, v := range row {
			switch x := v.(type) {
			case time.Time:
				v = x.UTC().Format(time.RFC3339Nano)
			case float32:
				v = float64(x)
			case int32:
				v = int64(x)
			case int:
				v = int64(x)
			}
			c[j] = v
			if f, ok := v.(float64); ok {
				fmt.Fprintf(&key, "%.4g|", f)
			} else {
				fmt.Fprintf(&key, "%v|", v)
			}
		}
		out[i], keys[i] = c, key.String()
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	sorted := make([][]any, len(rows))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

func sameRows(a, b [][]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			fa, aok := a[i][j].(float64)
			fb, bok := b[i][j].(float64)
			if aok && bok {
				if math.Abs(fa-fb) > 1e-9*math.Max(1, math.Max(math.Abs(fa), math.Abs(fb))) {
					return false
				}
				continue
			}
			if fmt.Sprint(a[i][j]) != fmt.Sprint(b[i][j]) {
				return false
			}
		}
	}
	return true
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func ms(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// print writes the result table.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\ntsdb bench: %d hosts × %s = %d rows, median of %d loads and of %d query runs, %s\n", r.Hosts, r.Duration, r.Rows, r.LoadRuns, r.Runs, r.Machine)
	fmt.Fprintf(w, "PostgreSQL %s; tsdb files: %d after flush (%.1f MiB), %d after VACUUM (%.1f MiB, %.1f s: %.1f MB/s of flushed files merged); buffered %.1f bytes/row vs %.1f Arrow bytes/row (%.2f×); tsdb RSS after the last COPY's first %.0f%% of the rows (earlier loads dropped): %d MiB, %d MiB of it file pages (the binary's code and the WAL's mapped value log, which the kernel may reclaim)\n\n",
		r.PostgresVersion, r.ParquetFiles, float64(r.ParquetBytes)/(1<<20), r.CompactedFiles, float64(r.CompactedBytes)/(1<<20), r.CompactSeconds,
		float64(r.ParquetBytes)/1e6/r.CompactSeconds, r.BufferBytesPerRow, r.ArrowBytesPerRow, r.BufferBytesPerRow/r.ArrowBytesPerRow, splitFraction*100, r.TSDBRSSAfterLoad>>20, r.TSDBFileRSSAfterLoad>>20)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The first load of each path is shown beside the median: it is the
	// only one a server makes with memory it has never touched.
	fmt.Fprintln(tw, "load path\ttsdb rows/s\tPostgreSQL rows/s\ttsdb/PostgreSQL\tfirst load: tsdb\tPostgreSQL\ttsdb/PostgreSQL\ttsdb peak RSS MiB\t")
	for _, p := range []string{"COPY", "psql \\copy", "tsdb import", "INSERT", "INSERT in tx"} {
		t, t1 := r.load("tsdb", p)
		pg, pg1 := r.load("postgres", p)
		if p == "tsdb import" {
			// Against PostgreSQL's loader of files: psql \copy.
			pg, pg1 = r.load("postgres", "psql \\copy")
		}
		peak := "-"
		if b := r.peakRSS(p); b > 0 {
			peak = fmt.Sprint(b >> 20)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.0f\t%.0f\t%s\t%s\t\n", p, t, pg, ratio(t, pg), t1, pg1, ratio(t1, pg1), peak)
	}
	tw.Flush()
	if t, _ := r.load("tsdb", "tsdb import"); t > 0 {
		c, _ := r.load("tsdb", "psql \\copy")
		fmt.Fprintf(w, "tsdb import: %s× psql \\copy into tsdb\n", ratio(t, c))
	}
	copyRate, _ := r.load("tsdb", "COPY")
	for _, p := range []string{"line protocol", "line protocol (gzip)", "line protocol (dedup)", "line protocol (dedup, sent again)"} {
		if t, t1 := r.load("tsdb", p); t > 0 {
			fmt.Fprintf(w, "%s (%d-line requests, %d writers): %.0f rows/s, %s× tsdb's COPY (first load %.0f)\n", p, lineBatch, lineWriters, t, ratio(t, copyRate), t1)
		}
	}
	if on, _ := r.load("tsdb", "line protocol (dedup)"); on > 0 {
		off, _ := r.load("tsdb", "line protocol")
		again, _ := r.load("tsdb", "line protocol (dedup, sent again)")
		fmt.Fprintf(w, "dedup_keys on/off: %s× line protocol without them; sent again (every point replaced) %s×\n", ratio(on, off), ratio(again, off))
	}
	fmt.Fprintln(w)
	if r := r.WALReplay; r != nil {
		fmt.Fprintf(w, "WAL replay after SIGKILL: %d rows in %.2f s = %.0f rows/s (WAL on disk %d MiB, %.0f bytes/row)\n", r.Rows, r.Seconds, r.RowsPerSec, r.WALBytes>>20, float64(r.WALBytes)/float64(r.Rows))
	}
	for _, d := range r.WALDays {
		fmt.Fprintf(w, "WAL disk over a simulated day, %d hosts (%d MiB written): peak unflushed %d MiB, peak on disk %d MiB; disk/unflushed max %.2f, mean %.2f; at the end %d MiB for %d MiB unflushed\n",
			d.Hosts, d.WrittenBytes>>20, d.PeakUnflushed>>20, d.PeakDisk>>20, d.MaxRatio, d.MeanRatio, d.EndDisk>>20, d.EndUnflushed>>20)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query (ms)\ttsdb compacted\ttsdb as flushed\ttsdb files+buffer\tceiling\tPG\tPG+idx\tcompacted/ceiling\tmixed/ceiling\ttsdb/PG\ttsdb/PG+idx\tsame rows\t")
	for _, q := range r.Queries {
		m := q.MedianMs
		same := "yes"
		if len(q.Mismatch) > 0 {
			same = "NO: " + strings.Join(q.Mismatch, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", q.Name,
			ms(m["tsdb-compacted"]), ms(m["tsdb-flushed"]), ms(m["tsdb-mixed"]), ms(m["ceiling"]), ms(m["postgres"]), ms(m["postgres-indexed"]),
			ratio(m["tsdb-compacted"], m["ceiling"]), ratio(m["tsdb-mixed"], m["ceiling"]),
			ratio(m["tsdb-compacted"], m["postgres"]), ratio(m["tsdb-compacted"], m["postgres-indexed"]), same)
	}
	tw.Flush()
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
