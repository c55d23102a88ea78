package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
)

// rowGroupRows bounds a Parquet row group. Files are in file order
// (order.go), so each row group covers an hour or less and, within it, a
// range of cluster values (hosts); DuckDB skips groups by their stats.
// Smaller groups skip more precisely and cost more per group: on the
// bench's 100 hosts, 8,192 rows took a third to a half off one-host queries
// over 8 and 12 hours against 32,768, and added up to a fifth to queries
// over all hosts; 4,096 was slower than 8,192 on most queries.
const rowGroupRows = 8 * 1024

// maxStringStat is the longest string kept as a max statistic: a truncated
// maximum would be smaller than the real one and prune wrongly, so longer
// maxima are left out.
const maxStringStat = 64

// WriteDataFile sorts the batches in file order (order.go), writes them as
// one Parquet file in the table's store and returns its add action with
// statistics. The file is durable when it returns; it is part of the table
// only once an add for it is committed.
func WriteDataFile(ctx context.Context, store Store, t schema.Table, batches []arrow.RecordBatch) (Add, error) {
	rec, err := sortedRecord(t, batches)
	if err != nil {
		return Add{}, err
	}
	defer rec.Release()
	stats, err := encodeStats(statsOf(t, rec))
	if err != nil {
		return Add{}, err
	}
	out, err := createDataFile(store)
	if err != nil {
		return Add{}, err
	}
	w := newFileWriter(t, out)
	if err := writeByHour(w, t, rec); err != nil {
		out.abort()
		return Add{}, err
	}
	if err := w.close(); err != nil {
		out.abort()
		return Add{}, err
	}
	return out.commit(ctx, store, stats)
}

// writeByHour writes a record in file order with row groups of at most
// rowGroupRows rows that never span two hours: a group spanning the end of
// one hour and the start of the next would hold every host.
func writeByHour(w *fileWriter, t schema.Table, rec arrow.RecordBatch) error {
	keys, err := newRowKeys(t, rec)
	if err != nil {
		return err
	}
	n := int(rec.NumRows())
	for start := 0; start < n; {
		hour := keys.key(start).hour
		end := start + 1
		for end < n && end-start < rowGroupRows && keys.key(end).hour == hour {
			end++
		}
		part := rec.NewSlice(int64(start), int64(end))
		err := w.writeRowGroup(part)
		part.Release()
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}

// sortedRecord concatenates the batches and orders the rows in file order
// (order.go), stable, so rows with equal keys keep their insertion order.
// Batches written before columns were added get NULL in them.
func sortedRecord(t schema.Table, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	sch := t.ArrowSchema()
	padded := make([]arrow.RecordBatch, len(batches))
	for i, b := range batches {
		padded[i] = arrowutil.Pad(sch, b)
		defer padded[i].Release()
	}
	batches = padded
	rows, err := fileOrder(t, batches)
	if err != nil {
		return nil, err
	}
	if len(batches) == 1 && inOrder(rows) {
		// Already in file order (a rewrite keeps a file's order): no copy.
		batches[0].Retain()
		return batches[0], nil
	}
	rec, err := arrowutil.Take(sch, batches, rows)
	if err != nil {
		return nil, fmt.Errorf("delta: %w", err)
	}
	return rec, nil
}

// inOrder reports whether rows are the rows of one record in its order.
func inOrder(rows []arrowutil.RowRef) bool {
	for i, r := range rows {
		if r.Rec != 0 || r.Row != i {
			return false
		}
	}
	return true
}

// FormatTimestampStat renders micros the way Delta stats store timestamps:
// ISO-8601 UTC with milliseconds.
func FormatTimestampStat(micros int64) string {
	return time.UnixMicro(micros).UTC().Format("2006-01-02T15:04:05.000Z")
}

// formatNTZStat renders a timestamp_ntz bound as Delta stats store it:
// ISO-8601 with milliseconds and no zone.
func formatNTZStat(micros int64) string {
	return time.UnixMicro(micros).UTC().Format("2006-01-02T15:04:05.000")
}

// minStatDate and maxStatDate are 0001-01-01 and 9999-12-31 in days
// since 1970.
const (
	minStatDate = -719162
	maxStatDate = 2932896
)

// formatDateStat renders days since 1970 as Delta stats store dates.
func formatDateStat(days int32) string {
	return time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02")
}

// statsOf computes add.stats of a record: numRecords, nullCount for every
// column, min/max for every column but booleans. Timestamp bounds are
// rounded outward to whole milliseconds so that they stay valid bounds
// after Delta's millisecond truncation.
func statsOf(t schema.Table, rec arrow.RecordBatch) Stats {
	s := Stats{NumRecords: rec.NumRows(), MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]any{}}
	for ci, c := range t.Columns {
		col := rec.Column(ci)
		s.NullCount[c.FileName()] = col.NullN()
		if col.NullN() == col.Len() {
			continue
		}
		switch a := col.(type) {
		case *array.Timestamp:
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			for i := 0; i < a.Len(); i++ {
				if a.IsValid(i) {
					v := int64(a.Value(i))
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			lo = floorDiv(lo, 1000) * 1000
			hi = -floorDiv(-hi, 1000) * 1000
			if c.StoredAsInstant() {
				s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = FormatTimestampStat(lo), FormatTimestampStat(hi)
			} else {
				// timestamp_ntz: a wall clock, written without a zone.
				s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = formatNTZStat(lo), formatNTZStat(hi)
			}
		case *array.Int64:
			lo, hi := minMax(a.Len(), a.IsValid, func(i int) int64 { return a.Value(i) })
			s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = lo, hi
		case *array.Int32:
			lo, hi := minMax(a.Len(), a.IsValid, func(i int) int32 { return a.Value(i) })
			s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = lo, hi
		case *array.Int16:
			lo, hi := minMax(a.Len(), a.IsValid, func(i int) int16 { return a.Value(i) })
			s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = lo, hi
		case *array.Float64:
			lo, hi, ok := floatMinMax(a.Len(), a.IsValid, func(i int) float64 { return a.Value(i) })
			if ok {
				s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = lo, hi
			}
		case *array.Float32:
			lo, hi, ok := floatMinMax(a.Len(), a.IsValid, func(i int) float64 { return float64(a.Value(i)) })
			if ok {
				s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = lo, hi
			}
		case *array.Date32:
			lo, hi := minMax(a.Len(), a.IsValid, func(i int) int32 { return int32(a.Value(i)) })
			// Readers parse the bounds as yyyy-mm-dd: a date outside
			// years 1–9999 (BC, infinity) leaves them out.
			if lo >= minStatDate && hi <= maxStatDate {
				s.MinValues[c.FileName()], s.MaxValues[c.FileName()] = formatDateStat(lo), formatDateStat(hi)
			}
		case *array.String:
			lo, hi := minMax(a.Len(), a.IsValid, func(i int) string { return a.Value(i) })
			// A prefix of the minimum is still a lower bound.
			if len(lo) > maxStringStat {
				lo = truncateUTF8(lo, maxStringStat)
			}
			s.MinValues[c.FileName()] = lo
			if len(hi) <= maxStringStat {
				s.MaxValues[c.FileName()] = hi
			}
		}
	}
	return s
}

func encodeStats(s Stats) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("delta: encode stats: %w", err)
	}
	return string(b), nil
}

// mergeStats combines the stats of two parts of one file of table t. A
// bound is kept where both parts have one, or where one has it and the
// other part is all NULL; a part with values but no bound (all NaN or
// infinite floats, a string too long for a maximum) makes the bound
// unknown, so it is left out.
func mergeStats(t schema.Table, a, b Stats) Stats {
	out := Stats{NumRecords: a.NumRecords + b.NumRecords, MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]any{}}
	for _, c := range t.Columns {
		an, bn := toInt(a.NullCount[c.FileName()]), toInt(b.NullCount[c.FileName()])
		out.NullCount[c.FileName()] = an + bn
		aAll, bAll := an == a.NumRecords, bn == b.NumRecords
		for _, m := range []struct {
			a, b, out map[string]any
			min       bool
		}{{a.MinValues, b.MinValues, out.MinValues, true}, {a.MaxValues, b.MaxValues, out.MaxValues, false}} {
			av, aok := m.a[c.FileName()]
			bv, bok := m.b[c.FileName()]
			switch {
			case aok && bok:
				if v, ok := pick(c.Type, av, bv, m.min); ok {
					m.out[c.FileName()] = v
				}
			case aok && bAll:
				m.out[c.FileName()] = av
			case bok && aAll:
				m.out[c.FileName()] = bv
			}
		}
	}
	return out
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

// pick returns the smaller (min) or larger of two stat values of a column
// of type ty, as statsOf made them; false when they cannot be compared.
// Timestamps compare as times: their text sorts wrongly past year 9999.
func pick(ty schema.Type, a, b any, min bool) (any, bool) {
	var less bool
	switch x := a.(type) {
	case int64:
		less = x < b.(int64)
	case int32:
		less = x < b.(int32)
	case int16:
		less = x < b.(int16)
	case float64:
		less = x < b.(float64)
	case string:
		if ty.IsTimestamp() {
			at, err1 := time.Parse(time.RFC3339Nano, x)
			bt, err2 := time.Parse(time.RFC3339Nano, b.(string))
			if err1 != nil || err2 != nil {
				return nil, false
			}
			less = at.Before(bt)
		} else {
			less = x < b.(string)
		}
	default:
		return nil, false
	}
	if less == min {
		return a, true
	}
	return b, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func minMax[T int64 | int32 | int16 | string](n int, valid func(int) bool, get func(int) T) (T, T) {
	var lo, hi T
	first := true
	for i := 0; i < n; i++ {
		if !valid(i) {
			continue
		}
		v := get(i)
		if first {
			lo, hi, first = v, v, false
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// floatMinMax skips NaN; infinities cannot be written in JSON, so a column
// holding one gets no bounds (readers then never prune it).
func floatMinMax(n int, valid func(int) bool, get func(int) float64) (float64, float64, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		if !valid(i) {
			continue
		}
		v := get(i)
		if math.IsNaN(v) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, 0, false
	}
	return lo, hi, true
}

func truncateUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
