package delta

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"tsdb/internal/schema"
)

// Data files are written with parquet-go, column by column from the Arrow
// batches the MemBuffer holds: each column's values go to its column
// writer as one slice per row group, without a row ever being assembled.
//
// What a data file carries for readers:
//   - exact min/max statistics per column chunk (parquet-go does not
//     truncate them; only the page index truncates, at 16 bytes), so
//     engines prune row groups by host and time;
//   - sorting_columns (cluster column NULLS FIRST, then time) on every row
//     group: true because a row group never spans two hours (order.go);
//   - a split-block bloom filter on the cluster column, so a query for one
//     host skips row groups whose host range covers it without holding it;
//   - data page v1, the layout every Delta reader reads (Spark, Trino,
//     delta-rs, DuckDB, chDB).

// bloomBitsPerValue sizes the cluster column's bloom filter: 10 bits per
// value give about a 1% false-positive rate and 10 KB per 8,192-row group.
const bloomBitsPerValue = 10

// dictionaryMaxBytes ends a string column's dictionary in a row group once
// it is this large: what follows is written plain. Tags stay far below it;
// a column of unique log lines leaves the dictionary after its first pages
// instead of storing every line twice.
const dictionaryMaxBytes = 256 << 10

// dataCodec compresses every column chunk of a data file. Snappy, not
// zstd: the values of metrics (random-walk floats) hardly compress either
// way, and zstd took a third of the time of a query reading all columns
// (high-cpu-all: 74 against 45 ms in DuckDB over the same rows). Snappy is
// also Delta's default codec, which every Delta reader supports. A
// function, not a variable: the package keeps no mutable state.
func dataCodec() compress.Codec { return fastSnappy{} }

// fastSnappy is Snappy at its standard level: parquet-go's snappy codec
// compresses with s2's "better" mode, which took a tenth of a flush's time
// for files no smaller on metrics (random-walk floats barely compress).
type fastSnappy struct{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }
func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}
func (fastSnappy) Decode(dst, src []byte) ([]byte, error) { return s2.Decode(dst[:cap(dst)], src) }

// fileSchema is the Parquet schema of table t's data files: one leaf per
// column, in the table's order (readers of tsdb's own files match columns
// by position), named by its physical name and carrying its field id
// under column mapping, required where the column is NOT NULL,
// dictionary-encoded where dict says so.
func fileSchema(t schema.Table, dict []bool) *parquet.Schema {
	fields := make([]parquet.Field, len(t.Columns))
	for i, c := range t.Columns {
		n := columnNode(c)
		if dict[i] {
			n = parquet.Encoded(n, &parquet.RLEDictionary)
		}
		if c.NotNull {
			n = parquet.Required(n)
		} else {
			n = parquet.Optional(n)
		}
		if c.FieldID > 0 {
			n = parquet.FieldID(n, c.FieldID)
		}
		fields[i] = orderedField{Node: n, name: c.FileName()}
	}
	return parquet.NewSchema("schema", orderedGroup(fields))
}

// columnNode is the Parquet leaf of a column, plain-encoded.
func columnNode(c schema.Column) parquet.Node {
	switch c.Type {
	case schema.Timestamptz, schema.Timestamp:
		return parquet.TimestampAdjusted(parquet.Microsecond, c.StoredAsInstant())
	case schema.Int64:
		return parquet.Int(64)
	case schema.Int32:
		return parquet.Int(32)
	case schema.Int16:
		return parquet.Int(16)
	case schema.Float64:
		return parquet.Leaf(parquet.DoubleType)
	case schema.Float32:
		return parquet.Leaf(parquet.FloatType)
	case schema.Bool:
		return parquet.Leaf(parquet.BooleanType)
	case schema.Text:
		return parquet.String()
	case schema.Date:
		return parquet.Date()
	case schema.Decimal:
		return parquet.Decimal(c.Scale, c.Digits, decimalStorage(c.Digits))
	case schema.Bytea:
		return parquet.Leaf(parquet.ByteArrayType)
	case schema.Interval:
		return parquet.String() // Delta has no interval: schema.IntervalText
	case schema.Time, schema.TimeTZ:
		return parquet.String() // Delta has no time of day: schema.TimeText
	case schema.Bit, schema.VarBit:
		return parquet.String() // Delta has no bit string: '0' and '1'
	}
	panic(fmt.Sprintf("delta: column %s has no Parquet type (%v)", c.Name, c.Type))
}

// decimalStorage is the physical type of a decimal of p digits: the
// smallest integer that holds it, as Spark writes them, else 16 bytes.
func decimalStorage(p int) parquet.Type {
	switch {
	case p <= 9:
		return parquet.Int32Type
	case p <= 18:
		return parquet.Int64Type
	}
	return parquet.FixedLenByteArrayType(16)
}

// orderedGroup is a Parquet group whose fields keep the order they are
// given in: parquet.Group is a map and orders its fields by name.
type orderedGroup []parquet.Field

// orderedField names a node inside an orderedGroup.
type orderedField struct {
	parquet.Node
	name string
}

func (f orderedField) Name() string { return f.name }

// Value is used by parquet-go's reflection-based row writing, which data
// files never use: they are written column by column.
func (f orderedField) Value(base reflect.Value) reflect.Value {
	return parquet.Group{f.name: f.Node}.Fields()[0].Value(base)
}

func (g orderedGroup) group() parquet.Group {
	m := make(parquet.Group, len(g))
	for _, f := range g {
		m[f.Name()] = f
	}
	return m
}

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return g.group().String() }
func (g orderedGroup) Type() parquet.Type          { return g.group().Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return g.group().GoType() }

// fileWriter writes one data file of a table: row groups of Arrow columns.
// The Parquet writer is made when the first row group arrives: which
// columns are dictionary-encoded is judged from it (dictionaryPays).
type fileWriter struct {
	t    schema.Table
	out  io.Writer
	w    *parquet.Writer // nil until the first row group
	vals []parquet.Value // scratch: one column of a row group
	fixd []byte          // scratch: 16-byte decimals of one column
}

// newFileWriter starts a data file of table t on out.
func newFileWriter(t schema.Table, out io.Writer) *fileWriter {
	return &fileWriter{t: t, out: out}
}

// start makes the Parquet writer, dictionary-encoding the columns of
// first (nil: none) where a dictionary makes them smaller.
func (fw *fileWriter) start(first arrow.RecordBatch) error {
	t := fw.t
	dict := make([]bool, len(t.Columns))
	if first != nil {
		for i := range dict {
			dict[i] = dictionaryPays(first.Column(i))
		}
	}
	opts := []parquet.WriterOption{
		fileSchema(t, dict),
		parquet.Compression(dataCodec()),
		parquet.DataPageVersion(1),
		parquet.DataPageStatistics(true),
		parquet.DictionaryMaxBytes(dictionaryMaxBytes),
	}
	sorting := []parquet.SortingColumn{parquet.Ascending(t.Columns[t.TimeIndex].FileName())}
	if ci := t.ClusterIndex(); ci >= 0 {
		name := t.Columns[ci].FileName()
		sorting = slices.Insert(sorting, 0, parquet.NullsFirst(parquet.Ascending(name)))
		opts = append(opts, parquet.BloomFilters(parquet.SplitBlockFilter(bloomBitsPerValue, name)))
	}
	opts = append(opts, parquet.SortingWriterConfig(parquet.SortingColumns(sorting...)))
	cfg, err := parquet.NewWriterConfig(opts...)
	if err != nil {
		return fmt.Errorf("delta: parquet writer: %w", err)
	}
	fw.w = parquet.NewWriter(fw.out, cfg)
	return nil
}

// writeRowGroup writes rec, whose columns are the table's, as one row
// group: the caller keeps it within rowGroupRows rows of one hour, which
// is what makes the file's sorting_columns true.
func (fw *fileWriter) writeRowGroup(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if fw.w == nil {
		if err := fw.start(rec); err != nil {
			return err
		}
	}
	cols := fw.w.ColumnWriters()
	for i, c := range fw.t.Columns {
		vals, err := fw.values(c, i, rec.Column(i))
		if err != nil {
			return err
		}
		if _, err := cols[i].WriteRowValues(vals); err != nil {
			return fmt.Errorf("delta: write parquet column %s: %w", c.Name, err)
		}
	}
	if err := fw.w.Flush(); err != nil {
		return fmt.Errorf("delta: write parquet: %w", err)
	}
	return nil
}

// close finishes the file: the footer with every row group's metadata.
func (fw *fileWriter) close() error {
	if fw.w == nil {
		if err := fw.start(nil); err != nil {
			return err
		}
	}
	if err := fw.w.Close(); err != nil {
		return fmt.Errorf("delta: finish parquet: %w", err)
	}
	return nil
}

// values converts column i of a row group into parquet-go values with
// their definition levels (1 for a value of an optional column, 0 for
// NULL). Byte values point into the Arrow buffers; the column writer
// copies them.
func (fw *fileWriter) values(c schema.Column, col int, a arrow.Array) ([]parquet.Value, error) {
	n := a.Len()
	fw.vals = slices.Grow(fw.vals[:0], n)[:n]
	vals := fw.vals
	def := 1
	if c.NotNull {
		def = 0
	}
	set := func(i int, v parquet.Value) { vals[i] = v }
	switch arr := a.(type) {
	case *array.Timestamp:
		for i := range n {
			set(i, parquet.Int64Value(int64(arr.Value(i))))
		}
	case *array.Int64:
		for i := range n {
			set(i, parquet.Int64Value(arr.Value(i)))
		}
	case *array.Int32:
		for i := range n {
			set(i, parquet.Int32Value(arr.Value(i)))
		}
	case *array.Int16:
		for i := range n {
			set(i, parquet.Int32Value(int32(arr.Value(i))))
		}
	case *array.Date32:
		for i := range n {
			set(i, parquet.Int32Value(int32(arr.Value(i))))
		}
	case *array.Float64:
		for i := range n {
			set(i, parquet.DoubleValue(arr.Value(i)))
		}
	case *array.Float32:
		for i := range n {
			set(i, parquet.FloatValue(arr.Value(i)))
		}
	case *array.Boolean:
		for i := range n {
			set(i, parquet.BooleanValue(arr.Value(i)))
		}
	case *array.String:
		data, offs := arr.ValueBytes(), arr.ValueOffsets()
		for i := range n {
			set(i, parquet.ByteArrayValue(data[offs[i]-offs[0]:offs[i+1]-offs[0]]))
		}
	case *array.Binary:
		for i := range n {
			set(i, parquet.ByteArrayValue(arr.Value(i)))
		}
	case *array.MonthDayNanoInterval:
		for i := range n {
			set(i, parquet.ByteArrayValue([]byte(schema.IntervalText(arr.Value(i)))))
		}
	case *array.Decimal128:
		switch {
		case c.Digits <= 9:
			for i := range n {
				set(i, parquet.Int32Value(int32(arr.Value(i).LowBits())))
			}
		case c.Digits <= 18:
			for i := range n {
				set(i, parquet.Int64Value(int64(arr.Value(i).LowBits())))
			}
		default:
			fw.fixd = slices.Grow(fw.fixd[:0], 16*n)[:16*n]
			for i := range n {
				b := fw.fixd[16*i : 16*i+16]
				v := arr.Value(i)
				binary.BigEndian.PutUint64(b, uint64(v.HighBits()))
				binary.BigEndian.PutUint64(b[8:], v.LowBits())
				set(i, parquet.FixedLenByteArrayValue(b))
			}
		}
	default:
		return nil, fmt.Errorf("delta: column %s: cannot write %s to Parquet", c.Name, a.DataType())
	}
	// Levels last, in place: Value.Level returns a copy and is not
	// inlined, which cost a tenth of a flush.
	nulls := a.NullN() > 0
	for i := range vals {
		v := &vals[i]
		if nulls && a.IsNull(i) {
			*v = parquet.NullValue()
			v.SetDefinitionLevel(0)
		} else {
			v.SetDefinitionLevel(def)
		}
		v.SetColumnIndex(col)
	}
	return vals, nil
}

// dictionaryPays judges whether a column's values take less room through a
// dictionary (each distinct value once, then an index of as many bits as
// the dictionary needs per row) than written plain, as arrow-go and
// parquet-mr judge it. Tags, repeated states and the times of metrics (a
// row group holds a few hosts over the same 360 times of an hour) keep
// one; random-walk floats, counters, unique log lines and event times are
// written plain: a dictionary of 8,192 distinct floats was stored beside
// their indices, 20% larger than the values and slower to decode.
func dictionaryPays(a arrow.Array) bool {
	const dictionarySample = 4096
	n := a.Len() - a.NullN()
	if n == 0 {
		return false
	}
	var plain, dictBytes int
	distinct, counted := 0, 0
	// Counting stops once the dictionary cannot pay any more, or when the
	// first dictionarySample values are nearly all distinct: random-walk
	// floats and unique lines then cost a map insert for half their rows
	// (a fifth of a flush's time) to learn what the sample shows.
	give := func() bool {
		return distinct > n/2 || counted == dictionarySample && distinct > dictionarySample*3/4
	}
	switch arr := a.(type) {
	case *array.String, *array.Binary:
		seen := make(map[string]struct{})
		for i := range a.Len() {
			if a.IsNull(i) {
				continue
			}
			var v string
			if s, ok := arr.(*array.String); ok {
				v = s.Value(i)
			} else {
				v = string(arr.(*array.Binary).Value(i))
			}
			plain += 4 + len(v)
			counted++
			if _, ok := seen[v]; !ok {
				seen[v] = struct{}{}
				distinct++
				dictBytes += 4 + len(v)
			}
			if give() {
				return false
			}
		}
	case *array.Boolean, *array.Decimal128:
		return false
	default:
		width := arr.DataType().(arrow.FixedWidthDataType).Bytes()
		seen := make(map[uint64]struct{})
		for i := range a.Len() {
			if a.IsNull(i) {
				continue
			}
			k := fixedBits(arr, i)
			counted++
			if _, ok := seen[k]; !ok {
				seen[k] = struct{}{}
				distinct++
			}
			if give() {
				return false
			}
		}
		plain, dictBytes = n*width, distinct*width
	}
	indexBits := bits.Len(uint(distinct))
	return dictBytes+(n*indexBits+7)/8 < plain
}

// fixedBits is the bit pattern of value i of a fixed-width numeric array.
func fixedBits(a arrow.Array, i int) uint64 {
	switch arr := a.(type) {
	case *array.Timestamp:
		return uint64(arr.Value(i))
	case *array.Int64:
		return uint64(arr.Value(i))
	case *array.Int32:
		return uint64(arr.Value(i))
	case *array.Int16:
		return uint64(arr.Value(i))
	case *array.Date32:
		return uint64(arr.Value(i))
	case *array.Float64:
		return math.Float64bits(arr.Value(i))
	case *array.Float32:
		return uint64(math.Float32bits(arr.Value(i)))
	}
	return uint64(i) // unknown: every value distinct, written plain
}
