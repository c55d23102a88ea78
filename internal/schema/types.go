package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is a column type tsdb can store.
type Type int

// The column types tsdb stores. Both timestamp kinds are stored as UTC
// microseconds (Delta `timestamp`); Timestamp (without time zone) keeps its
// wall-clock value as if it were UTC.
const (
	Invalid Type = iota
	Timestamptz
	Timestamp
	Int64
	Int32
	Int16
	Float64
	Float32
	Bool
	Text
	// Date is a calendar date, days since 1970 (Delta `date`).
	Date
	// Decimal is numeric(p, s) with p ≤ 38 (Delta `decimal(p,s)`, Arrow
	// decimal128): the column's Column.Digits and Column.Scale.
	Decimal
	// Bytea is a byte string (Delta `binary`, Arrow binary).
	Bytea
	// Interval is PostgreSQL's interval: months, days and microseconds,
	// kept apart (Arrow month_day_nano in memory). Delta has no interval
	// type: files hold it as a `string`, "M months D days U microseconds"
	// (IntervalText), exact and read back by the engine's cast.
	Interval
	// Time is PostgreSQL's time (without time zone), 00:00:00 to
	// 24:00:00; TimeTZ is its time with time zone, a time of day and a UTC
	// offset. Delta and Arrow have no such types (Parquet's TIME keeps no
	// offset, and Delta readers refuse it): both are held as text in a
	// fixed form the engine's cast reads back, TimeText.
	Time
	TimeTZ
	// Bit and VarBit are PostgreSQL's bit(n) and bit varying(n): a
	// string of bits, n its column's MaxLength (bit(n) holds exactly n,
	// bit varying(n) at most n; 0 is no limit). Arrow and Delta hold it
	// as text of '0' and '1' (Delta has no bit string), the engine as
	// its BIT, which reads that text back.
	Bit
	VarBit
)

// MaxDecimalDigits is the widest numeric(p, s) a column takes: the
// engine's and Delta's widest decimal.
const MaxDecimalDigits = 38

// TimestampArrowType is the Arrow type of every timestamp column.
var timestampArrowType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// typeInfo holds every name of a type in one place.
type typeInfo struct {
	pgName  string // PostgreSQL's canonical name as information_schema shows it
	udtName string // PostgreSQL's internal name (pg_type.typname)
	oid     uint32
	duckdb  string
	delta   string
}

var typeInfos = map[Type]typeInfo{
	Timestamptz: {"timestamp with time zone", "timestamptz", 1184, "TIMESTAMPTZ", "timestamp"},
	Timestamp:   {"timestamp without time zone", "timestamp", 1114, "TIMESTAMP", "timestamp"},
	Int64:       {"bigint", "int8", 20, "BIGINT", "long"},
	Int32:       {"integer", "int4", 23, "INTEGER", "integer"},
	Int16:       {"smallint", "int2", 21, "SMALLINT", "short"},
	Float64:     {"double precision", "float8", 701, "DOUBLE", "double"},
	Float32:     {"real", "float4", 700, "FLOAT", "float"},
	Bool:        {"boolean", "bool", 16, "BOOLEAN", "boolean"},
	Text:        {"text", "text", 25, "VARCHAR", "string"},
	Date:        {"date", "date", 1082, "DATE", "date"},
	Decimal:     {"numeric", "numeric", 1700, "DECIMAL", "decimal"},
	Bytea:       {"bytea", "bytea", 17, "BLOB", "binary"},
	Interval:    {"interval", "interval", 1186, "INTERVAL", "string"},
	Time:        {"time without time zone", "time", 1083, "TIME", "string"},
	TimeTZ:      {"time with time zone", "timetz", 1266, "TIMETZ", "string"},
	Bit:         {"bit", "bit", 1560, "BIT", "string"},
	VarBit:      {"bit varying", "varbit", 1562, "BIT", "string"},
}

// typeAliases maps the names a user may write in CREATE TABLE to a Type.
var typeAliases = map[string]Type{
	"timestamptz": Timestamptz, "timestamp with time zone": Timestamptz,
	"timestamp": Timestamp, "timestamp without time zone": Timestamp,
	"bigint": Int64, "int8": Int64,
	"integer": Int32, "int": Int32, "int4": Int32,
	"smallint": Int16, "int2": Int16,
	"double precision": Float64, "float8": Float64, "double": Float64, "float": Float64,
	"real": Float32, "float4": Float32,
	"boolean": Bool, "bool": Bool,
	"date": Date, "numeric": Decimal, "decimal": Decimal, "bytea": Bytea, "interval": Interval,
	"time": Time, "time without time zone": Time, "timetz": TimeTZ, "time with time zone": TimeTZ,
	"text": Text, "varchar": Text, "character varying": Text, "string": Text,
	"bit": Bit, "bit varying": VarBit, "varbit": VarBit,
}

// ParseType resolves a type name as written in SQL (case-insensitive,
// modifiers such as varchar(20) ignored).
func ParseType(name string) (Type, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = strings.TrimSpace(n[:i])
	}
	n = strings.TrimPrefix(n, "pg_catalog.")
	if t, ok := typeAliases[n]; ok {
		return t, nil
	}
	return Invalid, fmt.Errorf("type %q is not supported (supported: timestamptz, timestamp, bigint, integer, smallint, double precision, real, boolean, text, date, numeric(p, s), bytea, interval, time, timetz, bit(n), bit varying(n))", name)
}

// duckdbAliases are the other names DuckDB prints for the types, in
// messages such as cast errors.
var duckdbAliases = map[string]Type{
	"TIMESTAMP WITH TIME ZONE": Timestamptz, "TIME WITH TIME ZONE": TimeTZ, "INT64": Int64, "INT32": Int32, "INT16": Int16,
	"FLOAT8": Float64, "REAL": Float32, "FLOAT4": Float32, "BOOL": Bool, "STRING": Text,
}

// FromDuckDB resolves a type name as DuckDB prints it (DOUBLE, INT64, …).
func FromDuckDB(name string) (Type, bool) {
	if name == "BIT" {
		return Bit, true // VarBit's too: bit is PostgreSQL's name for it
	}
	for t, info := range typeInfos {
		if info.duckdb == name {
			return t, true
		}
	}
	t, ok := duckdbAliases[name]
	return t, ok
}

// String returns PostgreSQL's canonical name of the type.
func (t Type) String() string { return typeInfos[t].pgName }

// UDTName returns PostgreSQL's internal type name (e.g. "timestamptz").
func (t Type) UDTName() string { return typeInfos[t].udtName }

// OID returns the PostgreSQL type OID.
func (t Type) OID() uint32 { return typeInfos[t].oid }

// DuckDB returns the DuckDB type name used in queries and casts.
func (t Type) DuckDB() string { return typeInfos[t].duckdb }

// Delta returns the Delta Lake primitive type name.
func (t Type) Delta() string { return typeInfos[t].delta }

// IsTimestamp reports whether the type can be a table's time column.
func (t Type) IsTimestamp() bool { return t == Timestamptz || t == Timestamp }

// IsDateTime reports whether t is a date or time type, whose text
// PostgreSQL's date and time input reads.
func (t Type) IsDateTime() bool {
	switch t {
	case Timestamptz, Timestamp, Date, Interval, Time, TimeTZ:
		return true
	}
	return false
}

// IsInteger reports whether t is one of the integer types.
func (t Type) IsInteger() bool { return t == Int16 || t == Int32 || t == Int64 }

// Arrow returns the Arrow type the MemBuffer and Parquet files use; nil
// for Decimal, whose type is its column's (Column.ArrowType).
func (t Type) Arrow() arrow.DataType {
	switch t {
	case Timestamptz, Timestamp:
		return timestampArrowType
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Int16:
		return arrow.PrimitiveTypes.Int16
	case Float64:
		return arrow.PrimitiveTypes.Float64
	case Float32:
		return arrow.PrimitiveTypes.Float32
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case Text:
		return arrow.BinaryTypes.String
	case Date:
		return arrow.FixedWidthTypes.Date32
	case Bytea:
		return arrow.BinaryTypes.Binary
	case Interval:
		return arrow.FixedWidthTypes.MonthDayNanoInterval
	case Time, TimeTZ:
		return arrow.BinaryTypes.String // TimeText
	case Bit, VarBit:
		return arrow.BinaryTypes.String // '0' and '1'
	}
	return nil
}

// TypeFromUDTName resolves the internal name stored in Delta column metadata.
func TypeFromUDTName(udt string) (Type, bool) {
	for t, info := range typeInfos {
		if info.udtName == udt {
			return t, true
		}
	}
	return Invalid, false
}

// CheckDecimal checks numeric(p, s)'s modifiers as PostgreSQL does, within
// the widest decimal tsdb stores.
func CheckDecimal(p, s int) error {
	switch {
	case p < 1:
		return fmt.Errorf("NUMERIC precision %d must be between 1 and 1000", p)
	case p > MaxDecimalDigits:
		return fmt.Errorf("numeric(%d, %d): columns take at most %d digits", p, s, MaxDecimalDigits)
	case s < 0 || s > p:
		return fmt.Errorf("numeric(%d, %d): the scale must be between 0 and the precision", p, s)
	}
	return nil
}
