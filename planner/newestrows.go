package planner

import (
	"context"
	"database/sql"
	"fmt"
	"math"
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

const (
	// maxNewestTables bounds how many (table, column) pairs keep their
	// newest rows; the least recently used gives way.
	maxNewestTables = 64
	// maxNewestKeys is the most values a column may have for its newest
	// rows to be kept: a column of unique values (a request ID) would
	// copy the table into memory.
	maxNewestKeys = 100_000
	// newestBuildTimeout bounds a build, which runs apart from the
	// statement that asked for it: a statement's timeout must not leave
	// every later one to build again.
	newestBuildTimeout = time.Minute
)

// newestRows keeps the engine tables, by table ID and column.
type newestRows struct {
	mu      sync.Mutex
	tables  map[string]*newestTable
	counter uint64
	// retired are tables of superseded versions or dropped tables,
	// dropped from the engine once no running statement can read them
	// (the mirror's epochs).
	retired []retiredTable
}

// newestTable is one engine table: the newest rows of one column's values
// among the files of one Delta version of a table with columns columns.
type newestTable struct {
	name     string // quoted engine name
	version  int64
	columns  int
	lastUsed time.Time
}

// table returns the engine table of the newest rows of column col among
// snap's files, making it if snap's version has none yet. "" means the
// statement reads the files as they are: no files, too many values, a
// snapshot older than the version kept, files it cannot read as its own,
// or a build that failed (logged). from is the oldest of the values'
// newest times among the files; keys how many values they have.
func (n *newestRows) table(ctx context.Context, p *Planner, conn *sql.Conn, snap *ingest.Snapshot, col int, from int64, keys int) string {
	if len(snap.Files) == 0 || keys > maxNewestKeys {
		return ""
	}
	read := prune(snap, interval{from, math.MaxInt64})
	counts, byCols := read.filesByColumns()
	if read.damage != nil || len(read.filesWithDeletes()) > 0 || len(counts) == 0 {
		return ""
	}
	for i := range read.files {
		if read.fileByName[i] {
			return "" // another writer's layout (layout.go)
		}
	}
	key := snap.Table.ID + "\x00" + snap.Table.Columns[col].Name
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropRetired(ctx, p, conn)
	nt := n.tables[key]
	switch {
	case nt != nil && nt.version == snap.DeltaVersion && nt.columns == len(snap.Table.Columns):
		nt.lastUsed = time.Now()
		return nt.name
	case nt != nil && nt.version > snap.DeltaVersion:
		return "" // an older snapshot (a REPEATABLE READ block's)
	}
	n.counter++
	name := schema.QuoteIdent(fmt.Sprintf("_tsdb_newest_%d", n.counter))
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), newestBuildTimeout)
	defer cancel()
	if _, err := conn.ExecContext(bctx, "CREATE TABLE "+name+" AS "+newestRowsSQL(read, counts, byCols, col)); err != nil {
		p.logger.Warn("cannot keep the newest rows of a table's files; statements read the files", "table", snap.Table.Name, "err", err)
		conn.ExecContext(bctx, "DROP TABLE IF EXISTS "+name)
		return ""
	}
	p.metrics.newestBuilds.Inc()
	if nt != nil {
		n.retired = append(n.retired, retiredTable{name: nt.name, epoch: p.mirror.epochs.current()})
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
		n.retire(oldest, p.mirror.epochs.current())
	}
	return name
}

// forget retires the tables of a dropped table (its ID is never used
// again).
func (n *newestRows) forget(tableID string, ep *epochs) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range n.tables {
		if strings.HasPrefix(k, tableID+"\x00") {
			n.retire(k, ep.current())
		}
	}
}

// retire moves a kept table to the retired ones; n.mu is held.
func (n *newestRows) retire(key string, epoch uint64) {
	n.retired = append(n.retired, retiredTable{name: n.tables[key].name, epoch: epoch})
	delete(n.tables, key)
}

// dropRetired drops the retired tables no running statement can read;
// one the engine fails to drop is tried again next time.
func (n *newestRows) dropRetired(ctx context.Context, p *Planner, conn *sql.Conn) {
	if len(n.retired) == 0 {
		return
	}
	var err error
	if n.retired, err = dropRetiredTables(ctx, conn, n.retired, p.mirror.epochs.oldest()); err != nil {
		p.logger.Warn("cannot drop superseded newest rows", "err", err)
	}
}

// newestRowsSQL is the query of the rows of the files read reads that are
// the newest of their value of column col (every such row where several
// share the newest time), as the table's view shows them. read is the
// snapshot's files from the oldest of the values' newest times on (the
// files before it are pruned by their statistics, the rows before it
// skipped by their row groups'), grouped by how many columns they hold
// (filesByColumns).
func newestRowsSQL(read *pruned, counts []int, byCols map[int][]string, col int) string {
	t := read.snap.Table
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = fmt.Sprintf("SELECT %s FROM read_parquet([%s]) WHERE %s",
			fileColumnList(t, n), strings.Join(byCols[n], ", "), timeFrom(t, read.rng.lo, true))
	}
	tq := schema.QuoteIdent(t.Columns[t.TimeIndex].Name)
	return fmt.Sprintf("SELECT * FROM (%s) QUALIFY %s = max(%s) OVER (PARTITION BY %s)",
		strings.Join(parts, " UNION ALL "), tq, tq, schema.QuoteIdent(t.Columns[col].Name))
}
