package planner

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	duckdb "github.com/duckdb/duckdb-go/v2"

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
	// ReaperTimeout frees the engine's copy of a table's buffer after this
	// long without buffered rows and queries. Zero means five minutes.
	ReaperTimeout time.Duration
}

// openEngine opens an in-memory DuckDB and locks it down before any client
// statement can reach it: file access only below TablesDir, no external
// access, PostgreSQL integer division, UTC, and a locked configuration so
// that no statement can change a setting afterwards.
func openEngine(ctx context.Context, opts EngineOptions) (*sql.DB, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("planner: open duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	setup := append([]string{
		"CREATE SCHEMA " + mirrorSchema,
		"SET integer_division = true",
		"SET TimeZone = 'UTC'",
		"SET preserve_insertion_order = true",
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
	}, append(engineMacros, pgMacros...)...)
	if opts.Threads > 0 {
		setup = append(setup, fmt.Sprintf("SET threads = %d", opts.Threads))
	}
	if opts.MemoryLimit > 0 {
		setup = append(setup, fmt.Sprintf("SET memory_limit = '%dB'", opts.MemoryLimit))
	}
	setup = append(setup,
		fmt.Sprintf("SET allowed_directories = [%s]", schema.QuoteString(opts.TablesDir+"/")),
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	)
	for _, q := range setup {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("planner: configure duckdb (%s): %w", q, err)
		}
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
