// Package viewdef writes a view's query as PostgreSQL 15's
// pg_get_viewdef writes it: PostgreSQL keeps a view as its analysed parse
// tree and prints it back, every column qualified by its relation, every
// output column named, the coercions its analysis inserted shown as
// casts, the constants typed, and the lines broken and indented its way.
// tsdb keeps the view's text; this package analyses it as far as it can
// do so exactly (the types of columns, constants, operators and the
// functions views use most) and refuses the rest (ErrUnsupported), so
// that a client never reads a definition PostgreSQL would not give.
package viewdef

import (
	"errors"
	"fmt"
)

// Type is a PostgreSQL type: its OID and type modifier (-1 for none).
type Type struct {
	OID uint32
	Mod int32
}

// The types the analysis knows.
const (
	OIDBool        = 16
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDFloat4      = 700
	OIDFloat8      = 701
	oidUnknown     = 705
	OIDDate        = 1082
	OIDTimestamp   = 1114
	OIDTimestamptz = 1184
	OIDInterval    = 1186
	OIDNumeric     = 1700
)

func typ(oid uint32) Type { return Type{OID: oid, Mod: -1} }

var (
	tBool        = typ(OIDBool)
	tInt2        = typ(OIDInt2)
	tInt4        = typ(OIDInt4)
	tInt8        = typ(OIDInt8)
	tText        = typ(OIDText)
	tFloat4      = typ(OIDFloat4)
	tFloat8      = typ(OIDFloat8)
	tUnknown     = typ(oidUnknown)
	tDate        = typ(OIDDate)
	tTimestamp   = typ(OIDTimestamp)
	tTimestamptz = typ(OIDTimestamptz)
	tInterval    = typ(OIDInterval)
	tNumeric     = typ(OIDNumeric)
)

// typeNames are format_type's names of the known types.
var typeNames = map[uint32]string{
	OIDBool: "boolean", OIDInt8: "bigint", OIDInt2: "smallint", OIDInt4: "integer", OIDText: "text",
	OIDFloat4: "real", OIDFloat8: "double precision", OIDDate: "date",
	OIDTimestamp: "timestamp without time zone", OIDTimestamptz: "timestamp with time zone",
	OIDInterval: "interval", OIDNumeric: "numeric",
}

// known reports whether the analysis can compute with values of t.
func (t Type) known() bool {
	_, ok := typeNames[t.OID]
	return ok && (t.Mod == -1 || t.OID == OIDNumeric)
}

// String is the type as format_type_with_typemod writes it.
func (t Type) String() string {
	name := typeNames[t.OID]
	if t.OID == OIDNumeric && t.Mod >= 4 {
		m := t.Mod - 4
		return fmt.Sprintf("numeric(%d,%d)", m>>16&0xffff, m&0xffff)
	}
	return name
}

func isInt(t Type) bool   { return t.OID == OIDInt2 || t.OID == OIDInt4 || t.OID == OIDInt8 }
func isFloat(t Type) bool { return t.OID == OIDFloat4 || t.OID == OIDFloat8 }
func isNumber(t Type) bool {
	return isInt(t) || isFloat(t) || t.OID == OIDNumeric
}

func isDateTime(t Type) bool {
	return t.OID == OIDDate || t.OID == OIDTimestamp || t.OID == OIDTimestamptz
}

// numberRank orders the number types as PostgreSQL's implicit casts do:
// each converts implicitly to those after it, double precision (the
// preferred type) to none.
func numberRank(t Type) int {
	switch t.OID {
	case OIDInt2:
		return 1
	case OIDInt4:
		return 2
	case OIDInt8:
		return 3
	case OIDNumeric:
		return 4
	case OIDFloat4:
		return 5
	case OIDFloat8:
		return 6
	}
	return 0
}

// intRank orders the integer types by width.
func intRank(t Type) int {
	switch t.OID {
	case OIDInt2:
		return 1
	case OIDInt4:
		return 2
	}
	return 3
}

// Column is a column of a relation a view reads.
type Column struct {
	Name string
	Type Type
}

// ErrUnsupported is the error of a view whose definition the analysis
// cannot write as PostgreSQL would.
var ErrUnsupported = errors.New("not supported")

// unsupported says what the analysis met that it cannot write.
type unsupported struct{ what string }

func (e *unsupported) Error() string { return e.what + " is not supported" }
func (e *unsupported) Unwrap() error { return ErrUnsupported }

func refuse(format string, args ...any) error {
	return &unsupported{what: fmt.Sprintf(format, args...)}
}
