package delta

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// Number column chunks read directly (pqscan.go): decoded whole into
// the cache, or only the rows a query keeps.

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
	pv := pageValues[T]{of: of}
	err := s.eachPage(g, col, func(defs []byte, data encoding.Values, dict parquet.Dictionary) error {
		src, idx, err := pv.values(data, dict)
		if err != nil {
			return err
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
				x, ok := pv.entry(idx[v])
				if !ok {
					return errCorruptPage
				}
				vals = append(vals, x)
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
	var looked []T // a dictionary page's values, looked up
	pv := pageValues[T]{of: of}
	err := s.eachPage(g, col, func(defs []byte, data encoding.Values, dict parquet.Dictionary) error {
		src, idx, err := pv.values(data, dict)
		if err != nil {
			return err
		}
		if idx != nil {
			looked = looked[:0]
			for _, i := range idx {
				x, ok := pv.entry(i)
				if !ok {
					return errCorruptPage
				}
				looked = append(looked, x)
			}
			src = looked
		}
		vals, nulls, err = expand(vals, nulls, defs, src)
		return err
	})
	return vals, nulls, err
}

// pageValues gives the values of a column chunk's pages as slices of T:
// a plain page's own (or, of a narrower kind, widened into a scratch
// slice kept from page to page), or a dictionary page's indexes into its
// dictionary's values, converted once per dictionary into memory of the
// read's own.
type pageValues[T int64 | float64] struct {
	of       func(v encoding.Values, scratch []T) ([]T, bool)
	dict     parquet.Dictionary // the dictionary dictVals hold
	dictVals []T
	widened  []T
}

// values returns a page's values present (src) or, for a page that
// indexes a dictionary, its indexes (idx: see entry).
func (p *pageValues[T]) values(data encoding.Values, dict parquet.Dictionary) (src []T, idx []int32, err error) {
	if dict == nil {
		src, ok := p.of(data, p.widened[:0])
		if !ok {
			return nil, nil, errKind
		}
		if widens(data.Kind()) {
			p.widened = src // the scratch, kept for the next page
		}
		return src, nil, nil
	}
	if dict != p.dict {
		d, ok := p.of(dict.Page().Data(), nil)
		if !ok {
			return nil, nil, errKind
		}
		p.dictVals, p.dict = append(p.dictVals[:0], d...), dict
	}
	return nil, data.Int32(), nil
}

// entry is the dictionary's value i; false for an index past it.
func (p *pageValues[T]) entry(i int32) (T, bool) {
	if uint32(i) >= uint32(len(p.dictVals)) {
		var zero T
		return zero, false
	}
	return p.dictVals[i], true
}
