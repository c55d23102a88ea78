package delta

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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

func (k rowKeys) key(i int) sortKey {
	t := int64(k.times.Value(i))
	s := sortKey{hour: floorDiv(t, clusterGranule), time: t}
	if k.tags != nil && k.tags.IsValid(i) {
		s.hasTag, s.tag = true, k.tags.Value(i)
	}
	return s
}
