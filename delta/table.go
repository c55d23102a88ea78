// Package delta reads and writes Delta Lake tables: the transaction log
// (_delta_log/%020d.json commits, written put-if-absent), snapshots of the
// files that make up a table, and the Parquet data files with the statistics
// the planner prunes by. It knows nothing about the WAL.
package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"tsdb/internal/schema"
)

const logDir = "_delta_log"

// engineInfo is written into every commitInfo.
const engineInfo = "tsdb"

// ErrNotATable is returned by Open for a directory without a Delta log.
var ErrNotATable = errors.New("delta: no transaction log")

// ErrTxnAlreadyCommitted is returned by Commit when the log already holds the
// commit's txn at the same or a newer version: the work is durable already.
var ErrTxnAlreadyCommitted = errors.New("delta: transaction already committed")

// ErrConflict is returned by Commit when a concurrent commit (of another
// writer on the same storage) removed a file the commit removes: the
// caller's work is based on data that changed and must be redone.
var ErrConflict = errors.New("delta: conflicting concurrent commit")

// LogError reports a commit file that cannot be parsed.
type LogError struct {
	Version int64
	Line    int
	Err     error
}

func (e *LogError) Error() string {
	return fmt.Sprintf("delta: commit %d line %d: %v", e.Version, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *LogError) Unwrap() error { return e.Err }

// File is a data file of a snapshot with its parsed time range.
type File struct {
	Add
	// MinTime and MaxTime bound the time column in UTC micros (from stats;
	// full range if the file has no stats).
	MinTime, MaxTime int64
	NumRecords       int64
	// Columns is how many of the table's columns (a prefix: columns are
	// only appended) the file holds; files written before ALTER TABLE ADD
	// COLUMN lack the later ones, which read as NULL. Known from the
	// stats' nullCount, which names every column of the file.
	Columns int
	// parsed: the fields above are read from Stats for the schema of the
	// snapshot that holds the file (parsing every file's stats on every
	// commit would make each commit cost the size of the table).
	parsed bool
}

// Snapshot is an immutable view of a table at one version.
type Snapshot struct {
	Version  int64
	Protocol Protocol
	Metadata Metadata
	Schema   schema.Table
	Files    []File // sorted by path
	Txns     map[string]int64
	// Tombstones are files removed from the table and not yet deleted
	// (sorted by path): queries may still read them until VACUUM deletes
	// them after the retention period.
	Tombstones []Remove
}

// Table is an open Delta table. It is safe for concurrent use; commits from
// this process are serialised, commits from others are detected by the
// put-if-absent of the commit file.
type Table struct {
	store Store
	name  string

	mu   sync.Mutex // serialises commits
	snap *Snapshot  // guarded by mu for writes; read via Snapshot
	smu  sync.RWMutex
}

func commitPath(v int64) string { return fmt.Sprintf("%s/%020d.json", logDir, v) }

// Create writes version 0 of a new table: protocol, metaData, commitInfo.
func Create(ctx context.Context, store Store, t schema.Table) (*Table, error) {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	md, err := metadataFor(t)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	md.CreatedTime = now
	actions := []Action{
		{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: md},
		{CommitInfo: &CommitInfo{Timestamp: now, Operation: "CREATE TABLE", OperationParameters: map[string]string{}, EngineInfo: engineInfo, IsBlindAppend: true}},
	}
	data, err := encodeCommit(actions)
	if err != nil {
		return nil, err
	}
	if err := store.PutIfAbsent(ctx, commitPath(0), data); err != nil {
		return nil, err
	}
	return Open(ctx, store, t.Name)
}

// Open reads a table's log and returns it at its latest version.
func Open(ctx context.Context, store Store, name string) (*Table, error) {
	t := &Table{store: store, name: name}
	snap, err := t.load(ctx, nil)
	if err != nil {
		return nil, err
	}
	t.snap = snap
	return t, nil
}

// Snapshot returns the latest snapshot this process knows.
func (t *Table) Snapshot() *Snapshot {
	t.smu.RLock()
	defer t.smu.RUnlock()
	return t.snap
}

// Store returns the table's store.
func (t *Table) Store() Store { return t.store }

// load replays the log from base (nil: from the start) to the newest commit.
func (t *Table) load(ctx context.Context, base *Snapshot) (*Snapshot, error) {
	names, err := t.store.List(ctx, logDir)
	if err != nil {
		return nil, err
	}
	versions := logVersions(names, ".json")
	// Start from the newest checkpoint when reading from scratch: opening a
	// table then costs the commits since that checkpoint, not all of them.
	var st *state
	if base != nil {
		st = newState(base)
	} else if cp, err := readCheckpoint(ctx, t.store); err != nil {
		return nil, err
	} else if cp != nil {
		st = cp
	} else {
		st = newState(nil)
	}
	for _, v := range versions {
		if v <= st.version {
			continue
		}
		if v != st.version+1 {
			return nil, &LogError{Version: v, Err: fmt.Errorf("commit %d is missing", st.version+1)}
		}
		data, err := t.store.Get(ctx, commitPath(v))
		if err != nil {
			return nil, err
		}
		if err := st.apply(v, data); err != nil {
			return nil, err
		}
	}
	if st.version < 0 {
		return nil, fmt.Errorf("%w in %s", ErrNotATable, t.name)
	}
	return st.snapshot()
}

// state accumulates actions while replaying the log.
type state struct {
	version  int64
	protocol Protocol
	md       *Metadata
	files    map[string]File
	txns     map[string]int64
	removed  map[string]Remove
	// schemaChanged: a metaData action was applied, so the stats of every
	// file must be read again for the new schema.
	schemaChanged bool
}

func newState(base *Snapshot) *state {
	st := &state{version: -1, files: map[string]File{}, txns: map[string]int64{}, removed: map[string]Remove{}}
	if base != nil {
		st.version = base.Version
		st.protocol = base.Protocol
		md := base.Metadata
		st.md = &md
		for _, f := range base.Files {
			st.files[f.Path] = f
		}
		for k, v := range base.Txns {
			st.txns[k] = v
		}
		for _, r := range base.Tombstones {
			st.removed[r.Path] = r
		}
	}
	return st
}

func (st *state) apply(v int64, data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return &LogError{Version: v, Line: line, Err: err}
		}
		switch {
		case a.Protocol != nil:
			st.protocol = *a.Protocol
		case a.MetaData != nil:
			st.md = a.MetaData
			st.schemaChanged = true
		case a.Add != nil:
			f, err := fileFromAdd(*a.Add)
			if err != nil {
				return &LogError{Version: v, Line: line, Err: err}
			}
			st.files[a.Add.Path] = f
			delete(st.removed, a.Add.Path)
		case a.Remove != nil:
			delete(st.files, a.Remove.Path)
			st.removed[a.Remove.Path] = *a.Remove
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = a.Txn.Version
		}
	}
	if err := sc.Err(); err != nil {
		return &LogError{Version: v, Line: line, Err: err}
	}
	st.version = v
	return nil
}

func (st *state) snapshot() (*Snapshot, error) {
	if st.md == nil {
		return nil, &LogError{Version: st.version, Err: errors.New("no metaData action")}
	}
	sch, err := schemaFromMetadata(*st.md)
	if err != nil {
		return nil, &LogError{Version: st.version, Err: err}
	}
	// Stats are read for the schema (the time column's key, the column
	// count): for files added since the base, or all after a schema change.
	files := make([]File, 0, len(st.files))
	for p, f := range st.files {
		if !f.parsed || st.schemaChanged {
			f.MinTime, f.MaxTime, f.NumRecords, f.Columns = fileStats(f.Stats, sch)
			f.parsed = true
			st.files[p] = f
		}
		files = append(files, f)
	}
	st.schemaChanged = false
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	txns := make(map[string]int64, len(st.txns))
	for k, v := range st.txns {
		txns[k] = v
	}
	tombs := make([]Remove, 0, len(st.removed))
	for _, r := range st.removed {
		tombs = append(tombs, r)
	}
	sort.Slice(tombs, func(i, j int) bool { return tombs[i].Path < tombs[j].Path })
	return &Snapshot{Version: st.version, Protocol: st.protocol, Metadata: *st.md, Schema: sch, Files: files, Txns: txns, Tombstones: tombs}, nil
}

func fileFromAdd(a Add) (File, error) {
	if a.Path == "" {
		return File{}, errors.New("add without path")
	}
	// Paths come from the log, which other writers write too: one that
	// leaves the table's directory, or that DuckDB would take for a glob,
	// makes the table unreadable rather than read the wrong files.
	if strings.HasPrefix(a.Path, "/") || strings.Contains(a.Path, "..") || strings.ContainsAny(a.Path, "*?[]{}\\'") || strings.Contains(a.Path, "://") {
		return File{}, fmt.Errorf("add of unsupported path %q", a.Path)
	}
	return File{Add: a}, nil
}

// fileStats reads the time column bounds, the row count and the number of
// table columns a file holds from its stats. Timestamp stats are
// millisecond-truncated by the Delta convention, so the upper bound is
// widened to the end of its millisecond. Without stats a file is taken to
// hold every row range and every column.
func fileStats(stats string, sch schema.Table) (lo, hi, rows int64, cols int) {
	lo, hi, rows, cols = int64(-1<<63), int64(1<<63-1), -1, len(sch.Columns)
	if stats == "" {
		return
	}
	var s Stats
	if err := json.Unmarshal([]byte(stats), &s); err != nil {
		return
	}
	if len(s.NullCount) > 0 {
		cols = 0
		for cols < len(sch.Columns) {
			if _, ok := s.NullCount[sch.Columns[cols].Name]; !ok {
				break
			}
			cols++
		}
	}
	col := sch.TimeColumn().Name
	if v, ok := s.MinValues[col].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			lo = t.UnixMicro()
		}
	}
	if v, ok := s.MaxValues[col].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			hi = t.UnixMicro() + 999
		}
	}
	return lo, hi, s.NumRecords, cols
}

// Commit writes actions as the next version. A commitInfo is added. If the
// actions hold a txn whose version the log already has (or exceeds), nothing
// is written and ErrTxnAlreadyCommitted is returned. When another writer took
// the version, the newer commits are read and the commit is retried.
func (t *Table) Commit(ctx context.Context, operation string, actions []Action) (*Snapshot, error) {
	return t.commit(ctx, operation, func(*Snapshot) ([]Action, error) { return actions, nil })
}

// commit writes the actions build returns for the newest snapshot, and
// builds them again over the newer commits whenever another writer took
// the version first.
func (t *Table) commit(ctx context.Context, operation string, build func(base *Snapshot) ([]Action, error)) (*Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	base := t.Snapshot()
	for attempt := 0; ; attempt++ {
		actions, err := build(base)
		if err != nil {
			return base, err
		}
		if len(actions) == 0 {
			return base, nil
		}
		actions = append(actions, Action{CommitInfo: &CommitInfo{Timestamp: time.Now().UnixMilli(), Operation: operation, OperationParameters: map[string]string{}, EngineInfo: engineInfo}})
		data, err := encodeCommit(actions)
		if err != nil {
			return nil, err
		}
		for _, a := range actions {
			if a.Txn != nil {
				if v, ok := base.Txns[a.Txn.AppID]; ok && v >= a.Txn.Version {
					return base, ErrTxnAlreadyCommitted
				}
			}
		}
		if err := checkRemoves(base, actions); err != nil {
			return base, err
		}
		v := base.Version + 1
		err = t.store.PutIfAbsent(ctx, commitPath(v), data)
		if err != nil && t.isOurs(ctx, v, data) {
			// The write landed but its answer was lost, and a retry of
			// the request found our own commit (412), or failed. The
			// commitInfo timestamp and the file names make a commit's
			// bytes unique, so equal bytes mean it is ours.
			err = nil
		}
		if err == nil {
			st := newState(base)
			if err := st.apply(v, data); err != nil {
				return nil, err
			}
			snap, err := st.snapshot()
			if err != nil {
				return nil, err
			}
			t.smu.Lock()
			t.snap = snap
			t.smu.Unlock()
			if v%CheckpointInterval == 0 {
				// The commit is durable already; a failed checkpoint only
				// means the next open reads more JSON commits.
				_ = writeCheckpoint(ctx, t.store, snap)
			}
			return snap, nil
		}
		if !errors.Is(err, ErrExists) || attempt >= 100 {
			return nil, err
		}
		// Another writer won this version: catch up and try the next one.
		newer, lerr := t.load(ctx, base)
		if lerr != nil {
			return nil, lerr
		}
		t.smu.Lock()
		t.snap = newer
		t.smu.Unlock()
		base = newer
	}
}

// isOurs reads commit v back and reports whether it holds exactly data. It
// reads also when ctx was canceled meanwhile (shutdown): the outcome
// decides whether the caller may delete the commit's data files.
func (t *Table) isOurs(ctx context.Context, v int64, data []byte) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, err := t.store.Get(ctx, commitPath(v))
	return err == nil && bytes.Equal(got, data)
}

// Refused reports whether a Commit error means the commit was certainly
// not written (a conflict, or its txn committed before), so that the data
// files written for it may be deleted. After any other error the outcome
// is unknown: the files must stay (VACUUM deletes them once they are
// orphans of a certain age).
func Refused(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrTxnAlreadyCommitted)
}

// SetConfiguration commits a metaData action with the table's
// configuration changed: each key is set to its value, or removed when the
// value is empty. Delta readers ignore keys they do not know. The change is
// applied to the newest metaData, also when another writer committed first.
func (t *Table) SetConfiguration(ctx context.Context, operation string, changes map[string]string) (*Snapshot, error) {
	return t.commit(ctx, operation, func(base *Snapshot) ([]Action, error) {
		md := base.Metadata
		cfg := make(map[string]string, len(md.Configuration)+len(changes))
		for k, v := range md.Configuration {
			cfg[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(cfg, k)
			} else {
				cfg[k] = v
			}
		}
		md.Configuration = cfg
		return []Action{{MetaData: &md}}, nil
	})
}

// AddColumns commits a metaData action with columns appended to the
// newest schema. A column that is there already with the same type (another
// writer added it first) is skipped; with another type it is ErrConflict.
// Identity and configuration stay. When nothing is left to add, nothing is
// committed.
func (t *Table) AddColumns(ctx context.Context, operation string, cols []schema.Column) (*Snapshot, error) {
	return t.commit(ctx, operation, func(base *Snapshot) ([]Action, error) {
		next := base.Schema
		next.Columns = append([]schema.Column(nil), next.Columns...)
		for _, c := range cols {
			if i := next.ColumnIndex(c.Name); i >= 0 {
				if next.Columns[i].Type != c.Type {
					return nil, fmt.Errorf("%w: column %q was added as %s meanwhile", ErrConflict, c.Name, next.Columns[i].Type)
				}
				continue
			}
			next.Columns = append(next.Columns, c)
		}
		if len(next.Columns) == len(base.Schema.Columns) {
			return nil, nil
		}
		md, err := metadataFor(next)
		if err != nil {
			return nil, err
		}
		cur := base.Metadata
		md.ID, md.Name, md.CreatedTime, md.Format, md.PartitionColumns = cur.ID, cur.Name, cur.CreatedTime, cur.Format, cur.PartitionColumns
		md.Configuration = cur.Configuration
		return []Action{{MetaData: md}}, nil
	})
}

// checkRemoves is the conflict check of optimistic concurrency: a commit
// that removes a file is valid only while the file is in the table. If a
// commit of another writer removed it first (its DELETE, UPDATE or
// compaction), retrying at the next version would bring the file's rows
// back or apply a change twice.
func checkRemoves(base *Snapshot, actions []Action) error {
	for _, a := range actions {
		if a.Remove == nil {
			continue
		}
		i := sort.Search(len(base.Files), func(i int) bool { return base.Files[i].Path >= a.Remove.Path })
		if i == len(base.Files) || base.Files[i].Path != a.Remove.Path {
			return fmt.Errorf("%w: %s is no longer in the table at version %d", ErrConflict, a.Remove.Path, base.Version)
		}
	}
	return nil
}

// Refresh reads commits written since the last known version.
func (t *Table) Refresh(ctx context.Context) (*Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	snap, err := t.load(ctx, t.Snapshot())
	if err != nil {
		return nil, err
	}
	t.smu.Lock()
	t.snap = snap
	t.smu.Unlock()
	return snap, nil
}

// Exists reports whether a table's log has a first commit.
func Exists(ctx context.Context, store Store) (bool, error) {
	// Commit 0 may have been cleaned up (CleanLog); a checkpoint then
	// stands for it.
	for _, p := range []string{commitPath(0), lastCheckpointPath} {
		_, err := store.Get(ctx, p)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	return false, nil
}

// DeleteRemovedFiles deletes the data files that left the table at least
// retention before now (their tombstones say when) and returns how many it
// deleted now or earlier. Queries that began before the removal may still read a file,
// which is why there is a retention period. A file added back since is
// kept.
func (t *Table) DeleteRemovedFiles(ctx context.Context, retention time.Duration, now time.Time) (int, error) {
	snap := t.Snapshot()
	live := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		live[f.Path] = true
	}
	cutoff := now.Add(-retention).UnixMilli()
	n := 0
	for _, r := range snap.Tombstones {
		if r.DeletionTimestamp > cutoff || live[r.Path] {
			continue
		}
		if err := t.store.Delete(ctx, r.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("delta: delete removed file %s: %w", r.Path, err)
		}
		n++
	}
	return n, nil
}

// DeleteOrphans deletes data files that no version of the table in its
// snapshot refers to (neither live nor tombstoned) and that were last
// written before olderThan: what a flush, compaction or DML left when the
// process died between writing a file and committing it, and removed files
// whose tombstones expired before a VACUUM deleted them. The age keeps
// files a writer (this one or another on shared storage) is about to
// commit. It reads the newest commits first and returns how many it
// deleted. A local mirror of an object store loses the copies of files
// that are neither live nor tombstoned any more.
func (t *Table) DeleteOrphans(ctx context.Context, olderThan time.Time) (int, error) {
	// List before reading the log: a file committed in between is then
	// known; listed after, it could look like an orphan.
	objs, err := t.store.ListData(ctx)
	if err != nil {
		return 0, err
	}
	snap, err := t.Refresh(ctx)
	if err != nil {
		return 0, err
	}
	known := make(map[string]bool, len(snap.Files)+len(snap.Tombstones))
	for _, f := range snap.Files {
		known[f.Path] = true
	}
	for _, r := range snap.Tombstones {
		known[r.Path] = true
	}
	if m, ok := t.store.(interface {
		PruneMirror(keep map[string]bool) (int, error)
	}); ok {
		if _, err := m.PruneMirror(known); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, o := range objs {
		if known[o.Path] || !o.ModTime.Before(olderThan) {
			continue
		}
		if err := t.store.Delete(ctx, o.Path); err != nil {
			return n, fmt.Errorf("delta: delete orphan %s: %w", o.Path, err)
		}
		n++
	}
	return n, nil
}

// CleanLog deletes the log entries a reader no longer needs: every commit
// and checkpoint older than the newest checkpoint whose commit is at least
// retention old (Delta's delta.logRetentionDuration). That checkpoint and
// everything after it stay, so the table opens as before; only history
// further back (which tsdb never reads) goes. It returns how many entries
// it deleted.
func (t *Table) CleanLog(ctx context.Context, retention time.Duration, now time.Time) (int, error) {
	names, err := t.store.List(ctx, logDir)
	if err != nil {
		return 0, err
	}
	commits, checkpoints := logVersions(names, ".json"), logVersions(names, ".checkpoint.parquet")
	cutoff := now.Add(-retention).UnixMilli()
	keep := int64(-1)
	for _, c := range slices.Backward(checkpoints) {
		ts, err := t.commitTime(ctx, c)
		if err != nil {
			return 0, err
		}
		if ts > 0 && ts <= cutoff {
			keep = c
			break
		}
	}
	if keep < 0 {
		return 0, nil
	}
	n := 0
	for _, v := range commits {
		if v < keep {
			if err := t.store.Delete(ctx, commitPath(v)); err != nil {
				return n, err
			}
			n++
		}
	}
	for _, c := range checkpoints {
		if c < keep {
			if err := t.store.Delete(ctx, checkpointPath(c)); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// commitTime is the commitInfo timestamp of commit v in ms, or 0 if the
// commit is gone or has none.
func (t *Table) commitTime(ctx context.Context, v int64) (int64, error) {
	data, err := t.store.Get(ctx, commitPath(v))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var a Action
		if json.Unmarshal(line, &a) == nil && a.CommitInfo != nil {
			return a.CommitInfo.Timestamp, nil
		}
	}
	return 0, nil
}

// logVersions returns, ascending, the versions of the log entries named
// %020d<suffix>.
func logVersions(names []string, suffix string) []int64 {
	var vs []int64
	for _, n := range names {
		if !strings.HasSuffix(n, suffix) {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSuffix(n, suffix), 10, 64); err == nil {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}
