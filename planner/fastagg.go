package planner

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/delta"
	"tsdb/internal/auth"
	"tsdb/membuffer"
)

// The direct aggregation path. The queries dashboards and TSBS send most
// often — one table, a few hosts, a time window, max/min/count per
// minute or hour — read a few hundred rows, yet the engine spends
// milliseconds around them on every statement: a view of the snapshot,
// binding and planning, opening each file. This path answers exactly that
// shape from the snapshot itself: the buffered Arrow batches and the data
// files' row groups the time window and the hosts' min/max statistics
// leave (delta.ScanFile), in one pass, in Go.
//
// The shape is matched exactly and everything else — another function, a
// predicate it does not know, a session zone other than UTC, a transaction
// block, a table with dedup_keys, a file with a deletion vector or another
// layout — takes the general path, which answers every query. The path
// computes what PostgreSQL computes for the shape: date_trunc in UTC,
// max/min by PostgreSQL's order (NaN above every number), count, and the
// result columns' names and types as PostgreSQL gives them (the general
// path gives the same; TestFastAggregateMatchesEngine compares them).

// footerCacheBytes is the budget of the data files' parsed footers the
// planner keeps for the path (a few hundred bytes per column chunk), and
// scanCacheBytes that of the column chunks it keeps decoded: 64 MiB hold
// the time, host and one metric of some 2.5M rows, the recent hours
// dashboards ask for again and again.
const (
	footerCacheBytes = 32 << 20
	scanCacheBytes   = 64 << 20
	// batchIndexBytes bounds the indexes of buffered batches by value (4
	// bytes a row, 8 per value and batch, and each value once).
	batchIndexBytes = 64 << 20
)

// fastMaxRows bounds the rows a query on the path may have to look at
// (those of the row groups and batches its time range and filters leave):
// past it the engine, which reads with every core, is as fast. Past
// fastMaxGroups buckets, the engine's aggregation (which spills) answers.
const (
	fastMaxRows   = 2 << 20
	fastMaxGroups = 100_000
	// fastMaxFiles bounds the files whose footers a query reads before
	// it knows its rows.
	fastMaxFiles = 512
	// fastMaxBuffered bounds the buffered rows a query on the path looks
	// at: a batch's rows are not sorted by host, so a batch is read
	// whole, or only its rows of the filter's values through an index of
	// its own (batchindex.go).
	fastMaxBuffered = 500_000
)

// fastAggregate answers sel on the direct path; ok is false when the
// path does not apply and the general one must answer.
func (s *Session) fastAggregate(ctx context.Context, sel *pg_query.SelectStmt) (_ *Result, ok bool, _ error) {
	if sel == nil || s.noFastAgg || s.tx != nil || s.settings.Location() != time.UTC ||
		s.p.roles != nil && !s.p.roles.Allowed(s.user, auth.Read) {
		return nil, false, nil // a role that may not read gets its error there
	}
	t, ok := s.fastTable(sel)
	if !ok {
		return nil, false, nil
	}
	if _, ok := matchFastAgg(sel, t, false, nil); !ok {
		return nil, false, nil
	}
	snap, err := s.p.store.Snapshot(ctx, t.Name)
	if err != nil {
		return nil, false, nil // the general path reports it
	}
	// Matched again on the snapshot's table, which a concurrent ALTER
	// may have changed.
	m, ok := matchFastAgg(sel, snap.Table, false, nil)
	if !ok {
		return nil, false, nil
	}
	r, ok := m.timeRange()
	if !ok {
		return nil, false, nil
	}
	agg := newFastGroups(m, s.p.fastMaxGroups, s.p.fastMaxOutRows)
	if r.lo <= r.hi {
		// What the statistics leave, first: a query that would read
		// more rows than fastMaxRows is the engine's, which reads in
		// parallel (and keeps the cache for what is asked often).
		type fileGroups struct {
			f      *delta.ScanFile
			groups []int
		}
		var files []fileGroups
		defer func() {
			for _, fg := range files {
				fg.f.Close()
			}
		}()
		rows, inRange := int64(0), 0
		for _, f := range snap.Files {
			if r.overlaps(f.MinTime, f.MaxTime) {
				inRange++
			}
		}
		if inRange > fastMaxFiles {
			return nil, false, nil
		}
		for i, f := range snap.Files {
			if !r.overlaps(f.MinTime, f.MaxTime) {
				continue
			}
			if snap.DamagedFile(f.Path) != nil || snap.Deleted[f.Path].Len() > 0 || needsLayout(f, snap.Table) {
				return nil, false, nil
			}
			sf, err := s.p.scans.Open(snap.FilePaths[i])
			if err != nil {
				return nil, false, nil // the engine reports what it finds
			}
			groups := agg.candidates(sf, snap.Table.TimeIndex, r)
			files = append(files, fileGroups{sf, groups})
			for _, g := range groups {
				rows += int64(sf.Rows(g))
			}
		}
		// Buffered rows in the order they were written, as the engine's
		// path gives them (a batch's ID grows with it). With a filter,
		// the rows to look at are its values' rows, from the batch's
		// index; else all of them.
		var batches []membuffer.Batch
		for _, b := range snap.Batches {
			if r.overlaps(b.MinTime, b.MaxTime) {
				batches = append(batches, b)
			}
		}
		slices.SortFunc(batches, func(a, b membuffer.Batch) int { return cmp.Compare(a.ID, b.ID) })
		candidates := make([][]int32, len(batches))
		buffered := int64(0)
		for i, b := range batches {
			if len(m.filters) == 0 {
				buffered += b.Rec.NumRows()
				continue
			}
			f := m.filters[0]
			values, ok := columnOf[*array.String](b.Rec, f.col)
			if !ok {
				return nil, false, nil // written before the column was added, or not text
			}
			candidates[i] = s.p.batchIndexes.rows(b.ID, f.col, values, f.want, nil)
			buffered += int64(len(candidates[i]))
		}
		if rows+buffered > s.p.fastMaxRows || buffered > s.p.fastMaxBuffered {
			return nil, false, nil
		}
		for _, fg := range files {
			if ctx.Err() != nil {
				return nil, false, nil // the engine's path reports the cancel
			}
			if err := agg.scanFile(fg.f, fg.groups, snap.Table.TimeIndex, r); err != nil {
				s.p.logger.Debug("direct aggregation: left to the engine", "err", err)
				return nil, false, nil
			}
		}
		for i, b := range batches {
			if !agg.scanBatch(b.Rec, candidates[i], snap.Table.TimeIndex, r) {
				return nil, false, nil
			}
		}
		if agg.decline || agg.infiniteTimes() || !agg.streamable() {
			return nil, false, nil
		}
		if m.rows {
			// The files' rows are read as they are sent: the rows own
			// the files from here.
			rows := &streamRows{ctx: ctx, g: agg, pending: agg.pending, tail: agg.cols, row: -1}
			rows.cols = make([]outColumn, len(m.outs))
			for j, o := range m.outs {
				rows.cols[j].kind = o.kind
			}
			for _, fg := range files {
				rows.files = append(rows.files, fg.f)
			}
			files = nil
			s.p.metrics.fastAggregates.Inc()
			return &Result{Tag: "SELECT", Columns: m.columns(), Rows: rows}, true, nil
		}
	}
	s.p.metrics.fastAggregates.Inc()
	if m.rows {
		// Nothing in range: no rows.
		return &Result{Tag: "SELECT", Columns: m.columns(), Rows: NewStaticRows(nil)}, true, nil
	}
	return &Result{Tag: "SELECT", Columns: m.columns(), Rows: NewStaticRows(agg.rows())}, true, nil
}

// timeRange is the instants the WHERE keeps, inclusive; ok is false when
// a bound is not a timestamp literal the path reads exactly. The bounds
// are pruning's constraints (prune.go), so both read a WHERE alike.
func (m *fastAgg) timeRange() (interval, bool) {
	var and cAnd
	var exprs []*pg_query.Node
	for _, c := range m.times {
		switch c.op {
		case "<", "<=", ">", ">=", "=":
			and = append(and, cCmp{op: c.op, expr: len(exprs)})
			exprs = append(exprs, c.expr)
		case "between":
			and = append(and, cBetween{lo: len(exprs), hi: len(exprs) + 1})
			exprs = append(exprs, c.expr, c.hi)
		default:
			return fullRange, false
		}
	}
	if len(exprs) == 0 {
		return fullRange, true
	}
	vals := make([]int64, len(exprs))
	if !literalTimes(exprs, vals, time.UTC) {
		return fullRange, false
	}
	return rangeOf(and, vals), true
}

// fastAcc is one aggregate of one group: the extreme value so far (as
// int64 or float64 by the column's type) or a count.
type fastAcc struct {
	seen bool
	i    int64
	f    float64
}

// fastGroups aggregates the rows the path reads, by bucket.
type fastGroups struct {
	m *fastAgg
	// groups are the buckets' accumulators, by bucket start; last and
	// lastKey the bucket found last (rows come sorted by time, mostly).
	groups  map[int64][]fastAcc
	last    []fastAcc
	lastKey int64
	// decline: past maxGroups buckets, or a time the path does not
	// compute with (±infinity): the engine's path answers.
	maxGroups int
	maxOut    int // rows the rows mode returns at most (fastMaxOutRows)
	decline   bool
	// cols are the result's columns in rows mode (fastcols.go), nOut
	// its rows.
	cols []outColumn
	nOut int
	// scratch reused between row groups: the runs of rows the first
	// filter keeps, the other filters' rows, the rows kept and their
	// buckets' accumulators
	runs    []delta.Run
	matches [][]bool
	kept    []int32
	rowAcc  [][]fastAcc
	// the kept rows' values of a number column (delta's IntsAt and
	// FloatsAt), reused from column to column
	ints   delta.IntChunk
	floats delta.FloatChunk
	// pending are the file rows the rows mode keeps, pendingRows their
	// number, read as they are sent (streamRows).
	pending     []pendingRows
	pendingRows int
}

func newFastGroups(m *fastAgg, maxGroups, maxOut int) *fastGroups {
	g := &fastGroups{m: m, maxGroups: maxGroups, maxOut: maxOut, groups: map[int64][]fastAcc{}}
	if m.rows {
		g.cols = make([]outColumn, len(m.outs))
		for j, o := range m.outs {
			g.cols[j].kind = o.kind
		}
	}
	return g
}

// group returns the accumulators of the bucket of time us.
func (g *fastGroups) group(us int64) []fastAcc {
	if us >= math.MaxInt64-1 || us <= -math.MaxInt64 {
		g.decline = true // ±infinity: date_trunc keeps it, the engine prints it
	}
	key := int64(0)
	if g.m.unit > 0 {
		key = us - ((us%g.m.unit)+g.m.unit)%g.m.unit // floor, also before 1970
	}
	if g.last != nil && key == g.lastKey {
		return g.last
	}
	acc, ok := g.groups[key]
	if !ok {
		if len(g.groups) >= g.maxGroups {
			g.decline = true // the engine's aggregation spills if it must
		}
		acc = make([]fastAcc, len(g.m.outs))
		g.groups[key] = acc
	}
	g.last, g.lastKey = acc, key
	return acc
}

// floatAbove reports whether a sorts after b as PostgreSQL orders float8:
// NaN above every number, NaN equal to NaN.
func floatAbove(a, b float64) bool {
	if math.IsNaN(a) {
		return !math.IsNaN(b)
	}
	return a > b
}

// addInt folds value v of output o into acc. (An infinite timestamptz is
// kept as it is: rows declines it.)
func (o *fastOut) addInt(acc *fastAcc, v int64) {
	switch {
	case o.fn == "count":
		acc.i++
	case !acc.seen || o.fn == "max" && v > acc.i || o.fn == "min" && v < acc.i:
		acc.i = v
	}
	acc.seen = true
}

// addFloat folds value v of output o into acc. Of two equal values the
// later is kept, as PostgreSQL's float8larger and float8smaller keep
// their second argument: 0 and -0 are equal but print differently.
func (o *fastOut) addFloat(acc *fastAcc, v float64) {
	switch {
	case o.fn == "count":
		acc.i++
	case !acc.seen || o.fn == "max" && !floatAbove(acc.f, v) || o.fn == "min" && !floatAbove(v, acc.f):
		acc.f = v
	}
	acc.seen = true
}

// infiniteTimes reports whether a max or min of a timestamptz column is
// ±infinity, which the engine's path prints as PostgreSQL does.
func (g *fastGroups) infiniteTimes() bool {
	for _, acc := range g.groups {
		for j, o := range g.m.outs {
			if o.fn != "count" && o.kind == KindTimestampTZ && o.col >= 0 && acc[j].seen &&
				(acc[j].i >= math.MaxInt64-1 || acc[j].i <= -math.MaxInt64) {
				return true
			}
		}
	}
	return false
}

// rows are the result rows of aggregates: one per bucket in the query's
// order, or the one row without GROUP BY (also over no rows, as
// PostgreSQL gives it), after OFFSET and LIMIT.
func (g *fastGroups) rows() [][]any {
	keys := make([]int64, 0, len(g.groups))
	for k := range g.groups {
		keys = append(keys, k)
	}
	if g.m.unit == 0 && len(keys) == 0 {
		keys = append(keys, 0)
		g.groups[0] = make([]fastAcc, len(g.m.outs))
	}
	slices.Sort(keys)
	if g.m.desc {
		slices.Reverse(keys)
	}
	keys = keys[min(int64(len(keys)), g.m.offset):]
	if g.m.limit >= 0 && int64(len(keys)) > g.m.limit {
		keys = keys[:g.m.limit]
	}
	out := make([][]any, len(keys))
	for r, k := range keys {
		acc := g.groups[k]
		row := make([]any, len(g.m.outs))
		for j, o := range g.m.outs {
			a := acc[j]
			switch {
			case o.fn == "date_trunc":
				row[j] = time.UnixMicro(k).UTC()
			case o.fn == "count":
				row[j] = a.i
			case !a.seen:
				row[j] = nil
			default:
				row[j] = fastValue(o.kind, a)
			}
		}
		out[r] = row
	}
	return out
}

// fastValue is an extreme value as the engine's path returns a value of
// its kind (Vector.Value).
func fastValue(k Kind, a fastAcc) any {
	switch k {
	case KindFloat64:
		return a.f
	case KindFloat32:
		return float32(a.f)
	case KindInt64:
		return a.i
	case KindInt32:
		return int32(a.i)
	case KindInt16:
		return int16(a.i)
	}
	return time.UnixMicro(a.i).UTC()
}
