package planner

// Results of the common column types are read straight from DuckDB's
// chunks through its C API, streamed as DuckDB produces them. Through
// database/sql every cell became a Go value (a string copied out of C, a
// boxed float, a time.Time), and the whole result was materialized before
// the first row could go out: for a 45,000-row result of 21 columns that
// was half of the server's CPU, and the client could not start decoding
// until DuckDB had finished.

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"tsdb/dialect"
	"tsdb/internal/pgtext"
	"tsdb/internal/sqlerr"
)

// Kind is how a Vector stores its values.
type Kind uint8

// The kinds of column a Chunk holds. Each is one DuckDB type.
const (
	KindBool        Kind = iota + 1 // BOOLEAN, one byte
	KindInt8                        // TINYINT
	KindInt16                       // SMALLINT
	KindInt32                       // INTEGER
	KindInt64                       // BIGINT
	KindFloat32                     // FLOAT
	KindFloat64                     // DOUBLE
	KindString                      // VARCHAR (not JSON)
	KindTimestamp                   // TIMESTAMP, microseconds since 1970
	KindTimestampTZ                 // TIMESTAMPTZ, microseconds since 1970
	KindHugeInt                     // HUGEINT (sums of integers), 128 bits
	KindDate                        // DATE, days since 1970
	// KindJSON is JSON (a VARCHAR the engine marks JSON) as the text the
	// engine wrote: read raw, never decoded and written again, so that
	// its keys keep their order, and its integers their digits, as
	// PostgreSQL's json keeps them (pgtext.JSONText).
	KindJSON
)

// kindOf returns the Kind of a DuckDB type, or 0 for types only the
// database/sql path reads (DECIMAL, LIST, INTERVAL, ...).
func kindOf(t bindings.Type, alias string) Kind {
	if alias == "JSON" && t == bindings.TypeVarchar {
		return KindJSON
	}
	if alias != "" {
		return 0
	}
	switch t {
	case bindings.TypeBoolean:
		return KindBool
	case bindings.TypeTinyInt:
		return KindInt8
	case bindings.TypeSmallInt:
		return KindInt16
	case bindings.TypeInteger:
		return KindInt32
	case bindings.TypeBigInt:
		return KindInt64
	case bindings.TypeFloat:
		return KindFloat32
	case bindings.TypeDouble:
		return KindFloat64
	case bindings.TypeVarchar:
		return KindString
	case bindings.TypeTimestamp:
		return KindTimestamp
	case bindings.TypeTimestampTZ:
		return KindTimestampTZ
	case bindings.TypeHugeInt:
		return KindHugeInt
	case bindings.TypeDate:
		return KindDate
	}
	return 0
}

// typeName is the DuckDB type name of a kind, as columnFor reads it.
func (k Kind) typeName() string {
	return [...]string{KindBool: "BOOLEAN", KindInt8: "TINYINT", KindInt16: "SMALLINT", KindInt32: "INTEGER",
		KindInt64: "BIGINT", KindFloat32: "FLOAT", KindFloat64: "DOUBLE", KindString: "VARCHAR",
		KindTimestamp: "TIMESTAMP", KindTimestampTZ: "TIMESTAMPTZ", KindHugeInt: "HUGEINT", KindDate: "DATE", KindJSON: "JSON"}[k]
}

// Vector is one column of a Chunk, in DuckDB's memory. Its accessors take
// a row index below the chunk's length and read the kind's own accessor
// only (Float64 of a KindFloat64 vector, ...).
type Vector struct {
	kind  Kind
	data  unsafe.Pointer
	valid *uint64 // DuckDB's validity mask; nil when no row is NULL
}

// Kind returns how the vector stores its values.
func (v *Vector) Kind() Kind { return v.kind }

// Null reports whether the value of row is SQL NULL.
func (v *Vector) Null(row int) bool {
	if v.valid == nil {
		return false
	}
	word := *(*uint64)(unsafe.Add(unsafe.Pointer(v.valid), row/64*8))
	return word&(1<<(row%64)) == 0
}

// Bool is the value of a KindBool row.
func (v *Vector) Bool(row int) bool { return *(*byte)(unsafe.Add(v.data, row)) != 0 }

// Int64 is the value of a row of an integer kind, a timestamp kind
// (microseconds since 1970) or KindDate (days since 1970).
func (v *Vector) Int64(row int) int64 {
	switch v.kind {
	case KindInt8:
		return int64(*(*int8)(unsafe.Add(v.data, row)))
	case KindInt16:
		return int64(*(*int16)(unsafe.Add(v.data, row*2)))
	case KindInt32, KindDate:
		return int64(*(*int32)(unsafe.Add(v.data, row*4)))
	}
	return *(*int64)(unsafe.Add(v.data, row*8))
}

// Int128 is the value of a KindHugeInt row: its low 64 bits and its high
// 64 bits, signed (duckdb_hugeint).
func (v *Vector) Int128(row int) (lo uint64, hi int64) {
	p := unsafe.Add(v.data, row*16)
	return *(*uint64)(p), *(*int64)(unsafe.Add(p, 8))
}

// Float64 is the value of a KindFloat64 row, or a KindFloat32 row widened.
func (v *Vector) Float64(row int) float64 {
	if v.kind == KindFloat32 {
		return float64(*(*float32)(unsafe.Add(v.data, row*4)))
	}
	return *(*float64)(unsafe.Add(v.data, row*8))
}

// Bytes is the value of a KindString row. It points into DuckDB's memory
// and is valid only until the chunk is released: copy it to keep it.
func (v *Vector) Bytes(row int) []byte {
	// duckdb_string_t (duckdb.h): a uint32 length, then up to 12 bytes
	// inline, or, for a longer string, a 4-byte prefix and a pointer.
	s := unsafe.Add(v.data, row*16)
	n := *(*uint32)(s)
	if n == 0 {
		return []byte{}
	}
	if n <= 12 {
		return unsafe.Slice((*byte)(unsafe.Add(s, 4)), n)
	}
	return unsafe.Slice(*(**byte)(unsafe.Add(s, 8)), n)
}

// Time is the value of a timestamp or date row, as duckdb-go's driver
// returns it.
func (v *Vector) Time(row int) time.Time {
	if v.kind == KindDate {
		return time.Unix(v.Int64(row)*86400, 0).UTC()
	}
	return time.UnixMicro(v.Int64(row)).UTC()
}

// Value is the row's value as a Go value, the one the database/sql path
// returns (nil for NULL).
func (v *Vector) Value(row int) any {
	if v.Null(row) {
		return nil
	}
	switch v.kind {
	case KindBool:
		return v.Bool(row)
	case KindInt8:
		return int8(v.Int64(row))
	case KindInt16:
		return int16(v.Int64(row))
	case KindInt32:
		return int32(v.Int64(row))
	case KindInt64:
		return v.Int64(row)
	case KindFloat32:
		return float32(v.Float64(row))
	case KindFloat64:
		return v.Float64(row)
	case KindString:
		return string(v.Bytes(row))
	case KindJSON:
		return pgtext.JSONText(bytes.Clone(v.Bytes(row)))
	case KindHugeInt:
		lo, hi := v.Int128(row)
		n := big.NewInt(hi)
		return n.Lsh(n, 64).Add(n, new(big.Int).SetUint64(lo))
	}
	return v.Time(row)
}

// Chunk is a run of result rows held column by column in DuckDB's memory.
type Chunk struct {
	n    int
	cols []Vector
}

// Len is the number of rows.
func (c *Chunk) Len() int { return c.n }

// Columns is the number of columns.
func (c *Chunk) Columns() int { return len(c.cols) }

// Column returns column i.
func (c *Chunk) Column(i int) *Vector { return &c.cols[i] }

// ChunkRows is Rows that can also be read a chunk at a time, without a Go
// value per cell. A reader uses either NextChunk or Next and Values, not
// both.
type ChunkRows interface {
	Rows
	// NextChunk returns the next chunk, valid until the next call to
	// NextChunk or Close; false at the end or on error (see Err).
	NextChunk() (*Chunk, bool)
}

// chunkRows streams the result of a prepared statement run through the C
// API. The session's connection runs nothing else until it is closed.
type chunkRows struct {
	ctx     context.Context // the statement's, checked before each fetch
	pending bindings.PendingResult
	// scrub turns an error into what the client is told (clientError).
	scrub func(error) error
	// prefetched: cur is the first chunk, fetched by runChunks and not
	// yet handed out.
	prefetched bool
	res        bindings.Result    // zero until executed; destroying it is then a no-op
	raw        bindings.DataChunk // the chunk cur reads, to destroy
	cur        Chunk
	row        int // Next's position in cur
	vals       []any
	err        error
	done       bool          // the result is exhausted, failed or closed
	stop       func() bool   // stops the interrupt on cancel
	fired      chan struct{} // closed once an interrupt has been sent
	cleanup    func()
	closed     bool
}

// errStalePlan reports a result whose columns are not those its plan was
// prepared with.
var errStalePlan = errors.New("planner: the result's columns differ from its prepared plan's")

// runChunks executes a prepared statement whose result columns all have
// kinds and streams its result.
func runChunks(ctx context.Context, s *Session, stmt bindings.PreparedStatement, kinds []Kind) (*chunkRows, error) {
	conn := s.raw
	r := &chunkRows{ctx: ctx, cur: Chunk{cols: make([]Vector, len(kinds))}, row: -1, fired: make(chan struct{})}
	for i, k := range kinds {
		r.cur.cols[i].kind = k
	}
	// Making the pending result builds the physical plan, which DuckDB
	// cannot interrupt (engineCall).
	pending, err := engineCall(ctx, s, func() (bindings.PendingResult, error) {
		var pr bindings.PendingResult
		if bindings.PendingPreparedStreaming(stmt, &pr) == bindings.StateError {
			msg := bindings.PendingError(pr)
			bindings.DestroyPending(&pr)
			return pr, duckError(msg, dialect.ErrorTypeOf(msg))
		}
		return pr, nil
	}, func(pr bindings.PendingResult) { bindings.DestroyPending(&pr) })
	if err != nil {
		r.Close()
		return nil, err
	}
	r.pending = pending
	// Canceling the statement interrupts DuckDB, whether it is still
	// executing or streaming. Registered only now: DuckDB clears an
	// interrupt as a statement starts, and AfterFunc runs at once for a
	// context already done. Close waits for an interrupt under way, so
	// that it cannot reach the session's next statement.
	r.stop = context.AfterFunc(ctx, func() {
		bindings.Interrupt(conn)
		close(r.fired)
	})
	if bindings.ExecutePending(r.pending, &r.res) == bindings.StateError {
		err := r.resultError()
		if err == nil {
			err = errors.New("planner: DuckDB failed the statement without a message")
		}
		r.Close()
		return nil, err
	}
	// DuckDB rebinds a prepared statement when the catalog changed; its
	// vectors are read by the plan's kinds, so they must still be those.
	if int(bindings.ColumnCount(&r.res)) != len(kinds) {
		r.Close()
		return nil, errStalePlan
	}
	for i, k := range kinds {
		if got := kindOf(bindings.ColumnType(&r.res, bindings.IdxT(i)), ""); got != k && !(k == KindJSON && got == KindString) {
			r.Close()
			return nil, errStalePlan
		}
	}
	// The first chunk is fetched here: a streaming result computes a
	// blocking operator (an aggregation, a sort) as it is first read, and
	// an error there is the statement's, which the caller may still
	// answer or retry (queryCatalog's retry of an aggregation that ran
	// out of memory) before anything was sent.
	if _, ok := r.NextChunk(); !ok && r.err != nil {
		err := r.err
		r.Close()
		return nil, err
	}
	r.prefetched = !r.done
	return r, nil
}

// checkJSON fails (22P02) when a JSON value of c is no JSON, which the
// engine's input takes ('[1,2,]'::json) and PostgreSQL's refuses, or
// holds NaN (pgtext.JSONText): before any of its rows is written.
func (c *Chunk) checkJSON() error {
	var scratch []byte
	for i := range c.cols {
		v := &c.cols[i]
		if v.kind != KindJSON {
			continue
		}
		for row := range c.n {
			if v.Null(row) {
				continue
			}
			var err error
			if scratch, err = pgtext.AppendJSON(scratch[:0], v.Bytes(row), 1); err != nil {
				e := sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type json")
				if errors.Is(err, pgtext.ErrJSONNonFinite) {
					e.Detail = `The value holds NaN or Infinity, which PostgreSQL's json input refuses. (PostgreSQL's to_json writes such a double as a string, "NaN": tsdb cannot tell the two apart in the engine's text; write the double as text first.)`
				}
				return e
			}
		}
	}
	return nil
}

// duckError is the error the driver makes of a DuckDB message.
func duckError(msg string, t duckdb.ErrorType) error {
	return &duckdb.Error{Type: t, Msg: msg}
}

func (r *chunkRows) resultError() error {
	msg := bindings.ResultError(&r.res)
	if msg == "" {
		return nil
	}
	return duckError(msg, duckdb.ErrorType(bindings.ResultErrorType(&r.res)))
}

// NextChunk implements ChunkRows.
func (r *chunkRows) NextChunk() (*Chunk, bool) {
	if r.prefetched {
		r.prefetched = false
		return &r.cur, true
	}
	if r.done {
		return nil, false
	}
	bindings.DestroyDataChunk(&r.raw)
	if err := r.ctx.Err(); err != nil {
		r.done, r.err = true, err
		return nil, false
	}
	for {
		r.raw = bindings.FetchChunk(r.res)
		if r.raw.Ptr == nil {
			r.done, r.err = true, r.resultError()
			return nil, false
		}
		n := int(bindings.DataChunkGetSize(r.raw))
		if n == 0 {
			bindings.DestroyDataChunk(&r.raw)
			continue
		}
		r.cur.n = n
		for i := range r.cur.cols {
			vec := bindings.DataChunkGetVector(r.raw, bindings.IdxT(i))
			r.cur.cols[i].data = bindings.VectorGetData(vec)
			r.cur.cols[i].valid = (*uint64)(bindings.VectorGetValidity(vec))
		}
		if err := r.cur.checkJSON(); err != nil {
			r.done, r.err = true, err
			return nil, false
		}
		return &r.cur, true
	}
}

// Next implements Rows.
func (r *chunkRows) Next() bool {
	r.prefetched = false // the rows of cur are read here
	r.row++
	if r.row < r.cur.n && !r.done {
		return true
	}
	if _, ok := r.NextChunk(); !ok {
		return false
	}
	r.row = 0
	return true
}

// Values implements Rows: the current row as Go values.
func (r *chunkRows) Values() []any {
	if r.vals == nil {
		r.vals = make([]any, len(r.cur.cols))
	}
	for i := range r.cur.cols {
		r.vals[i] = r.cur.cols[i].Value(r.row)
	}
	return r.vals
}

// Err implements Rows.
func (r *chunkRows) Err() error {
	if r.err != nil && r.scrub != nil {
		return r.scrub(r.err)
	}
	return engineError(r.err)
}

// Close implements Rows.
func (r *chunkRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed, r.done = true, true
	bindings.DestroyDataChunk(&r.raw)
	bindings.DestroyResult(&r.res)
	// The pending result lives until the stream is done: destroying it
	// earlier may abort the statement (duckdb.h).
	bindings.DestroyPending(&r.pending)
	if r.stop != nil && !r.stop() {
		<-r.fired
	}
	if r.cleanup != nil {
		r.cleanup()
	}
	return nil
}
