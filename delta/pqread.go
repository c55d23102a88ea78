package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"tsdb/internal/schema"
)

// ReadDataFile reads a data file of table t back as Arrow records with the
// table's schema (for compaction); a file written before columns were
// added yields records of the leading columns (WriteDataFile pads them).
// It fails when the file's columns are not a prefix of the table's.
func ReadDataFile(ctx context.Context, store Store, t schema.Table, path string) ([]arrow.RecordBatch, error) {
	r, err := openDataFile(ctx, store, t, path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	var out []arrow.RecordBatch
	for {
		rec, err := r.next()
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		if rec == nil {
			return out, nil
		}
		out = append(out, rec)
	}
}

// dataFileReader reads one of tsdb's data files with parquet-go, a batch
// of at most rowGroupRows rows at a time, column by column into Arrow
// builders. It reads the file's local copy page by page: memory holds one
// page per column, never the whole file (the page cache does the rest).
type dataFileReader struct {
	path  string
	t     schema.Table
	sch   *arrow.Schema // the table's leading columns the file has
	local *os.File
	file  *parquet.File
	group int            // the next row group to open
	cols  []columnCursor // of the open row group; nil between groups
	left  int64          // rows of the open row group not read yet
	buf   []parquet.Value
}

// columnCursor is the position of a reader in one column chunk.
type columnCursor struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader // of page; nil: read the next page first
}

// openDataFile opens a data file of table t; it fails when the file's
// columns are not a prefix of the table's (same names, types and
// nullability: other writers' files are read by name, ReadFileByName).
func openDataFile(ctx context.Context, store Store, t schema.Table, path string) (*dataFileReader, error) {
	if err := store.Fetch(ctx, path); err != nil {
		return nil, err
	}
	local, err := os.Open(store.LocalPath(path))
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	r, err := openLocalFile(local, t, path)
	if err != nil {
		local.Close()
		return nil, err
	}
	return r, nil
}

// readBufferSize is what the reader reads from the file at a time, per
// column: pages are mostly smaller.
const readBufferSize = 64 << 10

// openParquet opens the local copy of data file path for reading it
// whole, page by page: without its bloom filters and page index.
func openParquet(local *os.File, path string) (*parquet.File, error) {
	info, err := local.Stat()
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	f, err := parquet.OpenFile(local, info.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true),
		parquet.ReadBufferSize(readBufferSize))
	if err != nil {
		return nil, fmt.Errorf("delta: open %s: %w", path, err)
	}
	return f, nil
}

func openLocalFile(local *os.File, t schema.Table, path string) (*dataFileReader, error) {
	f, err := openParquet(local, path)
	if err != nil {
		return nil, err
	}
	fields := f.Schema().Fields()
	if len(fields) > len(t.Columns) {
		return nil, fmt.Errorf("delta: %s has %d columns, the table %d", path, len(fields), len(t.Columns))
	}
	for i, fld := range fields {
		if err := checkLeaf(t.Columns[i], fld); err != nil {
			return nil, fmt.Errorf("delta: %s: column %d: %w", path, i+1, err)
		}
	}
	sch := arrow.NewSchema(t.ArrowSchema().Fields()[:len(fields)], nil)
	return &dataFileReader{path: path, t: t, sch: sch, local: local, file: f}, nil
}

// checkLeaf reports whether a file's leaf stores column c as tsdb writes
// it (now with parquet-go, before with arrow-go's pqarrow).
func checkLeaf(c schema.Column, f parquet.Field) error {
	if f.Name() != c.FileName() {
		return fmt.Errorf("named %q, the table's is %q", f.Name(), c.FileName())
	}
	if !f.Leaf() || f.Repeated() {
		return fmt.Errorf("%s is not a flat column", c.Name)
	}
	if f.Optional() == c.NotNull {
		return fmt.Errorf("%s: the file's nullability differs from the table's", c.Name)
	}
	typ := f.Type()
	kind := typ.Kind()
	var logical format.LogicalTypeValue
	if lt := typ.LogicalType(); lt != nil {
		logical = lt.Value
	}
	intWidth := func(bits int8) bool {
		it, isInt := logical.(*format.IntType)
		return logical == nil || isInt && it.BitWidth == bits && it.IsSigned
	}
	ok := false
	switch c.Type {
	case schema.Timestamptz, schema.Timestamp:
		ts, isTS := logical.(*format.TimestampType)
		ok = kind == parquet.Int64 && isTS && ts.IsAdjustedToUTC == c.StoredAsInstant()
		if ok {
			_, ok = ts.Unit.Value.(*format.MicroSeconds)
		}
	case schema.Int64:
		ok = kind == parquet.Int64 && intWidth(64)
	case schema.Int32:
		ok = kind == parquet.Int32 && intWidth(32)
	case schema.Int16:
		it, isInt := logical.(*format.IntType)
		ok = kind == parquet.Int32 && isInt && it.BitWidth == 16 && it.IsSigned
	case schema.Float64:
		ok = kind == parquet.Double
	case schema.Float32:
		ok = kind == parquet.Float
	case schema.Bool:
		ok = kind == parquet.Boolean
	case schema.Text, schema.Bytea, schema.Interval, schema.Time, schema.TimeTZ, schema.Bit, schema.VarBit:
		ok = kind == parquet.ByteArray
	case schema.Date:
		_, isDate := logical.(*format.DateType)
		ok = kind == parquet.Int32 && isDate
	case schema.Decimal:
		d, isDec := logical.(*format.DecimalType)
		ok = isDec && int(d.Precision) == c.Digits && int(d.Scale) == c.Scale &&
			(kind == parquet.Int32 || kind == parquet.Int64 || kind == parquet.ByteArray ||
				kind == parquet.FixedLenByteArray && typ.Length() <= 16)
	}
	if !ok {
		return fmt.Errorf("%s is stored as %s, not as the table's %s", c.Name, typ, c.Type)
	}
	return nil
}

// next returns the next batch (the caller releases it), or nil at the end.
func (r *dataFileReader) next() (arrow.RecordBatch, error) {
	groups := r.file.RowGroups()
	for r.cols == nil || r.left == 0 {
		r.closeGroup()
		if r.group == len(groups) {
			return nil, nil
		}
		rg := groups[r.group]
		r.group++
		r.left = rg.NumRows()
		chunks := rg.ColumnChunks()
		r.cols = make([]columnCursor, len(r.sch.Fields()))
		for i := range r.cols {
			r.cols[i].pages = chunks[i].Pages()
		}
	}
	n := int(min(r.left, rowGroupRows))
	cols := make([]arrow.Array, len(r.cols))
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for i := range r.cols {
		a, err := r.readColumn(i, n)
		if err != nil {
			release()
			return nil, fmt.Errorf("delta: read %s: column %s: %w", r.path, r.t.Columns[i].Name, err)
		}
		cols[i] = a
	}
	r.left -= int64(n)
	rec := array.NewRecordBatch(r.sch, cols, int64(n))
	release()
	return rec, nil
}

// readColumn reads the next n values of column i as an Arrow array.
func (r *dataFileReader) readColumn(i, n int) (arrow.Array, error) {
	c := r.t.Columns[i]
	b := array.NewBuilder(memory.DefaultAllocator, r.sch.Field(i).Type)
	defer b.Release()
	b.Reserve(n)
	cur := &r.cols[i]
	for got := 0; got < n; {
		if cur.vals == nil {
			p, err := cur.pages.ReadPage()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil, fmt.Errorf("%d values missing", n-got)
				}
				return nil, err
			}
			cur.page, cur.vals = p, p.Values()
		}
		if cap(r.buf) < n-got {
			r.buf = make([]parquet.Value, n-got)
		}
		k, err := cur.vals.ReadValues(r.buf[:n-got])
		if err := appendValues(b, c, r.buf[:k]); err != nil {
			return nil, err
		}
		got += k
		if errors.Is(err, io.EOF) {
			parquet.Release(cur.page)
			cur.page, cur.vals = nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

// appendValues appends parquet-go values of column c to its builder.
func appendValues(b array.Builder, c schema.Column, vals []parquet.Value) error {
	for _, v := range vals {
		if v.IsNull() {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v.Int64()))
		case *array.Int64Builder:
			b.Append(v.Int64())
		case *array.Int32Builder:
			b.Append(v.Int32())
		case *array.Int16Builder:
			b.Append(int16(v.Int32()))
		case *array.Date32Builder:
			b.Append(arrow.Date32(v.Int32()))
		case *array.Float64Builder:
			b.Append(v.Double())
		case *array.Float32Builder:
			b.Append(v.Float())
		case *array.BooleanBuilder:
			b.Append(v.Boolean())
		case *array.StringBuilder:
			b.BinaryBuilder.Append(v.ByteArray())
		case *array.BinaryBuilder:
			b.Append(v.ByteArray())
		case *array.MonthDayNanoIntervalBuilder:
			iv, err := schema.ParseIntervalText(string(v.ByteArray()))
			if err != nil {
				return err
			}
			b.Append(iv)
		case *array.Decimal128Builder:
			d, err := decimalOf(v)
			if err != nil {
				return err
			}
			b.Append(d)
		default:
			return fmt.Errorf("cannot read %s into %T", c.Type, b)
		}
	}
	return nil
}

// decimalOf decodes a Parquet decimal: an INT32 or INT64, or a big-endian
// two's-complement byte string of at most 16 bytes.
func decimalOf(v parquet.Value) (decimal128.Num, error) {
	switch v.Kind() {
	case parquet.Int32:
		return decimal128.FromI64(int64(v.Int32())), nil
	case parquet.Int64:
		return decimal128.FromI64(v.Int64()), nil
	}
	raw := v.ByteArray()
	if len(raw) > 16 {
		return decimal128.Num{}, fmt.Errorf("a decimal of %d bytes", len(raw))
	}
	var full [16]byte
	if len(raw) > 0 && raw[0]&0x80 != 0 {
		for i := range full {
			full[i] = 0xff
		}
	}
	copy(full[16-len(raw):], raw)
	var hi int64
	var lo uint64
	for _, x := range full[:8] {
		hi = hi<<8 | int64(x)
	}
	for _, x := range full[8:] {
		lo = lo<<8 | uint64(x)
	}
	return decimal128.New(hi, lo), nil
}

// closeGroup releases the open row group's pages.
func (r *dataFileReader) closeGroup() {
	for _, c := range r.cols {
		if c.page != nil {
			parquet.Release(c.page)
		}
		if c.pages != nil {
			c.pages.Close()
		}
	}
	r.cols = nil
}

func (r *dataFileReader) close() {
	r.closeGroup()
	r.local.Close()
}
