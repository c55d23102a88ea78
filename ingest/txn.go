package ingest

// A transaction's writes become durable and visible together at COMMIT:
// one WAL append holds them all (the entries of one append are replayed
// whole or not at all), and readers see every table they change switch at
// once. What a transaction logs is the effect of its statements, not their
// text: the rows it inserts (its INSERTs and COPYs, and the new versions
// of the rows its UPDATEs changed) as ordinary rows entries, and per table
// the rows of the committed state it deletes, named by where they are (a
// data file and a row number in it, or a buffered batch's WAL sequence and
// a row index in it). Replay applies exactly that, with no SQL engine.
//
// Rows named so must stay where the transaction saw them until it
// commits: a transaction that deletes rows of a table holds the table's
// write lock from its first such statement to its end, which keeps
// flushes, compactions and other writers' DELETE/UPDATE of the table
// away. Inserts, this table's too, go on.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/delta"
	"tsdb/internal/fault"
	"tsdb/internal/schema"
	"tsdb/membuffer"
	"tsdb/wal"
)

// TxTable is one table's part of a transaction.
type TxTable struct {
	Table string
	// TableID is the table's ID when the transaction first wrote it: a
	// table dropped and created again since fails the commit (40001).
	TableID string
	// Dedup is the point identity (schema.Table.Dedup) the Inserts were
	// checked under: a table that got a coarser one since (dedup_keys set
	// by ALTER TABLE during the transaction) fails the commit (40001).
	Dedup []string
	// Inserts are the rows the transaction adds.
	Inserts []arrow.RecordBatch
	// FileInserts are rows it adds in place of rows of data files it
	// deletes (the new versions of rows its UPDATEs changed there): they
	// are written into a data file committed with the rewritten files, so
	// that other readers of the table see each updated row once, in its
	// new version, from the commit on. Logged as kindFileRows entries.
	FileInserts []arrow.RecordBatch
	// FileDeletes are rows of the table's data files it deletes, by the
	// file's path in the table: row numbers in the file, ascending; an
	// empty list deletes every row (the file leaves the table unread).
	FileDeletes map[string][]int64
	// BatchDeletes are buffered rows it deletes, by their batch's WAL
	// sequence: row indexes in the batch, ascending.
	BatchDeletes map[uint64][]int64
}

func (t *TxTable) deletes() bool { return len(t.FileDeletes) > 0 || len(t.BatchDeletes) > 0 }

// kindDeletes is the entry of a table's deletions by a transaction:
//
//	byte    format version (1)
//	byte    kind (3)
//	uvarint len, table name
//	uvarint len, table id
//	uvarint number of files; per file: uvarint len, path, rows (below)
//	uvarint number of batches; per batch: uvarint WAL sequence, rows
//
// where rows are a uvarint count and the row numbers as uvarint deltas; a
// count of 0 is every row of the file.
const kindDeletes = 3

type deletesEntry struct {
	table, tableID string
	files          map[string][]int64
	batches        map[uint64][]int64
}

func appendRows(b []byte, rows []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(rows)))
	prev := int64(0)
	for _, r := range rows {
		b = binary.AppendUvarint(b, uint64(r-prev))
		prev = r
	}
	return b
}

func encodeDeletesEntry(room int, e deletesEntry) []byte {
	b := make([]byte, room, room+64)
	b = append(b, entryVersion, kindDeletes)
	for _, s := range []string{e.table, e.tableID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	paths := make([]string, 0, len(e.files))
	for p := range e.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = appendRows(b, e.files[p])
	}
	seqs := make([]uint64, 0, len(e.batches))
	for q := range e.batches {
		seqs = append(seqs, q)
	}
	slices.Sort(seqs)
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	for _, q := range seqs {
		b = binary.AppendUvarint(b, q)
		b = appendRows(b, e.batches[q])
	}
	return b
}

func decodeDeletesEntry(p []byte) (deletesEntry, error) {
	e := deletesEntry{files: map[string][]int64{}, batches: map[uint64][]int64{}}
	if len(p) < 2 || p[0] != entryVersion || p[1] != kindDeletes {
		return e, errors.New("not a deletes entry")
	}
	r := bytes.NewReader(p[2:])
	str := func() (string, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return "", errShortEntry
		}
		b := make([]byte, n)
		r.Read(b)
		return string(b), nil
	}
	rows := func() ([]int64, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return nil, errShortEntry
		}
		out := make([]int64, n)
		prev := int64(0)
		for i := range out {
			d, err := binary.ReadUvarint(r)
			if err != nil {
				return nil, errShortEntry
			}
			prev += int64(d)
			out[i] = prev
		}
		return out, nil
	}
	var err error
	if e.table, err = str(); err != nil {
		return e, err
	}
	if e.tableID, err = str(); err != nil {
		return e, err
	}
	nf, err := binary.ReadUvarint(r)
	if err != nil || nf > uint64(r.Len()) {
		return e, errShortEntry
	}
	for range nf {
		path, err := str()
		if err != nil {
			return e, err
		}
		if e.files[path], err = rows(); err != nil {
			return e, err
		}
	}
	nb, err := binary.ReadUvarint(r)
	if err != nil || nb > uint64(r.Len()) {
		return e, errShortEntry
	}
	for range nb {
		q, err := binary.ReadUvarint(r)
		if err != nil {
			return e, errShortEntry
		}
		if e.batches[q], err = rows(); err != nil {
			return e, err
		}
	}
	return e, nil
}

// CommitTx makes a transaction's writes durable and visible together. tx
// holds the write locks of the tables it deletes rows of (LockTable);
// CommitTx takes those of the others it writes for the commit. Nothing is
// durable or visible when it fails.
func (s *Store) CommitTx(ctx context.Context, tx TxID, parts []TxTable) (err error) {
	type prepared struct {
		part  TxTable
		ts    *tableState
		t     schema.Table
		e     *encoded
		files *encoded // FileInserts
	}
	var preps []*prepared
	defer func() {
		for _, p := range preps {
			if p.e != nil {
				s.recycle(p.e)
			}
			if p.files != nil {
				s.recycle(p.files)
			}
		}
	}()
	sort.Slice(parts, func(i, j int) bool { return parts[i].Table < parts[j].Table })
	var need int64
	for _, part := range parts {
		if len(part.FileDeletes) == 0 && len(part.FileInserts) > 0 {
			// No file is rewritten to take them: buffered like inserts.
			part.Inserts = append(slices.Clip(part.Inserts), part.FileInserts...)
			part.FileInserts = nil
		}
		if len(part.Inserts) == 0 && len(part.FileInserts) == 0 && !part.deletes() {
			continue
		}
		held, unlock, err := s.LockTable(ctx, tx, part.Table)
		if err != nil {
			return err
		}
		if !held {
			defer unlock()
		}
		ts, err := s.state(part.Table)
		if err != nil {
			return err
		}
		t := ts.sch()
		if part.TableID != "" && part.TableID != t.ID {
			return errorf(KindConflict, "could not serialize access: table %q was dropped or replaced during the transaction", part.Table)
		}
		if len(part.Inserts)+len(part.FileInserts) > 0 && !DedupCovered(part.Dedup, t.Dedup) {
			return dedupChanged(part.Table)
		}
		block := ts.writeBlock
		if part.deletes() {
			block = ts.rowChangeBlock
		}
		if err := block(); err != nil {
			return err
		}
		e, err := s.encode(t, part.Inserts, formRows)
		if err != nil {
			return err
		}
		p := &prepared{part: part, ts: ts, t: t, e: e}
		preps = append(preps, p)
		need += e.need
		if p.files, err = s.encode(t, part.FileInserts, formFileRows); err != nil {
			return err
		}
	}
	if len(preps) == 0 {
		return nil
	}
	release, err := s.admit(ctx, need)
	if err != nil {
		return err
	}
	defer release()

	// One append: every table's rows entries, then the rows written into
	// files, then each table's deletes.
	var payloads [][]byte
	for _, p := range preps {
		payloads = append(payloads, p.e.payloads...)
	}
	for _, p := range preps {
		payloads = append(payloads, p.files.payloads...)
	}
	for _, p := range preps {
		if p.part.deletes() {
			payloads = append(payloads, encodeDeletesEntry(wal.HeaderRoom, deletesEntry{table: p.t.Name, tableID: p.t.ID, files: p.part.FileDeletes, batches: p.part.BatchDeletes}))
		}
	}
	first, werr := s.wal.AppendFramed(ctx, payloads)
	if first == 0 {
		var se *Error
		if errors.As(werr, &se) {
			return werr
		}
		return s.storageError(werr)
	}
	n := len(payloads)
	all := make([]uint64, n)
	for i := range all {
		all[i] = first + uint64(i)
	}
	// Every entry before the transaction's is applied first; the
	// transaction's own are applied below, while it still holds the
	// tables' write locks, so that no flush can take later rows of a
	// bucket without them.
	s.seq.run(first, n, func() {})
	if werr != nil {
		return s.storageError(werr)
	}
	fail := func(err error) error {
		// Nothing was published: the entries must not be replayed.
		if derr := s.wal.Delete(context.WithoutCancel(ctx), all); derr != nil {
			s.logger.Error("cannot remove a failed transaction from the WAL; it would be replayed", "first", first, "err", derr)
		}
		return err
	}
	seq := first
	type applied struct {
		snap    *delta.Snapshot
		batches map[uint64]arrow.RecordBatch
		delSeq  uint64
	}
	results := make([]applied, len(preps))
	for _, p := range preps {
		seq += uint64(len(p.e.payloads))
	}
	fileSeqs := make([][]uint64, len(preps))
	for i, p := range preps {
		for range p.files.payloads {
			fileSeqs[i] = append(fileSeqs[i], seq)
			seq++
		}
	}
	// Every table's files are read and rewritten before any table's
	// rewrite commits (see rewrite).
	delSeq := seq
	rewrites := make([]*rewrite, len(preps))
	dropRewrites := func(from int) {
		for _, rw := range rewrites[from:] {
			if rw != nil {
				rw.cleanup()
			}
		}
	}
	for i, p := range preps {
		if !p.part.deletes() {
			continue
		}
		recs, rw, err := s.prepareDeletes(ctx, p.ts, delSeq, p.part, false)
		if err != nil {
			dropRewrites(0)
			return fail(err)
		}
		results[i] = applied{batches: recs, delSeq: delSeq}
		rewrites[i] = rw
		delSeq++
	}
	for i, rw := range rewrites {
		if rw == nil {
			continue
		}
		err := s.faults.Hit(fault.TxCommit, preps[i].t.Name)
		var snap *delta.Snapshot
		if err == nil {
			snap, err = rw.commit(ctx)
		} else {
			rw.cleanup()
		}
		if err != nil {
			// A Delta commit failed (an I/O error, another writer's
			// commit) after earlier tables' landed: those are taken
			// back, so that the failed transaction changes no table;
			// so is this one, when an error that is no refusal left it
			// landed after all.
			dropRewrites(i + 1)
			landed := i
			if !delta.Refused(err) && !errors.Is(err, fault.ErrInjected) {
				if latest, rerr := rw.ts.delta.Refresh(context.WithoutCancel(ctx)); rerr != nil {
					s.logger.Error("a failed transaction's DELETE/UPDATE may have landed in this table's files; its log cannot be read to tell", "table", preps[i].t.Name, "err", rerr)
				} else if v, ok := latest.Txns[s.dmlAppID()]; ok && uint64(v) >= rw.seq {
					landed = i + 1
				}
			}
			for j := range landed {
				if rewrites[j] != nil {
					rewrites[j].revert(ctx)
				}
			}
			return fail(err)
		}
		results[i].snap = snap
	}

	// Publish every table at once.
	now := s.opts.Now()
	s.commitMu.Lock()
	seq = first
	var buckets []int64
	for i, p := range preps {
		ts := p.ts
		ts.mu.Lock()
		if r := results[i]; r.snap != nil || len(r.batches) > 0 {
			if r.snap != nil {
				ts.publish(r.snap)
			}
			s.buf.Replace(p.t.Name, r.batches, func(rec arrow.RecordBatch) (int64, int64) { return timeBoundsOrEmpty(rec, ts.sch().TimeIndex) })
		}
		for j, part := range p.e.parts {
			buckets = append(buckets, s.buf.Append(p.t.Name, membuffer.Batch{Seq: seq + uint64(j), Key: part.key, Rec: part.rec, MinTime: part.lo, MaxTime: part.hi, WALBytes: p.e.sizes[j]}, now))
			s.walLag.Add(p.e.sizes[j])
		}
		seq += uint64(len(p.e.parts))
		ts.mu.Unlock()
	}
	s.commitMu.Unlock()
	s.gate.notify()
	var rows int64
	for i, p := range preps {
		rows += p.e.rows
		if results[i].delSeq != 0 {
			// The rows written into files are done with when the
			// deletes entry is: no replay needs either once every insert
			// logged before them is flushed.
			for _, q := range fileSeqs[i] {
				p.ts.addPendingDML(q)
			}
			p.ts.addPendingDML(results[i].delSeq)
			s.dropObsoleteDML(ctx, p.ts)
		}
	}
	s.inserted(slices.Max(append(buckets, 0)), rows)
	return nil
}

func (ts *tableState) addPendingDML(seq uint64) {
	ts.schedMu.Lock()
	defer ts.schedMu.Unlock()
	ts.pendingDML = append(ts.pendingDML, seq)
}

// dropObsoleteDML deletes logged DML entries that no replay can need any
// more: every insert logged before them is flushed.
func (s *Store) dropObsoleteDML(ctx context.Context, ts *tableState) {
	batches, _ := s.buf.Snapshot(ts.sch().Name)
	minSeq := uint64(1<<64 - 1)
	for _, b := range batches {
		minSeq = min(minSeq, b.Seq)
	}
	ts.schedMu.Lock()
	var drop, keep []uint64
	for _, q := range ts.pendingDML {
		if q < minSeq {
			drop = append(drop, q)
		} else {
			keep = append(keep, q)
		}
	}
	ts.pendingDML = keep
	ts.schedMu.Unlock()
	if len(drop) > 0 {
		if err := s.wal.Delete(ctx, drop); err != nil {
			s.logger.Warn("cannot delete obsolete DML entries; replay will re-check them", "err", err)
		}
	}
}

func timeBoundsOrEmpty(rec arrow.RecordBatch, idx int) (int64, int64) {
	if rec.NumRows() == 0 {
		return 1, 0 // an empty range overlaps nothing
	}
	return timeBounds(rec, idx)
}

// replayDeletes re-applies a transaction's deletes entry in its place
// among the inserts.
func (s *Store) replayDeletes(ctx context.Context, seq uint64, p []byte, stale *[]uint64, held *int, fileRows map[string]*heldFileRows) error {
	e, err := decodeDeletesEntry(p)
	if err != nil {
		return &wal.CorruptionError{Seq: seq, Err: err}
	}
	h := fileRows[e.table]
	delete(fileRows, e.table)
	if h == nil {
		h = &heldFileRows{}
	}
	ts := s.replayTable(seq, e.table, e.tableID, stale, held)
	if ts == nil {
		// Its table is gone or out of service: the rows written with it
		// (already counted stale or held as their entries came) go too.
		return nil
	}
	ts.flushMu.Lock()
	part := TxTable{Table: e.table, FileDeletes: e.files, BatchDeletes: e.batches, FileInserts: h.recs}
	if len(part.FileDeletes) == 0 && len(h.recs) > 0 {
		ts.flushMu.Unlock()
		return &wal.CorruptionError{Seq: seq, Err: errors.New("an UPDATE's new rows for files without files to rewrite")}
	}
	snap, recs, err := s.applyDeletes(ctx, ts, seq, part, true)
	if err == nil {
		ts.mu.Lock()
		if snap != nil {
			ts.publish(snap)
		}
		s.buf.Replace(e.table, recs, func(rec arrow.RecordBatch) (int64, int64) { return timeBoundsOrEmpty(rec, ts.sch().TimeIndex) })
		ts.mu.Unlock()
	}
	ts.flushMu.Unlock()
	if err != nil {
		// A file the entry rewrites is damaged, or is another writer's
		// that cannot be rewritten without changing a value: without
		// the entry the table's rows are not what was acknowledged, so
		// it waits out of service, its entries kept, while the others
		// serve.
		var fe *delta.ForeignFileError
		var ue *UnavailableError
		switch {
		case errors.As(err, &fe):
			ue = &UnavailableError{Table: e.table, File: fe.Path, Err: fmt.Errorf("WAL entry %d deletes rows of this file of another writer, which cannot be rewritten: %w", seq, fe), Whole: true}
		case errors.As(err, &ue):
			ue = &UnavailableError{Table: e.table, File: ue.File, Err: fmt.Errorf("WAL entry %d deletes rows of it: %w", seq, ue.Err), Whole: true}
		default:
			return fmt.Errorf("wal entry %d: replay a transaction's deletes: %w", seq, err)
		}
		s.logger.Error("a logged DELETE/UPDATE cannot be replayed: its table is out of service", "seq", seq, "err", err)
		s.outOfService(ts, ue, held)
		*held += 1 + len(h.seqs)
		return nil
	}
	for _, q := range h.seqs {
		ts.addPendingDML(q)
	}
	ts.addPendingDML(seq)
	return nil
}
