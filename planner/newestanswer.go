package planner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/auth"
	"tsdb/internal/schema"
)

// The direct newest-row path. The newest row of each series — TSBS's
// lastpoint, a dashboard's table of current values —
//
//	SELECT DISTINCT ON (host) * FROM cpu ORDER BY host, time DESC
//
// depends on one row per value, which the planner already keeps: the
// files' newest rows of each Delta version (newestrows.go, read into Go
// once), and each buffered batch's newest row of each value (kept per
// batch and merged over the snapshot's batches as they come,
// batchesNewest). The engine answered the statement from those rows in
// 10–13 ms at 1,000 hosts, most of it DISTINCT ON's sort and the setup of
// a statement over a view; picking the newer of two candidates per value
// and sorting a thousand keys takes a fraction of that in Go.
//
// The shape is matched exactly — no WHERE but bounds on the time column
// by timestamp literals (each value's newest row is its answer when it
// is in range, none when it is before it; one past the range's end takes
// the engine's path), DISTINCT ON of a text column,
// ORDER BY it and then the time column descending, plain columns or *,
// constant LIMIT and OFFSET — on tables whose columns are of the types
// whose values the engine's driver gives as plain Go values (timestamptz
// time, integers, floats, booleans, text). Everything else, and every
// snapshot the kept rows cannot stand for (deletion vectors, damaged
// files, another writer's layout, a transaction block), takes the
// engine's path, which answers the same (TestNewestAnswerMatchesEngine).
// Each answer reads a fresh snapshot, so a late row, an UPDATE or a
// DELETE shows at once: they change the files' version or the batches.

// newestQuery is a statement the path answers.
type newestQuery struct {
	table string
	key   string   // the DISTINCT ON column
	outs  []string // the table's columns the output holds, in order
	names []string // the output columns' names
	desc  bool     // ORDER BY key DESC (NULLs first, as in PostgreSQL)
	// limit is LIMIT's count, -1 for none; offset OFFSET's.
	limit, offset int64
	// where holds the WHERE's bounds on the time column (nil: none),
	// matched as the direct aggregation path matches them.
	where *fastAgg
}

// matchNewest recognizes a statement of the path's shape.
func (s *Session) matchNewest(sel *pg_query.SelectStmt) (newestQuery, bool) {
	lk, ok := s.lastPerKey(sel)
	if !ok || len(sel.DistinctClause) != 1 || sel.DistinctClause[0].GetNode() == nil ||
		len(sel.SortClause) != 2 || (sel.LimitOption != pg_query.LimitOption_LIMIT_OPTION_DEFAULT && sel.LimitOption != pg_query.LimitOption_LIMIT_OPTION_COUNT) {
		return newestQuery{}, false
	}
	first, second := sel.SortClause[0].GetSortBy(), sel.SortClause[1].GetSortBy()
	if first.SortbyNulls != pg_query.SortByNulls_SORTBY_NULLS_DEFAULT || second.SortbyNulls != pg_query.SortByNulls_SORTBY_NULLS_DEFAULT ||
		first.SortbyDir == pg_query.SortByDir_SORTBY_USING {
		return newestQuery{}, false
	}
	tbl, ok := s.p.store.Table(lk.table)
	if !ok {
		return newestQuery{}, false
	}
	rv := sel.FromClause[0].GetRangeVar()
	alias := rv.Relname
	if rv.Alias != nil {
		alias = rv.Alias.Aliasname
	}
	q := newestQuery{table: lk.table, key: lk.column, desc: first.SortbyDir == pg_query.SortByDir_SORTBY_DESC}
	if sel.WhereClause != nil {
		// Bounds on the time column by literals only (Grafana's
		// $__timeFilter: time BETWEEN '…Z' AND '…Z'), no other filter.
		q.where = &fastAgg{limit: -1}
		if !q.where.matchWhere(sel.WhereClause, tbl, alias, false) || len(q.where.filters) > 0 || len(q.where.nums) > 0 {
			return newestQuery{}, false
		}
	}
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.GetVal().GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetAStar() != nil {
			for _, c := range tbl.Columns {
				q.outs = append(q.outs, c.Name)
				q.names = append(q.names, c.Name)
			}
			continue
		}
		c := tableColumnRef(rt.GetVal(), alias, tbl)
		if c == "" {
			return newestQuery{}, false
		}
		name := c
		if rt.Name != "" {
			name = rt.Name
		}
		q.outs = append(q.outs, c)
		q.names = append(q.names, name)
	}
	var count bool
	if q.limit, count = constantCount(sel.LimitCount); !count {
		return newestQuery{}, false
	}
	if q.offset, count = constantCount(sel.LimitOffset); !count {
		return newestQuery{}, false
	}
	q.offset = max(q.offset, 0)
	return q, true
}

// newestTableOK reports whether the path reads t: a time column with
// time zone, no dedup_keys (whose rows the view deduplicates), and every
// column of a type newestValue reads — text (not character(n), shown
// padded), booleans, and the numbers and timestamps the direct
// aggregation path reads (fastColumnKind).
func newestTableOK(t schema.Table) bool {
	if t.ViewQuery != "" || len(t.Dedup) > 0 || t.TimeIndex < 0 || t.Columns[t.TimeIndex].Type != schema.Timestamptz {
		return false
	}
	for _, c := range t.Columns {
		if k, _ := fastColumnKind(c.Type); k == 0 && c.Type != schema.Text && c.Type != schema.Bool || c.Padded {
			return false
		}
	}
	return true
}

// newestCandidate is a value's newest row: a file's kept row, or a row
// of a buffered batch.
type newestCandidate struct {
	key  string
	file []any
	rec  arrow.RecordBatch
	row  int
}

// newestColumns describes a prepared SELECT the path may answer, as the
// engine's path would (the columns are the table's, by their types), so
// that describing it does not bind the table for the engine.
func (s *Session) newestColumns(sel *pg_query.SelectStmt) ([]Column, bool) {
	if s.noFastAgg || s.tx != nil {
		return nil, false
	}
	q, ok := s.matchNewest(sel)
	if !ok {
		return nil, false
	}
	t, ok := s.p.store.Table(q.table)
	if !ok || !newestTableOK(t) {
		return nil, false
	}
	outs, ok := q.columnsOf(t)
	if !ok {
		return nil, false
	}
	return q.columns(t, outs), true
}

// columnsOf resolves the output's columns on t (a snapshot's table, which
// an ALTER may have changed since the statement was matched).
func (q *newestQuery) columnsOf(t schema.Table) ([]int, bool) {
	outs := make([]int, len(q.outs))
	for i, name := range q.outs {
		if outs[i] = t.ColumnIndex(name); outs[i] < 0 {
			return nil, false
		}
	}
	return outs, true
}

// columns are the result columns as the engine's path gives them: by the
// engine types of t's columns outs.
func (q *newestQuery) columns(t schema.Table, outs []int) []Column {
	cols := make([]Column, len(outs))
	for i, c := range outs {
		cols[i] = columnFor(q.names[i], t.Columns[c].Type.DuckDB())
	}
	return cols
}

// newestPlan is what the path reads for a statement: each value's
// newest row, sorted and cut by LIMIT and OFFSET.
type newestPlan struct {
	q     newestQuery
	t     schema.Table
	outs  []int // the output's columns of t
	picks []newestCandidate
	// version is the Delta version of the files; fromFiles and
	// fromBatches count the values whose newest row is in the files'
	// kept rows and in the buffered batches, batches the batches.
	version                         int64
	fromFiles, fromBatches, batches int
}

// newestAnswer answers sel on the direct path; ok is false when the path
// does not apply and the engine's must answer.
func (s *Session) newestAnswer(ctx context.Context, sel *pg_query.SelectStmt) (_ *Result, ok bool, _ error) {
	p, ok := s.newestPlan(ctx, sel)
	if !ok {
		return nil, false, nil
	}
	rows := make([][]any, len(p.picks))
	for i, c := range p.picks {
		vals := make([]any, len(p.outs))
		for j, col := range p.outs {
			if c.file != nil {
				vals[j] = c.file[col]
				continue
			}
			v, ok := newestValue(c.rec, col, c.row, p.t.Columns[col].Type)
			if !ok {
				return nil, false, nil
			}
			vals[j] = v
		}
		rows[i] = vals
	}
	s.p.metrics.newestAnswers.Inc()
	return &Result{Tag: "SELECT", Columns: p.q.columns(p.t, p.outs), Rows: NewStaticRows(rows)}, true, nil
}

// newestPlan finds the rows the path answers sel with; false when the
// path does not apply.
func (s *Session) newestPlan(ctx context.Context, sel *pg_query.SelectStmt) (*newestPlan, bool) {
	if sel == nil || s.noFastAgg || s.tx != nil || s.p.roles != nil && !s.p.roles.Allowed(s.user, auth.Read) {
		return nil, false // a role that may not read gets its error there
	}
	q, ok := s.matchNewest(sel)
	if !ok {
		return nil, false
	}
	snap, err := s.p.store.Snapshot(ctx, q.table)
	if err != nil {
		return nil, false // the engine's path reports it
	}
	t := snap.Table
	if !newestTableOK(t) || len(snap.Deleted) > 0 || len(snap.Damaged) > 0 {
		return nil, false
	}
	r := fullRange
	if q.where != nil {
		// The bounds' literals are read as the direct aggregation path
		// reads them, in UTC: a literal without an offset is the
		// session's zone's.
		if s.settings.Location() != time.UTC {
			return nil, false
		}
		if r, ok = q.where.timeRange(); !ok {
			return nil, false
		}
	}
	// Resolved on the snapshot's table, which a concurrent ALTER may have
	// changed since the match.
	key := t.ColumnIndex(q.key)
	outs, ok := q.columnsOf(t)
	if !ok || key < 0 {
		return nil, false
	}
	p := &newestPlan{q: q, t: t, outs: outs, version: snap.DeltaVersion, batches: len(snap.Batches)}
	var files map[string]newestRow
	if len(snap.Files) > 0 {
		// The files' kept rows may be made or read through the engine:
		// a result the session's connection is streaming (an open
		// cursor) is held first, as before any statement it runs.
		if err := s.useEngine(ctx); err != nil {
			return nil, false
		}
		name, err := s.newestFiles(ctx, snap, q.key)
		if err != nil || name == "" {
			return nil, false
		}
		if files, ok, err = s.p.newest.rowsInGo(ctx, s.engineQuerier(), name, key, t.TimeIndex); err != nil || !ok {
			return nil, false
		}
	}
	batches, ok := s.batchesNewest(snap, key)
	if !ok {
		return nil, false
	}
	recs := make(map[uint64]arrow.RecordBatch, len(snap.Batches))
	for _, b := range snap.Batches {
		recs[b.ID] = b.Rec
	}
	// A value's newest row before the range leaves it out (no row of it
	// is in range); one past the range's end may hide the value's newest
	// row in range, which nothing kept tells: the engine answers.
	inRange := func(t int64) (keep, ok bool) { return t >= r.lo, t <= r.hi }
	picks := make([]newestCandidate, 0, max(len(files), len(batches)))
	for k, f := range files {
		if len(f.vals) != len(t.Columns) {
			return nil, false // kept for another shape of the table
		}
		if b, ok := batches[k]; ok && b.t > f.t {
			continue // the batch's row, below
		}
		keep, ok := inRange(f.t)
		if !ok {
			return nil, false
		}
		if keep {
			picks = append(picks, newestCandidate{key: k, file: f.vals})
		}
	}
	p.fromFiles = len(picks)
	for k, b := range batches {
		if f, ok := files[k]; ok && b.t <= f.t {
			continue
		}
		rec := recs[b.batch]
		if rec == nil || rec.Column(t.TimeIndex).IsNull(int(b.row)) {
			return nil, false
		}
		keep, ok := inRange(b.t)
		if !ok {
			return nil, false
		}
		if keep {
			picks = append(picks, newestCandidate{key: k, rec: rec, row: int(b.row)})
		}
	}
	p.fromBatches = len(picks) - p.fromFiles
	// Text sorts by its bytes (the C collation); NULL after every value
	// ascending, before them descending.
	slices.SortFunc(picks, func(a, b newestCandidate) int {
		an, bn := a.key == nullKey, b.key == nullKey
		c := 0
		switch {
		case an || bn:
			c = cmp.Compare(btoi(an), btoi(bn))
		default:
			c = cmp.Compare(a.key, b.key)
		}
		if q.desc {
			return -c
		}
		return c
	})
	picks = picks[min(q.offset, int64(len(picks))):]
	if q.limit >= 0 && q.limit < int64(len(picks)) {
		picks = picks[:q.limit]
	}
	p.picks = picks
	return p, true
}

// explain is EXPLAIN's text of a statement the path answers.
func (p *newestPlan) explain() [][]any {
	return [][]any{
		{fmt.Sprintf("tsdb table %s: answered without the engine, from the newest row of each %s", p.t.Name, p.q.key)},
		{fmt.Sprintf("  Delta version %d: the files' newest rows kept, %d values newest there", p.version, p.fromFiles)},
		{fmt.Sprintf("  MemBuffer: the newest rows of %d batches, %d values newest there", p.batches, p.fromBatches)},
		{fmt.Sprintf("  %d rows after ORDER BY %s%s, LIMIT and OFFSET", len(p.picks), p.q.key, map[bool]string{true: " DESC"}[p.q.desc])},
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newestValue is the value of column col (of type ty) of a buffered
// batch's row as the engine's driver gives it — text and booleans as
// they are, numbers and timestamps as the direct aggregation path makes
// them (fastValue) — and NULL in a batch written before the column was
// added; false for an Arrow type the path does not read.
func newestValue(rec arrow.RecordBatch, col, row int, ty schema.Type) (any, bool) {
	if col >= int(rec.NumCols()) {
		return nil, true
	}
	a := rec.Column(col)
	if a.IsNull(row) {
		return nil, true
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(row), true
	case *array.Boolean:
		return a.Value(row), true
	}
	k, _ := fastColumnKind(ty)
	iv, fv, _, ok := arrowNumber(a, row)
	if k == 0 || !ok {
		return nil, false
	}
	return fastValue(k, fastAcc{i: iv, f: fv}), true
}
