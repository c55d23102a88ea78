package planner

// What a transaction's statements read of a table it wrote: the committed
// rows of the statement's snapshot minus the transaction's tombstones, plus
// its pending rows. The pending records and the tombstones are copied into
// engine tables when a statement first needs them (in the mirror's layout,
// the record index as batch ID), and the table's session view becomes the
// union with an anti-join. DELETE and UPDATE read an identity view beside
// it, which names every row's source and row number there (_tsdb_src,
// _tsdb_row): the tombstones they write.

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"tsdb/internal/schema"
)

// Identity columns of the rows an identity view shows.
const (
	srcColumn    = "_tsdb_src"
	rowNumColumn = "_tsdb_row"
)

// identityView names the identity view of a table.
func identityView(table string) string { return "_tsdb_id_" + table }

// tombstoneSchema is the layout of a tombstone table.
var tombstoneSchema = arrow.NewSchema([]arrow.Field{
	{Name: srcColumn, Type: arrow.BinaryTypes.String},
	{Name: rowNumColumn, Type: arrow.PrimitiveTypes.Int64},
}, nil)

// ensureTxCopies brings the engine copies of a transaction's writes to a
// table up to date.
func (s *Session) ensureTxCopies(ctx context.Context, tt *txTable) error {
	if tt.created && tt.createdCols != len(tt.t.Columns) {
		// The table gained columns since the copy was made (another
		// session's ALTER TABLE): made again in its new shape.
		s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+tt.pending)
		s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+tt.tomb)
		tt.created = false
	}
	if !tt.created {
		n := s.p.txSeq.Add(1)
		tt.pending = fmt.Sprintf(`%s."tx_%d_p"`, mirrorSchema, n)
		tt.tomb = fmt.Sprintf(`%s."tx_%d_d"`, mirrorSchema, n)
		if err := createMirrorTable(ctx, s.conn, tt.t, tt.pending); err != nil {
			return engineError(err)
		}
		if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (%s VARCHAR, %s BIGINT)", tt.tomb, srcColumn, rowNumColumn)); err != nil {
			s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+tt.pending)
			return engineError(err)
		}
		tt.created, tt.createdCols, tt.syncedRecs, tt.syncedDels = true, len(tt.t.Columns), 0, 0
	}
	if tt.syncedRecs < len(tt.recs) {
		recs := make([]arrow.RecordBatch, 0, len(tt.recs)-tt.syncedRecs)
		ids := make([]uint64, 0, cap(recs))
		for i := tt.syncedRecs; i < len(tt.recs); i++ {
			recs = append(recs, tt.recs[i].rec)
			ids = append(ids, uint64(i))
		}
		if err := appendBatches(ctx, s.conn, tt.t, &mirrorTable{name: tt.pending}, recs, ids); err != nil {
			return engineError(err)
		}
		tt.syncedRecs = len(tt.recs)
	}
	if tt.syncedDels < len(tt.dels) {
		dels := tt.dels[tt.syncedDels:]
		err := appendArrow(ctx, s.conn, tt.tomb, tombstoneSchema, 1, func(int) (arrow.RecordBatch, error) {
			src := array.NewStringBuilder(memory.DefaultAllocator)
			defer src.Release()
			row := array.NewInt64Builder(memory.DefaultAllocator)
			defer row.Release()
			n := 0
			for _, d := range dels {
				for _, r := range d.rows {
					src.Append(d.src)
					row.Append(r)
					n++
				}
				if d.all {
					// Every row of the file, its deleted ones too: they
					// are not in the view anyway.
					for r := range d.whole {
						src.Append(d.src)
						row.Append(r)
						n++
					}
				}
			}
			return array.NewRecordBatch(tombstoneSchema, []arrow.Array{src.NewArray(), row.NewArray()}, int64(n)), nil
		})
		if err != nil {
			return engineError(err)
		}
		tt.syncedDels = len(tt.dels)
	}
	return nil
}

// truncateEngineCopies drops from the engine copies what ROLLBACK TO
// removed from a transaction's writes.
func (s *Session) truncateEngineCopies(ctx context.Context, tt *txTable) error {
	if !tt.created {
		return nil
	}
	if tt.syncedRecs > len(tt.recs) {
		if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s >= %d", tt.pending, batchColumn, len(tt.recs))); err != nil {
			return engineError(err)
		}
		tt.syncedRecs = len(tt.recs)
	}
	if tt.syncedDels > len(tt.dels) {
		// Tombstones carry no order in the engine: copied again.
		if _, err := s.conn.ExecContext(ctx, "DELETE FROM "+tt.tomb); err != nil {
			return engineError(err)
		}
		tt.syncedDels = 0
	}
	return nil
}

// txViews makes the session views of a table the running statement reads
// in a transaction that wrote it (tt, may be nil), or of the target of a
// DELETE or UPDATE (identity): the table's view and, when rows are named
// by source, its identity view.
func (s *Session) txViews(ctx context.Context, p *pruned, tt *txTable, identity bool) error {
	if tt != nil {
		if err := s.ensureTxCopies(ctx, tt); err != nil {
			return err
		}
	}
	snap := p.snap
	t := snap.Table
	name := t.Name
	ident := identity || (tt != nil && len(tt.dels) > 0)
	all := len(t.Columns)
	var parts []string
	counts, byCols := p.filesByColumns()
	for _, n := range counts {
		if ident {
			parts = append(parts, fmt.Sprintf("SELECT %s, %s, file_row_number AS %s FROM read_parquet([%s], filename = '%s', file_row_number = true)",
				fileColumnList(t, n), srcColumn, rowNumColumn, strings.Join(byCols[n], ", "), srcColumn))
		} else {
			parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet([%s])", fileColumnList(t, n), strings.Join(byCols[n], ", ")))
		}
	}
	keys, byLayout, layouts := p.layoutGroups()
	for _, k := range keys {
		list, files := layoutSelectList(t, layouts[k]), strings.Join(byLayout[k], ", ")
		if ident {
			parts = append(parts, fmt.Sprintf("SELECT %s, %s, file_row_number AS %s FROM read_parquet([%s], filename = '%s', file_row_number = true)",
				list, srcColumn, rowNumColumn, files, srcColumn))
		} else {
			parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet([%s])", list, files))
		}
	}
	for _, i := range p.filesWithDeletes() {
		list, file, keep := p.fileSelectList(i), schema.QuoteString(p.files[i]), keptRows(p.deletesIn(i))
		if ident {
			parts = append(parts, fmt.Sprintf("SELECT %s, %s, file_row_number AS %s FROM read_parquet(%s, filename = '%s', file_row_number = true) WHERE %s",
				list, srcColumn, rowNumColumn, file, srcColumn, keep))
		} else {
			parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet(%s, file_row_number = true) WHERE %s", list, file, keep))
		}
	}
	idCols := func() string {
		if !ident {
			return ""
		}
		return fmt.Sprintf(", 'b' || %s AS %s, CAST(%s AS BIGINT) AS %s", batchColumn, srcColumn, rowColumn, rowNumColumn)
	}
	list := selectList(t, all)
	if len(p.batchIDs) > 0 {
		parts = append(parts, fmt.Sprintf("SELECT %s%s FROM %s WHERE %s", list, idCols(), p.mirror, idPredicate(p.batchIDs)))
	}
	version := ""
	if tt != nil && len(tt.recs) > 0 {
		ids := ""
		if ident {
			ids = fmt.Sprintf(", 'p' || %s AS %s, CAST(%s AS BIGINT) AS %s", batchColumn, srcColumn, rowColumn, rowNumColumn)
		}
		parts = append(parts, fmt.Sprintf("SELECT %s%s FROM %s", selectList(t, min(len(tt.t.Columns), all)), ids, tt.pending))
	}
	if tt != nil {
		// The engine copies change without the views' text changing:
		// the counts make a changed copy a new view, and so drop the
		// session's plans over the old one.
		version = fmt.Sprintf(" /* %d %d */", tt.syncedRecs, tt.syncedDels)
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("SELECT %s%s FROM %s WHERE false", list, idCols(), p.mirror))
	}
	body := strings.Join(parts, " UNION ALL ")
	if tt != nil && len(tt.dels) > 0 {
		body = fmt.Sprintf("SELECT * FROM (%s) AS u WHERE NOT EXISTS (SELECT 1 FROM %s AS d WHERE d.%s = u.%s AND d.%s = u.%s)",
			body, tt.tomb, srcColumn, srcColumn, rowNumColumn, rowNumColumn)
	}
	track := func(view string) {
		if s.tx != nil {
			s.tx.views[view] = true
		}
	}
	if !ident {
		v := sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s%s", schema.QuoteIdent(name), body, version), tableID: t.ID, shape: viewShape(t)}
		track(name)
		return s.ensureView(ctx, name, v)
	}
	idName := identityView(name)
	iv := sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s%s", schema.QuoteIdent(idName), body, version), tableID: t.ID, shape: viewShape(t) + " id"}
	track(idName)
	if err := s.ensureView(ctx, idName, iv); err != nil {
		return err
	}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = schema.QuoteIdent(c.Name)
	}
	v := sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS SELECT %s FROM %s%s", schema.QuoteIdent(name), strings.Join(cols, ", "), schema.QuoteIdent(idName), version),
		tableID: t.ID, shape: viewShape(t)}
	track(name)
	return s.ensureView(ctx, name, v)
}
