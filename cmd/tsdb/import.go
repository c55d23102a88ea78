package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tsdb/internal/schema"
)

const importUsage = `Usage: tsdb import --table T [flags] FILE.csv|FILE.parquet

Loads a file into a table of a running tsdb over COPY FROM STDIN, in
batches of --batch-rows rows or --batch-bytes bytes, whichever comes
first. Each batch is one COPY: atomic and durable when acknowledged. A
failed import leaves the batches before the failure in the table (the
message says how many rows landed).

Flags:
`

// runImport is "tsdb import": a bulk load with progress (a bar with rows/s
// and ETA on a terminal, a line every few seconds otherwise).
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importUsage); fs.PrintDefaults() }
	table := fs.String("table", "", "the table to load (required)")
	url := fs.String("url", getenvOr(getenv, "TSDB_URL", "postgres://tsdb@127.0.0.1:5432/tsdb"), "the server (env TSDB_URL); the password comes from PGPASSWORD")
	format := fs.String("format", "", "csv or parquet (default: from the file name)")
	header := fs.Bool("header", true, "CSV: the first line names the columns")
	batchRows := fs.Int("batch-rows", 1_000_000, "at most this many rows per COPY statement")
	batchBytes := fs.String("batch-bytes", "64MiB", "at most about this much CSV per COPY statement (a batch ends at the row that reaches it); the server holds a batch in memory until it commits")
	every := fs.Duration("progress-every", 2*time.Second, "time between progress lines when not on a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *table == "" || fs.NArg() != 1 || *batchRows <= 0 {
		fs.Usage()
		return 2
	}
	maxBytes, err := parseBytes(*batchBytes)
	if err != nil || maxBytes <= 0 {
		fmt.Fprintf(stderr, "tsdb import: --batch-bytes %q: want a size such as 64MiB\n", *batchBytes)
		return 2
	}
	path := fs.Arg(0)
	if *format == "" {
		*format = strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	}
	conn, err := pgx.Connect(ctx, *url)
	if err != nil {
		fmt.Fprintf(stderr, "tsdb import: connect: %v\n", err)
		return 1
	}
	defer conn.Close(context.Background())
	im := &importer{conn: conn, table: *table, batchRows: *batchRows, batchBytes: int(min(maxBytes, math.MaxInt)), progress: newProgress(stderr, *every)}
	switch *format {
	case "csv":
		err = im.csv(ctx, path, *header)
	case "parquet":
		err = im.parquet(ctx, path)
	default:
		fmt.Fprintf(stderr, "tsdb import: unknown format %q (csv or parquet)\n", *format)
		return 2
	}
	im.progress.finish()
	if err != nil {
		fmt.Fprintf(stderr, "tsdb import: %v (%d rows were imported before the error)\n", err, im.rows)
		return 1
	}
	d := time.Since(im.progress.start)
	fmt.Fprintf(stdout, "imported %d rows into %s in %.1fs (%.0f rows/s)\n", im.rows, *table, d.Seconds(), float64(im.rows)/max(d.Seconds(), 1e-9))
	return 0
}

func getenvOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

type importer struct {
	conn  *pgx.Conn
	table string
	// A batch ends at batchRows rows or at the row that brings its CSV to
	// batchBytes. Why large ones: each COPY's commit waits for its last
	// WAL writes and their sync, about 70 ms on the project's machine
	// with nothing for the server to decode meanwhile; with 100,000-row
	// batches an import of 4.32M TSBS rows took 7.5-7.6 s, with 500,000
	// 6.6-6.8 s. Why bounded in bytes: the server holds a batch in memory
	// until it commits, and refuses one that needs more than its
	// --memory-limit; 64 MiB of CSV is about half a million TSBS rows.
	batchRows  int
	batchBytes int
	rows       int64
	progress   *progress
}

// copyBatch sends one batch of CSV rows.
func (im *importer) copyBatch(ctx context.Context, cols []string, data io.Reader, rows *int) error {
	stmt := "COPY " + schema.QuoteIdent(im.table)
	if len(cols) > 0 {
		q := make([]string, len(cols))
		for i, c := range cols {
			q[i] = schema.QuoteIdent(c)
		}
		stmt += " (" + strings.Join(q, ", ") + ")"
	}
	stmt += " FROM STDIN WITH (FORMAT csv)"
	if _, err := im.conn.PgConn().CopyFrom(ctx, data, stmt); err != nil {
		return err
	}
	im.rows += int64(*rows)
	return nil
}

// csv streams a CSV file in batches of whole rows (a quoted field may hold
// newlines).
func (im *importer) csv(ctx context.Context, path string, header bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	im.progress.total, im.progress.unit = st.Size(), "bytes"
	r := bufio.NewReaderSize(f, 1<<20)
	// A byte order mark (Excel writes one) is not part of the first field.
	if bom, err := r.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		r.Discard(3)
	}
	var cols []string
	var read int64
	firstLine := 1 // of the file, for the batch being read
	if header {
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		read += int64(len(line))
		firstLine++
		for _, c := range strings.Split(strings.TrimRight(line, "\r\n"), ",") {
			cols = append(cols, strings.Trim(strings.TrimSpace(c), `"`))
		}
	}
	// Each batch streams from the file into its COPY as it is read: a
	// batch gathered in a buffer first (27 MB for 100,000 TSBS rows) made
	// the client fault in and copy every byte once more, and its garbage
	// collections competed with the server for the cores (a third of the
	// client's CPU).
	b := &csvBatchReader{r: r, limit: im.batchRows, maxBytes: im.batchBytes, line: firstLine, read: read}
	for {
		if _, err := r.Peek(1); errors.Is(err, io.EOF) {
			return nil // no COPY for an empty rest
		} else if err != nil {
			return err
		}
		b.begin()
		if err := im.copyBatch(ctx, cols, b, &b.rows); err != nil {
			// pgconn may return on a lost connection while its reader
			// is still in Read: what the batch read so far is taken
			// under the lock.
			rowLines, readErr := b.failure()
			if readErr != nil {
				return readErr
			}
			return fileLineError(path, rowLines, err)
		}
		im.progress.update(b.read, im.rows)
		if b.eof {
			return nil
		}
	}
}

// csvBatchReader reads the rows of one batch from a CSV file: it ends (io.EOF)
// after limit whole rows or at the end of the row that brings it to
// maxBytes, and the next batch goes on from there.
type csvBatchReader struct {
	// mu guards the fields below while pgconn's goroutine reads; after a
	// COPY that ended normally pgconn has waited for it.
	mu       sync.Mutex
	r        *bufio.Reader
	limit    int
	maxBytes int    // 0: no limit
	bytes    int    // of the batch so far
	pending  []byte // read from r, not yet returned
	partial  bool   // a line longer than r's buffer is being read
	inQuote  bool   // the file is inside a quoted field
	eof      bool   // the file has ended
	err      error  // reading the file failed
	read     int64  // file bytes read
	line     int    // the file's line being read
	// rows are the batch's rows so far; rowLines the file lines they
	// start on (the server counts rows, and a quoted field may hold
	// newlines), rowLines[0] the first.
	rows     int
	rowLines []int
}

// begin starts the next batch.
func (b *csvBatchReader) begin() {
	b.rows, b.bytes, b.rowLines = 0, 0, append(b.rowLines[:0], b.line)
}

// failure returns a copy of the batch's row lines and its read error.
func (b *csvBatchReader) failure() ([]int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.rowLines...), b.err
}

// Read returns the batch's next bytes: whole lines as far as they fit,
// a part of a line longer than p.
func (b *csvBatchReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for n < len(p) {
		if len(b.pending) == 0 {
			if b.eof || b.err != nil || !b.inQuote && !b.partial && (b.rows >= b.limit || b.maxBytes > 0 && b.bytes >= b.maxBytes) {
				break
			}
			chunk, err := b.r.ReadSlice('\n')
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				// A line longer than the buffer: its rest follows.
			case errors.Is(err, io.EOF):
				b.eof = true
			case err != nil:
				b.err = err
				return n, err
			}
			b.read += int64(len(chunk))
			b.bytes += len(chunk)
			b.inQuote = b.inQuote != (bytes.Count(chunk, []byte{'"'})%2 == 1)
			// A line ends at its newline, or at the end of the file if
			// it has any bytes (also when they all came in earlier
			// chunks of a line longer than the buffer).
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' || b.eof && (len(chunk) > 0 || b.partial) {
				b.line++
				if !b.inQuote {
					b.rows++
					b.rowLines = append(b.rowLines, b.line)
				}
			}
			b.partial = errors.Is(err, bufio.ErrBufferFull)
			b.pending = chunk
		}
		c := copy(p[n:], b.pending)
		b.pending = b.pending[c:]
		n += c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// batchLine is how the server names the line of a COPY that failed.
var batchLine = regexp.MustCompile(`\bline (\d+)\b`)

// fileLineError names the file's line where the server named the line of
// the batch (each batch is its own COPY, its rows counted from 1) whose
// rows start on the file's lines rowLines.
func fileLineError(path string, rowLines []int, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	msg := pe.Message
	if m := batchLine.FindStringSubmatchIndex(msg); m != nil {
		if n, _ := strconv.Atoi(msg[m[2]:m[3]]); n >= 1 && n <= len(rowLines) {
			msg = msg[:m[2]] + strconv.Itoa(rowLines[n-1]) + msg[m[3]:]
		}
	}
	return fmt.Errorf("%s: %s (SQLSTATE %s)", path, msg, pe.Code)
}

// parquet reads a Parquet file's columns by name and sends its rows as CSV
// batches.
func (im *importer) parquet(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer pf.Close()
	im.progress.total, im.progress.unit = pf.NumRows(), "rows"
	// Read in records of at most parquetReadRows, whatever the batches:
	// a record of a million rows would be a second copy of the batch in
	// memory.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(min(im.batchRows, parquetReadRows))}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer rr.Release()
	var cols []string
	for _, fld := range rr.Schema().Fields() {
		cols = append(cols, fld.Name)
	}
	// The batch's rows as CSV, sent once it holds batchRows rows or
	// batchBytes bytes.
	var buf []byte
	n := 0
	send := func() error {
		if n == 0 {
			return nil
		}
		err := im.copyBatch(ctx, cols, bytes.NewReader(buf), &n)
		buf, n = buf[:0], 0
		if err != nil {
			return err
		}
		im.progress.update(im.rows, im.rows)
		return nil
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			for c := 0; c < int(rec.NumCols()); c++ {
				if c > 0 {
					buf = append(buf, ',')
				}
				if buf, err = appendCSVValue(buf, rec.Column(c), i); err != nil {
					return fmt.Errorf("%s, column %s: %w", path, cols[c], err)
				}
			}
			buf = append(buf, '\n')
			if n++; n >= im.batchRows || len(buf) >= im.batchBytes {
				if err := send(); err != nil {
					return err
				}
			}
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return send()
}

// parquetReadRows is the most rows of a Parquet file read at a time.
const parquetReadRows = 64 << 10

// appendCSVValue renders one Arrow value as a CSV field in PostgreSQL's
// input syntax; NULL is an empty unquoted field.
func appendCSVValue(b []byte, col arrow.Array, i int) ([]byte, error) {
	if col.IsNull(i) {
		return b, nil
	}
	switch a := col.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(i).ToTime(unit).UTC()
		return t.AppendFormat(b, "2006-01-02 15:04:05.999999999+00"), nil
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10), nil
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	case *array.Float64:
		return appendFloat(b, a.Value(i), 64), nil
	case *array.Float32:
		return appendFloat(b, float64(a.Value(i)), 32), nil
	case *array.Boolean:
		if a.Value(i) {
			return append(b, 't'), nil
		}
		return append(b, 'f'), nil
	case *array.Date32:
		return a.Value(i).ToTime().UTC().AppendFormat(b, "2006-01-02"), nil
	case *array.String:
		return appendCSVString(b, a.Value(i)), nil
	case *array.LargeString:
		return appendCSVString(b, a.Value(i)), nil
	}
	return b, fmt.Errorf("type %s is not supported", col.DataType())
}

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendCSVString quotes always: an empty string must not read as NULL.
func appendCSVString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

// progress reports an import: a redrawn bar on a terminal, plain lines
// every few seconds otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	total int64
	unit  string
	start time.Time
	last  time.Time
	every time.Duration
	drawn bool
}

func newProgress(w io.Writer, every time.Duration) *progress {
	p := &progress{w: w, start: time.Now(), every: every}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// update shows done of total (in the progress unit) and rows so far.
func (p *progress) update(done, rows int64) {
	now := time.Now()
	every := p.every
	if p.tty {
		every = 100 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	el := now.Sub(p.start).Seconds()
	rate := float64(rows) / max(el, 1e-9)
	frac := 0.0
	if p.total > 0 {
		frac = math.Min(1, float64(done)/float64(p.total))
	}
	eta := "?"
	if frac > 0 {
		eta = time.Duration(el * (1 - frac) / frac * float64(time.Second)).Round(time.Second).String()
	}
	if p.tty {
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r[%s%s] %5.1f%%  %d rows  %.0f rows/s  ETA %s ", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, rows, rate, eta)
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "progress: %.1f%% of %d %s, %d rows, %.0f rows/s, ETA %s\n", frac*100, p.total, p.unit, rows, rate, eta)
}

func (p *progress) finish() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}
