package ingest

// Damage stays local. A table whose Delta log cannot be read (a truncated,
// emptied or missing commit, a bad checkpoint, a log lost under its data
// files) is unavailable: every statement on it gets an UnavailableError
// naming the table and the file, while every other table works, the WAL
// entries written for it are kept for when it is readable again, and the
// server starts. A data file that is missing or whose bytes no longer match
// its add action (size, Parquet footer, tsdb's checksum) is damaged: its
// table keeps taking writes, but statements that would read the file fail
// the same way, compaction leaves the file alone, and a copy goes to
// <data-dir>/quarantine/tables/<table>/ as the WAL quarantines entries.
// Nothing is ever read around a damaged file: that would answer with rows
// missing. RepairTable is the operator's way out once the file cannot be
// restored: it removes the damaged files from the table in one commit and
// says how many rows they held.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"tsdb/delta"
	"tsdb/internal/fsutil"
	"tsdb/wal"
)

// UnavailableError says a table cannot be read: its Delta log, or a data
// file a statement needs, is damaged or missing. File is relative to the
// table (a log file such as _delta_log/00000000000000000002.json, or a data
// file's name).
type UnavailableError struct {
	Table string
	File  string
	Err   error
	// Whole: the table as a whole is out of service until the file is
	// fixed and tsdb restarted (its log, or a file a logged DELETE/UPDATE
	// needs at replay); otherwise statements that need the file fail and
	// RepairTable can remove it.
	Whole bool
}

func (e *UnavailableError) Error() string {
	var td *TextDMLError
	var fe *delta.ForeignFileError
	if e.Unsupported() || errors.As(e.Err, &td) || errors.As(e.Err, &fe) {
		return fmt.Sprintf("table %q is unavailable: %v", e.Table, e.Err)
	}
	return fmt.Sprintf("table %q is unavailable: %s is damaged: %v", e.Table, e.File, e.Err)
}

// TextDMLError is why a table is out of service after a start that met a
// DELETE or UPDATE its WAL holds as SQL text (entry kind 2), as tsdb
// releases before effect logging wrote them, which this version cannot
// redo (see replayTextDML). The release that wrote it replays it; its
// clean shutdown flushes it into the table.
type TextDMLError struct {
	Seq uint64 // the entry's WAL sequence
	Op  string // DELETE or UPDATE
}

func (e *TextDMLError) Error() string {
	return fmt.Sprintf("WAL entry %d holds a %s that an earlier tsdb release logged as SQL text, which this release does not replay", e.Seq, e.Op)
}

// Unsupported reports whether the table is unavailable because another
// writer gave it what tsdb does not implement (a reader feature, a column
// type), not because a file is damaged.
func (e *UnavailableError) Unsupported() bool { return errors.Is(e.Err, delta.ErrUnsupportedFeature) }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// logDamage turns an error opening a table into its UnavailableError, or
// nil when the error is not damage of the table's own files (storage that
// cannot be reached stops the start-up as before).
func logDamage(table string, err error) *UnavailableError {
	var le *delta.LogError
	if errors.As(err, &le) {
		path := le.Path
		if path == "" {
			path = fmt.Sprintf("_delta_log/%020d.json", le.Version)
		}
		return &UnavailableError{Table: table, File: path, Err: le.Err, Whole: true}
	}
	if errors.Is(err, delta.ErrHasData) {
		return &UnavailableError{Table: table, File: "_delta_log", Err: errors.New("the log is missing but data files are there"), Whole: true}
	}
	return nil
}

// markUnavailable takes a table whose log cannot be read out of service
// (s.mu held).
func (s *Store) markUnavailable(ue *UnavailableError) {
	var td *TextDMLError
	if s.unavailable[ue.Table] == nil && errors.As(ue.Err, &td) {
		s.logger.Error("table unavailable: its WAL holds a DELETE/UPDATE an earlier release logged as SQL text; start that release on this data directory once and stop it cleanly, or DROP the table (its WAL entries are kept); other tables work",
			"table", ue.Table, "seq", td.Seq, "op", td.Op)
	} else if s.unavailable[ue.Table] == nil && ue.Unsupported() {
		s.logger.Error("table unavailable: it uses what tsdb does not support; other tables work", "table", ue.Table, "err", ue.Err)
	} else if s.unavailable[ue.Table] == nil {
		s.logger.Error("table unavailable: its Delta log is damaged; other tables work. Fix or restore the file and restart tsdb (its WAL entries are kept)",
			"table", ue.Table, "file", ue.File, "err", ue.Err)
	}
	s.unavailable[ue.Table] = ue
	s.updateDamageMetrics()
}

// updateDamageMetrics sets the damage gauges (s.mu held).
func (s *Store) updateDamageMetrics() {
	files := 0
	tables := len(s.unavailable)
	for _, ts := range s.tables {
		if n, logDamaged := ts.damagedCount(); n > 0 || logDamaged {
			files += n
			tables++
		}
	}
	s.metrics.unavailableTables.Set(float64(tables))
	s.metrics.damagedFiles.Set(float64(files))
}

// Damage lists what makes tables unavailable, by table: damaged logs and
// damaged data files (one error per table, the first file by name). Empty
// when every table is whole; /health reports it.
func (s *Store) Damage() []*UnavailableError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*UnavailableError
	for _, ue := range s.unavailable {
		out = append(out, ue)
	}
	for name, ts := range s.tables {
		if ue := ts.firstDamage(name); ue != nil {
			out = append(out, ue)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

func (ts *tableState) damagedCount() (files int, logDamaged bool) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return len(ts.damaged), ts.logDamage != nil
}

// firstDamage is the table's log damage, else its damaged file first by
// name, as an error.
func (ts *tableState) firstDamage(name string) *UnavailableError {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.logDamage != nil {
		return ts.logDamage
	}
	if len(ts.damaged) == 0 {
		return nil
	}
	paths := make([]string, 0, len(ts.damaged))
	for p := range ts.damaged {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return &UnavailableError{Table: name, File: paths[0], Err: ts.damaged[paths[0]]}
}

// isDamaged reports the damage of one data file of the table, or nil.
func (ts *tableState) isDamaged(path string) error {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.damaged[path]
}

// checkFileSizes looks at every data file of a freshly opened local table:
// a missing file, or one of another size than its add action records, is
// damaged. One stat per file; the footers and checksums are read when a
// statement fails on a file (CheckFile) or RepairTable runs.
func (s *Store) checkFileSizes(name string, ts *tableState) {
	if _, local := s.root.(*delta.LocalRoot); !local {
		return // object stores: files are fetched, and checked, when read
	}
	store := ts.delta.Store()
	for _, f := range ts.published.Files {
		if err := delta.CheckSize(store.LocalPath(f.Path), f.Add); errors.Is(err, delta.ErrDamagedFile) {
			s.recordDamage(name, ts, f.Path, err)
		}
	}
}

// recordDamage marks a data file damaged, copies it (when it exists) to
// the quarantine directory and says so once.
func (s *Store) recordDamage(name string, ts *tableState, path string, cause error) {
	ts.mu.Lock()
	if ts.damaged == nil {
		ts.damaged = map[string]error{}
	}
	_, known := ts.damaged[path]
	ts.damaged[path] = cause
	ts.mu.Unlock()
	if known {
		return
	}
	q, qerr := s.quarantine(name, ts.delta.Store().LocalPath(path))
	s.logger.Error("data file damaged: statements that read it fail until it is restored or the table is repaired (SELECT tsdb_repair_table(...)); other files and tables work",
		"table", name, "file", path, "err", cause, "quarantined_copy", q, "quarantine_err", qerr)
	s.mu.Lock()
	s.updateDamageMetrics()
	s.mu.Unlock()
}

// quarantine copies a damaged data file to <data-dir>/quarantine/tables/
// <table>/, beside the WAL's quarantined entries' kind, for inspection. A
// missing file has nothing to copy.
func (s *Store) quarantine(table, src string) (string, error) {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer in.Close()
	dir := filepath.Join(s.opts.DataDir, "quarantine", "tables", delta.TableDir(table))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, fmt.Sprintf("%s.%d", filepath.Base(src), time.Now().Unix()))
	data, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	return dst, fsutil.WriteFile(dst, data)
}

// CheckFile verifies a data file of a table after a statement failed to
// read it (the engine named it): a damaged file is recorded and its
// UnavailableError returned; a whole file (the failure had another cause)
// gives nil. path is the file's local path or its name in the table.
func (s *Store) CheckFile(ctx context.Context, table, path string) error {
	ts, err := s.state(table)
	if err != nil {
		return nil
	}
	ts.mu.RLock()
	files := ts.published.Files
	ts.mu.RUnlock()
	store := ts.delta.Store()
	for _, f := range files {
		if f.Path != path && store.LocalPath(f.Path) != path {
			continue
		}
		if cause := ts.isDamaged(f.Path); cause != nil {
			return &UnavailableError{Table: table, File: f.Path, Err: cause}
		}
		if err := delta.VerifyDataFile(store.LocalPath(f.Path), f.Add); errors.Is(err, delta.ErrDamagedFile) {
			s.recordDamage(table, ts, f.Path, err)
			return &UnavailableError{Table: table, File: f.Path, Err: err}
		}
		return nil
	}
	return nil
}

// RepairReport is what RepairTable did.
type RepairReport struct {
	// Restored are files found whole again (an operator put them back).
	Restored []string
	// Removed are damaged files taken out of the table, and the rows
	// their statistics said they held (-1 where they had none).
	Removed     []string
	RowsRemoved int64
}

// RepairTable re-checks a table's damaged data files: each that is whole
// again is readable again; the others are removed from the table in one
// commit (their rows are gone; their copies stay in the quarantine
// directory). A table whose log is damaged cannot be repaired here: fix
// or restore the log file and restart tsdb, which replays the WAL entries
// kept for the table.
func (s *Store) RepairTable(ctx context.Context, name string) (RepairReport, error) {
	var rep RepairReport
	s.mu.RLock()
	ue := s.unavailable[name]
	s.mu.RUnlock()
	if ue != nil {
		return rep, fmt.Errorf("%w; fix or restore that file and restart tsdb", ue)
	}
	ts, err := s.state(name)
	if err != nil {
		return rep, err
	}
	if err := ts.flushMu.LockContext(ctx); err != nil {
		return rep, mapCanceled(ctx, err)
	}
	defer ts.flushMu.Unlock()
	ts.mu.RLock()
	snap := ts.published
	var paths []string
	for p := range ts.damaged {
		paths = append(paths, p)
	}
	ts.mu.RUnlock()
	sort.Strings(paths)
	store := ts.delta.Store()
	var actions []delta.Action
	now := time.Now().UnixMilli()
	for _, p := range paths {
		i := sort.Search(len(snap.Files), func(i int) bool { return snap.Files[i].Path >= p })
		if i == len(snap.Files) || snap.Files[i].Path != p {
			rep.Restored = append(rep.Restored, p) // no longer in the table
			continue
		}
		f := snap.Files[i]
		if err := store.Fetch(ctx, p); err == nil {
			if err := delta.VerifyDataFile(store.LocalPath(p), f.Add); err == nil {
				rep.Restored = append(rep.Restored, p)
				continue
			}
		}
		rep.Removed = append(rep.Removed, p)
		if f.NumRecords >= 0 && rep.RowsRemoved >= 0 {
			rep.RowsRemoved += f.NumRecords
		} else {
			rep.RowsRemoved = -1
		}
		actions = append(actions, delta.Action{Remove: delta.RemoveOf(f.Add, now, true)})
	}
	if len(actions) > 0 {
		next, err := ts.delta.Commit(ctx, "REPAIR", actions)
		if err != nil {
			return RepairReport{}, fmt.Errorf("ingest: repair %s: %w", name, err)
		}
		ts.mu.Lock()
		ts.publish(next)
		ts.mu.Unlock()
		s.logger.Error("damaged data files removed from the table: their rows are gone (copies are in the quarantine directory)",
			"table", name, "files", rep.Removed, "rows", rep.RowsRemoved)
	}
	ts.mu.Lock()
	for _, p := range append(rep.Restored, rep.Removed...) {
		delete(ts.damaged, p)
	}
	ts.mu.Unlock()
	if len(rep.Restored) > 0 {
		s.logger.Info("data files whole again", "table", name, "files", rep.Restored)
	}
	s.mu.Lock()
	s.updateDamageMetrics()
	s.mu.Unlock()
	return rep, nil
}

// checkWALContinuity says loudly what is missing from the WAL at start-up:
// a log that ends before the newest sequence a flush recorded in Delta
// (maxTxn) lost the entries after it, up to at least maxTxn, and with them
// every acknowledged row they held that no flush had taken to Delta.
// Nothing can bring them back; saying so is all that is left.
func (s *Store) checkWALContinuity(w *wal.WAL, maxTxn uint64) {
	var lost uint64
	if next := w.NextSeq(); maxTxn >= next {
		lost += maxTxn - next + 1
		msg := fmt.Sprintf("the WAL ends before sequence %d, but a Delta commit records a flush of sequence %d: WAL entries from %d on were lost (its files were deleted or replaced); rows acknowledged in them and not flushed to Delta are lost", next, maxTxn, next)
		s.walLoss = append(s.walLoss, msg)
		s.logger.Error(msg, "wal_next", next, "delta_max_sequence", maxTxn)
	}
	s.metrics.walLost.Set(float64(lost))
}

// WALLoss lists what start-up found missing from the WAL; /health
// reports it until the next start.
func (s *Store) WALLoss() []string { return s.walLoss }

// The scrubber reads data files back in the background and checks them
// against the checksums tsdb recorded as it wrote them (add.tags): a bit
// flipped inside a page reads as another value without any error from the
// engine, which checks no checksum. Every file is read once after it
// appears (or after a start) and again every scrubEvery, at most
// scrubBytesPerRound per round of ScrubInterval, files never read first.
const (
	scrubBytesPerRound = 256 << 20
	scrubEvery         = 7 * 24 * time.Hour
)

// Scrub checks up to budget bytes of data files against their checksums,
// recording damaged ones. It returns the number of files it read.
func (s *Store) Scrub(ctx context.Context, budget int64) int {
	if _, local := s.root.(*delta.LocalRoot); !local {
		return 0 // object stores keep their own checksums
	}
	read := 0
	now := s.opts.Now()
	for _, t := range s.Tables() {
		ts, err := s.state(t.Name)
		if err != nil {
			continue
		}
		ts.mu.Lock()
		var due []delta.File
		live := make(map[string]time.Time, len(ts.verified))
		for _, f := range ts.published.Files {
			if _, bad := ts.damaged[f.Path]; bad {
				continue
			}
			if at, ok := ts.verified[f.Path]; ok {
				live[f.Path] = at // files that left the table are forgotten
				if now.Sub(at) < scrubEvery {
					continue
				}
			}
			due = append(due, f)
		}
		ts.verified = live
		ts.mu.Unlock()
		sort.Slice(due, func(i, j int) bool { return due[i].Path < due[j].Path })
		store := ts.delta.Store()
		for _, f := range due {
			if budget <= 0 || ctx.Err() != nil {
				return read
			}
			err := delta.VerifyDataFile(store.LocalPath(f.Path), f.Add)
			budget -= f.Size
			read++
			if errors.Is(err, delta.ErrDamagedFile) {
				// Still in the table? A file removed meanwhile was only
				// read late.
				ts.mu.RLock()
				cur := ts.published
				ts.mu.RUnlock()
				i := sort.Search(len(cur.Files), func(i int) bool { return cur.Files[i].Path >= f.Path })
				if i < len(cur.Files) && cur.Files[i].Path == f.Path {
					s.recordDamage(t.Name, ts, f.Path, err)
				}
				continue
			}
			ts.mu.Lock()
			if ts.verified == nil {
				ts.verified = map[string]time.Time{}
			}
			ts.verified[f.Path] = now
			ts.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.updateDamageMetrics() // damage of files that left tables is gone
	s.mu.Unlock()
	return read
}

// verifyBeforeRewrite checks a data file against its checksum before
// compaction or a DELETE/UPDATE rewrites its rows into a new file with a
// checksum of its own: a flipped bit that still decodes would otherwise
// become a wrong value no check could find again. A file the scrubber read
// whole since it appeared is not read again. A damaged file is recorded
// and its UnavailableError returned.
func (s *Store) verifyBeforeRewrite(name string, ts *tableState, f delta.File) error {
	if _, ok := f.Tags[delta.ChecksumTag]; !ok {
		return nil // another writer's file: nothing to check it against
	}
	ts.mu.RLock()
	_, scrubbed := ts.verified[f.Path]
	ts.mu.RUnlock()
	if scrubbed {
		return nil
	}
	err := delta.VerifyDataFile(ts.delta.Store().LocalPath(f.Path), f.Add)
	if errors.Is(err, delta.ErrDamagedFile) {
		s.recordDamage(name, ts, f.Path, err)
		return &UnavailableError{Table: name, File: f.Path, Err: err}
	}
	if err == nil {
		ts.mu.Lock()
		if ts.verified == nil {
			ts.verified = map[string]time.Time{}
		}
		ts.verified[f.Path] = s.opts.Now()
		ts.mu.Unlock()
	}
	return err
}
