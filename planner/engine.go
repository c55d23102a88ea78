package planner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	duckdb "github.com/duckdb/duckdb-go/v2"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/prometheus/client_golang/prometheus"

	"tsdb/dialect"
	"tsdb/internal/backend"
	"tsdb/internal/schema"
)

// EngineOptions configure the embedded DuckDB.
type EngineOptions struct {
	// TablesDir is the only directory DuckDB may read (the Delta tables).
	TablesDir string
	// Threads for DuckDB; zero keeps DuckDB's default (all cores).
	Threads int
	// MemoryLimit for DuckDB in bytes; zero keeps DuckDB's default.
	MemoryLimit int64
	// StatementMemoryLimit is the memory one statement's sorts, hash tables
	// and joins may hold before they spill to TempDir (DuckDB's
	// operator_memory_limit, like PostgreSQL's work_mem). Zero means no
	// limit below MemoryLimit.
	StatementMemoryLimit int64
	// TempDir is where statements spill; it is emptied at start. Empty
	// keeps DuckDB's default (".tmp" in the working directory).
	TempDir string
	// Connections is how many engine connections exist; they are opened
	// at start. Zero means 64.
	Connections int
	// ReaperTimeout frees the engine's copy of a table's buffer after this
	// long without buffered rows and queries. Zero means five minutes.
	ReaperTimeout time.Duration
	// Limits bound what one statement may ask of the parser and engine.
	Limits Limits
	// Registerer receives the planner's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Backends lists the server's sessions (pg_cancel_backend,
	// pg_terminate_backend); the wire layer must be given the same.
	Backends *backend.Registry
}

// openEngine opens an in-memory DuckDB and locks it down before any client
// statement can reach it: file access only below TablesDir and no external
// access (settings DuckDB refuses to loosen while it runs), PostgreSQL
// integer division, UTC.
func openEngine(ctx context.Context, opts EngineOptions) (*sql.DB, error) {
	// operator_memory_limit is a per-connection setting that cannot be set
	// globally, so every connection gets it as it opens. So do the
	// PostgreSQL semantics, some of which are per connection too
	// (integer_division is), and the footer cache.
	perConn := []string{
		"SET integer_division = true",
		// PostgreSQL sorts NULL as larger than every value: last going
		// up, first going down. DuckDB's default puts it last both ways,
		// so ORDER BY x DESC LIMIT n read the wrong top rows.
		"SET default_null_order = 'nulls_last_on_asc_first_on_desc'",
		"SET TimeZone = 'UTC'",
		// Data files are immutable (every write gets a new name), so their
		// footers can be cached across queries instead of re-read by each.
		// The setting is per connection: set once, it held on one
		// connection of the pool, and a one-host query took twice as long
		// on all others.
		"SET parquet_metadata_cache = true",
	}
	if opts.StatementMemoryLimit > 0 {
		perConn = append(perConn, fmt.Sprintf("SET operator_memory_limit = '%dB'", opts.StatementMemoryLimit))
	}
	connector, err := duckdb.NewConnector("", func(e driver.ExecerContext) error {
		for _, q := range perConn {
			if _, err := e.ExecContext(context.WithoutCancel(ctx), q, nil); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("planner: open duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	n := opts.Connections
	if n <= 0 {
		n = 64
	}
	// A fixed pool: past n, callers wait for a connection instead of
	// opening one the locked configuration would refuse to set up.
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	setup := append([]string{
		"CREATE SCHEMA " + mirrorSchema,
		"SET preserve_insertion_order = true",
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
	}, dialect.Macros...)
	if opts.Threads > 0 {
		setup = append(setup, fmt.Sprintf("SET threads = %d", opts.Threads))
	}
	if opts.MemoryLimit > 0 {
		setup = append(setup, fmt.Sprintf("SET memory_limit = '%dB'", opts.MemoryLimit))
	}
	if opts.TempDir != "" {
		if err := os.RemoveAll(opts.TempDir); err != nil {
			db.Close()
			return nil, fmt.Errorf("planner: clear engine temp dir: %w", err)
		}
		if err := os.MkdirAll(opts.TempDir, 0o700); err != nil {
			db.Close()
			return nil, fmt.Errorf("planner: engine temp dir: %w", err)
		}
		setup = append(setup, "SET temp_directory = "+schema.QuoteString(opts.TempDir))
	}
	allowed := schema.QuoteString(opts.TablesDir + "/")
	if opts.TempDir != "" {
		// Buffered rows a statement reads from Parquet (see
		// bound.spillBuffered) are written there.
		allowed += ", " + schema.QuoteString(filepath.Join(opts.TempDir, bufferedDir)+"/")
	}
	setup = append(setup,
		fmt.Sprintf("SET allowed_directories = [%s]", allowed),
		"SET enable_external_access = false",
	)
	// The Go functions first: macros that call them bind to them when
	// they are made.
	if err := registerFunctions(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("planner: register engine functions: %w", err)
	}
	for _, q := range setup {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("planner: configure duckdb (%s): %w", q, err)
		}
	}
	// Open the whole pool now, so that a failure to set a connection up
	// shows at startup.
	//
	// The configuration is not locked (lock_configuration): a session's
	// TimeZone must reach its connection (see Session.syncZone), and DuckDB's
	// lock refuses every SET, its TimeZone included. Client SQL cannot reach
	// a setting: PostgreSQL's SET is tsdb's own (dialect.Settings), DuckDB's
	// dialect runs only as one SELECT (duckdbRefs), and every other
	// statement is deparsed from PostgreSQL's tree.
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("planner: open engine connection: %w", err)
		}
		conns = append(conns, c)
	}
	return db, nil
}

// rawConnection returns the C connection handle behind a duckdb-go
// connection. duckdb-go does not expose it, but the bulk Arrow→DataChunk
// conversion of duckdb-go-bindings needs it (see DESIGN.md, Known traps: the
// public RegisterView path reads wrong buffers under projection pushdown).
// The field is read by name so that a duckdb-go change fails loudly in the
// planner's tests instead of corrupting memory.
func rawConnection(c *duckdb.Conn) (bindings.Connection, error) {
	v := reflect.ValueOf(c).Elem().FieldByName("conn")
	if !v.IsValid() || v.Type() != reflect.TypeFor[bindings.Connection]() {
		return bindings.Connection{}, fmt.Errorf("planner: duckdb-go's Conn has no field conn of type bindings.Connection")
	}
	return *(*bindings.Connection)(unsafe.Pointer(v.UnsafeAddr())), nil
}

// driverConnection returns the C connection handle behind a pooled
// connection.
func driverConnection(ctx context.Context, conn *sql.Conn) (bindings.Connection, error) {
	var raw bindings.Connection
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("planner: unexpected driver connection %T", dc)
		}
		var err error
		raw, err = rawConnection(c)
		return err
	})
	return raw, err
}

// Engine is the embedded, sandboxed DuckDB that answers queries. Storage
// does not use it: the server opens the store first.
type Engine struct {
	db     *sql.DB
	opts   EngineOptions
	logger *slog.Logger
	// pgVersion is the parse tree version of libpg_query, needed to deparse
	// trees tsdb builds.
	pgVersion int32
	// layouts are the columns of data files read by name (layout.go).
	layouts layoutCache
}

// NewEngine opens DuckDB and locks it down.
func NewEngine(ctx context.Context, opts EngineOptions, logger *slog.Logger) (*Engine, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tree, err := pg_query.Parse("SELECT 1")
	if err != nil {
		return nil, fmt.Errorf("planner: sql parser: %w", err)
	}
	db, err := openEngine(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The allocator is the process's, shared by every engine: setting it
	// again is harmless. A failure costs speed, not answers.
	if ok, err := setAllocatorDecay(engineAllocatorDecay); err != nil {
		logger.Warn("engine allocator decay not set", "err", err)
	} else if !ok {
		logger.Debug("engine allocator is not jemalloc; decay left as built")
	}
	return &Engine{db: db, opts: opts, logger: logger, pgVersion: tree.Version}, nil
}

// Close closes DuckDB; the planner using it must be closed first.
func (e *Engine) Close() error { return e.db.Close() }
