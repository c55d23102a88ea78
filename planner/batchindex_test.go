package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The batch indexes give exactly the rows a scan of the batch finds, in
// row order and each once, whatever they keep: with room for everything,
// with room for a few batches (evicted and made again), and with room so
// small that the numbering of values starts over.
func TestBatchIndexesMatchScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type batch struct {
		id     uint64
		values *array.String
	}
	var batches []batch
	for id := range 40 {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for i := range 500 + rng.IntN(500) {
			switch {
			case i%37 == 0:
				b.AppendNull()
			case id%5 == 0:
				b.Append(fmt.Sprintf("unique_%d_%d", id, i)) // a column of unique values
			default:
				b.Append(fmt.Sprintf("host_%d", rng.IntN(60)))
			}
		}
		batches = append(batches, batch{uint64(id), b.NewStringArray()})
		b.Release()
	}
	scan := func(values *array.String, want [][]byte) []int32 {
		var rows []int32
		for i := range values.Len() {
			if values.IsValid(i) && slices.ContainsFunc(want, func(w []byte) bool { return string(w) == values.Value(i) }) {
				rows = append(rows, int32(i))
			}
		}
		return rows
	}
	wants := [][][]byte{
		{[]byte("host_7")},
		{[]byte("host_3"), []byte("host_41"), []byte("host_3")},
		{[]byte("nobody")},
		{[]byte("unique_10_3"), []byte("host_0")},
		{},
	}
	// 8 KiB: a batch of unique values does not fit half of it, 64 KiB: it
	// does, and pushes the numbers past half the budget.
	for _, budget := range []int64{64 << 20, 256 << 10, 64 << 10, 8 << 10} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			idx := newBatchIndexes(budget)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for round := range 3 {
						for k, b := range batches {
							want := wants[(k+w+round)%len(wants)]
							got := idx.rows(b.id, 1, b.values, want, []int32{-1})
							if exp := append([]int32{-1}, scan(b.values, want)...); !slices.Equal(got, exp) {
								t.Errorf("batch %d, want %q: rows %v, a scan finds %v", b.id, want, got, exp)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			if kept := idx.indexes.Bytes() + idx.idBytes; kept > budget || idx.idBytes > budget/2 {
				t.Errorf("%d bytes kept (%d of numbers), budget %d", kept, idx.idBytes, budget)
			}
		})
	}
}
