package planner

// The points of the buffered batches of tables with dedup_keys, hashed,
// so that a write of new points whose time range reaches into buffered
// batches (agents that each send their own hosts' points for the same
// times) learns without the engine that none of its points is there.
//
// A batch's content never changes under its ID (membuffer.Replace gives a
// changed batch a new one), so each batch is hashed once, when a write
// first needs it, and forgotten when it leaves the buffer. A hash found
// means only "maybe": the engine then looks (pointsPresent). A hash not
// found means the point is in no indexed batch, since equal points hash
// alike: their key bytes are the stored values (appendPointKey), which
// the rows of a batch and the rows of a write hold alike.

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/schema"
	"tsdb/membuffer"
)

// pointIndex holds the hashed points of buffered batches per table. The
// zero value is ready to use.
type pointIndex struct {
	mu     sync.Mutex // guards the map; each table has its own lock
	seed   maphash.Seed
	seeded bool
	tables map[string]*tablePoints
}

// pointIdle is how long a table's hashes are kept without a write that
// needs them: a table whose writers stopped frees them (they are made
// again from the batches then buffered, should writes come back).
const pointIdle = 10 * time.Minute

// tablePoints are one table's indexed batches, for one point identity.
type tablePoints struct {
	mu       sync.Mutex
	used     time.Time           // the last write that looked (guarded by pointIndex.mu)
	identity string              // the dedup columns the hashes are of
	batches  map[uint64][]uint64 // batch ID → its points' hashes
	count    map[uint64]int32    // hash → indexed batches holding it
}

// mayContain reports whether a point of recs may be in one of the
// batches overlapping (those of the table's snapshot whose time range
// reaches recs'); all are the snapshot's batches, the ones the index may
// keep.
func (x *pointIndex) mayContain(tbl schema.Table, all, overlapping []membuffer.Batch, recs []arrow.RecordBatch) bool {
	identity := strings.Join(tbl.Dedup, "\x00")
	now := time.Now()
	x.mu.Lock()
	if !x.seeded {
		x.seed, x.seeded = maphash.MakeSeed(), true
	}
	if x.tables == nil {
		x.tables = map[string]*tablePoints{}
	}
	for name, other := range x.tables {
		if now.Sub(other.used) > pointIdle {
			delete(x.tables, name)
		}
	}
	tp := x.tables[tbl.Name]
	if tp == nil {
		tp = &tablePoints{}
		x.tables[tbl.Name] = tp
	}
	tp.used = now
	seed := x.seed
	x.mu.Unlock()

	// Writes of one table come one at a time (its write lock); those of
	// other tables hash theirs meanwhile.
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.identity != identity || tp.batches == nil {
		tp.identity, tp.batches, tp.count = identity, map[uint64][]uint64{}, map[uint64]int32{}
	}
	// Batches that left the buffer (flushed, replaced) go.
	if len(tp.batches) > 0 {
		live := make(map[uint64]bool, len(all))
		for _, b := range all {
			live[b.ID] = true
		}
		for id, hashes := range tp.batches {
			if live[id] {
				continue
			}
			for _, h := range hashes {
				if tp.count[h]--; tp.count[h] <= 0 {
					delete(tp.count, h)
				}
			}
			delete(tp.batches, id)
		}
	}
	keyCols := dedupColumns(tbl)
	var key []byte
	for _, b := range overlapping {
		if _, ok := tp.batches[b.ID]; ok {
			continue
		}
		hashes := make([]uint64, 0, b.Rec.NumRows())
		for r := range int(b.Rec.NumRows()) {
			key = pointKey(key[:0], keyCols, b.Rec, r)
			h := maphash.Bytes(seed, key)
			hashes = append(hashes, h)
			tp.count[h]++
		}
		tp.batches[b.ID] = hashes
	}
	for _, rec := range recs {
		for r := range int(rec.NumRows()) {
			key = pointKey(key[:0], keyCols, rec, r)
			if tp.count[maphash.Bytes(seed, key)] > 0 {
				return true
			}
		}
	}
	return false
}

// forget drops a table's index (DROP TABLE).
func (x *pointIndex) forget(table string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.tables, table)
}

// dedupColumns are the indexes of tbl's point identity columns.
func dedupColumns(tbl schema.Table) []int {
	cols := make([]int, len(tbl.Dedup))
	for i, c := range tbl.Dedup {
		cols[i] = tbl.ColumnIndex(c)
	}
	return cols
}

// pointKey appends the key bytes of row r of rec's point (the columns
// keyCols; a column the record predates is NULL) to key.
func pointKey(key []byte, keyCols []int, rec arrow.RecordBatch, r int) []byte {
	for _, c := range keyCols {
		if c < 0 || c >= int(rec.NumCols()) {
			key = append(key, 0)
			continue
		}
		key = appendPointKey(key, rec.Column(c), r)
	}
	return key
}
