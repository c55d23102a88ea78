// Package schema describes tsdb tables: their columns, the designated time
// column and how each column type maps to PostgreSQL, Arrow, DuckDB and Delta.
// It is shared by the planner, ingest, membuffer and delta packages so that a
// type has one definition everywhere.
//
// schema.go holds tables (their columns, keys, point identity and names),
// types.go the column types and their names in each system, column.go a
// column and its modifiers, storedtext.go the text forms files hold for
// intervals and times of day; decimal.go, bits.go, text.go and pgtime.go
// the values of one type each.
package schema

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

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

// SameNames reports whether t and o name their columns alike, in SQL and
// in data files (column mapping): another writer's RENAME COLUMN changes
// them without changing the columns' number.
func (t Table) SameNames(o Table) bool {
	return t.MaxColumnID == o.MaxColumnID && slices.EqualFunc(t.Columns, o.Columns, func(x, y Column) bool {
		return x.Name == y.Name && x.FileName() == y.FileName() && x.FieldID == y.FieldID
	})
}

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
