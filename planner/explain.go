package planner

import (
	"context"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
)

// explain shows, per table, the layers a query reads, then DuckDB's plan.
func (s *Session) explain(ctx context.Context, st statement, ex *pg_query.ExplainStmt) (*Result, error) {
	sel := ex.Query.GetSelectStmt()
	if sel == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN supports SELECT statements only")
	}
	r, err := collectRefs(sel, s)
	if err != nil {
		return nil, err
	}
	// A statement the direct newest-row path answers runs no engine plan.
	if p, ok := s.newestPlan(ctx, sel); ok {
		return &Result{Tag: "EXPLAIN", Columns: []Column{{Name: "QUERY PLAN", OID: 25, Size: -1}}, Rows: NewStaticRows(p.explain())}, nil
	}
	// A locking clause takes locks when the query runs, not when it is
	// described.
	if q := stripLocking(ex.Query); q != ex.Query {
		ex = &pg_query.ExplainStmt{Query: q, Options: ex.Options}
	}
	if err := s.rewriteDateTimes(ex.Query); err != nil {
		return nil, err
	}
	// The plan of the query tsdb runs: rewritten as a SELECT is (when it
	// reads no catalog relation, which a SELECT binds first).
	query := ex.Query
	rewritten, used, err := s.rewriteSession(ex.Query)
	switch {
	case err != nil:
		return nil, err
	case rewritten != nil && len(used) == 0:
		query = rewritten
	default:
		dialect.RewriteTree(ex.Query.ProtoReflect(), s.settings.Input(s.statementTime()))
	}
	inner, err := deparse(s.p.pgVersion, query)
	if err != nil {
		return nil, err
	}
	// Bound as the statement itself is: a statement that needs only each
	// value's newest row (lastpoint.go) reads from a bound on, and the
	// files' kept newest rows in their place.
	var opts bindOptions
	if lk, ok := s.lastPerKey(sel); ok {
		opts.last = &lk
	}
	b, err := s.bindOpts(ctx, r.tables, sel, opts)
	if err != nil {
		return nil, err
	}
	defer b.done()
	var lines [][]any
	for _, p := range b.pruned {
		var rows int64
		for _, bt := range p.snap.Batches {
			rows += bt.Rec.NumRows()
		}
		layers := []string{}
		if p.newest != "" {
			layers = append(layers, "the newest rows of each "+opts.last.column+" in the Delta files")
		}
		if len(p.files) > 0 {
			layers = append(layers, "Delta files")
		}
		if len(p.batchIDs) > 0 {
			layers = append(layers, "MemBuffer")
		}
		if len(layers) == 0 {
			layers = append(layers, "none")
		}
		lines = append(lines,
			[]any{fmt.Sprintf("tsdb table %s: time range %s; reads %s", p.snap.Table.Name, formatRange(p.rng), strings.Join(layers, " + "))},
			[]any{fmt.Sprintf("  Delta version %d: %d files kept, %d pruned", p.snap.DeltaVersion, len(p.files), p.filesPruned)},
			[]any{fmt.Sprintf("  MemBuffer: %d buckets kept, %d pruned (%d of %d batches, %d rows buffered)", p.bucketsKept, p.bucketsPruned, len(p.batchIDs), len(p.snap.Batches), rows)})
		if p.from != nil {
			lines = append(lines, []any{fmt.Sprintf("  rows from %s on: no %s's newest row is older", formatMicros(*p.from), opts.last.column)})
		}
	}
	rows, err := s.engineQuerier().QueryContext(ctx, "EXPLAIN "+inner)
	if err != nil {
		return nil, engineError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, engineError(err)
		}
		for _, l := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
			lines = append(lines, []any{l})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, engineError(err)
	}
	return &Result{Tag: "EXPLAIN", Columns: []Column{{Name: "QUERY PLAN", OID: 25, Size: -1}}, Rows: NewStaticRows(lines)}, nil
}
