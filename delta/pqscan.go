package delta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"tsdb/internal/lru"
)

// Direct reads of tsdb's own data files, column chunk by column chunk into
// plain Go slices, for the planner's aggregation path that answers simple
// one-table queries without the engine (planner/fastagg.go): a query for
// one host over an hour reads a few row groups, and the engine's per-query
// setup (binding, planning, opening every file) cost ten times the read.

// ScanCache keeps what direct reads of data files decoded: each file's
// parsed footer, and the column chunks read, decoded (the hot hours a
// dashboard asks for again and again are then read from memory, not
// decompressed and decoded again). A data file never changes once written
// (its name is unique and it is only ever deleted), so what was read once
// stays right; the cache holds no file open, so a vacuumed file's disk
// space is freed at once. Chunks are dropped least recently used first
// past the byte budget. Safe for concurrent use.
type ScanCache struct {
	maxBytes int64
	mu       sync.Mutex
	footers  *lru.Cache[string, *parquet.File]
	chunks   *lru.Cache[chunkKey, any] // *IntChunk, *FloatChunk or *TextChunk
	// gathered are the chunks read in part (IntsAt, FloatsAt): the
	// second such read of a chunk decodes and keeps it whole, so a
	// dashboard's repeated query is answered from memory while a one-off
	// query's chunks do not push the hot ones out. A chunk kept once and
	// dropped since is read in part again until it ages out of gathered:
	// a query whose chunks exceed the budget would otherwise decode every
	// chunk whole on every run only to drop it again.
	gathered *lru.Cache[chunkKey, *bool] // true: kept whole once
}

// gatheredKeys bounds the chunks the cache remembers as read in part.
const gatheredKeys = 1 << 16

// footerSize estimates what a parsed footer holds in memory: a few
// hundred bytes per column chunk (statistics, offsets, the schema's
// share).
func footerSize(f *parquet.File) int64 {
	return 2048 + 256*int64(len(f.RowGroups()))*int64(len(f.Schema().Fields()))
}

type chunkKey struct {
	path       string
	group, col int
}

// NewScanCache returns a cache of at most maxFooterBytes of parsed
// footers and maxBytes of decoded column chunks.
func NewScanCache(maxFooterBytes, maxBytes int64) *ScanCache {
	return &ScanCache{maxBytes: maxBytes, footers: lru.New[string, *parquet.File](maxFooterBytes), chunks: lru.New[chunkKey, any](maxBytes),
		gathered: lru.New[chunkKey, *bool](gatheredKeys)}
}

// Bytes is the size of the decoded chunks the cache holds.
func (c *ScanCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chunks.Bytes()
}

func (c *ScanCache) chunk(k chunkKey) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	chunk, _ := c.chunks.Get(k)
	return chunk
}

// gatherOnce reports whether a part of chunk k, which the cache lacks,
// is to be read without keeping the chunk: false only for the second
// read (the caller then keeps it whole).
func (c *ScanCache) gatherOnce(k chunkKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept, seen := c.gathered.Get(k)
	if !seen {
		c.gathered.Add(k, new(bool), 1)
		return true
	}
	if *kept {
		return true
	}
	*kept = true
	return false
}

func (c *ScanCache) putChunk(k chunkKey, chunk any, size int64) {
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks.Add(k, chunk, size)
}

// Open returns the data file at path (a local path) for reading its
// column chunks. The caller closes it.
func (c *ScanCache) Open(path string) (*ScanFile, error) {
	c.mu.Lock()
	meta, ok := c.footers.Get(path)
	c.mu.Unlock()
	if ok {
		return &ScanFile{cache: c, path: path, meta: meta}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	meta, err = parquet.OpenFile(f, info.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true),
		parquet.ReadBufferSize(readBufferSize))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delta: open %s: %w", path, err)
	}
	c.mu.Lock()
	c.footers.Add(path, meta, footerSize(meta))
	c.mu.Unlock()
	return &ScanFile{cache: c, path: path, meta: meta, f: f}, nil
}

// ScanFile is a data file whose column chunks are read one at a time,
// from the cache or from the file (opened at the first chunk it lacks).
// Not safe for concurrent use.
type ScanFile struct {
	cache *ScanCache
	path  string
	meta  *parquet.File
	f     *os.File // nil until a chunk is read from the file
	// gathered are the chunks this reader read in part: a statement that
	// reads a column twice (a filter, then its kept rows' values) reads
	// it once as far as ScanCache.gathered is concerned.
	gathered map[chunkKey]bool
}

// Close closes the file.
func (s *ScanFile) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Path is the file's path.
func (s *ScanFile) Path() string { return s.path }

// Rows is the number of rows of row group g.
func (s *ScanFile) Rows(g int) int { return int(s.meta.RowGroups()[g].NumRows()) }

// Groups is the number of row groups.
func (s *ScanFile) Groups() int { return len(s.meta.RowGroups()) }

// bounds returns a column chunk's min and max statistics.
func (s *ScanFile) bounds(g, col int) (lo, hi parquet.Value, ok bool) {
	chunk, isFile := s.meta.RowGroups()[g].ColumnChunks()[col].(*parquet.FileColumnChunk)
	if !isFile {
		return lo, hi, false
	}
	lo, hi, ok = chunk.Bounds()
	return lo, hi, ok && !lo.IsNull() && !hi.IsNull()
}

// IntBounds returns the min and max statistics of an INT64 or INT32
// column chunk (a time column: microseconds); ok is false without them.
func (s *ScanFile) IntBounds(g, col int) (lo, hi int64, ok bool) {
	mn, mx, ok := s.bounds(g, col)
	if !ok {
		return 0, 0, false
	}
	switch mn.Kind() {
	case parquet.Int64:
		return mn.Int64(), mx.Int64(), true
	case parquet.Int32:
		return int64(mn.Int32()), int64(mx.Int32()), true
	}
	return 0, 0, false
}

// TextBounds returns the min and max statistics of a BYTE_ARRAY column
// chunk. tsdb writes them exact (never truncated); ok is false without
// them.
func (s *ScanFile) TextBounds(g, col int) (lo, hi []byte, ok bool) {
	mn, mx, ok := s.bounds(g, col)
	if !ok || mn.Kind() != parquet.ByteArray {
		return nil, nil, false
	}
	return mn.ByteArray(), mx.ByteArray(), true
}

// errKind is a column chunk read as a kind it is not stored as.
var errKind = errors.New("column stored as another kind")

// eachPage calls fn with the pages of column col of row group g in order:
// the page's definition levels (empty for a required column: no NULLs;
// else one per row, 0 for NULL), the values present, and the dictionary
// that indexes them (nil: the values themselves).
func (s *ScanFile) eachPage(g, col int, fn func(defs []byte, data encoding.Values, dict parquet.Dictionary) error) error {
	chunk, ok := s.meta.RowGroups()[g].ColumnChunks()[col].(*parquet.FileColumnChunk)
	if !ok {
		return fmt.Errorf("delta: read %s: row group %d: column %d is not a file chunk", s.path, g, col)
	}
	if s.f == nil {
		f, err := os.Open(s.path)
		if err != nil {
			return fmt.Errorf("delta: read %s: %w", s.path, err)
		}
		s.f = f
	}
	pages := chunk.PagesFrom(s.f)
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, err)
		}
		err = fn(p.DefinitionLevels(), p.Data(), p.Dictionary())
		parquet.Release(p)
		if err != nil {
			return fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, err)
		}
	}
}

// IntChunk is an INT64 or INT32 column chunk decoded (times, integers,
// dates): one value per row, and Nulls marking the NULL rows (whose
// value is 0) when there are any. Shared: read only.
type IntChunk struct {
	Values []int64
	Nulls  []bool
}

// FloatChunk is a DOUBLE or FLOAT column chunk decoded, as float64 (a
// float32 widens exactly), with Nulls as IntChunk has them. Shared: read
// only.
type FloatChunk struct {
	Values []float64
	Nulls  []bool
}

// errCorruptPage is a page whose values do not match its definition
// levels or its dictionary: a damaged file, reported, never a panic.
var errCorruptPage = errors.New("page values do not match its definition levels or dictionary")

// nullLevel is the definition level of a NULL row of a flat column.
var nullLevel = []byte{0}

// expand appends a page's values to vals, one per row: NULL rows (def 0)
// get the zero value and a mark in nulls, which is made at the first.
// src are the values present, in order. A page without NULLs (the usual
// case, whether or not the column is nullable) is one bulk append: this
// loop runs for every value a direct aggregation reads.
func expand[T any](vals []T, nulls []bool, defs []byte, src []T) ([]T, []bool, error) {
	if len(defs) == 0 || bytes.IndexByte(defs, 0) < 0 {
		if len(defs) != 0 && len(defs) != len(src) {
			return vals, nulls, errCorruptPage
		}
		vals = append(vals, src...)
		if nulls != nil {
			nulls = append(nulls, make([]bool, len(src))...)
		}
		return vals, nulls, nil
	}
	if len(defs)-bytes.Count(defs, nullLevel) != len(src) {
		return vals, nulls, errCorruptPage
	}
	if nulls == nil {
		nulls = make([]bool, len(vals), cap(vals))
	}
	var zero T
	k := 0
	for _, d := range defs {
		if d == 0 {
			vals, nulls = append(vals, zero), append(nulls, true)
			continue
		}
		vals, nulls = append(vals, src[k]), append(nulls, false)
		k++
	}
	return vals, nulls, nil
}

// Ints reads an INT64 or INT32 column chunk.
func (s *ScanFile) Ints(g, col int) (*IntChunk, error) {
	key := chunkKey{s.path, g, col}
	if c, ok := s.cache.chunk(key).(*IntChunk); ok {
		return c, nil
	}
	vals, nulls, err := readNumbers(s, g, col, intValues)
	if err != nil {
		return nil, err
	}
	out := &IntChunk{Values: vals, Nulls: nulls}
	s.cache.putChunk(key, out, int64(len(vals))*8+int64(len(nulls)))
	return out, nil
}

// Floats reads a DOUBLE or FLOAT column chunk.
func (s *ScanFile) Floats(g, col int) (*FloatChunk, error) {
	key := chunkKey{s.path, g, col}
	if c, ok := s.cache.chunk(key).(*FloatChunk); ok {
		return c, nil
	}
	vals, nulls, err := readNumbers(s, g, col, floatValues)
	if err != nil {
		return nil, err
	}
	out := &FloatChunk{Values: vals, Nulls: nulls}
	s.cache.putChunk(key, out, int64(len(vals))*8+int64(len(nulls)))
	return out, nil
}

// intValues gives a page's INT64 values as they are, or its INT32 values
// widened into scratch.
func intValues(v encoding.Values, scratch []int64) ([]int64, bool) {
	switch v.Kind() {
	case encoding.Int64:
		return v.Int64(), true
	case encoding.Int32:
		for _, x := range v.Int32() {
			scratch = append(scratch, int64(x))
		}
		return scratch, true
	}
	return nil, false
}

// floatValues gives a page's DOUBLE values as they are, or its FLOAT
// values widened into scratch.
func floatValues(v encoding.Values, scratch []float64) ([]float64, bool) {
	switch v.Kind() {
	case encoding.Double:
		return v.Double(), true
	case encoding.Float:
		for _, x := range v.Float() {
			scratch = append(scratch, float64(x))
		}
		return scratch, true
	}
	return nil, false
}

// widens reports whether a page of kind k is read through the scratch
// slice (its values are converted), not as it is.
func widens(k encoding.Kind) bool { return k == encoding.Int32 || k == encoding.Float }

// gatherShare: a read of some rows of a chunk the cache lacks decodes
// only those rows while they are under 1/gatherShare of the row group's
// (the first time: see ScanCache.gathered); past that it decodes, and
// caches, the whole chunk. A query for a few
// hosts keeps a run of rows or two of each 8,192-row group it reads:
// decoding (and keeping) the rest cost it a third of its time.
const gatherShare = 8

// IntsAt reads the values of rows (row numbers of row group g, ascending)
// of an INT64 or INT32 column chunk into dst, reusing its slices:
// dst.Values[k] is row rows[k]'s; dst.Nulls is empty when none of the
// rows is NULL, else one mark per row.
func (s *ScanFile) IntsAt(g, col int, rows []int32, dst *IntChunk) error {
	var err error
	dst.Values, dst.Nulls, err = numbersAt(s, g, col, rows, dst.Values[:0], dst.Nulls[:0], intValues, func() ([]int64, []bool, error) {
		c, err := s.Ints(g, col)
		if err != nil {
			return nil, nil, err
		}
		return c.Values, c.Nulls, nil
	})
	return err
}

// FloatsAt is IntsAt for a DOUBLE or FLOAT column chunk.
func (s *ScanFile) FloatsAt(g, col int, rows []int32, dst *FloatChunk) error {
	var err error
	dst.Values, dst.Nulls, err = numbersAt(s, g, col, rows, dst.Values[:0], dst.Nulls[:0], floatValues, func() ([]float64, []bool, error) {
		c, err := s.Floats(g, col)
		if err != nil {
			return nil, nil, err
		}
		return c.Values, c.Nulls, nil
	})
	return err
}

// numbersAt appends the values of rows of a column chunk of numbers:
// gathered from the pages (of converts a page's values), or picked from
// the whole chunk (whole reads it through the cache).
func numbersAt[T int64 | float64](s *ScanFile, g, col int, rows []int32, vals []T, nulls []bool,
	of func(v encoding.Values, scratch []T) ([]T, bool), whole func() ([]T, []bool, error)) ([]T, []bool, error) {
	key := chunkKey{s.path, g, col}
	if s.cache.chunk(key) == nil && len(rows)*gatherShare <= s.Rows(g) && (s.gathered[key] || s.cache.gatherOnce(key)) {
		if s.gathered == nil {
			s.gathered = map[chunkKey]bool{}
		}
		s.gathered[key] = true
		return gatherNumbers(s, g, col, rows, of, vals, nulls)
	}
	all, allNulls, err := whole()
	if err != nil {
		return vals, nulls, err
	}
	if len(all) != s.Rows(g) {
		return vals, nulls, fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, errRows)
	}
	return pickRows(all, allNulls, rows, vals, nulls)
}

// errRows is a gathering read of rows that are not ascending row numbers
// of the chunk, or of a chunk whose rows are not its row group's.
var errRows = errors.New("rows asked are not the column chunk's, or the chunk's rows are not its row group's")

// pickRows appends the values (and NULL marks) of rows of a decoded chunk.
func pickRows[T any](all []T, allNulls []bool, rows []int32, vals []T, nulls []bool) ([]T, []bool, error) {
	for _, r := range rows {
		if int(r) >= len(all) || r < 0 {
			return vals, nulls, errRows
		}
		vals = append(vals, all[r])
		null := allNulls != nil && allNulls[r]
		if null && len(nulls) == 0 {
			nulls = make([]bool, len(vals)-1, len(rows))
		}
		if null || len(nulls) > 0 {
			nulls = append(nulls, null)
		}
	}
	return vals, nulls, nil
}

// gatherNumbers appends the values of rows (ascending) of a column chunk
// of numbers, decoding only those: a page's present values are indexed
// directly, through the definition levels where the page has NULLs.
func gatherNumbers[T int64 | float64](s *ScanFile, g, col int, rows []int32, of func(v encoding.Values, scratch []T) (_ []T, ok bool), vals []T, nulls []bool) ([]T, []bool, error) {
	next, start := 0, 0 // the next row asked; the first row of the page
	var lastDict parquet.Dictionary
	var dictVals, widened []T
	err := s.eachPage(g, col, func(defs []byte, data encoding.Values, dict parquet.Dictionary) error {
		var src []T
		var idx []int32
		if dict == nil {
			var ok bool
			if src, ok = of(data, widened[:0]); !ok {
				return errKind
			}
			if widens(data.Kind()) {
				widened = src
			}
		} else {
			if dict != lastDict {
				d, ok := of(dict.Page().Data(), nil)
				if !ok {
					return errKind
				}
				dictVals, lastDict = append(dictVals[:0], d...), dict
			}
			idx = data.Int32()
		}
		present := len(src)
		if idx != nil {
			present = len(idx)
		}
		pageRows, hasNulls := present, false
		if len(defs) > 0 {
			nullRows := bytes.Count(defs, nullLevel)
			pageRows, hasNulls = len(defs), nullRows > 0
			if len(defs)-nullRows != present {
				return errCorruptPage
			}
		}
		end := start + pageRows
		d, k := 0, 0 // a position in defs and the present values before it
		var zero T
		for ; next < len(rows) && int(rows[next]) < end; next++ {
			r := int(rows[next]) - start
			if r < 0 || next > 0 && rows[next] <= rows[next-1] {
				return errRows
			}
			v := r
			if hasNulls {
				for ; d < r; d++ {
					if defs[d] != 0 {
						k++
					}
				}
				if defs[r] == 0 {
					if len(nulls) == 0 {
						nulls = make([]bool, len(vals), cap(vals))
					}
					vals, nulls = append(vals, zero), append(nulls, true)
					continue
				}
				v = k
			}
			if v >= present {
				return errCorruptPage
			}
			if idx != nil {
				i := idx[v]
				if uint32(i) >= uint32(len(dictVals)) {
					return errCorruptPage
				}
				vals = append(vals, dictVals[i])
			} else {
				vals = append(vals, src[v])
			}
			if len(nulls) > 0 {
				nulls = append(nulls, false)
			}
		}
		start = end
		return nil
	})
	if err == nil && (next != len(rows) || start != s.Rows(g)) {
		err = fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, errRows)
	}
	return vals, nulls, err
}

// readNumbers decodes a column chunk of numbers, one value per row, with
// of giving a page's (or dictionary's) values as a slice (the page's own
// where the kinds match, else appended to scratch); ok false for a kind
// it does not read.
func readNumbers[T int64 | float64](s *ScanFile, g, col int, of func(v encoding.Values, scratch []T) (_ []T, ok bool)) ([]T, []bool, error) {
	vals := make([]T, 0, s.meta.RowGroups()[g].NumRows())
	var nulls []bool
	var lastDict parquet.Dictionary
	var dictVals, widened, gathered []T
	err := s.eachPage(g, col, func(defs []byte, data encoding.Values, dict parquet.Dictionary) error {
		if dict == nil {
			src, ok := of(data, widened[:0])
			if !ok {
				return errKind
			}
			if widens(data.Kind()) {
				widened = src // the scratch, kept for the next page
			}
			var err error
			vals, nulls, err = expand(vals, nulls, defs, src)
			return err
		}
		if dict != lastDict {
			// A dictionary's values are converted once, not once per
			// page, into memory of this read's own.
			d, ok := of(dict.Page().Data(), nil)
			if !ok {
				return errKind
			}
			dictVals, lastDict = append(dictVals[:0], d...), dict
		}
		idx := data.Int32()
		gathered = gathered[:0]
		for _, i := range idx {
			if uint32(i) >= uint32(len(dictVals)) {
				return errCorruptPage
			}
			gathered = append(gathered, dictVals[i])
		}
		var err error
		vals, nulls, err = expand(vals, nulls, defs, gathered)
		return err
	})
	return vals, nulls, err
}

// TextChunk is a BYTE_ARRAY column chunk decoded as a dictionary of its
// distinct entries (those of the chunk's dictionary page, then the values
// of pages written plain) and one entry code per row, -1 for NULL. Shared:
// read only.
type TextChunk struct {
	data  []byte
	offs  []uint32 // entry i is data[offs[i]:offs[i+1]]
	codes []int32
	// runs are each entry's runs of rows: rows are sorted by the cluster
	// column within each hour, so one host's rows of a row group are one
	// run or a few.
	runs [][]Run
}

// Run is the rows [Start, End) of a row group.
type Run struct{ Start, End int32 }

// Rows is the number of rows.
func (t *TextChunk) Rows() int { return len(t.codes) }

// Value returns row's value; false for NULL. The bytes are the chunk's:
// read only.
func (t *TextChunk) Value(row int) ([]byte, bool) {
	c := t.codes[row]
	if c < 0 {
		return nil, false
	}
	return t.data[t.offs[c]:t.offs[c+1]], true
}

// Match sets dst[row] to whether the row's value is one of want (NULL
// never is), comparing each entry once; dst is reused when large enough.
func (t *TextChunk) Match(want [][]byte, dst []bool) []bool {
	hits := make([]bool, len(t.offs)-1)
	any := false
	for i := range hits {
		v := t.data[t.offs[i]:t.offs[i+1]]
		for _, w := range want {
			if bytes.Equal(v, w) {
				hits[i], any = true, true
				break
			}
		}
	}
	n := len(t.codes)
	if cap(dst) < n {
		dst = make([]bool, n)
	}
	dst = dst[:n]
	if !any {
		clear(dst)
		return dst
	}
	for r, c := range t.codes {
		dst[r] = c >= 0 && hits[c]
	}
	return dst
}

// Runs appends to dst the runs of rows whose value is one of want, in
// row order.
func (t *TextChunk) Runs(want [][]byte, dst []Run) []Run {
	dst = dst[:0]
	found := 0
	for i, runs := range t.runs {
		v := t.data[t.offs[i]:t.offs[i+1]]
		for _, w := range want {
			if bytes.Equal(v, w) {
				dst = append(dst, runs...)
				found++
				break
			}
		}
	}
	if found > 1 {
		slices.SortFunc(dst, func(a, b Run) int { return int(a.Start - b.Start) })
	}
	return dst
}

// Text reads a BYTE_ARRAY column chunk.
func (s *ScanFile) Text(g, col int) (*TextChunk, error) {
	key := chunkKey{s.path, g, col}
	if c, ok := s.cache.chunk(key).(*TextChunk); ok {
		return c, nil
	}
	out := &TextChunk{offs: []uint32{0}, codes: make([]int32, 0, s.meta.RowGroups()[g].NumRows())}
	var lastDict parquet.Dictionary
	base := int32(0) // code of the current dictionary's first entry
	add := func(v []byte) {
		out.data = append(out.data, v...)
		out.offs = append(out.offs, uint32(len(out.data)))
	}
	err := s.eachPage(g, col, func(defs []byte, data encoding.Values, dict parquet.Dictionary) error {
		var code func(k int) int32
		present := 0
		if dict != nil {
			if dict != lastDict {
				dv := dict.Page().Data()
				if dv.Kind() != encoding.ByteArray {
					return errKind
				}
				vals, offs := dv.ByteArray()
				base = int32(len(out.offs) - 1)
				for i := 0; i+1 < len(offs); i++ {
					add(vals[offs[i]:offs[i+1]])
				}
				lastDict = dict
			}
			idx, b := data.Int32(), base
			code, present = func(k int) int32 { return b + idx[k] }, len(idx)
		} else {
			if data.Kind() != encoding.ByteArray {
				return errKind
			}
			vals, offs := data.ByteArray()
			first := int32(len(out.offs) - 1)
			for i := 0; i+1 < len(offs); i++ {
				add(vals[offs[i]:offs[i+1]])
			}
			code, present = func(k int) int32 { return first + int32(k) }, max(len(offs)-1, 0)
		}
		if len(defs) == 0 {
			for k := range present {
				out.codes = append(out.codes, code(k))
			}
			return nil
		}
		k := 0
		for _, d := range defs {
			if d == 0 {
				out.codes = append(out.codes, -1)
				continue
			}
			out.codes = append(out.codes, code(k))
			k++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.runs = make([][]Run, len(out.offs)-1)
	runs := 0
	for r := 0; r < len(out.codes); {
		c, end := out.codes[r], r+1
		for end < len(out.codes) && out.codes[end] == c {
			end++
		}
		if c >= 0 {
			out.runs[c] = append(out.runs[c], Run{int32(r), int32(end)})
			runs++
		}
		r = end
	}
	s.cache.putChunk(key, out, int64(len(out.data))+4*int64(len(out.offs))+4*int64(len(out.codes))+24*int64(len(out.runs))+8*int64(runs))
	return out, nil
}
