package delta

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
)

// CutDataFile writes the rows of a data file of tsdb's layout whose time
// is at or after cut as a new file, and returns its add action and how
// many rows it kept (no file when it kept none: the add is empty). It is
// retention's time cut: storage does it without the SQL engine, a row
// group at a time; what is kept of a row group stays one hour in file
// order, so the new file is in file order too. A file whose rows are not
// in file order (written before files were clustered) is refused with
// ErrUnsorted: its row groups would make the new file's sorting_columns
// untrue.
func CutDataFile(ctx context.Context, store Store, t schema.Table, path string, cut int64) (Add, int64, error) {
	r, err := openDataFile(ctx, store, t, path)
	if err != nil {
		return Add{}, 0, err
	}
	defer r.close()
	out, err := createDataFile(store)
	if err != nil {
		return Add{}, 0, err
	}
	w := newFileWriter(t, out)
	sch := t.ArrowSchema()
	var stats *Stats
	var kept int64
	var last *sortKey
	for {
		if err := ctx.Err(); err != nil {
			out.abort()
			return Add{}, 0, err
		}
		raw, err := r.next()
		if err != nil {
			out.abort()
			return Add{}, 0, err
		}
		if raw == nil {
			break
		}
		rec, err := keepFrom(t, sch, raw, cut)
		raw.Release()
		if err != nil {
			out.abort()
			return Add{}, 0, err
		}
		if rec == nil {
			continue
		}
		if err := checkFileOrder(t, rec, &last); err != nil {
			rec.Release()
			out.abort()
			return Add{}, 0, fmt.Errorf("%w: %s", err, path)
		}
		st := statsOf(t, rec)
		if stats == nil {
			stats = &st
		} else {
			merged := mergeStats(t, *stats, st)
			stats = &merged
		}
		kept += rec.NumRows()
		err = w.writeRowGroup(rec)
		rec.Release()
		if err != nil {
			out.abort()
			return Add{}, 0, err
		}
	}
	if kept == 0 {
		out.abort()
		return Add{}, 0, nil
	}
	if err := w.close(); err != nil {
		out.abort()
		return Add{}, 0, err
	}
	encoded, err := encodeStats(*stats)
	if err != nil {
		out.abort()
		return Add{}, 0, err
	}
	add, err := out.commit(ctx, store, encoded)
	return add, kept, err
}

// keepFrom returns the rows of rec whose time is at or after cut, padded
// to the table's columns, or nil if there are none.
func keepFrom(t schema.Table, sch *arrow.Schema, rec arrow.RecordBatch, cut int64) (arrow.RecordBatch, error) {
	wide := arrowutil.Pad(sch, rec)
	defer wide.Release()
	times, ok := wide.Column(t.TimeIndex).(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("delta: time column is %s, want timestamp", wide.Column(t.TimeIndex).DataType())
	}
	var rows []arrowutil.RowRef
	for i := range times.Len() {
		if int64(times.Value(i)) >= cut {
			rows = append(rows, arrowutil.RowRef{Row: i})
		}
	}
	switch len(rows) {
	case 0:
		return nil, nil
	case times.Len():
		wide.Retain()
		return wide, nil
	}
	return arrowutil.Take(sch, []arrow.RecordBatch{wide}, rows)
}

// checkFileOrder checks that rec's rows are in file order, within one
// hour, and not before *last (the last key of the record before it),
// which it moves on.
func checkFileOrder(t schema.Table, rec arrow.RecordBatch, last **sortKey) error {
	keys, err := newRowKeys(t, rec)
	if err != nil {
		return err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	first := keys.key(0)
	if *last != nil && first.compare(**last) < 0 {
		return ErrUnsorted
	}
	for i := 1; i < n; i++ {
		if k := keys.key(i); k.hour != first.hour || k.compare(keys.key(i-1)) < 0 {
			return ErrUnsorted
		}
	}
	end := keys.key(n - 1)
	end.tag = strings.Clone(end.tag)
	*last = &end
	return nil
}
