package delta

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
)

// ErrUnsorted is returned by MergeDataFiles when the rows of a file are not
// in file order (order.go): files written by another Delta writer, or by
// tsdb before files were clustered, may be ordered by time alone or not at
// all. Such files must be sorted together instead.
var ErrUnsorted = errors.New("delta: file rows are not in file order")

// MergeDataFiles writes the rows of files, each in file order, as one new
// file in file order and returns its add action. It merges the files
// batch by batch and opens a file only when its first rows can be next
// (known from its MinTime, which must not be later than its first row's
// time; a file without stats has the full range and is open from the
// start), so memory holds the compressed bytes and a decoded batch of each
// file that overlaps the hour being merged, and the output's compressed
// bytes, not every decoded row of the merge. Files flushed from
// consecutive buckets of the same hour interleave by host; later hours
// stay closed until they are reached. Rows with equal keys keep the
// order of files (by MinTime, then path) and of rows within a file.
func MergeDataFiles(ctx context.Context, store Store, t schema.Table, files []File) (Add, error) {
	out, err := createDataFile(store)
	if err != nil {
		return Add{}, err
	}
	w := newFileWriter(t, out)
	m := &merger{t: t, sch: t.ArrowSchema(), w: w}
	defer m.release()
	m.pending = slices.Clone(files)
	slices.SortStableFunc(m.pending, mergeRank)
	if err := m.run(ctx, store); err != nil {
		out.abort()
		return Add{}, err
	}
	if err := w.close(); err != nil {
		out.abort()
		return Add{}, err
	}
	if m.stats == nil {
		m.stats = &Stats{MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]any{}}
	}
	encoded, err := encodeStats(*m.stats)
	if err != nil {
		out.abort()
		return Add{}, err
	}
	return out.commit(ctx, store, encoded)
}

// mergeRank orders a merge's inputs: by MinTime, then path. Rows with
// equal keys keep this order of their files.
func mergeRank(a, b File) int {
	if a.MinTime != b.MinTime {
		return cmp.Compare(a.MinTime, b.MinTime)
	}
	return strings.Compare(a.Path, b.Path)
}

// merger holds the state of one MergeDataFiles.
type merger struct {
	t       schema.Table
	sch     *arrow.Schema
	w       *fileWriter
	pending []File        // not opened yet, by MinTime
	opened  int           // files opened so far: each input's tie-break rank
	open    []*mergeInput // opened, with a current row
	out     [][]arrow.Array
	outRows int
	outHour int64    // of the collected rows: a row group holds one hour
	last    *sortKey // of the last row written (tag cloned)
	stats   *Stats
}

// mergeInput is an opened file and its current batch and row.
type mergeInput struct {
	r    *dataFileReader
	rank int
	rec  arrow.RecordBatch // padded to the table's columns
	keys rowKeys
	row  int
}

func (m *merger) release() {
	for _, in := range m.open {
		in.close()
	}
	m.open = nil
	for _, col := range m.out {
		for _, a := range col {
			a.Release()
		}
	}
	m.out = nil
}

func (in *mergeInput) close() {
	if in.rec != nil {
		in.rec.Release()
		in.rec = nil
	}
	in.r.close()
}

// advance loads the input's next non-empty batch; false at the end.
func (m *merger) advance(in *mergeInput) (bool, error) {
	if in.rec != nil {
		in.rec.Release()
		in.rec = nil
	}
	for {
		raw, err := in.r.next()
		if err != nil || raw == nil {
			return false, err
		}
		wide := arrowutil.Pad(m.sch, raw)
		raw.Release()
		// The table's schema, without the Parquet field ids the reader
		// attached: the writer insists on an identical schema.
		rec := array.NewRecordBatch(m.sch, wide.Columns(), wide.NumRows())
		wide.Release()
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		keys, err := newRowKeys(m.t, rec)
		if err != nil {
			rec.Release()
			return false, err
		}
		in.rec, in.keys, in.row = rec, keys, 0
		return true, nil
	}
}

// least returns the open input whose current row comes first, and the one
// after it (nil if there is none).
func (m *merger) least() (first, second *mergeInput) {
	before := func(a, b *mergeInput) bool {
		c := a.keys.key(a.row).compare(b.keys.key(b.row))
		return c < 0 || c == 0 && a.rank < b.rank
	}
	for _, in := range m.open {
		switch {
		case first == nil || before(in, first):
			first, second = in, first
		case second == nil || before(in, second):
			second = in
		}
	}
	return first, second
}

func (m *merger) run(ctx context.Context, store Store) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		first, second := m.least()
		// Open the files whose rows may come before the first open row. On
		// an equal key the open row goes first: it ranks earlier.
		if len(m.pending) > 0 && (first == nil || lowerBound(m.pending[0].MinTime).compare(first.keys.key(first.row)) < 0) {
			f := m.pending[0]
			m.pending = m.pending[1:]
			r, err := openDataFile(ctx, store, m.t, f.Path)
			if err != nil {
				return err
			}
			in := &mergeInput{r: r, rank: m.opened}
			m.opened++
			ok, err := m.advance(in)
			if err != nil || !ok {
				in.close()
				if err != nil {
					return err
				}
				continue
			}
			m.open = append(m.open, in)
			continue
		}
		if first == nil {
			return m.flush()
		}
		if err := m.take(first, second); err != nil {
			return err
		}
	}
}

// take writes the run of rows of in that come before the other inputs'
// current rows and the next unopened file, checking that the output stays
// in file order.
func (m *merger) take(in, second *mergeInput) error {
	var stop *sortKey
	if second != nil {
		k := second.keys.key(second.row)
		stop = &k
	}
	var bound *sortKey
	if len(m.pending) > 0 {
		b := lowerBound(m.pending[0].MinTime)
		bound = &b
	}
	n := int(in.rec.NumRows())
	start := in.row
	prev := in.keys.key(start)
	if m.last != nil && prev.compare(*m.last) < 0 {
		// This file, or one merged before it, is not in file order, or
		// this file's MinTime is later than its first row (it was opened
		// too late).
		return fmt.Errorf("%w: the merge would go back in order at a row of %s", ErrUnsorted, in.r.path)
	}
	hour := prev.hour
	end := start + 1
	for ; end < n; end++ {
		k := in.keys.key(end)
		if k.compare(prev) < 0 {
			return fmt.Errorf("%w: %s", ErrUnsorted, in.r.path)
		}
		if k.hour != hour {
			break
		}
		if stop != nil {
			if c := k.compare(*stop); c > 0 || c == 0 && in.rank > second.rank {
				break
			}
		}
		if bound != nil && k.compare(*bound) > 0 {
			break
		}
		prev = k
	}
	last := prev
	last.tag = strings.Clone(last.tag)
	m.last = &last
	// A row group that spanned two hours would hold the last hosts of one
	// and the first of the next: its host range would be every host.
	if m.outRows > 0 && m.outHour != hour {
		if err := m.flush(); err != nil {
			return err
		}
	}
	m.outHour = hour
	for start < end {
		take := min(end-start, rowGroupRows-m.outRows)
		if m.out == nil {
			m.out = make([][]arrow.Array, len(m.sch.Fields()))
		}
		for c := range m.out {
			m.out[c] = append(m.out[c], array.NewSlice(in.rec.Column(c), int64(start), int64(start+take)))
		}
		m.outRows += take
		start += take
		if m.outRows == rowGroupRows {
			if err := m.flush(); err != nil {
				return err
			}
		}
	}
	in.row = end
	if end < n {
		return nil
	}
	ok, err := m.advance(in)
	if err != nil {
		return err
	}
	if !ok {
		in.close()
		m.open = slices.DeleteFunc(m.open, func(o *mergeInput) bool { return o == in })
	}
	return nil
}

// flush writes the collected rows (at most rowGroupRows, of one hour) as
// one row group.
func (m *merger) flush() error {
	if m.outRows == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(m.out))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c, parts := range m.out {
		a, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return fmt.Errorf("delta: merge: %w", err)
		}
		cols[c] = a
		for _, p := range parts {
			p.Release()
		}
		m.out[c] = m.out[c][:0]
	}
	rec := array.NewRecordBatch(m.sch, cols, int64(m.outRows))
	defer rec.Release()
	m.outRows = 0
	st := statsOf(m.t, rec)
	if m.stats == nil {
		m.stats = &st
	} else {
		merged := mergeStats(m.t, *m.stats, st)
		m.stats = &merged
	}
	return m.w.writeRowGroup(rec)
}
