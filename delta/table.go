// Package delta reads and writes Delta Lake tables: the transaction log
// (_delta_log/%020d.json commits, written put-if-absent), snapshots of the
// files that make up a table, and the Parquet data files with the statistics
// the planner prunes by. It knows nothing about the WAL.
package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// LogError reports a log file that cannot be read as the protocol
// writes it: a commit (with the line, when one is at fault), a checkpoint,
// or a commit missing from the sequence. Path is relative to the table.
type LogError struct {
	Version int64
	Line    int
	Path    string
	Err     error
}

func (e *LogError) Error() string {
	path := e.Path
	if path == "" {
		path = commitPath(e.Version)
	}
	if e.Line > 0 {
		return fmt.Sprintf("delta: %s line %d: %v", path, e.Line, e.Err)
	}
	return fmt.Sprintf("delta: %s: %v", path, e.Err)
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
	// Prefix: the stats name exactly the first Columns columns of the
	// table, as in every file tsdb writes (ALTER TABLE only appends).
	// Otherwise the file's columns are known only from its footer.
	Prefix bool
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
	// TxnUpdated is each txn's lastUpdated (ms) where known.
	TxnUpdated map[string]int64
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

	// now stamps commitInfo; tests fix it (nil: time.Now).
	now func() time.Time
	// expired says which txns a checkpoint may leave out (nil: none);
	// see SetTxnExpiry.
	expired atomic.Pointer[TxnExpiry]
}

// TxnExpiry decides which txn (SetTransaction) actions a checkpoint leaves
// out, so that a table's state does not grow by one txn per flushed
// bucket for good: it reports whether the txn of appID, at version and
// last updated at lastUpdated (ms, 0 when unknown), is no longer needed;
// all are the snapshot's txns.
type TxnExpiry func(appID string, version, lastUpdated int64, all map[string]int64) bool

// SetTxnExpiry sets the policy of the checkpoints this process writes.
// The delta.setTransactionRetentionDuration of the table applies on top
// of it (TxnRetention).
func (t *Table) SetTxnExpiry(f TxnExpiry) { t.expired.Store(&f) }

func (t *Table) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func commitPath(v int64) string { return fmt.Sprintf("%s/%020d.json", logDir, v) }

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

// Create writes version 0 of a new table: protocol, metaData, commitInfo.
// config adds keys to the metaData's configuration (tsdb's table options),
// so that a table never exists without them.
func Create(ctx context.Context, store Store, t schema.Table, config map[string]string) (*Table, error) {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	t = withColumnMapping(t, 0)
	md, err := metadataFor(t)
	if err != nil {
		return nil, err
	}
	for k, v := range config {
		if v != "" {
			md.Configuration[k] = v
		}
	}
	now := time.Now().UnixMilli()
	md.CreatedTime = now
	proto, _ := protocolFor(Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, t)
	actions := []Action{
		{Protocol: &proto},
		{MetaData: md},
		{CommitInfo: &CommitInfo{Timestamp: now, Operation: "CREATE TABLE", OperationParameters: map[string]string{}, EngineInfo: engineInfo, IsBlindAppend: true, TxnID: uuid.NewString()}},
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
		actions = append(actions, Action{CommitInfo: commitInfo(t.clock().UnixMilli(), operation, base.Version, actions)})
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
		// Another writer may have given the table a feature tsdb does not
		// implement since the caller looked: checked on every attempt.
		if err := writeBlocker(base.Protocol, &base.Metadata); err != nil {
			return base, err
		}
		v := base.Version + 1
		err = t.store.PutIfAbsent(ctx, commitPath(v), data)
		if err != nil && t.isOurs(ctx, v, data) {
			// The write landed but its answer was lost, and a retry of
			// the request found our own commit (412), or failed. The
			// commitInfo's txnId makes a commit's bytes unique, so equal
			// bytes mean it is ours.
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
				_ = writeCheckpoint(ctx, t.store, snap, t.txnExpired(snap))
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

// commitInfo describes a commit of actions built on version read, as the
// protocol's provenance: what it did, on which version, whether it only
// appended, with a txnId unique to the attempt. It also stamps the txn
// actions with the commit time (lastUpdated), which their expiry needs.
func commitInfo(now int64, operation string, read int64, actions []Action) *CommitInfo {
	blind := true
	for _, a := range actions {
		if a.Add == nil && a.Txn == nil {
			blind = false
		}
		if a.Txn != nil && a.Txn.LastUpdated == 0 {
			a.Txn.LastUpdated = now
		}
	}
	params := map[string]string{}
	if operation == "WRITE" {
		params["mode"] = "Append"
	}
	return &CommitInfo{Timestamp: now, Operation: operation, OperationParameters: params, EngineInfo: engineInfo,
		IsBlindAppend: blind, ReadVersion: &read, IsolationLevel: "Serializable", TxnID: uuid.NewString()}
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
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrTxnAlreadyCommitted) || errors.Is(err, ErrUnsupportedFeature)
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
	return t.AddTagColumns(ctx, operation, cols, nil)
}

// AddTagColumns is AddColumns for a line-protocol write: the columns
// named in tags are tags, which join the table's point identity when it
// is the tag set (schema.Table.DedupTags).
func (t *Table) AddTagColumns(ctx context.Context, operation string, cols []schema.Column, tags []string) (*Snapshot, error) {
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
		cur := base.Metadata
		cfg := cur.Configuration
		if len(next.Columns) > len(base.Schema.Columns) {
			next = withColumnMapping(next, len(base.Schema.Columns))
			if m := mappingConfiguration(next); m != nil {
				cfg = maps.Clone(cfg)
				maps.Copy(cfg, m)
			}
		}
		if base.Schema.DedupTags {
			// Tags join the identity, also those whose column the table
			// has already (made for a field, or by SQL): a finer identity
			// cannot give a point two rows.
			dedup := slices.Clone(base.Schema.Dedup)
			for _, c := range tags {
				if i := next.ColumnIndex(c); i >= 0 && !slices.Contains(dedup, c) && schema.CheckDedup(next, append(slices.Clone(dedup), c)) == nil {
					dedup = append(dedup, c)
				}
			}
			if len(dedup) > len(base.Schema.Dedup) {
				cfg = maps.Clone(cfg) // with the column mapping's keys, if set above
				maps.Copy(cfg, DedupConfiguration(dedup, true))
			}
		}
		if len(next.Columns) == len(base.Schema.Columns) && len(cfg) == len(cur.Configuration) && maps.Equal(cfg, cur.Configuration) {
			return nil, nil
		}
		md, err := metadataFor(next)
		if err != nil {
			return nil, err
		}
		md.ID, md.Name, md.CreatedTime, md.Format, md.PartitionColumns = cur.ID, cur.Name, cur.CreatedTime, cur.Format, cur.PartitionColumns
		md.Configuration = cfg
		if proto, changed := protocolFor(base.Protocol, next); changed {
			// A timestamp_ntz column needs its table feature, a mapped
			// name column mapping.
			return []Action{{Protocol: &proto}, {MetaData: md}}, nil
		}
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
		// Another writer deleted rows of the file by deletion vector
		// since: the file the caller read is not the live one.
		if base.Files[i].DeletionVector.UniqueID() != a.Remove.DeletionVector.UniqueID() {
			return fmt.Errorf("%w: %s has another deletion vector at version %d", ErrConflict, a.Remove.Path, base.Version)
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

// Poll is Refresh for a loop that runs often: it first looks for the
// commit after the newest it knows (one read of a file that is usually
// missing) and replays the log only when there is one. changed says
// whether there was.
func (t *Table) Poll(ctx context.Context) (snap *Snapshot, changed bool, err error) {
	cur := t.Snapshot()
	if _, err := t.store.Get(ctx, commitPath(cur.Version+1)); errors.Is(err, fs.ErrNotExist) {
		return cur, false, nil
	} else if err != nil {
		return nil, false, err
	}
	snap, err = t.Refresh(ctx)
	return snap, err == nil, err
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

// txnExpired combines the process's policy and the table's
// delta.setTransactionRetentionDuration into the test a checkpoint of
// snap applies to its txns.
func (t *Table) txnExpired(snap *Snapshot) TxnExpiry {
	var policy TxnExpiry
	if p := t.expired.Load(); p != nil {
		policy = *p
	}
	retention, ok := TxnRetention(snap.Metadata)
	cutoff := t.clock().Add(-retention).UnixMilli()
	return func(app string, version, updated int64, all map[string]int64) bool {
		if ok && updated > 0 && updated < cutoff {
			return true
		}
		return policy != nil && policy(app, version, updated, all)
	}
}

// TxnRetention reads delta.setTransactionRetentionDuration ("interval 7
// days"); ok is false when the table does not set one.
func TxnRetention(md Metadata) (time.Duration, bool) {
	v := strings.TrimSpace(strings.ToLower(md.Configuration["delta.setTransactionRetentionDuration"]))
	if v == "" {
		return 0, false
	}
	f := strings.Fields(strings.TrimPrefix(v, "interval "))
	if len(f) != 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	unit := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}[strings.TrimSuffix(f[1], "s")]
	if unit == 0 {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
