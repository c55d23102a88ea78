package planner

// Cancel and statement_timeout must stop a statement wherever it is. DuckDB
// checks for an interrupt only while it executes: parsing, binding,
// optimizing and building the physical plan run to the end whatever
// happens (a 20,000-term OR planned for 7 s under statement_timeout = 1s;
// a 1,000-term sum for 5.5 s). pg_query's parser cannot be interrupted
// either. So the calls that make DuckDB plan client SQL run on a goroutine
// of their own (engineCall): when the statement's context ends first, the
// session interrupts DuckDB, waits briefly, and then leaves the call its
// engine connection and answers at once with 57014, continuing on another
// connection of the pool. The abandoned call finishes in the background,
// where its connection's views and plans are dropped and the connection is
// returned to the pool.
//
// Statements large or deep enough to take long (sqlShape.heavy) are parsed
// and planned a few at a time across the server (admit), so that their
// memory and CPU, including that of abandoned calls, stay bounded however
// many clients send them.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// interruptGrace is how long a canceled engine call gets to return after
// DuckDB's interrupt before its connection is left to it: a call that is
// executing stops within it; one that is still planning does not.
const interruptGrace = 100 * time.Millisecond

// Limits bound what one statement may ask of the parser and the engine.
type Limits struct {
	// MaxStatementBytes bounds a query string (a Query or Parse message).
	// Zero means 16 MiB.
	MaxStatementBytes int
	// MaxStatementTokens bounds the tokens of a statement the engine
	// parses and plans (INSERT … VALUES that tsdb reads itself and COPY
	// data do not count): DuckDB holds a few KiB per token while it
	// plans. Zero means 100,000.
	MaxStatementTokens int
	// HeavyStatements is how many heavy statements (over 10,000 tokens
	// or 100 levels deep) are parsed and planned at once, server-wide;
	// others wait. Zero means one per two engine threads, at least one.
	HeavyStatements int
	// MaxPreparedStatements bounds the named prepared statements of one
	// session; zero means 10,000.
	MaxPreparedStatements int
}

func (l Limits) withDefaults(threads int) Limits {
	if l.MaxStatementBytes <= 0 {
		l.MaxStatementBytes = 16 << 20
	}
	if l.MaxStatementTokens <= 0 {
		l.MaxStatementTokens = 100_000
	}
	if l.HeavyStatements <= 0 {
		l.HeavyStatements = max(1, threads/2)
	}
	if l.MaxPreparedStatements <= 0 {
		l.MaxPreparedStatements = 10_000
	}
	return l
}

// metrics are the planner's.
type metrics struct {
	abandoned prometheus.Counter
	limited   *prometheus.CounterVec
	// spillRetries counts statements run again over buffered rows read
	// from a file after running out of memory (queryCatalog).
	spillRetries prometheus.Counter
	// lastKeyBounds counts statements that read only from their values'
	// oldest newest row on (lastpoint.go).
	lastKeyBounds prometheus.Counter
	// newestBuilds counts the engine tables of a version's newest rows
	// made (newestrows.go): one per flush or compaction a statement saw.
	newestBuilds prometheus.Counter
	// fastAggregates counts queries answered by the direct aggregation
	// path (fastagg.go).
	fastAggregates prometheus.Counter
	// newestAnswers counts queries of each value's newest row answered
	// without the engine (newestanswer.go).
	newestAnswers prometheus.Counter
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_abandoned_engine_calls_total",
			Help: "Statements canceled while the engine planned them, whose engine connection was left to finish planning in the background."}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tsdb_planner_statements_refused_total",
			Help: "Statements refused before parsing, by the limit they passed (size, tokens, depth)."}, []string{"limit"}),
		spillRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_spill_retries_total",
			Help: "Queries run again, after running out of memory, over buffered rows read from a file, where the engine's aggregation spills."}),
		lastKeyBounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_last_row_bounds_total",
			Help: "Queries needing each value's newest row (lastpoint, SELECT DISTINCT of a column) that read only from the oldest of those rows on."}),
		newestBuilds: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_newest_rows_builds_total",
			Help: "Engine tables made of each value's newest rows among a table version's files, which such queries read in the files' place."}),
		fastAggregates: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_direct_aggregations_total",
			Help: "Queries of one table's max, min or count per time bucket answered from the buffered batches and the data files' row groups without the engine."}),
		newestAnswers: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_planner_direct_newest_rows_total",
			Help: "Queries of each value's newest row (SELECT DISTINCT ON (c) … ORDER BY c, time DESC) answered from the kept newest rows without the engine."}),
	}
	if r != nil {
		r.MustRegister(m.abandoned, m.limited, m.spillRetries, m.lastKeyBounds, m.newestBuilds, m.fastAggregates, m.newestAnswers)
	}
	return m
}

// heavySlot is one of the planner's slots for heavy statements, held by the
// statement and by every call of it left running in the background; the
// last to finish gives it back.
type heavySlot struct {
	refs atomic.Int32
	sem  chan struct{}
}

func (h *heavySlot) hold() { h.refs.Add(1) }

func (h *heavySlot) release() {
	if h.refs.Add(-1) == 0 {
		<-h.sem
	}
}

// admit checks a query string against the limits before anything parses
// it: its size, its nesting depth (54001, as PostgreSQL's max_stack_depth
// answers) and, for statements the engine plans, its number of tokens
// (54000). A heavy statement then waits for a slot; the wait counts
// against the statement's timeout. release must be called once the
// statement is done.
func (s *Session) admit(ctx context.Context, query string) (release func(), err error) {
	lim := s.p.limits
	if err := s.checkSize(query); err != nil {
		return nil, err
	}
	sh := measureSQL(query)
	if sh.depth > maxStatementDepth {
		s.p.metrics.limited.WithLabelValues("depth").Inc()
		return nil, &sqlerr.Error{Code: sqlerr.StackDepthExceeded, Message: "stack depth limit exceeded",
			Detail: fmt.Sprintf("Expressions nest about %d levels deep; tsdb takes at most %d.", sh.depth, maxStatementDepth),
			Hint:   "Flatten the expression, e.g. a sum of many terms into a sum over rows."}
	}
	// The rows of INSERT … VALUES are read by tsdb itself where they are
	// literals (a 20,000-row INSERT is 140,000 tokens): only the engine's
	// statements are held to the token limit; a large INSERT is still
	// heavy.
	if sh.tokens > lim.MaxStatementTokens && firstKeyword(query) != "insert" {
		s.p.metrics.limited.WithLabelValues("tokens").Inc()
		return nil, sqlerr.New(sqlerr.ProgramLimitExceeded, "statement of %d tokens exceeds --max-statement-tokens (%d); split it, or load rows with COPY", sh.tokens, lim.MaxStatementTokens)
	}
	if !sh.heavy() {
		return func() {}, nil
	}
	return s.takeHeavySlot(ctx)
}

// takeHeavySlot waits for a heavy-statement slot and holds it for the
// session's statement until release (a no-op when the statement holds one
// already).
func (s *Session) takeHeavySlot(ctx context.Context) (release func(), err error) {
	if s.slot != nil {
		return func() {}, nil
	}
	select {
	case s.p.heavy <- struct{}{}:
	case <-ctx.Done():
		return nil, canceled(ctx)
	}
	slot := &heavySlot{sem: s.p.heavy}
	slot.hold()
	s.slot = slot
	return s.planned, nil
}

// planned gives back the running statement's heavy slot, if it holds one:
// the slot covers parsing and planning, not execution, nor the time a
// client takes to read the rows (a client that stops reading must not
// hold up every heavy statement of the server). Calls left running in the
// background keep their own hold of it.
func (s *Session) planned() {
	if s.slot != nil {
		s.slot.release()
		s.slot = nil
	}
}

// checkSize refuses a query string over --max-statement-size.
func (s *Session) checkSize(query string) error {
	if max := s.p.limits.MaxStatementBytes; len(query) > max {
		s.p.metrics.limited.WithLabelValues("size").Inc()
		return sqlerr.New(sqlerr.ProgramLimitExceeded, "statement of %d bytes exceeds --max-statement-size (%d bytes); load large data with COPY", len(query), max)
	}
	return nil
}

// canceled is the error of a statement whose context ended.
func canceled(ctx context.Context) error {
	return engineError(context.Cause(ctx))
}

// engineCall runs call, which makes DuckDB parse or plan on the session's
// connection, so that the statement's cancel or timeout answers at once
// (see the top of this file). If the session leaves the call, discard is
// given what the call returns without error, to free it.
func engineCall[T any](ctx context.Context, s *Session, call func() (T, error), discard func(T)) (T, error) {
	if ctx.Done() == nil {
		return call()
	}
	if ctx.Err() != nil {
		var zero T
		return zero, canceled(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call()
		done <- result{v, err}
	}()
	var zero T
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	bindings.Interrupt(s.raw)
	select {
	case r := <-done:
		if r.err == nil {
			// Done before the interrupt took: the statement is canceled
			// all the same.
			if discard != nil {
				discard(r.v)
			}
		}
		return zero, canceled(ctx)
	case <-time.After(interruptGrace):
	}
	wait := func() {
		if r := <-done; r.err == nil && discard != nil {
			discard(r.v)
		}
	}
	if !s.abandonEngine(ctx, wait) {
		// Too many calls are left running already, or no connection is
		// free: this one is waited for, as before.
		wait()
	}
	return zero, canceled(ctx)
}

// maxAbandoned bounds the engine calls left running in the background,
// server-wide: each holds an engine connection of the pool.
const maxAbandoned = 8

// connWait bounds how long a session waits for a fresh engine connection
// when it leaves its own to a call.
const connWait = 5 * time.Second

// abandonEngine leaves the session's engine connection, with its views and
// plans, to a call still running on it: wait returns when the call has, and
// the connection is then cleaned and given back to the pool. The session
// goes on with a fresh connection.
//
// It reports false, leaving everything as it was, when maxAbandoned calls
// are left running already or no connection is free within connWait: the
// caller then waits for the call.
func (s *Session) abandonEngine(ctx context.Context, wait func()) bool {
	if s.p.abandonedCalls.Add(1) > maxAbandoned {
		s.p.abandonedCalls.Add(-1)
		return false
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connWait)
	defer cancel()
	oldConn, oldViews, oldPlans, oldZone, oldMem := s.conn, s.views, s.plans, s.engineZone, s.engineWorkMem
	conn, err := s.p.db.Conn(cctx)
	if err != nil {
		s.p.abandonedCalls.Add(-1)
		return false
	}
	raw, err := driverConnection(cctx, conn)
	if err != nil {
		conn.Close()
		s.p.abandonedCalls.Add(-1)
		return false
	}
	s.conn, s.raw, s.engineZone, s.engineWorkMem = conn, raw, pooledZone, s.p.engine.opts.StatementMemoryLimit
	s.views, s.plans = map[string]sessionView{}, map[string]*plan{}
	// Temporary tables were the old connection's: they go with it.
	oldTemps, oldSeqs := s.temps, s.seqs
	s.temps, s.seqs = nil, nil
	if s.tx != nil {
		// The engine copies of a transaction's writes are tables every
		// connection sees; only its views were the old connection's.
		clear(s.tx.views)
	}
	slot := s.slot
	if slot != nil {
		slot.hold()
	}
	s.p.abandoned.Add(1)
	s.p.metrics.abandoned.Inc()
	s.p.logger.Warn("statement canceled while the engine planned it; its engine connection is freed when planning ends", "user", s.user)
	go func() {
		defer s.p.abandoned.Done()
		defer s.p.abandonedCalls.Add(-1)
		if slot != nil {
			defer slot.release()
		}
		wait()
		for _, p := range oldPlans {
			p.close()
		}
		bg := context.Background()
		for name := range oldViews {
			oldConn.ExecContext(bg, "DROP VIEW IF EXISTS temp.main."+schema.QuoteIdent(name))
		}
		oldConn.ExecContext(bg, "DROP VIEW IF EXISTS temp.main."+returningView)
		for name := range oldTemps {
			oldConn.ExecContext(bg, "DROP TABLE IF EXISTS temp.main."+schema.QuoteIdent(tempPrefix+name))
		}
		for name := range oldSeqs {
			oldConn.ExecContext(bg, "DROP SEQUENCE IF EXISTS temp.main."+schema.QuoteIdent(seqPrefix+name))
		}
		oldConn.ExecContext(bg, "DROP TABLE IF EXISTS temp.main."+dmlRowsTable)
		s.p.releaseConn(bg, oldConn, oldZone, oldMem)
	}()
	return true
}

// parseCall runs splitStatements for a heavy statement on a goroutine of
// its own, so that a cancel or timeout answers while pg_query parses (a
// million-element IN list takes over a second); the parse then finishes
// in the background, holding the statement's heavy slot.
func (s *Session) parseCall(ctx context.Context, query string) ([]statement, error) {
	standard := s.settings.Get("standard_conforming_strings") == "on"
	if s.slot == nil {
		return splitStatements(query, standard)
	}
	type result struct {
		stmts []statement
		err   error
	}
	done := make(chan result, 1)
	slot := s.slot
	slot.hold()
	go func() {
		defer slot.release()
		st, err := splitStatements(query, standard)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.stmts, r.err
	case <-ctx.Done():
		return nil, canceled(ctx)
	}
}
