package planner

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"tsdb/ingest"
	"tsdb/internal/schema"
)

// The newest rows of each value among a table's data files, kept in the
// engine: what a statement that needs only each value's newest row
// (lastPerKey) reads in place of the files. lastKeyBound cuts the files'
// read to the rows from the oldest of the values' newest times on, but a
// file holds an hour of every series, so at a thousand hosts that still
// read the whole newest hour (360,000 rows for 1,000 answered). The files
// of a Delta version never change: their newest rows are computed once,
// the first time a statement needs them, and read by every statement on
// that version until a flush, compaction, UPDATE or DELETE makes another.
// Buffered rows are read as before, beside them: a late row, older than
// the newest of its value, lands in the buffer and loses to it there, as
// it would in the files.

// maxNewestTables bounds how many (table, column) pairs keep their newest
// rows; the least recently used gives way.
const maxNewestTables = 64

// newestRows keeps the engine tables, by table ID and column.
type newestRows struct {
	mu      sync.Mutex
	tables  map[string]*newestTable
	counter uint64
	// retired are tables of superseded versions, dropped once no running
	// statement can read them (the mirror's epochs).
	retired []retiredTable
}

type newestTable struct {
	name     string // quoted engine name
	version  int64
	columns  int
	lastUsed time.Time
}

// table returns the engine table of the newest rows of column col among
// snap's files, making it if snap's version has none yet. "" means the
// statement reads the files as they are: no files, or a snapshot older
// than the version kept.
func (n *newestRows) table(ctx context.Context, conn *sql.Conn, snap *ingest.Snapshot, col int, from int64, ep *epochs) (string, error) {
	if len(snap.Files) == 0 {
		return "", nil
	}
	key := snap.Table.ID + "\x00" + snap.Table.Columns[col].Name
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.dropRetired(ctx, conn, ep); err != nil {
		return "", err
	}
	nt := n.tables[key]
	switch {
	case nt != nil && nt.version == snap.DeltaVersion && nt.columns == len(snap.Table.Columns):
		nt.lastUsed = time.Now()
		return nt.name, nil
	case nt != nil && nt.version > snap.DeltaVersion:
		return "", nil // an older snapshot (a REPEATABLE READ block's)
	}
	n.counter++
	name := schema.QuoteIdent(fmt.Sprintf("_tsdb_newest_%d", n.counter))
	if _, err := conn.ExecContext(ctx, "CREATE TABLE "+name+" AS "+newestRowsSQL(snap, col, from)); err != nil {
		return "", fmt.Errorf("planner: keep the newest rows of %s: %w", snap.Table.Name, err)
	}
	if nt != nil {
		n.retired = append(n.retired, retiredTable{name: nt.name, epoch: ep.current()})
	}
	if n.tables == nil {
		n.tables = map[string]*newestTable{}
	}
	n.tables[key] = &newestTable{name: name, version: snap.DeltaVersion, columns: len(snap.Table.Columns), lastUsed: time.Now()}
	if len(n.tables) > maxNewestTables {
		oldest := ""
		for k, t := range n.tables {
			if oldest == "" || t.lastUsed.Before(n.tables[oldest].lastUsed) {
				oldest = k
			}
		}
		n.retired = append(n.retired, retiredTable{name: n.tables[oldest].name, epoch: ep.current()})
		delete(n.tables, oldest)
	}
	return name, nil
}

// dropRetired drops the retired tables no running statement can read.
func (n *newestRows) dropRetired(ctx context.Context, conn *sql.Conn, ep *epochs) error {
	if len(n.retired) == 0 {
		return nil
	}
	oldest := ep.oldest()
	keep := n.retired[:0]
	var failed error
	for _, r := range n.retired {
		if r.epoch >= oldest || failed != nil {
			keep = append(keep, r)
			continue
		}
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+r.name); err != nil {
			keep = append(keep, r)
			failed = fmt.Errorf("planner: drop superseded newest rows: %w", err)
		}
	}
	n.retired = keep
	return failed
}

// newestRowsSQL is the query of the rows of snap's files that are the
// newest of their value of column col (every such row where several share
// the newest time), as the table's view shows them. It reads the files
// from the oldest of the values' newest times among them on (from), which
// their row groups' statistics let the engine skip to. (lastKeyBound made sure every file
// is tsdb's own, undamaged and without deleted rows.)
func newestRowsSQL(snap *ingest.Snapshot, col int, from int64) string {
	t := snap.Table
	byCols := map[int][]string{}
	for i, f := range snap.Files {
		n := min(f.Columns, len(t.Columns))
		byCols[n] = append(byCols[n], schema.QuoteString(snap.FilePaths[i]))
	}
	counts := make([]int, 0, len(byCols))
	for n := range byCols {
		counts = append(counts, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = fmt.Sprintf("SELECT %s FROM read_parquet([%s]) WHERE %s", selectList(t, n), strings.Join(byCols[n], ", "), timeFrom(t, from))
	}
	tq := schema.QuoteIdent(t.Columns[t.TimeIndex].Name)
	return fmt.Sprintf("SELECT * FROM (%s) QUALIFY %s = max(%s) OVER (PARTITION BY %s)",
		strings.Join(parts, " UNION ALL "), tq, tq, schema.QuoteIdent(t.Columns[col].Name))
}
