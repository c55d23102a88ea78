package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"tsdb/internal/schema"
)

// Replaying the log: a snapshot is the state the commits since the last
// checkpoint (or since version 0) leave.

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
		// A damaged checkpoint is only a shortcut lost while every commit
		// since version 0 is still there.
		if len(versions) == 0 || versions[0] != 0 {
			return nil, err
		}
		st = newState(nil)
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
			return nil, &LogError{Version: st.version + 1, Err: fmt.Errorf("commit %d is missing (the log goes on at %d)", st.version+1, v)}
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
	// txnUpdated is each txn's lastUpdated (ms), when its writer gave one.
	txnUpdated map[string]int64
	removed    map[string]Remove
	// schemaChanged: a metaData action was applied, so the stats of every
	// file must be read again for the new schema.
	schemaChanged bool
}

func newState(base *Snapshot) *state {
	st := &state{version: -1, files: map[string]File{}, txns: map[string]int64{}, txnUpdated: map[string]int64{}, removed: map[string]Remove{}}
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
		for k, v := range base.TxnUpdated {
			st.txnUpdated[k] = v
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
	line, actions := 0, 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return &LogError{Version: v, Line: line, Err: err}
		}
		actions++
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
			// A logical file is its path and its deletion vector: a
			// writer that deletes rows by vector commits remove(F) and
			// add(F, vector) together, in either order, and the remove
			// must not take the new add with it.
			if live, ok := st.files[a.Remove.Path]; !ok || live.DeletionVector.UniqueID() == a.Remove.DeletionVector.UniqueID() {
				delete(st.files, a.Remove.Path)
				st.removed[a.Remove.Path] = *a.Remove
			}
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = a.Txn.Version
			if a.Txn.LastUpdated != 0 {
				st.txnUpdated[a.Txn.AppID] = a.Txn.LastUpdated
			}
		}
	}
	if err := sc.Err(); err != nil {
		return &LogError{Version: v, Line: line, Err: err}
	}
	if actions == 0 {
		// Every commit holds at least one action (tsdb's at least a
		// commitInfo): an empty one was truncated or emptied, and reading
		// it as "nothing happened" would drop its files without a word.
		return &LogError{Version: v, Err: errors.New("the commit is empty")}
	}
	st.version = v
	return nil
}

func (st *state) snapshot() (*Snapshot, error) {
	if st.md == nil {
		return nil, &LogError{Version: st.version, Err: errors.New("no metaData action")}
	}
	if err := readBlocker(st.protocol, st.md); err != nil {
		return nil, &LogError{Version: st.version, Err: err}
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
			f.MinTime, f.MaxTime, f.NumRecords, f.Columns, f.Prefix = fileStats(f.Stats, sch)
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
	updated := make(map[string]int64, len(st.txnUpdated))
	for k, v := range st.txnUpdated {
		updated[k] = v
	}
	tombs := make([]Remove, 0, len(st.removed))
	for _, r := range st.removed {
		tombs = append(tombs, r)
	}
	sort.Slice(tombs, func(i, j int) bool { return tombs[i].Path < tombs[j].Path })
	return &Snapshot{Version: st.version, Protocol: st.protocol, Metadata: *st.md, Schema: sch, Files: files, Txns: txns, TxnUpdated: updated, Tombstones: tombs}, nil
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
func fileStats(stats string, sch schema.Table) (lo, hi, rows int64, cols int, prefix bool) {
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
			if _, ok := s.NullCount[sch.Columns[cols].FileName()]; !ok {
				break
			}
			cols++
		}
		prefix = len(s.NullCount) == cols
	}
	col := sch.TimeColumn().FileName()
	if v, ok := s.MinValues[col].(string); ok {
		if t, ok := parseTimestampStat(v); ok {
			lo = t.UnixMicro()
		}
	}
	if v, ok := s.MaxValues[col].(string); ok {
		if t, ok := parseTimestampStat(v); ok {
			hi = t.UnixMicro() + 999
		}
	}
	return lo, hi, s.NumRecords, cols, prefix
}

// parseTimestampStat reads a timestamp bound of Delta stats: with a zone
// (timestamp), or without one (timestamp_ntz, a wall clock read as UTC as
// tsdb stores it).
func parseTimestampStat(v string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", v); err == nil {
		return t, true
	}
	return time.Time{}, false
}
