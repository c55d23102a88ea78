package planner

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/delta"
)

// How the direct aggregation path (fastagg.go) reads: the row groups of
// data files and the buffered batches of a snapshot, the rows a query
// keeps, folded into its buckets or collected as rows.

// candidates are the row groups of f that the time range r and the
// filters' values are not outside of, by their statistics.
func (g *fastGroups) candidates(f *delta.ScanFile, timeCol int, r interval) []int {
	var out []int
groups:
	for rg := range f.Groups() {
		if lo, hi, ok := f.IntBounds(rg, timeCol); ok && !r.overlaps(lo, hi) {
			continue
		}
		for _, flt := range g.m.filters {
			if lo, hi, ok := f.TextBounds(rg, flt.col); ok && !slices.ContainsFunc(flt.want, func(w []byte) bool {
				return bytes.Compare(w, lo) >= 0 && bytes.Compare(w, hi) <= 0
			}) {
				continue groups
			}
		}
		out = append(out, rg)
	}
	return out
}

// scanFile folds the rows in range r of row groups of a data file. The
// first filter's rows are found by runs (a host's rows are adjacent
// within each hour) and only those rows are looked at.
func (g *fastGroups) scanFile(f *delta.ScanFile, groups []int, timeCol int, r interval) error {
	path := f.Path()
	for _, rg := range groups {
		if g.decline {
			return nil
		}
		times, err := f.Ints(rg, timeCol)
		if err != nil {
			return err
		}
		n := len(times.Values)
		if n != f.Rows(rg) {
			return errRowCount(path, rg)
		}
		g.runs = append(g.runs[:0], delta.Run{Start: 0, End: int32(n)})
		g.matches = g.matches[:0]
		for k, flt := range g.m.filters {
			text, err := f.Text(rg, flt.col)
			if err != nil {
				return err
			}
			if text.Rows() != n {
				return errRowCount(path, rg)
			}
			if k == 0 {
				g.runs = text.Runs(flt.want, g.runs)
			} else {
				g.matches = append(g.matches, text.Match(flt.want, nil))
			}
		}
		g.kept = g.kept[:0]
		for _, run := range g.runs {
		rows:
			for i := run.Start; i < run.End; i++ {
				if us := times.Values[i]; us < r.lo || us > r.hi {
					continue
				}
				for _, m := range g.matches {
					if !m[i] {
						continue rows
					}
				}
				g.kept = append(g.kept, i)
			}
		}
		for _, nf := range g.m.nums {
			if len(g.kept) == 0 {
				break
			}
			c := &g.floats
			if err := f.FloatsAt(rg, nf.col, g.kept, c); err != nil {
				return err
			}
			kept := g.kept[:0]
			for k, i := range g.kept {
				if (len(c.Nulls) == 0 || !c.Nulls[k]) && nf.keeps(c.Values[k]) {
					kept = append(kept, i)
				}
			}
			g.kept = kept
		}
		if len(g.kept) == 0 {
			continue
		}
		if g.m.rows {
			// The rows are read as they are sent, once every file has
			// been filtered: a result past fastMaxOutRows is declined
			// before any of its columns is decoded.
			g.pendingRows += len(g.kept)
			if g.nOut+g.pendingRows > g.maxOut {
				g.decline = true
				return nil
			}
			g.pending = append(g.pending, pendingRows{f: f, rg: rg, n: n, kept: slices.Clone(g.kept)})
			continue
		}
		// The buckets of the kept rows, then each output's column.
		g.rowAcc = g.rowAcc[:0]
		for _, i := range g.kept {
			g.rowAcc = append(g.rowAcc, g.group(times.Values[i]))
		}
		for j := range g.m.outs {
			o := &g.m.outs[j]
			switch {
			case o.fn == "date_trunc":
			case o.col < 0 || o.col == timeCol: // count(*), or of the never-NULL time column
				for k, i := range g.kept {
					o.addInt(&g.rowAcc[k][j], times.Values[i])
				}
			case o.float:
				if err := f.FloatsAt(rg, o.col, g.kept, &g.floats); err != nil {
					return err
				}
				fold(g, g.floats.Values, g.floats.Nulls, j, o.addFloat)
			default:
				if err := f.IntsAt(rg, o.col, g.kept, &g.ints); err != nil {
					return err
				}
				fold(g, g.ints.Values, g.ints.Nulls, j, o.addInt)
			}
		}
	}
	return nil
}

// fold folds the kept rows' values of a column (vals[k] and nulls[k] are
// kept row k's; nulls is empty when none is NULL) into output j's
// accumulators with add.
func fold[T int64 | float64](g *fastGroups, vals []T, nulls []bool, j int, add func(*fastAcc, T)) {
	for k := range g.kept {
		if len(nulls) == 0 || !nulls[k] {
			add(&g.rowAcc[k][j], vals[k])
		}
	}
}

// errRowCount is a data file whose column chunks of one row group do not
// have the same number of rows.
func errRowCount(path string, rg int) error {
	return fmt.Errorf("planner: data file %s: row group %d: columns of different lengths", path, rg)
}

// scanBatch folds the rows of buffered batch rec in range r; false when a
// column is not of the Arrow type the path reads (the general path
// answers).
//
// candidates are the rows of the first filter's values, in the order they
// were written (batchIndexes.rows); nil when the query has no filter.
func (g *fastGroups) scanBatch(rec arrow.RecordBatch, candidates []int32, timeCol int, r interval) bool {
	for _, o := range g.m.outs {
		if o.col >= int(rec.NumCols()) {
			return false // written before the column was added
		}
	}
	for _, f := range g.m.filters {
		if f.col >= int(rec.NumCols()) {
			return false
		}
	}
	ts, ok := rec.Column(timeCol).(*array.Timestamp)
	if !ok {
		return false
	}
	filters := make([]*array.String, len(g.m.filters))
	for i, f := range g.m.filters {
		if filters[i], ok = rec.Column(f.col).(*array.String); !ok {
			return false
		}
	}
	cols := make([]arrow.Array, len(g.m.outs))
	for j, o := range g.m.outs {
		if o.col >= 0 {
			cols[j] = rec.Column(o.col)
		}
	}
	nums := make([]*array.Float64, len(g.m.nums))
	for k, nf := range g.m.nums {
		if nf.col >= int(rec.NumCols()) {
			return false
		}
		if nums[k], ok = rec.Column(nf.col).(*array.Float64); !ok {
			return false
		}
	}
	times := ts.Values()
	all := len(filters) == 0
rows:
	for k := 0; all && k < len(times) || !all && k < len(candidates); k++ {
		i := k
		if !all {
			i = int(candidates[k])
		}
		us := int64(times[i])
		if us < r.lo || us > r.hi || ts.IsNull(i) {
			continue
		}
		for f := 1; f < len(filters); f++ {
			col := filters[f]
			if col.IsNull(i) || !slices.ContainsFunc(g.m.filters[f].want, func(w []byte) bool { return string(w) == col.Value(i) }) {
				continue rows
			}
		}
		for k, nf := range g.m.nums {
			if nums[k].IsNull(i) || !nf.keeps(nums[k].Value(i)) {
				continue rows
			}
		}
		if g.m.rows {
			if !g.batchRow(cols, i) {
				return false
			}
			continue
		}
		acc := g.group(us)
		if g.decline {
			return true
		}
		for j := range g.m.outs {
			o := &g.m.outs[j]
			if cols[j] == nil {
				if o.fn == "count" {
					o.addInt(&acc[j], 0)
				}
				continue
			}
			iv, fv, isFloat, ok := arrowNumber(cols[j], i)
			switch {
			case !ok:
				return false
			case cols[j].IsNull(i):
			case isFloat:
				o.addFloat(&acc[j], fv)
			default:
				o.addInt(&acc[j], iv)
			}
		}
	}
	return true
}

// fastMaxOutRows bounds the rows the rows mode returns. Both paths stream
// chunks to the wire; at 100 hosts, with the pgx client on the same two
// cores, this one answered high-cpu-all (46,000 rows) in 80-89 ms against
// 103-118 through the engine, 216,000 rows in 297-334 ms against 345-367,
// and 820,000 rows alike (1.3-1.8 s). Past a million rows the engine,
// which reads with every core, is left the query.
const fastMaxOutRows = 1 << 20

// pendingRows are the rows of row group rg (n rows) of f that the rows
// mode keeps, to be read as they are sent (streamRows).
type pendingRows struct {
	f     *delta.ScanFile
	rg, n int
	kept  []int32
}

// streamable reports whether the rows mode's pending rows can be read as
// they are sent, when it is too late to leave the query to the engine: the
// files open (a handle outlives a compaction's removal of the file), every
// column stored as it is read, and the row groups' statistics bounding
// each timestamptz column away from ±infinity, which the engine prints.
func (g *fastGroups) streamable() bool {
	for _, p := range g.pending {
		if p.f.Open() != nil {
			return false
		}
		for _, o := range g.m.outs {
			as := delta.AsInts
			switch {
			case o.kind == KindString:
				as = delta.AsText
			case o.float:
				as = delta.AsFloats
			}
			if !p.f.Stores(p.rg, o.col, as) {
				return false
			}
			if o.kind != KindTimestampTZ {
				continue
			}
			lo, hi, ok := p.f.IntBounds(p.rg, o.col)
			if !ok || lo <= -math.MaxInt64 || hi >= math.MaxInt64-1 {
				return false
			}
		}
	}
	return true
}

// fileRows appends the kept rows of row group rg (n rows) of f to the
// result, in rows mode.
func (g *fastGroups) fileRows(f *delta.ScanFile, rg, n int) error {
	if g.nOut+len(g.kept) > g.maxOut {
		g.decline = true
		return nil
	}
	for j, o := range g.m.outs {
		col := &g.cols[j]
		switch {
		case o.kind == KindString:
			c, err := f.Text(rg, o.col)
			if err != nil {
				return err
			}
			if c.Rows() != n {
				return errRowCount(f.Path(), rg)
			}
			for _, i := range g.kept {
				if v, ok := c.Value(int(i)); ok {
					col.addText(v)
				} else {
					col.null()
				}
			}
		case o.float:
			if err := f.FloatsAt(rg, o.col, g.kept, &g.floats); err != nil {
				return err
			}
			for k, v := range g.floats.Values[:len(g.kept)] {
				if len(g.floats.Nulls) > 0 && g.floats.Nulls[k] {
					col.null()
				} else {
					col.addFloat(v)
				}
			}
		default:
			if err := f.IntsAt(rg, o.col, g.kept, &g.ints); err != nil {
				return err
			}
			for k, v := range g.ints.Values[:len(g.kept)] {
				if len(g.ints.Nulls) > 0 && g.ints.Nulls[k] {
					col.null()
					continue
				}
				if o.kind == KindTimestampTZ && (v >= math.MaxInt64-1 || v <= -math.MaxInt64) {
					g.decline = true // ±infinity: the engine prints it
				}
				col.addInt(v)
			}
		}
	}
	g.nOut += len(g.kept)
	return nil
}

// batchRow appends row i of a buffered batch (its columns cols) to the
// result, in rows mode; false for a column of a type it does not read.
func (g *fastGroups) batchRow(cols []arrow.Array, i int) bool {
	if g.nOut+g.pendingRows >= g.maxOut {
		g.decline = true
		return true
	}
	for j, o := range g.m.outs {
		col := &g.cols[j]
		if cols[j].IsNull(i) {
			col.null()
			continue
		}
		if c, ok := cols[j].(*array.String); ok {
			col.addString(c.Value(i))
			continue
		}
		iv, fv, isFloat, ok := arrowNumber(cols[j], i)
		if !ok {
			return false
		}
		if o.kind == KindTimestampTZ && (iv >= math.MaxInt64-1 || iv <= -math.MaxInt64) {
			g.decline = true // ±infinity: the engine prints it
		}
		switch {
		case o.float && isFloat:
			col.addFloat(fv)
		case o.float:
			col.addFloat(float64(iv))
		default:
			col.addInt(iv)
		}
	}
	g.nOut++
	return true
}

// arrowNumber reads row i of a numeric or timestamp Arrow column as the
// path folds it: an integer (times in microseconds) or a float; ok is
// false for a column of another type.
func arrowNumber(a arrow.Array, i int) (iv int64, fv float64, isFloat, ok bool) {
	switch c := a.(type) {
	case *array.Float64:
		return 0, c.Value(i), true, true
	case *array.Float32:
		return 0, float64(c.Value(i)), true, true
	case *array.Int64:
		return c.Value(i), 0, false, true
	case *array.Int32:
		return int64(c.Value(i)), 0, false, true
	case *array.Int16:
		return int64(c.Value(i)), 0, false, true
	case *array.Timestamp:
		return int64(c.Value(i)), 0, false, true
	}
	return 0, 0, false, false
}

// columnOf is column col of rec as an A; false when rec has no such column
// (written before it was added) or holds another type.
func columnOf[A arrow.Array](rec arrow.RecordBatch, col int) (A, bool) {
	var zero A
	if col >= int(rec.NumCols()) {
		return zero, false
	}
	a, ok := rec.Column(col).(A)
	return a, ok
}
