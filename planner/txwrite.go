package planner

// A transaction block's writes (see txn.go): the pending records and
// tombstones it keeps per table, the locks and snapshots they rest on, and
// what COMMIT hands to the store.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

// txTable is a transaction's writes to one table.
type txTable struct {
	name string
	// t is the table as the transaction first wrote it: its pending
	// records have (a prefix of) these columns.
	t schema.Table
	// dedup is the point identity of the table when the transaction
	// first wrote it, which its rows were checked under (not widened
	// with t): COMMIT fails if the table has a coarser one by then.
	dedup []string
	recs  []pendingRec
	dels  []tombRun
	// files map the local paths of data files tombstones name to their
	// paths in the table; batches the IDs of buffered batches to their
	// WAL sequences.
	files   map[string]string
	batches map[uint64]uint64

	// The engine's copies, made when a statement reads the table: the
	// pending rows (in the mirror's layout, the record index as batch
	// ID) and the tombstones.
	pending, tomb string
	created       bool
	createdCols   int // the columns of the pending copy
	syncedRecs    int
	syncedDels    int
}

type pendingRec struct {
	rec   arrow.RecordBatch
	level int32
	// toFile: the new versions of rows an UPDATE changed in data files,
	// which COMMIT writes into a file beside the rewritten ones
	// (ingest.TxTable.FileInserts).
	toFile bool
}

// tombRun is rows one statement deletes from one source.
type tombRun struct {
	src   string // a file's local path, "b<batch ID>" or "p<pending record>"
	level int32
	rows  []int64 // row numbers in the source, in no particular order
	// all: the run is every row of its file (whole, numbered 0 to
	// whole-1, its deletion vector's too), kept without rows: a DELETE
	// of a large table's old files holds and logs no row numbers.
	all   bool
	whole int64
}

func tombRows(runs []tombRun) int64 {
	var n int64
	for _, r := range runs {
		n += int64(len(r.rows))
	}
	return n
}

// fileRowsLeft maps the local path of each data file of snap of tsdb's
// own layout, whose row counts are its own, to its rows not deleted by
// vector and its rows in all: a statement's run of that many rows of
// such a file is every row of it (the identity view names each row
// once), which tombRun.all keeps without the row numbers.
func fileRowsLeft(snap *ingest.Snapshot) map[string][2]int64 {
	out := make(map[string][2]int64, len(snap.Files))
	for i, f := range snap.Files {
		if delta.OwnLayout(f) && f.NumRecords > 0 {
			out[snap.FilePaths[i]] = [2]int64{f.NumRecords - int64(snap.Deleted[f.Path].Len()), f.NumRecords}
		}
	}
	return out
}

// writableTx refuses a write in a READ ONLY transaction.
func (s *Session) writableTx(op string) error {
	if s.tx != nil && s.tx.readOnly {
		return sqlerr.New("25006", "cannot execute %s in a read-only transaction", op)
	}
	return nil
}

// tableFor returns the transaction's state of table name, made on first
// write: the table as it is now.
func (tx *txn) tableFor(s *Session, name string) (*txTable, error) {
	if tt, ok := tx.tables[name]; ok {
		t, ok := s.p.store.Table(name)
		if !ok || t.ID != tt.t.ID {
			return nil, tableChanged(name)
		}
		if len(t.Columns) > len(tt.t.Columns) {
			tt.t = t // another session added columns: rows now come with them
		}
		return tt, nil
	}
	t, ok := s.p.store.Table(name)
	if !ok {
		return nil, s.missing(name)
	}
	tt := &txTable{name: name, t: t, dedup: t.Dedup, files: map[string]string{}, batches: map[uint64]uint64{}}
	tx.tables[name] = tt
	return tt, nil
}

func tableChanged(name string) error {
	return sqlerr.New(sqlerr.SerializationFailure, "could not serialize access: table %q was dropped or replaced during the transaction", name)
}

// writeRows is where every INSERT and COPY hands its records: to the
// store when the statement runs on its own, to the transaction inside a
// block. It returns the number of rows.
func (s *Session) writeRows(ctx context.Context, name string, recs []arrow.RecordBatch) (int64, error) {
	return s.writeRowsSkipping(ctx, name, recs, nil)
}

// writeRowsSkipping is writeRows leaving out the rows that repeat key skip
// (ON CONFLICT DO NOTHING), if not nil.
func (s *Session) writeRowsSkipping(ctx context.Context, name string, recs []arrow.RecordBatch, skip *schema.Key) (int64, error) {
	if tbl, ok := s.p.store.Table(name); ok {
		var err error
		if recs, err = applyTypmods(tbl, recs); err != nil {
			return 0, err
		}
		if len(tbl.Keys) > 0 {
			return s.writeKeyed(ctx, tbl, recs, skip)
		}
		if len(tbl.Dedup) > 0 {
			return s.writeDedup(ctx, tbl, recs, false)
		}
	}
	if s.tx == nil {
		return s.p.store.InsertBatches(ctx, name, recs)
	}
	if err := s.writableTx("INSERT"); err != nil {
		return 0, err
	}
	return s.tx.insert(s, name, recs)
}

// insert adds records to the transaction's pending rows of a table, after
// the checks every write gets. A transaction holds its rows in memory
// until it commits: one larger than --memory-limit is refused with 53200
// (nothing of it is written; what others committed stays).
func (tx *txn) insert(s *Session, name string, recs []arrow.RecordBatch) (int64, error) {
	return tx.insertAs(s, name, recs, false)
}

// insertAs is insert, the rows marked as written into files at COMMIT
// when toFile is set (pendingRec.toFile).
func (tx *txn) insertAs(s *Session, name string, recs []arrow.RecordBatch, toFile bool) (int64, error) {
	tt, err := tx.tableFor(s, name)
	if err != nil {
		return 0, err
	}
	if err := s.p.store.Validate(name, recs); err != nil {
		return 0, err
	}
	var rows, bytes int64
	for _, rec := range recs {
		rows += rec.NumRows()
		bytes += membuffer.RecordBytes(rec)
	}
	if err := tx.grow(s, bytes); err != nil {
		return 0, err
	}
	for _, rec := range recs {
		if rec.NumRows() > 0 {
			tt.recs = append(tt.recs, pendingRec{rec: rec, level: tx.level, toFile: toFile})
		}
	}
	s.dropPlans()
	return rows, nil
}

// grow counts n more bytes of the transaction's writes against the
// memory limit.
func (tx *txn) grow(s *Session, n int64) error {
	if limit := s.p.store.MaxStatementBytes(); tx.bytes+n > limit && tx.implicit {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory,
			Message: fmt.Sprintf("the statement's changes need more than --memory-limit (%d MiB): the rows it deletes and the new versions of those it updates are held in memory until it commits", limit>>20),
			Hint:    "Change fewer rows per statement, for example one time range at a time."}
	} else if tx.bytes+n > limit {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory,
			Message: fmt.Sprintf("the transaction's writes need more than --memory-limit (%d MiB): it holds them in memory until COMMIT", limit>>20),
			Hint:    "Commit in smaller transactions, or load large data outside a transaction block (COPY commits on its own)."}
	}
	tx.bytes += n
	return nil
}

// addTombstones records rows the running statement deletes, with where
// their sources are in the table (from the snapshot the statement read).
func (tx *txn) addTombstones(s *Session, tt *txTable, snap *ingest.Snapshot, runs []tombRun) error {
	if err := tx.grow(s, tombRows(runs)*tombstoneBytes+int64(len(runs))*tombRunBytes); err != nil {
		return err
	}
	var local map[string]string
	var seqs map[uint64]uint64
	for i := range runs {
		d := &runs[i]
		d.level = tx.level
		switch {
		case strings.HasPrefix(d.src, "p"):
		case strings.HasPrefix(d.src, "b"):
			id, err := strconv.ParseUint(d.src[1:], 10, 64)
			if err != nil {
				return fmt.Errorf("planner: tombstone source %q: %w", d.src, err)
			}
			if _, ok := tt.batches[id]; ok {
				continue
			}
			if seqs == nil {
				seqs = make(map[uint64]uint64, len(snap.Batches))
				for _, b := range snap.Batches {
					seqs[b.ID] = b.Seq
				}
			}
			seq, ok := seqs[id]
			if !ok {
				return fmt.Errorf("planner: a deleted row's batch %d is not in the statement's snapshot", id)
			}
			tt.batches[id] = seq
		default:
			if _, ok := tt.files[d.src]; ok {
				continue
			}
			if local == nil {
				local = make(map[string]string, len(snap.Files))
				for i, f := range snap.Files {
					local[snap.FilePaths[i]] = f.Path
				}
			}
			p, ok := local[d.src]
			if !ok {
				return fmt.Errorf("planner: a deleted row's file %s is not in the statement's snapshot", d.src)
			}
			tt.files[d.src] = p
		}
	}
	tt.dels = append(tt.dels, runs...)
	s.dropPlans()
	return nil
}

// lock takes table name's write lock for the transaction, once.
func (tx *txn) lock(ctx context.Context, s *Session, name string) error {
	return tx.lockWith(ctx, s, name, s.p.store.LockTable)
}

// lockWith is lock through take (ingest's LockTable or LockTableUnlessTx).
func (tx *txn) lockWith(ctx context.Context, s *Session, name string, take func(context.Context, ingest.TxID, string) (bool, func(), error)) error {
	if _, ok := tx.unlocks[name]; ok {
		return nil
	}
	held, unlock, err := take(ctx, tx.id, name)
	if err != nil {
		return err
	}
	if !held {
		tx.unlocks[name] = unlock
	}
	return nil
}

// snapshot returns the snapshot a statement of the session reads of
// table name: the transaction's own under REPEATABLE READ, else a fresh
// one.
func (s *Session) snapshot(ctx context.Context, name string) (*ingest.Snapshot, error) {
	tx := s.tx
	if tx == nil || tx.iso == dialect.ReadCommitted {
		return s.p.store.Snapshot(ctx, name)
	}
	if !tx.pinned {
		// The epoch is pinned before the snapshots are taken: the mirror
		// keeps every batch they hold for as long as the transaction runs.
		tx.epoch = s.p.mirror.epochs.pin()
		tx.pinned = true
		var names []string
		for _, t := range s.p.store.Tables() {
			names = append(names, t.Name)
		}
		snaps, err := s.p.store.Snapshots(ctx, names)
		if err != nil {
			return nil, err
		}
		tx.snaps = snaps
	}
	snap, ok := tx.snaps[name]
	if !ok {
		// Created after the transaction's snapshot: as of now.
		return s.p.store.Snapshot(ctx, name)
	}
	if t, ok := s.p.store.Table(name); !ok || t.ID != snap.Table.ID {
		if !ok {
			return nil, s.missing(name)
		}
		return nil, tableChanged(name)
	}
	if err := s.p.store.FetchSnapshot(ctx, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// checkUnchanged is the REPEATABLE READ rule for a transaction about to
// delete or update rows of a table (holding its lock): the rows it would
// change must be those of its snapshot, so a table changed since — rows
// deleted or updated by others, buffered rows flushed, files compacted —
// fails the statement with 40001, to be retried. Rows inserted since are
// not in the snapshot and stay untouched, unless keys: a write to a table
// with keys (writeKeyed) must see every row, so rows written since fail
// it too.
func (s *Session) checkUnchanged(ctx context.Context, name string, keys bool) error {
	tx := s.tx
	if tx == nil || tx.iso == dialect.ReadCommitted {
		return nil
	}
	old, err := s.snapshot(ctx, name)
	if err != nil {
		return err
	}
	cur, err := s.p.store.Snapshot(ctx, name)
	if err != nil {
		return err
	}
	files := make(map[string]bool, len(cur.Files))
	for _, f := range cur.Files {
		files[f.Path] = true
	}
	batches := make(map[uint64]bool, len(cur.Batches))
	for _, b := range cur.Batches {
		batches[b.ID] = true
	}
	changed := false
	for _, f := range old.Files {
		changed = changed || !files[f.Path]
	}
	for _, b := range old.Batches {
		changed = changed || !batches[b.ID]
	}
	if keys {
		// Nothing was removed (or changed is set): the same counts mean
		// nothing was added either.
		changed = changed || len(cur.Files) != len(old.Files) || len(cur.Batches) != len(old.Batches)
	}
	if changed {
		return &sqlerr.Error{Code: sqlerr.SerializationFailure, Message: "could not serialize access due to concurrent update",
			Detail: fmt.Sprintf("Table %q changed since the transaction's snapshot (rows written, flushed or compacted).", name),
			Hint:   "Retry the transaction; READ COMMITTED transactions read the table as it is at each statement."}
	}
	return nil
}

// parts are what the transaction hands the store: per table, the pending
// rows it did not delete again, and the committed rows it deleted.
func (tx *txn) parts() ([]ingest.TxTable, error) {
	names := make([]string, 0, len(tx.tables))
	for name := range tx.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []ingest.TxTable
	for _, name := range names {
		tt := tx.tables[name]
		part := ingest.TxTable{Table: name, TableID: tt.t.ID, Dedup: tt.dedup, FileDeletes: map[string][]int64{}, BatchDeletes: map[uint64][]int64{}}
		pendingDels := map[int][]int64{}
		all := map[string]bool{}
		for _, d := range tt.dels {
			switch {
			case strings.HasPrefix(d.src, "p"):
				i, err := strconv.Atoi(d.src[1:])
				if err != nil {
					return nil, fmt.Errorf("planner: tombstone source %q: %w", d.src, err)
				}
				pendingDels[i] = append(pendingDels[i], d.rows...)
			case strings.HasPrefix(d.src, "b"):
				id, _ := strconv.ParseUint(d.src[1:], 10, 64)
				seq := tt.batches[id]
				part.BatchDeletes[seq] = append(part.BatchDeletes[seq], d.rows...)
			default:
				p := tt.files[d.src]
				part.FileDeletes[p] = append(part.FileDeletes[p], d.rows...)
				all[p] = all[p] || d.all
			}
		}
		for k, rows := range part.FileDeletes {
			if all[k] {
				part.FileDeletes[k] = []int64{} // every row (ingest.TxTable)
				continue
			}
			part.FileDeletes[k] = sortedUnique(rows)
		}
		for k, rows := range part.BatchDeletes {
			part.BatchDeletes[k] = sortedUnique(rows)
		}
		for i, pr := range tt.recs {
			rec := pr.rec
			if rows, ok := pendingDels[i]; ok {
				kept, err := withoutRows(rec, sortedUnique(rows))
				if err != nil {
					return nil, err
				}
				rec = kept // the store keeps it
			}
			switch {
			case rec.NumRows() == 0:
			case pr.toFile:
				part.FileInserts = append(part.FileInserts, rec)
			default:
				part.Inserts = append(part.Inserts, rec)
			}
		}
		out = append(out, part)
	}
	return out, nil
}

func sortedUnique(rows []int64) []int64 {
	slices.Sort(rows)
	return slices.Compact(rows)
}

// scanRowRefs reads rows of (record index, row number) pairs — the batch
// and row columns of rows stageRows staged — into each of the n records'
// row numbers.
func scanRowRefs(rows *sql.Rows, n int) ([][]int64, error) {
	defer rows.Close()
	out := make([][]int64, n)
	for rows.Next() {
		var rec uint64
		var row uint32
		if err := rows.Scan(&rec, &row); err != nil {
			return nil, engineError(err)
		}
		out[rec] = append(out[rec], int64(row))
	}
	if err := rows.Err(); err != nil {
		return nil, engineError(err)
	}
	return out, nil
}

// separateRows divides recs into the rows take does not name (by record:
// row numbers, in any order, repeats allowed) and those it names, as row
// references in record order.
func separateRows(recs []arrow.RecordBatch, take [][]int64) (kept []arrow.RecordBatch, taken []arrowutil.RowRef, err error) {
	kept = make([]arrow.RecordBatch, 0, len(recs))
	for i, rec := range recs {
		var rows []int64
		if i < len(take) {
			rows = sortedUnique(take[i])
		}
		if len(rows) == 0 {
			kept = append(kept, rec)
			continue
		}
		for _, r := range rows {
			taken = append(taken, arrowutil.RowRef{Rec: i, Row: int(r)})
		}
		rest, err := withoutRows(rec, rows)
		if err != nil {
			return nil, nil, err
		}
		kept = append(kept, rest)
	}
	return kept, taken, nil
}

// withoutRows is rec without the rows at the given (ascending) indexes.
func withoutRows(rec arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
	keep := make([]arrowutil.RowRef, 0, int(rec.NumRows())-len(rows))
	k := 0
	for r := range int(rec.NumRows()) {
		if k < len(rows) && rows[k] == int64(r) {
			k++
			continue
		}
		keep = append(keep, arrowutil.RowRef{Rec: 0, Row: r})
	}
	return arrowutil.Take(rec.Schema(), []arrow.RecordBatch{rec}, keep)
}
