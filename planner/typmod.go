package planner

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// applyTypmods makes rows written to tbl obey its columns' type modifiers,
// as PostgreSQL's input does: a varchar(n) value longer than n characters
// is refused (22001) unless what is past n is spaces, which are cut (a
// character(n) value loses all its trailing spaces, see
// schema.Column.Padded); a
// timestamp(p) value is rounded to p digits of a second, halves away from
// zero. Records that need no change are returned as they are.
func applyTypmods(tbl schema.Table, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	var mods []int
	for i, c := range tbl.Columns {
		if _, ok := c.Precision(); ok || c.MaxLength > 0 {
			mods = append(mods, i)
		}
	}
	if len(mods) == 0 {
		return recs, nil
	}
	out := make([]arrow.RecordBatch, len(recs))
	for r, rec := range recs {
		cols := rec.Columns()
		changed := false
		for _, i := range mods {
			if i >= len(cols) {
				continue
			}
			col, err := applyTypmod(tbl.Columns[i], cols[i])
			if err != nil {
				return nil, err
			}
			if col != nil {
				if !changed {
					cols = append([]arrow.Array(nil), cols...)
					changed = true
				}
				cols[i] = col
			}
		}
		out[r] = rec
		if changed {
			out[r] = array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
		}
	}
	return out, nil
}

// applyTypmod returns the column's values made to fit c, or nil when they
// fit as they are.
func applyTypmod(c schema.Column, a arrow.Array) (arrow.Array, error) {
	if c.Type == schema.Bit || c.Type == schema.VarBit {
		// Checked, never fitted: PostgreSQL's assignment of a bit
		// string of another length fails.
		x := a.(*array.String)
		for i := 0; i < x.Len(); i++ {
			if x.IsValid(i) {
				if err := dialect.CheckBitLength(x.Value(i), c.MaxLength, c.Type == schema.VarBit); err != nil {
					return nil, err
				}
			}
		}
		return nil, nil
	}
	switch x := a.(type) {
	case *array.String:
		n := c.MaxLength
		if n <= 0 {
			return nil, nil
		}
		var b *array.StringBuilder
		for i := 0; i < x.Len(); i++ {
			v := x.Value(i)
			fixed := v
			if x.IsValid(i) && len(v) > n && utf8.RuneCountInString(v) > n {
				// cut is where the (n+1)-th character starts.
				cut, k := len(v), 0
				for pos := range v {
					if k == n {
						cut = pos
						break
					}
					k++
				}
				if strings.TrimRight(v[cut:], " ") != "" {
					return nil, sqlerr.New("22001", "value too long for type %s", c.TypeText())
				}
				fixed = v[:cut]
			}
			if c.Padded {
				// character(n) keeps no trailing spaces (schema.Column.Padded).
				fixed = strings.TrimRight(fixed, " ")
			}
			if fixed != v && b == nil {
				b = array.NewStringBuilder(memory.DefaultAllocator)
				for j := 0; j < i; j++ {
					appendString(b, x, j, x.Value(j))
				}
			}
			if b != nil {
				appendString(b, x, i, fixed)
			}
		}
		if b == nil {
			return nil, nil
		}
		return b.NewArray(), nil
	case *array.Timestamp:
		p, ok := c.Precision()
		if !ok {
			return nil, nil
		}
		scale := int64(math.Pow10(6 - p))
		var b *array.TimestampBuilder
		for i := 0; i < x.Len(); i++ {
			v := int64(x.Value(i))
			r := roundMicros(v, scale)
			if r != v && b == nil {
				b = array.NewTimestampBuilder(memory.DefaultAllocator, x.DataType().(*arrow.TimestampType))
				for j := 0; j < i; j++ {
					if x.IsValid(j) {
						b.Append(x.Value(j))
					} else {
						b.AppendNull()
					}
				}
			}
			if b != nil {
				if x.IsValid(i) {
					b.Append(arrow.Timestamp(r))
				} else {
					b.AppendNull()
				}
			}
		}
		if b == nil {
			return nil, nil
		}
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("planner: type modifier on a column of %s", a.DataType())
}

func appendString(b *array.StringBuilder, x *array.String, i int, v string) {
	if x.IsValid(i) {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}

// roundMicros rounds microseconds to a multiple of scale, halves away from
// zero (PostgreSQL's AdjustTimestampForTypmod); infinities stay (the
// engine's -infinity is -MaxInt64).
func roundMicros(v, scale int64) int64 {
	switch {
	case v == math.MaxInt64 || v <= -math.MaxInt64 || scale <= 1:
		return v
	case v >= 0:
		return (v + scale/2) / scale * scale
	default:
		return -((-v + scale/2) / scale * scale)
	}
}

// typmodSQL wraps an expression written to column c in what applies c's
// modifier in the engine (an UPDATE's SET).
func typmodSQL(c schema.Column, expr string) string {
	if c.Type == schema.Bit || c.Type == schema.VarBit {
		// A bit string or text, never an integer (dialect.BitAssign);
		// its length checked, never fitted, as PostgreSQL's assignment.
		expr = fmt.Sprintf("_tsdb_bit_assigned(%s, %s, '%s')", expr, schema.QuoteString(c.Name), c.Type)
		if c.MaxLength == 0 {
			return expr
		}
		return fmt.Sprintf("_tsdb_bit_assign(%s, %d, %t)", expr, c.MaxLength, c.Type == schema.VarBit)
	}
	if p, ok := c.Precision(); ok {
		return fmt.Sprintf("_tsdb_round_ts(%s, %d)", expr, int64(math.Pow10(6-p)))
	}
	if c.Padded {
		return fmt.Sprintf("rtrim(_tsdb_bpchar(CAST(%s AS VARCHAR), %d), ' ')", expr, c.MaxLength)
	}
	if c.MaxLength > 0 {
		return fmt.Sprintf("_tsdb_varchar(CAST(%s AS VARCHAR), %d)", expr, c.MaxLength)
	}
	if c.Type == schema.Bytea {
		// Text written to bytea reads by PostgreSQL's input rules (the
		// engine's cast reads \x00ff as one byte and four letters).
		return fmt.Sprintf("_tsdb_bytea(%s)", expr)
	}
	return expr
}
