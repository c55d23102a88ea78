package planner

import (
	"fmt"
	"strings"

	"tsdb/internal/pgtext"
	"tsdb/internal/sqlerr"
)

// The engine returns two kinds of values as structs, which the driver
// hands over as maps without their field order: the exact aggregates
// (exactagg.go) and row values (PostgreSQL's record: SELECT t FROM t,
// ROW(1, 'a'), a subquery's alias). withStructs turns both into what the
// wire layer writes.

// Record is a row value: its fields in order, each with its type OID. A
// field that is itself a row value is a Record. The wire layer writes it
// as PostgreSQL does, "(1,abc,)" in text.
type Record = pgtext.Record

// recordShape is the field order and types of a row value column, from
// the engine's STRUCT(…) type.
type recordShape struct {
	names []string
	oids  []uint32
	subs  []*recordShape // of fields that are row values
	// scaled names a numeric field of a fixed scale (DECIMAL(p,s), s > 0):
	// PostgreSQL prints each numeric value with its own scale, which a
	// field of the union of 3 and 6.0 does not keep (3.0, not 3).
	scaled string
}

// parseRecordShape reads STRUCT(a T, …).
func parseRecordShape(duckType string) *recordShape {
	fields := structFields(duckType)
	sh := &recordShape{names: make([]string, len(fields)), oids: make([]uint32, len(fields)), subs: make([]*recordShape, len(fields))}
	for i, f := range fields {
		c := columnFor(f[0], f[1])
		sh.names[i], sh.oids[i], sh.subs[i] = f[0], c.OID, c.record
		var p, sc int
		if n, _ := fmt.Sscanf(strings.ToUpper(f[1]), "DECIMAL(%d,%d)", &p, &sc); n == 2 && sc > 0 && (p != 38 || sc != 10) && sh.scaled == "" {
			sh.scaled = f[0]
		}
		if c.record != nil && c.record.scaled != "" && sh.scaled == "" {
			sh.scaled = c.record.scaled
		}
	}
	return sh
}

// value turns the driver's map of a struct into a Record.
func (sh *recordShape) value(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("planner: row value holds %T", v)
	}
	r := Record{Fields: make([]any, len(sh.names)), OIDs: sh.oids}
	for i, name := range sh.names {
		f := m[name]
		if sh.subs[i] != nil && f != nil {
			var err error
			if f, err = sh.subs[i].value(f); err != nil {
				return nil, err
			}
		}
		r.Fields[i] = f
	}
	return r, nil
}

// structRows turns the structs of exact aggregates and row values into
// their values.
type structRows struct {
	Rows
	cols []Column
	out  []any
	err  error
}

// withStructs wraps rows that have such columns.
func withStructs(rows Rows, cols []Column) Rows {
	for _, c := range cols {
		if c.exact != exactNone || c.record != nil {
			return &structRows{Rows: rows, cols: cols}
		}
	}
	return rows
}

func (r *structRows) Next() bool {
	if r.err != nil || !r.Rows.Next() {
		return false
	}
	r.out = append(r.out[:0], r.Rows.Values()...)
	for i, c := range r.cols {
		if r.out[i] == nil {
			continue
		}
		var v any
		var err error
		switch {
		case c.exact != exactNone:
			v, err = exactValue(c.exact, r.out[i])
		case c.record != nil:
			v, err = c.record.value(r.out[i])
		default:
			continue
		}
		if err != nil {
			r.err = err
			return false
		}
		r.out[i] = v
	}
	return true
}

func (r *structRows) Values() []any { return r.out }

func (r *structRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Err()
}

// checkRecords refuses a result with a row value whose numeric fields
// would print with the column's scale instead of each value's own.
func checkRecords(cols []Column) error {
	for _, c := range cols {
		if c.record != nil && c.record.scaled != "" {
			return sqlerr.New(sqlerr.FeatureNotSupported, "row value %q has a numeric field of a fixed scale, which PostgreSQL would print with each value's own scale: select its fields instead", c.Name)
		}
	}
	return nil
}
