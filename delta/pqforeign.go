package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"tsdb/internal/schema"
)

// Other writers' files (Spark, delta-rs, chDB) hold the table's columns by
// name, in any order, with columns the table lacks, without columns added
// after them, and in the encodings the Delta protocol allows for each
// type: timestamps as INT96 or as INT64 of milli-, micro- or nanoseconds,
// integers narrower than the column, strings without the UTF8 annotation,
// decimals of a wider precision. ReadFileByName reads such a file as the
// table's rows with parquet-go, converting each value exactly as the
// engine's views read the file (planner/layout.go): a timestamp's number
// of microseconds, whatever its zone flag; an INT64 timestamp's
// nanoseconds rounded half away from zero and an INT96's cut, as the
// engine reads them (planner's TestForeignFilesReadAlikeByStorageAndEngine
// holds the two readers to the same rows). What the engine would convert
// with loss or could refuse (a double into a real, a number stored as
// text, bytes read as escaped text) is refused here, so that a rewrite
// never changes a value a query showed.

// ForeignFileError says a column of another writer's data file cannot be
// read as the table's column without changing a value: an encoding the
// conversion refuses, a value out of the column's range, a NULL in a NOT
// NULL column. It is not damage; the file stays as it is.
type ForeignFileError struct {
	Path   string // the data file, relative to the table
	Column string // the table's column
	Err    error
}

func (e *ForeignFileError) Error() string {
	return fmt.Sprintf("delta: %s: column %s: %v", e.Path, e.Column, e.Err)
}

// Unwrap returns the cause.
func (e *ForeignFileError) Unwrap() error { return e.Err }

// ReadFileByName reads data file path of table t, whatever its writer, as
// one record of the table's columns (NULL for those the file lacks),
// without the rows in deleted (by position, as a deletion vector names
// them).
func ReadFileByName(ctx context.Context, store Store, t schema.Table, path string, deleted RowSet) (arrow.RecordBatch, error) {
	if err := store.Fetch(ctx, path); err != nil {
		return nil, err
	}
	local, err := os.Open(store.LocalPath(path))
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	defer local.Close()
	f, err := openParquet(local, path)
	if err != nil {
		return nil, err
	}
	// leaf[i] is the file's column of table column i, -1 if it has none.
	leaf := make([]int, len(t.Columns))
	convs := make([]valueConv, len(t.Columns))
	for i, c := range t.Columns {
		leaf[i] = -1
		lc, ok, err := lookupColumn(f.Schema(), c.FileName())
		if err != nil {
			return nil, &ForeignFileError{Path: path, Column: c.Name, Err: err}
		}
		if !ok {
			if c.NotNull {
				return nil, &ForeignFileError{Path: path, Column: c.Name, Err: errors.New("the file has no such column, which the table requires")}
			}
			continue
		}
		if lc.Node == nil || !lc.Node.Leaf() || lc.MaxRepetitionLevel > 0 || len(lc.Path) != 1 {
			return nil, &ForeignFileError{Path: path, Column: c.Name, Err: errors.New("not a flat column")}
		}
		conv, err := foreignConv(c, lc.Node.Type())
		if err != nil {
			return nil, &ForeignFileError{Path: path, Column: c.Name, Err: err}
		}
		leaf[i], convs[i] = lc.ColumnIndex, conv
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.ArrowSchema())
	defer b.Release()
	buf := make([]parquet.Value, 4096)
	var base int64 // position of the row group's first row in the file
	for _, rg := range f.RowGroups() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := rg.NumRows()
		chunks := rg.ColumnChunks()
		for i, c := range t.Columns {
			fb := b.Field(i)
			if leaf[i] < 0 {
				for r := int64(0); r < n; r++ {
					if !deleted.Contains(uint64(base + r)) {
						fb.AppendNull()
					}
				}
				continue
			}
			row := base
			pages := chunks[leaf[i]].Pages()
			err := func() error {
				defer pages.Close()
				for row < base+n {
					p, err := pages.ReadPage()
					if err != nil {
						if errors.Is(err, io.EOF) {
							return fmt.Errorf("%d values missing", base+n-row)
						}
						return err
					}
					vals := p.Values()
					for {
						k, rerr := vals.ReadValues(buf)
						for _, v := range buf[:k] {
							if !deleted.Contains(uint64(row)) {
								if v.IsNull() {
									if c.NotNull {
										parquet.Release(p)
										return &ForeignFileError{Path: path, Column: c.Name, Err: fmt.Errorf("a NULL in row %d, which the table's column refuses", row)}
									}
									fb.AppendNull()
								} else if err := convs[i](fb, v); err != nil {
									parquet.Release(p)
									return &ForeignFileError{Path: path, Column: c.Name, Err: fmt.Errorf("row %d: %w", row, err)}
								}
							}
							row++
						}
						if errors.Is(rerr, io.EOF) {
							break
						}
						if rerr != nil {
							parquet.Release(p)
							return rerr
						}
					}
					parquet.Release(p)
				}
				if row != base+n {
					return fmt.Errorf("%d values for a row group of %d rows", row-base, n)
				}
				return nil
			}()
			var fe *ForeignFileError
			if errors.As(err, &fe) {
				return nil, err
			}
			if err != nil {
				return nil, fmt.Errorf("delta: read %s: column %s: %w", path, c.Name, err)
			}
		}
		base += n
	}
	return b.NewRecordBatch(), nil
}

// lookupColumn finds the top-level column name of a file's schema: by the
// exact name, else ignoring case (Spark's names are case-insensitive), as
// the views match them. Two columns whose names differ only in case are
// refused: the engine renames one of them, and which one the views read
// is not for storage to guess.
func lookupColumn(s *parquet.Schema, name string) (parquet.LeafColumn, bool, error) {
	var match string
	n := 0
	for _, f := range s.Fields() {
		if strings.EqualFold(f.Name(), name) {
			match = f.Name()
			n++
		}
	}
	switch n {
	case 0:
		return parquet.LeafColumn{}, false, nil
	case 1:
	default:
		return parquet.LeafColumn{}, false, fmt.Errorf("%d columns named %q but for case", n, name)
	}
	lc, ok := s.Lookup(match)
	if !ok {
		// A group: no leaf of that path.
		return parquet.LeafColumn{Path: []string{match}}, true, nil
	}
	return lc, true, nil
}

// valueConv appends a non-NULL file value to a column's builder.
type valueConv func(b array.Builder, v parquet.Value) error

// foreignConv returns how a file column of type typ is read into column
// c, or an error when the file's type is not one the Delta protocol gives
// c's type (or one read without loss).
func foreignConv(c schema.Column, typ parquet.Type) (valueConv, error) {
	kind := typ.Kind()
	var logical format.LogicalTypeValue
	if lt := typ.LogicalType(); lt != nil {
		logical = lt.Value
	}
	var converted deprecated.ConvertedType = -1
	if ct := typ.ConvertedType(); ct != nil {
		converted = *ct
	}
	refuse := func() (valueConv, error) {
		return nil, fmt.Errorf("stored as %s, which tsdb does not read as the table's %s", typ, c.Type)
	}
	// An integer's width and sign, from its annotation (none: the
	// physical type's, signed).
	plainInt := func() (bits int, signed bool, ok bool) {
		if kind != parquet.Int32 && kind != parquet.Int64 {
			return 0, false, false
		}
		bits = 32
		if kind == parquet.Int64 {
			bits = 64
		}
		switch lt := logical.(type) {
		case nil:
		case *format.IntType:
			return int(lt.BitWidth), lt.IsSigned, true
		default:
			return 0, false, false
		}
		switch converted {
		case -1:
			return bits, true, true
		case deprecated.Int8:
			return 8, true, true
		case deprecated.Int16:
			return 16, true, true
		case deprecated.Int32:
			return 32, true, true
		case deprecated.Int64:
			return 64, true, true
		case deprecated.Uint8:
			return 8, false, true
		case deprecated.Uint16:
			return 16, false, true
		case deprecated.Uint32:
			return 32, false, true
		case deprecated.Uint64:
			return 64, false, true
		}
		return 0, false, false
	}
	intOf := func(v parquet.Value, signed bool) (int64, error) {
		if v.Kind() == parquet.Int32 {
			if signed {
				return int64(v.Int32()), nil
			}
			return int64(uint32(v.Int32())), nil
		}
		x := v.Int64()
		if !signed && x < 0 {
			return 0, fmt.Errorf("%d is out of range", uint64(x))
		}
		return x, nil
	}
	inRange := func(x, lo, hi int64) error {
		if x < lo || x > hi {
			return fmt.Errorf("%d is out of range for %s", x, c.Type)
		}
		return nil
	}
	switch c.Type {
	case schema.Timestamptz, schema.Timestamp:
		if kind == parquet.Int96 {
			return func(b array.Builder, v parquet.Value) error {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(int96Micros(v.Int96())))
				return nil
			}, nil
		}
		if kind != parquet.Int64 {
			return refuse()
		}
		var scale func(int64) (int64, bool)
		if ts, ok := logical.(*format.TimestampType); ok {
			switch ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				scale = millisToMicros
			case *format.MicroSeconds:
				scale = micros
			case *format.NanoSeconds:
				scale = nanosToMicros
			}
		} else if logical == nil && converted == deprecated.TimestampMillis {
			scale = millisToMicros
		} else if logical == nil && converted == deprecated.TimestampMicros {
			scale = micros
		}
		if scale == nil {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			x, ok := scale(v.Int64())
			if !ok {
				return fmt.Errorf("timestamp %d is out of range", v.Int64())
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(x))
			return nil
		}, nil
	case schema.Int64, schema.Int32, schema.Int16:
		_, signed, ok := plainInt()
		if !ok {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			x, err := intOf(v, signed)
			if err != nil {
				return err
			}
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(x)
			case *array.Int32Builder:
				if err := inRange(x, math.MinInt32, math.MaxInt32); err != nil {
					return err
				}
				b.Append(int32(x))
			case *array.Int16Builder:
				if err := inRange(x, math.MinInt16, math.MaxInt16); err != nil {
					return err
				}
				b.Append(int16(x))
			}
			return nil
		}, nil
	case schema.Float64:
		if kind == parquet.Double {
			return func(b array.Builder, v parquet.Value) error {
				b.(*array.Float64Builder).Append(v.Double())
				return nil
			}, nil
		}
		if kind == parquet.Float {
			return func(b array.Builder, v parquet.Value) error {
				b.(*array.Float64Builder).Append(float64(v.Float()))
				return nil
			}, nil
		}
		if _, signed, ok := plainInt(); ok {
			return func(b array.Builder, v parquet.Value) error {
				x, err := intOf(v, signed)
				if err != nil {
					return err
				}
				b.(*array.Float64Builder).Append(float64(x))
				return nil
			}, nil
		}
		return refuse()
	case schema.Float32:
		if kind != parquet.Float {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			b.(*array.Float32Builder).Append(v.Float())
			return nil
		}, nil
	case schema.Bool:
		if kind != parquet.Boolean {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			b.(*array.BooleanBuilder).Append(v.Boolean())
			return nil
		}, nil
	case schema.Date:
		_, isDate := logical.(*format.DateType)
		if kind != parquet.Int32 || !isDate && !(logical == nil && converted == deprecated.Date) {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			b.(*array.Date32Builder).Append(arrow.Date32(v.Int32()))
			return nil
		}, nil
	case schema.Decimal:
		d, isDec := logical.(*format.DecimalType)
		if !isDec || int(d.Scale) != c.Scale || kind == parquet.FixedLenByteArray && typ.Length() > 16 {
			return refuse()
		}
		limit := decimal128.GetMaxValue(int32(c.Digits))
		return func(b array.Builder, v parquet.Value) error {
			x, err := decimalOf(v)
			if err != nil {
				return err
			}
			if x.Abs().Greater(limit) {
				return fmt.Errorf("a value out of range for numeric(%d,%d)", c.Digits, c.Scale)
			}
			b.(*array.Decimal128Builder).Append(x)
			return nil
		}, nil
	case schema.Bytea:
		// Only bytes without an annotation: the engine reads an
		// annotated string as text, and its cast to bytea reads \x
		// escapes in it.
		if kind != parquet.ByteArray || logical != nil || converted != -1 {
			return refuse()
		}
		return func(b array.Builder, v parquet.Value) error {
			b.(*array.BinaryBuilder).Append(v.ByteArray())
			return nil
		}, nil
	case schema.Text, schema.Time, schema.TimeTZ, schema.Bit, schema.VarBit, schema.Interval:
		if kind != parquet.ByteArray {
			return refuse()
		}
		// Strings, with or without their annotation. Without one the
		// engine reads bytes: a text column decodes them, which other
		// types' casts do not (they would show escapes), so for those
		// only ASCII passes.
		plain := logical == nil && converted == -1
		switch logical.(type) {
		case nil, *format.StringType, *format.EnumType, *format.JsonType:
		default:
			return refuse()
		}
		switch converted {
		case -1, deprecated.UTF8, deprecated.Enum, deprecated.Json:
		default:
			return refuse()
		}
		asciiOnly := plain && c.Type != schema.Text
		return func(b array.Builder, v parquet.Value) error {
			s := v.ByteArray()
			if !utf8.Valid(s) {
				return errors.New("a string that is not UTF-8")
			}
			if asciiOnly {
				for _, x := range s {
					if x >= utf8.RuneSelf {
						return errors.New("bytes beyond ASCII in a string without the UTF8 annotation")
					}
				}
			}
			if iv, ok := b.(*array.MonthDayNanoIntervalBuilder); ok {
				x, err := schema.ParseIntervalText(string(s))
				if err != nil {
					return err
				}
				iv.Append(x)
				return nil
			}
			b.(*array.StringBuilder).BinaryBuilder.Append(s)
			return nil
		}, nil
	}
	return refuse()
}

// nanosToMicros rounds nanoseconds to microseconds half away from zero, as
// the engine reads an INT64 nanosecond timestamp (1500 ns is 2 µs, -1500
// ns -2 µs).
func nanosToMicros(x int64) (int64, bool) {
	if x >= 0 {
		return x/1000 + (x%1000+500)/1000, true
	}
	return x/1000 - (-(x%1000)+500)/1000, true
}

// millisToMicros is x milliseconds in microseconds, false when that
// overflows (the engine refuses such a value).
func millisToMicros(x int64) (int64, bool) {
	if x > math.MaxInt64/1000 || x < math.MinInt64/1000 {
		return 0, false
	}
	return x * 1000, true
}

func micros(x int64) (int64, bool) { return x, true }

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2_440_588

// int96Micros is an INT96 timestamp (nanoseconds of the day, then the
// Julian day) in microseconds since the epoch; the engine cuts an INT96's
// nanoseconds where it rounds an INT64's.
func int96Micros(x deprecated.Int96) int64 {
	nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
	return (int64(x[2])-julianUnixEpoch)*86_400_000_000 + nanos/1000
}
