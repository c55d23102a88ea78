package planner

import (
	"fmt"
	"strconv"
	"strings"

	"tsdb/delta"
)

// Rows another Delta writer deleted by deletion vector are positions in
// their data file; the engine numbers a Parquet file's rows the same way
// (read_parquet's file_row_number), so a file with a vector is read with
// its positions and filtered. Such files are rare (tsdb deletes by
// rewriting) and each is its own read_parquet.

// keptRows is the condition on file_row_number that keeps the rows not in
// deleted: runs of three or more positions as ranges, the rest as a list.
func keptRows(deleted delta.RowSet) string {
	var singles []string
	var conds []string
	deleted.Runs(func(first, last uint64) {
		if last-first >= 2 {
			conds = append(conds, fmt.Sprintf("file_row_number NOT BETWEEN %d AND %d", first, last))
			return
		}
		for r := first; r <= last; r++ {
			singles = append(singles, strconv.FormatUint(r, 10))
		}
	})
	if len(singles) > 0 {
		conds = append(conds, "file_row_number NOT IN ("+strings.Join(singles, ", ")+")")
	}
	return strings.Join(conds, " AND ")
}

// deletesIn returns the rows deleted from the i-th file of p.
func (p *pruned) deletesIn(i int) delta.RowSet {
	if i < len(p.fileDeleted) {
		return p.fileDeleted[i]
	}
	return delta.RowSet{}
}
