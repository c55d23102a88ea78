package ingest

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
	"tsdb/membuffer"
)

// copyLikeRecord is n rows shaped as a TSBS cpu COPY's: a time, tags that
// repeat per host (some NULL), and random-walk doubles that do not
// compress.
func copyLikeRecord(t testing.TB, n int) arrow.RecordBatch {
	t.Helper()
	tbl, err := schema.New("cpu", []schema.Column{
		{Name: "time", Type: schema.Timestamptz},
		{Name: "hostname", Type: schema.Text},
		{Name: "region", Type: schema.Text},
		{Name: "usage_user", Type: schema.Float64},
		{Name: "usage_system", Type: schema.Float64},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	x := 0.5
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i/100) * 10_000_000))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host_%d", i%100))
		if i%7 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append([]string{"eu-west-1", "us-east-1", "ap-southeast-2"}[i%3])
		}
		for f := 3; f < 5; f++ {
			x = math.Mod(x*7919.123456789+0.0001234*float64(i), 100)
			b.Field(f).(*array.Float64Builder).Append(x)
		}
	}
	return b.NewRecordBatch()
}

// A compressed WAL entry decodes to the record it was made from, is
// smaller than the plain one, and its buffers are reused: encoding it
// again allocates little of its size.
func TestCompressedEntry(t *testing.T) {
	// A COPY part's record (a MiB of CSV) and a whole bucket's.
	for _, n := range []int{4 << 10, 64 << 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testCompressedEntry(t, n) })
	}
}

func testCompressedEntry(t *testing.T, n int) {
	rec := copyLikeRecord(t, n)
	defer rec.Release()
	e := entry{table: "cpu", tableID: "id", key: membuffer.Key{Start: 1, End: 2}, rec: rec}
	var plain, packed bytes.Buffer
	p, err := encodeEntryFramed(&plain, e, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainLen := len(p)
	var bufs compressBuffers
	encode := func() []byte {
		t.Helper()
		c, err := encodeEntryFramed(&packed, e, 0, &bufs)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := encode()
	if len(c) >= plainLen*9/10 {
		t.Errorf("compressed entry %d bytes, plain %d", len(c), plainLen)
	}
	got, body, err := decodeHeader(c)
	if err != nil {
		t.Fatal(err)
	}
	if got.table != e.table || got.tableID != e.tableID || got.key != e.key {
		t.Fatalf("header %+v", got)
	}
	back, err := decodeRecord(body, got.split, memory.DefaultAllocator, &bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Release()
	if !array.RecordEqual(back, rec) {
		t.Fatal("decoded record differs from the encoded one")
	}

	// A collection empties sync.Pools: none may run while this counts.
	// A sync.Pool may still miss now and then (about one run in twenty
	// did): the fewest bytes of three rounds count.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 4 {
			encode()
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > uint64(plainLen) {
		t.Errorf("four more encodings allocated %d bytes; the plain entry is %d", least, plainLen)
	}
}
