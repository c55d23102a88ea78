package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

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
