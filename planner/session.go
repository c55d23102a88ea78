package planner

import (
	"context"
	"database/sql"
	"fmt"

	bindings "github.com/duckdb/duckdb-go-bindings"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/views"
)

// Session is one client's state: its DuckDB connection and settings. A
// session runs one statement at a time.
type Session struct {
	p    *Planner
	user string
	// temps are the session's temporary tables (temptables.go).
	temps map[string][]schema.Column
	// seqs are the session's temporary sequences (sequences.go).
	seqs map[string]bool
	conn *sql.Conn
	// raw is conn's C handle, for results read as chunks; the session
	// holds conn, so nothing else uses it.
	raw      bindings.Connection
	settings *dialect.Settings
	// engineZone is the TimeZone conn computes in, engineWorkMem its
	// operator_memory_limit (syncEngine).
	engineZone    string
	engineWorkMem int64
	// tx is the transaction block, from BEGIN to COMMIT or ROLLBACK
	// (txn.go).
	tx *txn
	// noFastAgg turns the direct paths off (fastagg.go, newestanswer.go),
	// for tests that compare them with the engine's answers.
	noFastAgg bool
	// views are the temporary views on conn by name, as last created.
	// A view is made again only when its definition changes: creating
	// one binds it (for a table view, every file's Parquet footer), and
	// that was a third of a short query's time. Dashboards repeat queries
	// over unchanged files and batches, so most statements find their
	// views as they need them.
	views map[string]sessionView
	// plans are prepared SELECTs by text, kept while every view stays as
	// it was and the session runs nothing but queries: a repeated short
	// query then skips DuckDB's parse, bind and optimize, which took
	// longer than running it.
	plans map[string]*plan
	// described are result columns by statement text and the shapes of
	// the tables it reads: clients that do not keep prepared statements
	// (the unnamed statement, lib/pq with parameters) send Parse, and so
	// a DESCRIBE that costs as much as the query, on every execution.
	described map[string][]Column
	// tempViews are the session's CREATE TEMP VIEWs, by name.
	tempViews map[string]views.View
	// tempIndexes are the indexes of its temporary tables, by name.
	tempIndexes map[string]views.Index
	// cells are the last fast-path INSERT's cell arrays, for the next.
	cells [][]literal
	// beforeEngine is called before a statement runs on conn (see
	// OnEngine).
	beforeEngine func(context.Context)
	// slot is the heavy-statement slot the running statement holds, if
	// it is heavy (see admit).
	slot *heavySlot
	// pid is the session's process ID (BackendKeyData, pg_backend_pid).
	pid uint32
}

// SetProcessID tells the session the process ID clients know it by.
func (s *Session) SetProcessID(pid uint32) { s.pid = pid }

// OnEngine sets fn to be called before the session runs a statement on
// its DuckDB connection: every statement but FETCH, MOVE, CLOSE and
// transaction control, and every Prepare. DuckDB runs one statement per connection at a time, so a
// result the wire layer still streams from the connection (a cursor, a
// portal read with a row limit) must be read into memory then.
// fn gets the statement's context: its cancel or timeout should stop that
// reading too.
func (s *Session) OnEngine(fn func(context.Context)) { s.beforeEngine = fn }

func (s *Session) useEngine(ctx context.Context) error {
	if s.beforeEngine != nil {
		s.beforeEngine(ctx)
	}
	return s.syncEngine(ctx)
}

// NewSession opens a session of user with its own DuckDB connection.
func (p *Planner) NewSession(ctx context.Context, user string) (*Session, error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("planner: open engine connection: %w", err)
	}
	raw, err := driverConnection(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	settings := dialect.NewSettings()
	settings.SetSessionDefault("work_mem", dialect.FormatMemory(p.engine.opts.StatementMemoryLimit))
	return &Session{p: p, user: user, conn: conn, raw: raw, settings: settings, engineZone: pooledZone, engineWorkMem: p.engine.opts.StatementMemoryLimit, views: map[string]sessionView{}, plans: map[string]*plan{}, described: map[string][]Column{}}, nil
}

// Close drops the session's views and releases its engine connection,
// which goes back to the pool: the next user of the connection must not
// find views of tables that may be gone by then.
func (s *Session) Close() error {
	ctx := context.Background()
	// A connection that ends inside a block discards it.
	s.rollbackTx(ctx)
	s.dropPlans()
	s.closeTemps(ctx)
	for name := range s.views {
		s.conn.ExecContext(ctx, "DROP VIEW IF EXISTS temp.main."+schema.QuoteIdent(name))
	}
	clear(s.views)
	return s.p.releaseConn(ctx, s.conn, s.engineZone, s.engineWorkMem)
}

// Settings returns the session's settings (SET/SHOW).
func (s *Session) Settings() *dialect.Settings { return s.settings }
