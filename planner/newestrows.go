package planner

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
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
	// goValues counts the values of the tables' rows read into Go.
	goValues int
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
	// inGo are its rows read into Go by value, for the direct path
	// (newestanswer.go), once it first asks; notInGo: too many to keep.
	inGo    map[string]newestRow
	notInGo bool
	// goValues counts the values of inGo.
	goValues int
}

// newestRow is a kept newest row read into Go: its time (microseconds)
// and its values as the engine's driver gives them.
type newestRow struct {
	t    int64
	vals []any
}

// maxNewestGoValues bounds the values of the kept tables read into Go
// (rows times columns), all of them together: 1,000 series of 21 columns
// are 21,000, and a value costs some 30 bytes.
const maxNewestGoValues = 2_000_000

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
		n.goValues -= nt.goValues
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

// rowsInGo returns the rows of the kept engine table name by value of
// column col, one row of each value (the first read where several share
// its newest time), read through q once and kept beside it; false when
// name is no longer kept (a newer version replaced it) or its values
// would pass maxNewestGoValues beside the others'. timeCol is the table's time column.
func (n *newestRows) rowsInGo(ctx context.Context, q querier, name string, col, timeCol int) (map[string]newestRow, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var nt *newestTable
	for _, t := range n.tables {
		if t.name == name {
			nt = t
		}
	}
	switch {
	case nt == nil || nt.notInGo:
		return nil, false, nil
	case nt.inGo != nil:
		return nt.inGo, true, nil
	}
	// Held under n.mu, as the table's build is: it cannot be retired
	// and dropped while it is read.
	res, err := q.QueryContext(ctx, "SELECT * FROM "+name)
	if err != nil {
		return nil, false, engineError(err)
	}
	cols, err := res.Columns()
	if err != nil {
		res.Close()
		return nil, false, engineError(err)
	}
	rows := newSQLRows(res, len(cols), nil)
	defer rows.Close()
	if col >= len(cols) || timeCol >= len(cols) {
		return nil, false, nil
	}
	out := map[string]newestRow{}
	values := 0
	for rows.Next() {
		vals := slices.Clone(rows.Values())
		if values += len(vals); n.goValues+values > maxNewestGoValues {
			// Too many beside the others: left to the engine, and tried
			// again once others give way.
			return nil, false, nil
		}
		key := nullKey
		switch v := vals[col].(type) {
		case string:
			key = v
		case nil:
		default:
			nt.notInGo = true // not text: not what the path reads
			return nil, false, nil
		}
		tm, ok := vals[timeCol].(time.Time)
		if !ok {
			nt.notInGo = true // NULL, or not a timestamp
			return nil, false, nil
		}
		if old, ok := out[key]; !ok || tm.UnixMicro() > old.t {
			out[key] = newestRow{t: tm.UnixMicro(), vals: vals}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, engineError(err)
	}
	nt.inGo, nt.goValues = out, values
	n.goValues += values
	return out, true, nil
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
	n.goValues -= n.tables[key].goValues
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
