// Package planner turns SQL statements into work: SELECT over a consistent
// snapshot of Delta files and MemBuffer batches executed by DuckDB, INSERT to
// the ingest path, DDL, CHECKPOINT and session commands. It does not speak
// the wire protocol.
package planner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/delta"
	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/auth"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/internal/views"
)

// Planner plans and runs statements for all sessions.
type Planner struct {
	store     *ingest.Store
	roles     *auth.Store
	views     *views.Store
	engine    *Engine
	db        *sql.DB
	mirror    *mirror
	logger    *slog.Logger
	pgVersion int32
	limits    Limits
	metrics   *metrics
	// heavy holds a token per heavy statement being parsed or planned.
	heavy chan struct{}
	// abandoned counts engine calls left running by canceled statements
	// (see guard.go); Close waits for them, since the engine must not be
	// closed under them.
	abandoned sync.WaitGroup
	// abandonedCalls counts them, for the cap (maxAbandoned).
	abandonedCalls atomic.Int64
	// txSeq numbers transactions (ingest.TxID) and the engine tables
	// holding their writes.
	txSeq atomic.Uint64
	// copyBufs are COPY input buffers (*[]byte) the decoders are done
	// with, for the next chunks of the same COPY or of the next one: tsdb
	// import and other bulk loaders send one COPY per batch, and each
	// would otherwise take fresh memory for its chunks.
	copyBufs sync.Pool
	// keyTimes summarizes files and batches for statements that need
	// each value's newest row only (lastpoint.go).
	keyTimes keyTimes
	// newest keeps, per Delta version, each value's newest rows among
	// a table's files for those statements (newestrows.go).
	newest newestRows
	// points hashes the buffered points of tables with dedup_keys
	// (pointindex.go).
	points pointIndex
	// scans keeps the footers and decoded column chunks of data files
	// the direct aggregation path read (fastagg.go).
	scans *delta.ScanCache
	// batchIndexes keep the rows of each value of buffered batches' text
	// columns for that path.
	batchIndexes *batchIndexes
	// fastMaxRows, fastMaxGroups and fastMaxOutRows bound that path's queries (tests
	// lower them).
	fastMaxRows, fastMaxBuffered int64
	fastMaxGroups                int
	fastMaxOutRows               int

	stop chan struct{}
	done chan struct{}
}

// New returns a planner that runs statements over store with engine.
// roles decides what each user may do; nil lets everybody do everything.
// vs keeps the views; nil keeps them in memory.
func New(ctx context.Context, engine *Engine, store *ingest.Store, roles *auth.Store, vs *views.Store, logger *slog.Logger) (*Planner, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if vs == nil {
		vs, _ = views.Open("")
	}
	threads := engine.opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	limits := engine.opts.Limits.withDefaults(threads)
	p := &Planner{store: store, roles: roles, views: vs, engine: engine, db: engine.db, mirror: newMirror(), logger: logger, pgVersion: engine.pgVersion,
		limits: limits, metrics: newMetrics(engine.opts.Registerer), scans: delta.NewScanCache(footerCacheBytes, scanCacheBytes), batchIndexes: newBatchIndexes(batchIndexBytes), fastMaxRows: fastMaxRows, fastMaxBuffered: fastMaxBuffered, fastMaxGroups: fastMaxGroups, fastMaxOutRows: fastMaxOutRows, heavy: make(chan struct{}, limits.HeavyStatements),
		stop: make(chan struct{}), done: make(chan struct{})}
	reap := engine.opts.ReaperTimeout
	if reap <= 0 {
		reap = 5 * time.Minute
	}
	go p.reapLoop(reap)
	return p, nil
}

// reapLoop frees the engine state of tables that had no buffered rows and no
// queries for the reaper timeout, until Close.
func (p *Planner) reapLoop(timeout time.Duration) {
	defer close(p.done)
	t := time.NewTicker(min(max(timeout/2, 10*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		conn, err := p.db.Conn(ctx)
		if err == nil {
			var n int
			n, err = p.mirror.reap(ctx, conn, timeout)
			conn.Close()
			if n > 0 {
				p.logger.Debug("reaped idle table state", "tables", n)
			}
		}
		cancel()
		if err != nil {
			p.logger.Warn("reaper failed", "err", err)
		}
	}
}

// Close stops the reaper and waits for engine calls that canceled
// statements left running. Sessions must be closed first; the engine is
// closed by its owner.
func (p *Planner) Close() error {
	close(p.stop)
	<-p.done
	p.abandoned.Wait()
	return nil
}

// Limits returns the limits statements are held to.
func (p *Planner) Limits() Limits { return p.limits }

// Execute runs every statement of a query string in order and hands each
// result to emit, which must consume and close its Rows. The first error
// stops the remaining statements, as in PostgreSQL's simple query protocol.
func (s *Session) Execute(ctx context.Context, query string, emit func(*Result) error) (err error) {
	defer s.rewriteBug(&err)
	defer sqltree.RecoverTooDeep(&err)
	return s.clientError(ctx, s.executeQuery(ctx, query, emit))
}

// rewriteBug, deferred after sqltree.RecoverTooDeep, reports a rewrite
// of tsdb's that did not end (a bug) as the statement's error, and fails
// its transaction block, instead of a server killed by a stack overflow.
func (s *Session) rewriteBug(err *error) {
	if errors.Is(*err, sqltree.ErrTooDeep) {
		s.p.logger.Error("a rewrite did not end; the statement failed", "err", *err)
		s.FailTransaction()
		*err = sqlerr.New("54001", "statement too complex: tsdb's rewrite of it did not end (a bug of tsdb's)")
	}
}

func (s *Session) executeQuery(ctx context.Context, query string, emit func(*Result) error) error {
	if err := s.checkSize(query); err != nil {
		return err
	}
	// The fast INSERT path declines text that is not UTF-8 (its scanner
	// checks the query as it must anyway): check it after, once.
	if s.TransactionFailed() {
		// The general path refuses what a failed block may not run.
	} else if res, ok, err := s.fastInsert(ctx, query); ok {
		if err != nil {
			s.FailTransaction()
			return err
		}
		return emit(res)
	}
	if err := checkQueryText(query); err != nil {
		return err
	}
	release, err := s.admit(ctx, query)
	if err != nil {
		return err
	}
	defer release()
	stmts, err := s.parseCall(ctx, query)
	if err != nil {
		return err
	}
	if len(stmts) == 0 {
		return emit(&Result{Empty: true})
	}
	for _, st := range stmts {
		if n := firstParam(st); n > 0 {
			// Parameters come with Bind, over the extended protocol; here
			// $1 is what an unexpanded client macro ($__timeFilter)
			// leaves too.
			return sqlerr.New("42P02", "there is no parameter $%d", n)
		}
		res, err := s.execute(ctx, st)
		if err != nil {
			return atOffset(err, query, st)
		}
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

// firstParam is the number of the first $n parameter in st, or 0. The
// tree is walked only when the text has a $.
func firstParam(st statement) int32 {
	node := st.node
	if node == nil || strings.IndexByte(st.text, '$') < 0 || node.GetPrepareStmt() != nil {
		return 0 // PREPARE's parameters are its statement's
	}
	var n int32
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if p, ok := m.(*pg_query.ParamRef); ok && n == 0 {
			n = p.Number
		}
		return nil
	})
	return n
}

func (s *Session) known(name string) bool {
	_, ok := s.p.store.Table(name)
	return ok
}

// missing is the error of a statement naming name, which is not a table
// the session can use: absent, or unavailable because its log is damaged.
func (s *Session) missing(name string) error {
	if err := s.p.store.Unavailable(name); err != nil {
		return unavailableError(err)
	}
	return sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
}

// execute runs one statement under the rules of a transaction block.
func (s *Session) execute(ctx context.Context, st statement) (*Result, error) {
	tx := st.node.GetTransactionStmt()
	ends := tx != nil && (tx.Kind == pg_query.TransactionStmtKind_TRANS_STMT_COMMIT || tx.Kind == pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK ||
		tx.Kind == pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO)
	if s.TransactionFailed() && !ends {
		return nil, sqlerr.New(sqlerr.InFailedTransaction, "current transaction is aborted, commands ignored until end of transaction block")
	}
	res, err := s.executeStatement(ctx, st)
	if err != nil {
		s.FailTransaction()
		return nil, err
	}
	if s.tx != nil && tx == nil && st.node.GetVariableSetStmt() == nil {
		s.tx.queried = true
	}
	return res, nil
}

func (s *Session) executeStatement(ctx context.Context, st statement) (*Result, error) {
	if t := st.node.GetTransactionStmt(); t != nil {
		// Every role may end its block (even one whose role was dropped
		// meanwhile: it must not be stuck refusing everything). COMMIT
		// and ROLLBACK close the open results rather than read them
		// first.
		return s.transaction(ctx, t)
	}
	// Before the privilege walk, the engine and the rewrites: the direct
	// aggregation path needs none of them (fastagg.go).
	if res, ok, err := s.fastAggregate(ctx, st.node.GetSelectStmt()); ok {
		return res, err
	}
	if res, ok, err := s.newestAnswer(ctx, st.node.GetSelectStmt()); ok {
		return res, err
	}
	if err := s.checkPrivilege(st.node); err != nil {
		return nil, err
	}
	if err := s.checkInBlock(st.node); err != nil {
		return nil, err
	}
	if table, ok, err := repairCall(st.node); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return s.repair(ctx, table)
	}
	if pid, terminate, ok, err := signalCall(st.node); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return s.signal(pid, terminate)
	}
	switch st.node.GetNode().(type) {
	case *pg_query.Node_SelectStmt, *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt:
		if !mentionsNow(st.text) {
			break
		}
		if fixed := s.fixTransactionTime(st.node); fixed != st.node {
			st.node = fixed
			text, err := deparse(s.p.pgVersion, fixed)
			if err != nil {
				return nil, err
			}
			st.text = text
		}
	}
	// FETCH, MOVE and CLOSE read or end a result the session's connection
	// is streaming: they run nothing on it.
	switch n := st.node.GetNode().(type) {
	case *pg_query.Node_FetchStmt:
		return fetchCursor(n.FetchStmt)
	case *pg_query.Node_ClosePortalStmt:
		return &Result{Tag: "CLOSE CURSOR", CloseCursor: &CursorClose{Name: n.ClosePortalStmt.Portalname}}, nil
	}
	if err := s.useEngine(ctx); err != nil {
		return nil, err
	}
	if err := s.dropStaleViews(ctx); err != nil {
		return nil, err
	}
	st, err := s.expandFunctions(st)
	if err != nil {
		return nil, err
	}
	if st, err = s.expandTemps(st); err != nil {
		return nil, err
	}
	if st, err = s.expandSequences(st); err != nil {
		return nil, err
	}
	if st, err = s.unqualified(st); err != nil {
		return nil, err
	}
	before := st.text
	if st, err = s.expandViews(st); err != nil {
		return nil, err
	}
	if st.text != before {
		// A view's query may call functions.
		if st, err = s.expandFunctions(st); err != nil {
			return nil, err
		}
	}
	if st.node != nil && st.node.GetSelectStmt() == nil && st.node.GetExecuteStmt() == nil && st.node.GetPrepareStmt() == nil &&
		st.node.GetDeallocateStmt() == nil {
		// Whatever else the session runs (SET, DDL, writes) may change
		// what a query means: prepared queries are made anew.
		s.dropPlans()
	}
	if st.node == nil {
		kw := firstKeyword(st.text)
		if forbiddenKeywords[kw] {
			return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "%s is not allowed: tsdb does not give access to the engine's files, extensions or settings", strings.ToUpper(kw))
		}
		if !duckdbQueryKeywords[kw] && !strings.HasPrefix(kw, "(") {
			// DuckDB's SHOW, DESCRIBE, SUMMARIZE and the like read the
			// engine's own catalog (SHOW ALL TABLES listed tsdb's internal
			// tables to any role): as in PostgreSQL, a syntax error.
			if _, perr := pg_query.Parse(st.text); perr != nil {
				return nil, parseError(perr)
			}
			return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near %q", kw)
		}
		// Not PostgreSQL grammar: DuckDB's own dialect of SELECT.
		r, err := duckdbRefs(ctx, s.engineQuerier(), st.text, s)
		if err != nil {
			if sqlerr.Code(err) == sqlerr.SyntaxError {
				// Report PostgreSQL's message, which names the position.
				if _, perr := pg_query.Parse(st.text); perr != nil {
					return nil, parseError(perr)
				}
			}
			return nil, err
		}
		return s.query(ctx, st.text, r.tables, nil, "SELECT")
	}
	if err := dialect.ReturningChecks(st.node); err != nil {
		return nil, err
	}
	switch n := st.node.Node.(type) {
	case *pg_query.Node_SelectStmt:
		if modifyingCTE(st.node) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "data-modifying statements in WITH are not supported")
		}
		r, err := collectRefs(n.SelectStmt, s)
		if err != nil {
			return nil, err
		}
		if err := dialect.CheckOuterAggregates(n.SelectStmt); err != nil {
			return nil, err
		}
		if err := dialect.CheckSetReturning(n.SelectStmt); err != nil {
			return nil, err
		}
		if err := dialect.CheckSetOpOrder(n.SelectStmt); err != nil {
			return nil, err
		}
		if n.SelectStmt.IntoClause != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SELECT INTO is not supported; use CREATE TABLE and INSERT … SELECT")
		}
		if hasLockingClause(st.node) {
			// The table locks that stand for the rows' (rowlocks.go).
			node, err := s.lockRows(ctx, st.node, r.tables)
			if err != nil {
				return nil, err
			}
			if st.text, err = deparse(s.p.pgVersion, node); err != nil {
				return nil, err
			}
			st.node = node
			n = node.Node.(*pg_query.Node_SelectStmt)
		}
		text, sel, catalog := st.text, n.SelectStmt, []string(nil)
		rewritten, used, err := s.rewriteSession(st.node)
		if err != nil {
			return nil, err
		}
		if rewritten != nil {
			if text, err = deparse(s.p.pgVersion, rewritten); err != nil {
				return nil, err
			}
			sel, catalog = rewritten.GetSelectStmt(), used
		}
		res, err := s.queryCatalog(ctx, text, r.tables, sel, "SELECT", catalog)
		if err != nil && retryInexact(err, text) {
			if rewritten, used, err = s.rewriteSessionExact(st.node, false); err != nil {
				return nil, err
			}
			text, sel, catalog = st.text, n.SelectStmt, nil
			if rewritten != nil {
				if text, err = deparse(s.p.pgVersion, rewritten); err != nil {
					return nil, err
				}
				sel, catalog = rewritten.GetSelectStmt(), used
			}
			res, err = s.queryCatalog(ctx, text, r.tables, sel, "SELECT", catalog)
		}
		if err == nil && sel != n.SelectStmt {
			// Named as written: the rewrite turns version() into a
			// constant and format_type() into an engine macro.
			nameColumns(res.Columns, n.SelectStmt)
		}
		if err == nil {
			if err = s.padCharacters(res.Columns, n.SelectStmt); err != nil && res.Rows != nil {
				res.Rows.Close()
			}
		}
		if err == nil && emptySelectList(n.SelectStmt) && len(res.Columns) == 1 {
			res.Columns, res.Rows = []Column{}, noColumns{res.Rows}
		}
		return res, err
	case *pg_query.Node_ExplainStmt:
		return s.explain(ctx, st, n.ExplainStmt)
	case *pg_query.Node_InsertStmt:
		return s.insert(ctx, n.InsertStmt)
	case *pg_query.Node_CreateStmt:
		return s.createTable(ctx, n.CreateStmt)
	case *pg_query.Node_CreateSeqStmt:
		if s.tx != nil {
			return nil, sqlerr.New(sqlerr.ActiveSQLTransaction, "CREATE SEQUENCE cannot run inside a transaction block")
		}
		return s.createSequence(ctx, n.CreateSeqStmt)
	case *pg_query.Node_ViewStmt:
		return s.createView(ctx, n.ViewStmt)
	case *pg_query.Node_CreateFunctionStmt:
		return s.createFunction(ctx, n.CreateFunctionStmt)
	case *pg_query.Node_IndexStmt:
		return s.createIndex(ctx, n.IndexStmt)
	case *pg_query.Node_AlterTableStmt:
		return s.alterTable(ctx, n.AlterTableStmt)
	case *pg_query.Node_DropStmt:
		return s.drop(ctx, n.DropStmt)
	case *pg_query.Node_CheckPointStmt:
		if err := s.p.store.Checkpoint(ctx); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
		return &Result{Tag: "CHECKPOINT"}, nil
	case *pg_query.Node_VacuumStmt:
		return s.vacuum(ctx, n.VacuumStmt)
	case *pg_query.Node_VariableSetStmt:
		return s.set(ctx, n.VariableSetStmt)
	case *pg_query.Node_VariableShowStmt:
		return s.show(n.VariableShowStmt.Name)
	case *pg_query.Node_DeleteStmt:
		return s.dml(ctx, st.node)
	case *pg_query.Node_UpdateStmt:
		return s.dml(ctx, st.node)
	case *pg_query.Node_TruncateStmt:
		return s.truncate(ctx, n.TruncateStmt)
	case *pg_query.Node_CopyStmt:
		return s.copy(ctx, n.CopyStmt)
	case *pg_query.Node_CreateRoleStmt, *pg_query.Node_AlterRoleStmt, *pg_query.Node_DropRoleStmt, *pg_query.Node_GrantRoleStmt,
		*pg_query.Node_GrantStmt:
		return s.role(st.node)
	case *pg_query.Node_DeclareCursorStmt:
		return s.declareCursor(ctx, n.DeclareCursorStmt)
	case *pg_query.Node_PrepareStmt:
		return s.prepareSQL(ctx, n.PrepareStmt)
	case *pg_query.Node_ExecuteStmt:
		return &Result{Execute: &ExecuteRequest{Name: n.ExecuteStmt.Name, args: n.ExecuteStmt.Params}}, nil
	case *pg_query.Node_DeallocateStmt:
		if n.DeallocateStmt.Isall {
			return &Result{Tag: "DEALLOCATE ALL", Deallocate: &DeallocateRequest{All: true}}, nil
		}
		return &Result{Tag: "DEALLOCATE", Deallocate: &DeallocateRequest{Name: n.DeallocateStmt.Name}}, nil
	case *pg_query.Node_DiscardStmt:
		return s.discard(ctx, n.DiscardStmt)
	case *pg_query.Node_LoadStmt:
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "LOAD is not allowed")
	case *pg_query.Node_CreateTableAsStmt:
		return s.createTableAs(ctx, n.CreateTableAsStmt)
	}
	tag := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", st.node.Node), "*pg_query.Node_"), "Stmt")
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "statement %s is not supported", tag)
}

// checkQueryText refuses a query that is not text, as PostgreSQL does
// when it receives one: its literals would otherwise reach the tables.
func checkQueryText(query string) error {
	if err := schema.CheckText(query); err != nil {
		return &sqlerr.Error{Code: sqlerr.CharacterNotInRepertoire, Message: err.Error(), Err: err}
	}
	return nil
}

// query runs a row-returning statement over bound views.
func (s *Session) query(ctx context.Context, text string, tables []string, sel *pg_query.SelectStmt, tag string) (*Result, error) {
	return s.queryCatalog(ctx, text, tables, sel, tag, nil)
}

// queryCatalog is query with catalog views bound as well.
func (s *Session) queryCatalog(ctx context.Context, text string, tables []string, sel *pg_query.SelectStmt, tag string, catalog []string) (*Result, error) {
	var root proto.Message
	var opts bindOptions
	if sel != nil {
		root = sel
		if lk, ok := s.lastPerKey(sel); ok {
			opts.last = &lk
		}
	}
	b, err := s.bindOpts(ctx, tables, root, opts)
	if err != nil {
		return nil, err
	}
	if err := s.bindCatalog(ctx, catalog); err != nil {
		b.done()
		return nil, err
	}
	rows, cols, err := s.run(ctx, text, b.done)
	if err != nil && b.hasBuffered() && s.p.engine.opts.TempDir != "" && sqlerr.Code(engineError(err)) == sqlerr.OutOfMemory {
		// DuckDB's hash aggregation over a UNION ALL one of whose inputs
		// is small (the buffered rows beside the files) does not go out
		// of core: it failed to allocate where the same aggregation over
		// the files alone spills and finishes. Run it once more over views
		// that read the snapshot's buffered rows from a Parquet file.
		s.p.metrics.spillRetries.Inc()
		b.done()
		if b, err = s.bindWith(ctx, tables, root, true); err != nil {
			return nil, err
		}
		if err := s.bindCatalog(ctx, catalog); err != nil {
			b.done()
			return nil, err
		}
		rows, cols, err = s.run(ctx, text, b.done)
	}
	if err != nil {
		b.done()
		return nil, dialect.RaisedIn(engineError(err), text)
	}
	nameColumns(cols, sel)
	if err := checkRecords(cols); err != nil {
		rows.Close()
		return nil, err
	}
	rows = withStructs(rows, cols)
	return &Result{Tag: tag, Columns: cols, Rows: rows}, nil
}
