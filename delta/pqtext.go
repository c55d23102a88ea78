package delta

import (
	"bytes"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// Text column chunks read directly (pqscan.go), as a dictionary of their
// values and a code per row.

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
