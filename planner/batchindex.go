package planner

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/internal/lru"
)

// batchIndexes keep, per buffered batch and text column, the batch's rows
// grouped by value: made at the first direct query that filters the batch
// by the column, so that the next ones look at one host's rows, not the
// batch's (batches are immutable, and IDs unique for the life of the
// process). At most maxBytes are kept, least recently used out first.
// Safe for concurrent use.
//
// Values are numbered once for all batches (ids), and a batch's index
// holds numbers, not strings: a COPY's batches hold a few thousand rows,
// at 1,000 hosts a few rows of each host, and an index keeping a map
// entry and a copy of each host's name per batch needed 86 KB a batch.
// Over two million buffered rows that overflowed the budget, so that
// every query rebuilt every index (100 ms for one host's rows, where the
// indexes, once kept, answer in 4 ms).
type batchIndexes struct {
	maxBytes int64
	mu       sync.Mutex
	indexes  *lru.Cache[indexedColumn, *batchIndex] // half the budget
	// ids number the values of every indexed column, idBytes what they
	// weigh. They are dropped, with every index, when they would pass
	// the other half (a column of unique values).
	ids     map[string]uint32
	idBytes int64
}

type indexedColumn struct {
	id  uint64
	col int
}

// batchIndex is one batch's rows of one text column, by value: the rows
// holding value ids[k] are order[start[k]:start[k+1]], in row order.
type batchIndex struct {
	ids   []uint32 // ascending
	start []int32
	order []int32
	bytes int64
}

// idEntryBytes is what a numbered value costs beside its bytes: the map
// entry and the string header.
const idEntryBytes = 48

func newBatchIndexes(maxBytes int64) *batchIndexes {
	return &batchIndexes{maxBytes: maxBytes, indexes: lru.New[indexedColumn, *batchIndex](maxBytes / 2), ids: map[string]uint32{}}
}

// rows appends to dst the rows of batch id whose column col (values)
// holds one of want, in row order, and returns it.
func (b *batchIndexes) rows(id uint64, col int, values *array.String, want [][]byte, dst []int32) []int32 {
	key := indexedColumn{id, col}
	b.mu.Lock()
	if idx, ok := b.indexes.Get(key); ok {
		defer b.mu.Unlock()
		return b.lookup(idx, want, dst)
	}
	b.mu.Unlock()

	// Group the rows by value outside the lock; number the values under
	// it.
	local := map[string]int32{}
	var distinct []string
	rowValue := make([]int32, values.Len())
	for i := range values.Len() {
		if !values.IsValid(i) {
			rowValue[i] = -1
			continue
		}
		v := values.Value(i)
		k, ok := local[v]
		if !ok {
			k = int32(len(distinct))
			local[v] = k
			distinct = append(distinct, v)
		}
		rowValue[i] = k
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if idx, ok := b.indexes.Get(key); ok { // built meanwhile by another query
		return b.lookup(idx, want, dst)
	}
	need := int64(0)
	for _, v := range distinct {
		if _, ok := b.ids[v]; !ok {
			need += int64(len(v)) + idEntryBytes
		}
	}
	if need > b.maxBytes/2 {
		// A batch of mostly unique values (a request ID): numbering them
		// would drop every other index and still not fit. The rows are
		// found in this batch's grouping, and nothing is kept.
		return scanGrouped(local, rowValue, want, dst)
	}
	if b.idBytes+need > b.maxBytes/2 {
		// Numbers are only ever valid with the indexes made with them.
		b.indexes.Clear()
		b.ids = map[string]uint32{} // a new map: a cleared one keeps its size
		b.idBytes = 0
	}
	idx := b.build(distinct, rowValue)
	if idx.bytes <= b.maxBytes/2 {
		b.indexes.Add(key, idx, idx.bytes)
	}
	return b.lookup(idx, want, dst)
}

// scanGrouped appends the rows whose value (rowValue, numbered by local)
// is one of want, in row order.
func scanGrouped(local map[string]int32, rowValue []int32, want [][]byte, dst []int32) []int32 {
	wanted := map[int32]bool{}
	for _, w := range want {
		if k, ok := local[string(w)]; ok {
			wanted[k] = true
		}
	}
	if len(wanted) == 0 {
		return dst
	}
	for i, k := range rowValue {
		if k >= 0 && wanted[k] {
			dst = append(dst, int32(i))
		}
	}
	return dst
}

// build numbers the distinct values and groups the rows by number; there
// is room for the new numbers. The caller holds mu.
func (b *batchIndexes) build(distinct []string, rowValue []int32) *batchIndex {
	global := make([]uint32, len(distinct))
	for k, v := range distinct {
		id, ok := b.ids[v]
		if !ok {
			id = uint32(len(b.ids))
			v = strings.Clone(v) // not the batch's memory: it may go first
			b.ids[v] = id
			b.idBytes += int64(len(v)) + idEntryBytes
		}
		global[k] = id
	}
	// Values by number, then a counting sort of the rows into them.
	byID := make([]int32, len(distinct)) // local values, ascending by number
	for k := range byID {
		byID[k] = int32(k)
	}
	slices.SortFunc(byID, func(x, y int32) int { return cmp.Compare(global[x], global[y]) })
	pos := make([]int32, len(distinct)) // local value → position in ids
	idx := &batchIndex{ids: make([]uint32, len(distinct)), start: make([]int32, len(distinct)+1)}
	for p, k := range byID {
		idx.ids[p] = global[k]
		pos[k] = int32(p)
	}
	for _, k := range rowValue {
		if k >= 0 {
			idx.start[pos[k]+1]++
		}
	}
	for p := range len(distinct) {
		idx.start[p+1] += idx.start[p]
	}
	idx.order = make([]int32, idx.start[len(distinct)])
	next := slices.Clone(idx.start[:len(distinct)])
	for i, k := range rowValue {
		if k >= 0 {
			idx.order[next[pos[k]]] = int32(i)
			next[pos[k]]++
		}
	}
	idx.bytes = 64 + 8*int64(len(distinct)) + 4*int64(len(idx.order))
	return idx
}

// lookup appends the rows of want in idx to dst, in row order. The caller
// holds mu: idx's numbers are those of ids.
func (b *batchIndexes) lookup(idx *batchIndex, want [][]byte, dst []int32) []int32 {
	from := len(dst)
	for _, w := range want {
		id, ok := b.ids[string(w)]
		if !ok {
			continue
		}
		if p, found := slices.BinarySearch(idx.ids, id); found {
			dst = append(dst, idx.order[idx.start[p]:idx.start[p+1]]...)
		}
	}
	if len(want) > 1 {
		// Rows in the order they were written, each once (IN may name a
		// value twice).
		slices.Sort(dst[from:])
		dst = dst[:from+len(slices.Compact(dst[from:]))]
	}
	return dst
}
