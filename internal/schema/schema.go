// Package schema describes tsdb tables: their columns, the designated time
// column and how each column type maps to PostgreSQL, Arrow, DuckDB and Delta.
// It is shared by the planner, ingest, membuffer and delta packages so that a
// type has one definition everywhere.
package schema

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

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

// Column is one column of a table.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
	// MaxLength is varchar(n)'s or character(n)'s n, in characters, or
	// bit(n)'s or bit varying(n)'s, in bits; 0 is none.
	MaxLength int
	// Padded marks a character(n) column (a Text column; MaxLength is
	// its n). Its values are stored without trailing spaces, which mean
	// nothing to character(n) in PostgreSQL (length, comparison, a cast
	// to text all ignore them), and shown padded with spaces to n
	// characters, as PostgreSQL shows them.
	Padded bool
	// FracDigits is timestamp(p)'s p plus one (so that the zero value
	// keeps microseconds): the digits of a second a value keeps.
	FracDigits int
	// Digits and Scale are numeric(p, s)'s p and s (Decimal columns).
	Digits, Scale int
	// NTZ: a timestamp (without time zone) column stored as its wall
	// clock, a Delta timestamp_ntz (Parquet isAdjustedToUTC=false), as
	// every table created since tsdb writes them. Without it (tables
	// created before) the wall clock is stored as if it were a UTC
	// instant, a Delta timestamp, which other readers shift by their
	// session's zone.
	NTZ bool
	// Physical is the column's name in data files and file statistics
	// under Delta column mapping (mode name); empty: its Name. FieldID
	// is its Delta column id then (0 without mapping). See FileName.
	Physical string
	FieldID  int
}

// FileName is the name the column has in data files and in their
// statistics: its physical name under column mapping, else its name.
func (c Column) FileName() string {
	if c.Physical != "" {
		return c.Physical
	}
	return c.Name
}

// NeedsColumnMapping reports whether a column name needs Delta column
// mapping: Spark refuses, in a table without it, a field name with one
// of these characters (Parquet and Delta's own schema take any name).
func NeedsColumnMapping(name string) bool {
	return strings.ContainsAny(name, " ,;{}()\n\t=")
}

// StoredAsInstant reports whether the column's values are stored as UTC
// instants (Arrow timestamp with zone UTC): timestamptz columns, and
// timestamp columns of tables created before NTZ.
func (c Column) StoredAsInstant() bool {
	return c.Type == Timestamptz || (c.Type == Timestamp && !c.NTZ)
}

// DuckDBType is the column's type in the engine: DECIMAL(p,s) for a
// numeric column, the type's name otherwise.
func (c Column) DuckDBType() string {
	if c.Type == Decimal {
		return fmt.Sprintf("DECIMAL(%d,%d)", c.Digits, c.Scale)
	}
	return c.Type.DuckDB()
}

// ArrowType is the column's Arrow type.
func (c Column) ArrowType() arrow.DataType {
	if c.Type == Decimal {
		return &arrow.Decimal128Type{Precision: int32(c.Digits), Scale: int32(c.Scale)}
	}
	if c.Type == Timestamp && c.NTZ {
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	}
	return c.Type.Arrow()
}

// DeltaType is the column's Delta type.
func (c Column) DeltaType() string {
	if c.Type == Decimal {
		return fmt.Sprintf("decimal(%d,%d)", c.Digits, c.Scale)
	}
	if c.Type == Timestamp && c.NTZ {
		return "timestamp_ntz"
	}
	return c.Type.Delta()
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

// Precision returns timestamp(p)'s p, and false for a column that keeps
// microseconds.
func (c Column) Precision() (int, bool) {
	if c.FracDigits <= 0 || c.FracDigits > 6 {
		return 0, false
	}
	return c.FracDigits - 1, true
}

// TypeText is the column's type as PostgreSQL writes it, with its
// modifier: character varying(4), timestamp(2) with time zone.
func (c Column) TypeText() string {
	switch p, ok := c.Precision(); {
	case c.Type == Text && c.MaxLength > 0 && c.Padded:
		return fmt.Sprintf("character(%d)", c.MaxLength)
	case c.Type == Text && c.MaxLength > 0:
		return fmt.Sprintf("character varying(%d)", c.MaxLength)
	case ok && c.Type == Timestamptz:
		return fmt.Sprintf("timestamp(%d) with time zone", p)
	case ok && c.Type == Timestamp:
		return fmt.Sprintf("timestamp(%d) without time zone", p)
	case c.Type == Decimal:
		return fmt.Sprintf("numeric(%d,%d)", c.Digits, c.Scale)
	case (c.Type == Bit || c.Type == VarBit) && c.MaxLength > 0:
		return fmt.Sprintf("%s(%d)", c.Type, c.MaxLength)
	}
	return c.Type.String()
}

// Table is a table's schema. TimeIndex is the position of the designated time
// column: the first column of type timestamptz or timestamp.
type Table struct {
	Name      string
	ID        string // Delta metaData.id; changes when a table is dropped and created again
	Columns   []Column
	TimeIndex int
	// Cluster names the column rows are grouped by within each hour of a
	// data file (CREATE TABLE … WITH (cluster_by = 'host')); empty means
	// the first TEXT column. See ClusterIndex.
	Cluster string
	// ViewQuery is set for a view (CREATE VIEW), which catalogs list
	// beside the tables: its query as SQL text. A view has no files.
	ViewQuery string
	// Keys are the table's PRIMARY KEY and UNIQUE constraints, which
	// every write through tsdb keeps (planner/unique.go).
	Keys []Key
	// Dedup is the identity of a point, the time column first and then
	// the columns WITH (dedup_keys = 'host,cpu') names: a row with the
	// time and the values of an earlier row in these columns (NULL
	// matching NULL) replaces it (planner/dedup.go). Empty: rows are
	// never deduplicated.
	Dedup []string
	// DedupTags says that Dedup is a line-protocol table's tag set, which
	// grows with the tags its points bring, as InfluxDB's series key
	// does.
	DedupTags bool
	// MaxColumnID is the table's delta.columnMapping.maxColumnId: the
	// highest column id given, under Delta column mapping (mode name),
	// where every column has its FieldID and Physical name. 0: the table
	// has no column mapping; its files name columns by their names.
	MaxColumnID int
}

// ColumnMapping reports whether the table uses Delta column mapping.
func (t Table) ColumnMapping() bool { return t.MaxColumnID > 0 }

// DedupColumn reports whether column name identifies the table's points.
func (t Table) DedupColumn(name string) bool {
	for _, c := range t.Dedup {
		if c == name {
			return true
		}
	}
	return false
}

// CheckDedup says whether cols can identify t's points: columns of t,
// each once, the time column first, none of a type whose equal values
// can be written differently (floats: -0 and 0; intervals: '1 day' and
// '24 hours'; timetz: one instant at two offsets), since the rows of one
// statement are told apart by their stored values; and not beside
// PRIMARY KEY or UNIQUE constraints, which refuse what dedup replaces.
func CheckDedup(t Table, cols []string) error {
	if len(cols) == 0 {
		return nil
	}
	if len(t.Keys) > 0 {
		return fmt.Errorf("table %q has a PRIMARY KEY or UNIQUE constraint, which refuses the rows dedup_keys would replace: a table takes one or the other", t.Name)
	}
	if cols[0] != t.TimeColumn().Name {
		return fmt.Errorf("dedup keys must start with the time column %q", t.TimeColumn().Name)
	}
	for i, c := range cols {
		j := t.ColumnIndex(c)
		if j < 0 {
			return fmt.Errorf("dedup key column %q of table %q does not exist", c, t.Name)
		}
		if slices.Contains(cols[:i], c) {
			return fmt.Errorf("dedup key column %q is named twice", c)
		}
		switch ty := t.Columns[j].Type; ty {
		case Float64, Float32, Interval, TimeTZ:
			return fmt.Errorf("dedup key column %q is %s, whose equal values can be written differently: it cannot identify a point", c, ty)
		}
	}
	return nil
}

// Key is a PRIMARY KEY or UNIQUE constraint: no two rows of the table
// have equal values in all of Columns. A UNIQUE key does not compare rows
// with a NULL in one of its columns (PostgreSQL's NULLS DISTINCT); a
// primary key's columns are NOT NULL.
type Key struct {
	// Name is the constraint's name (PostgreSQL's default: t_pkey,
	// t_a_b_key), which the error of a duplicate names.
	Name    string
	Columns []string
	Primary bool
}

// PrimaryKey returns the table's primary key, if it has one.
func (t Table) PrimaryKey() (Key, bool) {
	for _, k := range t.Keys {
		if k.Primary {
			return k, true
		}
	}
	return Key{}, false
}

// KeyColumn reports whether column name is in one of the table's keys.
func (t Table) KeyColumn(name string) bool {
	for _, k := range t.Keys {
		for _, c := range k.Columns {
			if c == name {
				return true
			}
		}
	}
	return false
}

// MaxNameLen is the longest name in bytes, PostgreSQL's NAMEDATALEN-1.
const MaxNameLen = 63

// ValidName reports whether name can be used for a table or column: any
// name PostgreSQL takes as a quoted identifier ("Disk-IO", "cpu.load",
// "Used %", non-ASCII), up to MaxNameLen bytes of UTF-8 without NUL.
// (PostgreSQL cuts a longer name to 63 bytes; tsdb refuses it, so that a
// line-protocol name is never stored under another.) Tables are stored
// under an encoding of their name (delta.TableDir).
func ValidName(name string) bool {
	return name != "" && len(name) <= MaxNameLen && utf8.ValidString(name) && !strings.ContainsRune(name, 0)
}

// SameName reports whether two names are the same to the engine, which
// tells names apart without regard to case even when quoted: "CPU" and
// "cpu" cannot both be tables, nor "Load" and "load" columns of one.
func SameName(a, b string) bool { return strings.EqualFold(a, b) }

// New builds a table, choosing the time column and checking the rules: at
// least one timestamp column, unique valid column names.
func New(name string, cols []Column) (Table, error) {
	if !ValidName(name) {
		return Table{}, fmt.Errorf("invalid table name %q: names are 1 to %d bytes of text", name, MaxNameLen)
	}
	if len(cols) > MaxColumns {
		return Table{}, &TooManyColumnsError{Columns: len(cols)}
	}
	t := Table{Name: name, TimeIndex: -1}
	for _, c := range cols {
		if err := CheckColumnName(c.Name); err != nil {
			return Table{}, err
		}
		for _, prev := range t.Columns {
			if SameName(prev.Name, c.Name) {
				return Table{}, &DuplicateColumnError{Column: c.Name, Other: prev.Name}
			}
		}
		if t.TimeIndex < 0 && c.Type.IsTimestamp() {
			t.TimeIndex = len(t.Columns)
			c.NotNull = true
		}
		t.Columns = append(t.Columns, c)
	}
	if t.TimeIndex < 0 {
		return Table{}, fmt.Errorf("table %q needs a time column: the first column of type timestamptz or timestamp is the table's time column", name)
	}
	return t, nil
}

// CheckColumnName refuses a column name no table may have: not a valid
// name, or one tsdb's views of a table use (in any case, as the engine
// reads names).
func CheckColumnName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("invalid column name %q: names are 1 to %d bytes of text", name, MaxNameLen)
	}
	if SameName(name, "_b") || len(name) >= 5 && SameName(name[:5], "_tsdb") {
		return fmt.Errorf("column name %q is reserved", name)
	}
	return nil
}

// MaxColumns is how many columns a table may have, as in PostgreSQL.
const MaxColumns = 1600

// CheckNewTableName refuses names a new table may not take: the catalog
// answers unqualified pg_ names, so a table by such a name (CREATE TABLE
// pg_class) could never be read.
func CheckNewTableName(name string) error {
	if len(name) >= 3 && SameName(name[:3], "pg_") || len(name) >= 5 && SameName(name[:5], "_tsdb") {
		return &ReservedNameError{Name: name}
	}
	return nil
}

// ReservedNameError refuses a table name the catalog's names would hide.
type ReservedNameError struct{ Name string }

func (e *ReservedNameError) Error() string {
	return fmt.Sprintf("table name %q is reserved: the prefixes \"pg_\" (the system catalog) and \"_tsdb\" (tsdb's own views) are taken", e.Name)
}

// TooManyColumnsError refuses a table wider than MaxColumns.
type TooManyColumnsError struct{ Columns int }

func (e *TooManyColumnsError) Error() string {
	return fmt.Sprintf("tables can have at most %d columns (this one would have %d)", MaxColumns, e.Columns)
}

// DuplicateColumnError reports a column named twice in CREATE TABLE.
type DuplicateColumnError struct {
	Column string
	Other  string // the column it repeats, if it differs in case
}

func (e *DuplicateColumnError) Error() string {
	if e.Other != "" && e.Other != e.Column {
		return fmt.Sprintf("column %q differs only in case from column %q: tsdb's engine does not tell such names apart", e.Column, e.Other)
	}
	return fmt.Sprintf("column %q specified more than once", e.Column)
}

// TimeColumn returns the designated time column.
func (t Table) TimeColumn() Column { return t.Columns[t.TimeIndex] }

// ClusterIndex returns the position of the table's cluster column: the
// TEXT column Cluster names, else its first TEXT column (the tag a table is
// usually filtered by, such as the host), or -1 when it has none. Within
// each hour of a data file, rows are ordered by it before time, so that
// Parquet row groups hold few of its values and readers skip the others by
// their statistics.
func (t Table) ClusterIndex() int {
	if i := t.ColumnIndex(t.Cluster); t.Cluster != "" && i >= 0 && t.Columns[i].Type == Text {
		return i
	}
	for i, c := range t.Columns {
		if c.Type == Text {
			return i
		}
	}
	return -1
}

// ColumnIndex returns the position of the named column or -1.
func (t Table) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// ArrowSchema returns the Arrow schema of the table's rows.
func (t Table) ArrowSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.ArrowType(), Nullable: !c.NotNull}
	}
	return arrow.NewSchema(fields, nil)
}

// QuoteIdent quotes an identifier for DuckDB and PostgreSQL.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// QuoteString quotes a string literal.
func QuoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// IntervalText is how an interval is stored in a Parquet file: exact, and
// what the engine's cast to INTERVAL reads.
func IntervalText(v arrow.MonthDayNanoInterval) string {
	return fmt.Sprintf("%d months %d days %d microseconds", v.Months, v.Days, v.Nanoseconds/1000)
}

// ParseIntervalText reads IntervalText.
func ParseIntervalText(s string) (arrow.MonthDayNanoInterval, error) {
	var months, days int32
	var micros int64
	if n, err := fmt.Sscanf(s, "%d months %d days %d microseconds", &months, &days, &micros); n != 3 || err != nil {
		return arrow.MonthDayNanoInterval{}, fmt.Errorf("schema: not a stored interval: %q", s)
	}
	return IntervalValue(months, days, micros)
}

// ErrIntervalRange is an interval whose time part is too long for a
// column: Arrow's month_day_nano interval counts nanoseconds in 64 bits,
// about 292 years of hours (PostgreSQL's reaches 2,562,047,788 hours).
var ErrIntervalRange = errors.New("interval out of range for a column: its hours, minutes and seconds must stay within 292 years")

// IntervalValue is an interval of months, days and microseconds as a
// column holds it.
func IntervalValue(months, days int32, micros int64) (arrow.MonthDayNanoInterval, error) {
	if micros > math.MaxInt64/1000 || micros < math.MinInt64/1000 {
		return arrow.MonthDayNanoInterval{}, ErrIntervalRange
	}
	return arrow.MonthDayNanoInterval{Months: months, Days: days, Nanoseconds: micros * 1000}, nil
}

// TimeText is how a time (withZone false) or timetz value is held:
// HH:MM:SS.ffffff, and for timetz the offset as +HH:MM:SS, which keep
// their order as text for a time and which the engine's casts read.
// micros is the time since midnight (up to 24:00:00), east the offset in
// seconds east of UTC.
func TimeText(micros int64, east int, withZone bool) string {
	sec := micros / 1_000_000
	s := fmt.Sprintf("%02d:%02d:%02d.%06d", sec/3600, sec/60%60, sec%60, micros%1_000_000)
	if !withZone {
		return s
	}
	sign := '+'
	if east < 0 {
		sign, east = '-', -east
	}
	return s + fmt.Sprintf("%c%02d:%02d:%02d", sign, east/3600, east/60%60, east%60)
}

// CheckTimeText reports whether s is TimeText: every write path makes it
// so, and the store refuses anything else, which the engine's cast would
// fail on when the table is read.
func CheckTimeText(s string, withZone bool) error {
	if !validTimeText(s, withZone) {
		return fmt.Errorf("not a stored time of day: %q", s)
	}
	return nil
}

// validTimeText is CheckTimeText's test, which every value written to a
// time column passes: it builds no error for a good one. A time without
// zone stops before 24:00 (every writer refuses that, 0A000); a timetz
// reaches it.
func validTimeText(s string, withZone bool) bool {
	n := 15
	if withZone {
		n = 24
	}
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		switch i {
		case 2, 5, 18, 21:
			if c != ':' {
				return false
			}
		case 8:
			if c != '.' {
				return false
			}
		case 15:
			if c != '+' && c != '-' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	hh, mm, ss := atoi2(s[0:2]), atoi2(s[3:5]), atoi2(s[6:8])
	if mm > 59 || ss > 59 || hh > 24 || hh == 24 && (!withZone || s[3:15] != "00:00.000000") {
		return false
	}
	// PostgreSQL's offsets reach ±15:59:59.
	return !withZone || atoi2(s[16:18]) <= 15 && atoi2(s[19:21]) <= 59 && atoi2(s[22:24]) <= 59
}

func atoi2(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }
