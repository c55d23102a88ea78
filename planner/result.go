package planner

import (
	"database/sql"
	"fmt"
	"strings"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
)

// Column describes one result column the PostgreSQL way.
type Column struct {
	Name string
	// OID is the PostgreSQL type OID of the column's values.
	OID uint32
	// Size is pg_type.typlen (-1 for variable length).
	Size int16
	// exact marks an aggregate the planner answers from exact sums
	// (exactagg.go).
	exact exactKind
	// record is the shape of a row value (records.go).
	record *recordShape
	// Pad is character(n)'s n for a column of character(n) values (OID
	// bpchar): stored without trailing spaces, they are written padded
	// with spaces to n characters, as PostgreSQL shows them (charcols.go).
	Pad int
	// digits and scale are the engine's DECIMAL(digits, scale) of a
	// numeric column (38 and 0 for its 128-bit integer); 0 digits when
	// unknown.
	digits, scale int
}

// Rows is a stream of result rows. Values are Go values as DuckDB returns
// them (time.Time, int64, float64, string, bool, []byte, duckdb.Decimal,
// duckdb.Interval, *big.Int, []any, map[string]any) or nil for NULL.
type Rows interface {
	Next() bool
	Values() []any
	Err() error
	// Close releases the rows; it must be called exactly once.
	Close() error
}

// Result is the outcome of one statement.
type Result struct {
	// Tag is the command tag. For row-returning statements it is "SELECT"
	// (or "SHOW", "EXPLAIN") and the wire layer appends the row count where
	// PostgreSQL does.
	Tag string
	// Columns and Rows are set for statements that return rows.
	Columns []Column
	Rows    Rows
	// Empty marks an empty query (EmptyQueryResponse).
	Empty bool
	// Warning, when set, goes to the client as a WARNING notice before
	// the command completes; Notice as a NOTICE.
	Warning *sqlerr.Error
	Notice  *sqlerr.Error
	// CopyIn and CopyOut start the COPY sub-protocol.
	CopyIn  *CopyIn
	CopyOut *CopyOut
	// Cursor, Fetch and CloseCursor are DECLARE, FETCH or MOVE, and CLOSE
	// (see cursor.go).
	Cursor      *CursorDecl
	Fetch       *CursorFetch
	CloseCursor *CursorClose
	// Prepare, Execute and Deallocate are PREPARE, EXECUTE and
	// DEALLOCATE (sqlprepare.go), whose statements the session executor
	// keeps; Discard is DISCARD ALL, which also closes its portals and
	// cursors.
	Prepare    *PrepareRequest
	Execute    *ExecuteRequest
	Deallocate *DeallocateRequest
	Discard    bool
}

// NewStaticRows returns Rows over values held in memory.
func NewStaticRows(rows [][]any) Rows { return &staticRows{rows: rows, i: -1} }

type staticRows struct {
	rows [][]any
	i    int
}

func (s *staticRows) Next() bool    { s.i++; return s.i < len(s.rows) }
func (s *staticRows) Values() []any { return s.rows[s.i] }
func (s *staticRows) Err() error    { return nil }
func (s *staticRows) Close() error  { return nil }

// sqlRows streams rows of a DuckDB query and runs cleanup when closed.
type sqlRows struct {
	rows    *sql.Rows
	vals    []any
	ptrs    []any
	err     error
	cleanup func()
	// scrub turns an error into what the client is told (clientError).
	scrub  func(error) error
	closed bool
}

func newSQLRows(rows *sql.Rows, ncols int, cleanup func()) *sqlRows {
	r := &sqlRows{rows: rows, vals: make([]any, ncols), ptrs: make([]any, ncols), cleanup: cleanup}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	return r
}

func (r *sqlRows) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = err
		return false
	}
	return true
}

func (r *sqlRows) Values() []any { return r.vals }

func (r *sqlRows) Err() error {
	err := r.err
	if err == nil {
		err = r.rows.Err()
	}
	if err != nil && r.scrub != nil {
		return r.scrub(err)
	}
	return engineError(err)
}

func (r *sqlRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	if r.cleanup != nil {
		r.cleanup()
	}
	return err
}

// ArrayElement returns the element type of an array type columnFor gives,
// or 0 for a type that is no such array.
func ArrayElement(oid uint32) uint32 { return dialect.ArrayElement(oid) }

// columnFor maps a DuckDB result type name to a PostgreSQL column. A list
// of a scalar type, or of lists of one, is that type's array (int8[],
// text[], …), which drivers scan into slices; a list of records stays
// text.
// oidRecord is PostgreSQL's record: a row value (SELECT t FROM t, ROW(…)).
const oidRecord = 2249

func columnFor(name, duckType string) Column {
	t := strings.ToUpper(duckType)
	if elemType, ok := strings.CutSuffix(t, "[]"); ok {
		// A list of lists of a scalar type is a multidimensional array,
		// which PostgreSQL types as the one-dimensional one (date[] for
		// date[][]); its elements are written as their type's.
		for strings.HasSuffix(elemType, "[]") {
			elemType = strings.TrimSuffix(elemType, "[]")
		}
		nested := strings.Contains(elemType, "[") || strings.HasPrefix(elemType, "STRUCT") || strings.HasPrefix(elemType, "MAP") || strings.HasPrefix(elemType, "UNION")
		if !nested {
			elem := columnFor(name, elemType)
			// text is also what unknown types fall back to: only VARCHAR
			// lists are text[].
			if arr, known := dialect.ArrayOf(elem.OID); known && (elem.OID != 25 || elemType == "VARCHAR") {
				return Column{Name: name, OID: arr, Size: -1}
			}
		}
		return Column{Name: name, OID: 25, Size: -1}
	}
	if i := strings.IndexByte(t, '('); i >= 0 && !strings.Contains(t, "[") {
		t = t[:i]
	}
	switch t {
	case "BOOLEAN":
		return Column{Name: name, OID: 16, Size: 1}
	case "TINYINT", "SMALLINT", "UTINYINT":
		return Column{Name: name, OID: 21, Size: 2}
	case "INTEGER", "USMALLINT":
		return Column{Name: name, OID: 23, Size: 4}
	case "BIGINT", "UINTEGER":
		return Column{Name: name, OID: 20, Size: 8}
	case "DECIMAL":
		c := Column{Name: name, OID: 1700, Size: -1}
		fmt.Sscanf(strings.TrimPrefix(duckType, "DECIMAL"), "(%d,%d)", &c.digits, &c.scale)
		return c
	case "HUGEINT":
		return Column{Name: name, OID: 1700, Size: -1, digits: 38}
	case "UBIGINT", "UHUGEINT", "BIGNUM", "VARINT":
		return Column{Name: name, OID: 1700, Size: -1}
	case "FLOAT", "REAL":
		return Column{Name: name, OID: 700, Size: 4}
	case "DOUBLE":
		return Column{Name: name, OID: 701, Size: 8}
	case "DATE":
		return Column{Name: name, OID: 1082, Size: 4}
	case "TIME":
		return Column{Name: name, OID: 1083, Size: 8}
	case "TIMETZ", "TIME WITH TIME ZONE":
		return Column{Name: name, OID: 1266, Size: 12}
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS":
		return Column{Name: name, OID: 1114, Size: 8}
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return Column{Name: name, OID: 1184, Size: 8}
	case "INTERVAL":
		return Column{Name: name, OID: 1186, Size: 16}
	case "UUID":
		return Column{Name: name, OID: 2950, Size: 16}
	case "BLOB":
		return Column{Name: name, OID: 17, Size: -1}
	case "BIT":
		// bit and bit varying are one type to the engine: bit, as
		// bit_and and the columns of bit(n) are.
		return Column{Name: name, OID: 1560, Size: -1}
	case "JSON":
		return Column{Name: name, OID: 114, Size: -1}
	case "STRUCT":
		if c, ok := exactColumn(name, duckType); ok {
			return c
		}
		return Column{Name: name, OID: oidRecord, Size: -1, record: parseRecordShape(duckType)}
	}
	return Column{Name: name, OID: 25, Size: -1}
}

// noColumns are rows without the placeholder column.
type noColumns struct{ Rows }

// Values returns no values.
func (r noColumns) Values() []any { return []any{} }
