package delta

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
)

// The order of the rows in a data file is (hour of time, cluster column,
// time), the cluster column being the TEXT column the table names
// (cluster_by), else its first TEXT column (schema.Table.ClusterIndex),
// NULLs first; a table without one is ordered by time alone. Within an
// hour the rows of one host (the usual cluster column) sit together, so a
// row group holds a few hosts over one hour and readers skip the others by
// the group's min/max statistics: by time and by host. Files ordered by
// time alone let readers prune by time only: a query for one host over 12
// hours read every row of those 12 hours, of every host.
//
// The hour is the granule. A smaller one would keep row groups narrower in
// time for queries over all hosts, a larger one would keep a host's rows
// together over longer ranges; with an hour, a query over all hosts reads
// at most an hour more than its range, and an hour of 100 hosts (36,000
// rows at one row per 10 s) spans four to five row groups.
const clusterGranule = int64(time.Hour / time.Microsecond)

// sortKey is the position of a row in file order.
type sortKey struct {
	hour   int64
	hasTag bool // false: the cluster value is NULL (or there is no cluster column)
	tag    string
	time   int64
}

func (a sortKey) compare(b sortKey) int {
	if c := cmp.Compare(a.hour, b.hour); c != 0 {
		return c
	}
	if a.hasTag != b.hasTag {
		if a.hasTag {
			return 1
		}
		return -1
	}
	if c := strings.Compare(a.tag, b.tag); c != 0 {
		return c
	}
	return cmp.Compare(a.time, b.time)
}

// lowerBound is the smallest key a row with time at least minTime can have.
func lowerBound(minTime int64) sortKey {
	return sortKey{hour: floorDiv(minTime, clusterGranule), time: minTime}
}

// rowKeys reads the sort keys of a record's rows. Its tag strings point
// into the record: a key kept after the record is released must be cloned.
type rowKeys struct {
	times *array.Timestamp
	tags  *array.String // nil: the table has no cluster column
}

func newRowKeys(t schema.Table, rec arrow.RecordBatch) (rowKeys, error) {
	ts, ok := rec.Column(t.TimeIndex).(*array.Timestamp)
	if !ok {
		return rowKeys{}, fmt.Errorf("delta: time column is %s, want timestamp", rec.Column(t.TimeIndex).DataType())
	}
	k := rowKeys{times: ts}
	if ci := t.ClusterIndex(); ci >= 0 {
		if k.tags, ok = rec.Column(ci).(*array.String); !ok {
			return rowKeys{}, fmt.Errorf("delta: cluster column %s is %s, want string", t.Columns[ci].Name, rec.Column(ci).DataType())
		}
	}
	return k, nil
}

// fileOrder lists the rows of batches in file order, rows of equal keys in
// input order (batch, then row). The cluster values are ranked once, so
// that the sort compares integers: a flush orders hundreds of thousands
// of rows, and comparing their host names as strings, key by key, was the
// larger part of its sort.
func fileOrder(t schema.Table, batches []arrow.RecordBatch) ([]arrowutil.RowRef, error) {
	type orderKey struct {
		hour, time int64
		tag        int32 // the cluster value's rank; 0 is NULL (first)
		rec, row   int32
	}
	n := 0
	keys := make([]rowKeys, len(batches))
	for bi, b := range batches {
		k, err := newRowKeys(t, b)
		if err != nil {
			return nil, err
		}
		keys[bi] = k
		n += int(b.NumRows())
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("delta: %d rows in one file", n)
	}
	ranks := map[string]int32{}
	for _, k := range keys {
		if k.tags == nil {
			continue
		}
		for r := range k.tags.Len() {
			if k.tags.IsValid(r) {
				ranks[k.tags.Value(r)] = 0
			}
		}
	}
	names := make([]string, 0, len(ranks))
	for s := range ranks {
		names = append(names, s)
	}
	slices.Sort(names)
	for i, s := range names {
		ranks[s] = int32(i + 1)
	}
	order := make([]orderKey, 0, n)
	for bi, k := range keys {
		for r := range k.times.Len() {
			tm := int64(k.times.Value(r))
			o := orderKey{hour: floorDiv(tm, clusterGranule), time: tm, rec: int32(bi), row: int32(r)}
			if k.tags != nil && k.tags.IsValid(r) {
				o.tag = ranks[k.tags.Value(r)]
			}
			order = append(order, o)
		}
	}
	slices.SortFunc(order, func(a, b orderKey) int {
		if c := cmp.Compare(a.hour, b.hour); c != 0 {
			return c
		}
		if c := cmp.Compare(a.tag, b.tag); c != 0 {
			return c
		}
		if c := cmp.Compare(a.time, b.time); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rec, b.rec); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	rows := make([]arrowutil.RowRef, n)
	for i, o := range order {
		rows[i] = arrowutil.RowRef{Rec: int(o.rec), Row: int(o.row)}
	}
	return rows, nil
}

func (k rowKeys) key(i int) sortKey {
	t := int64(k.times.Value(i))
	s := sortKey{hour: floorDiv(t, clusterGranule), time: t}
	if k.tags != nil && k.tags.IsValid(i) {
		s.hasTag, s.tag = true, k.tags.Value(i)
	}
	return s
}
