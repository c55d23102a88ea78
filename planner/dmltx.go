package planner

// DELETE and UPDATE evaluated once, over one snapshot, into their effect:
// the rows they delete, named by where they are, and for UPDATE the new
// version of each. That is what a transaction keeps and logs at COMMIT;
// a statement outside a block runs in a transaction of its own. A replay
// applies the effect with no SQL engine, so a statement the engine could
// not evaluate the same way twice (a join, a subquery, random(), now())
// replays exactly, and never touches rows inserted after it.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// Engine objects of a statement being evaluated, temporary on the
// session's connection.
const (
	dmlRowsTable  = "_tsdb_txu" // the rows a DELETE or UPDATE changes
	returningView = "_tsdb_ret" // the rows RETURNING reads
)

// dmlEffect runs a DELETE or UPDATE in the session's transaction, or in
// one of its own that commits when it succeeds.
func (s *Session) dmlEffect(ctx context.Context, node *pg_query.Node) (*Result, error) {
	if s.tx != nil {
		return s.dmlInTx(ctx, node)
	}
	s.tx = s.newTx(true)
	res, err := s.dmlInTx(ctx, node)
	if err != nil {
		s.rollbackTx(ctx)
		return nil, err
	}
	if err := s.commitTx(ctx); err != nil {
		if res.Rows != nil {
			res.Rows.Close()
		}
		return nil, err
	}
	return res, nil
}

// dmlStatement is the parts of a DELETE or UPDATE.
type dmlStatement struct {
	op        string
	rel       *pg_query.RangeVar
	where     *pg_query.Node
	from      []*pg_query.Node // USING or FROM
	with      *pg_query.WithClause
	returning []*pg_query.Node
	targets   []*pg_query.Node // UPDATE's SET list
}

func splitDML(node *pg_query.Node) dmlStatement {
	switch n := node.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		d := n.DeleteStmt
		return dmlStatement{op: "DELETE", rel: d.Relation, where: d.WhereClause, from: d.UsingClause, with: d.WithClause, returning: d.ReturningList}
	case *pg_query.Node_UpdateStmt:
		u := n.UpdateStmt
		return dmlStatement{op: "UPDATE", rel: u.Relation, where: u.WhereClause, from: u.FromClause, with: u.WithClause, returning: u.ReturningList, targets: u.TargetList}
	}
	return dmlStatement{}
}

func columnRef(fields ...string) *pg_query.Node {
	nodes := make([]*pg_query.Node, len(fields))
	for i, f := range fields {
		nodes[i] = pg_query.MakeStrNode(f)
	}
	return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: nodes}}}
}

func resTarget(name string, val *pg_query.Node) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name, Val: val}}}
}

// assignments maps each column an UPDATE sets to its new value.
func assignments(tbl schema.Table, targets []*pg_query.Node) (map[string]*pg_query.Node, error) {
	sets := map[string]*pg_query.Node{}
	for _, t := range targets {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		if len(rt.Indirection) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE of sub-fields is not supported")
		}
		if tbl.ColumnIndex(rt.Name) < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", rt.Name, tbl.Name)
		}
		if _, dup := sets[rt.Name]; dup {
			return nil, sqlerr.New(sqlerr.SyntaxError, "multiple assignments to same column %q", rt.Name)
		}
		val := rt.Val
		if m := val.GetMultiAssignRef(); m != nil {
			// SET (a, b) = (1, 2): the row's colno-th value.
			row := m.Source.GetRowExpr()
			if row == nil || int(m.Colno) > len(row.Args) {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE … SET (columns) = (SELECT …) is not supported; assign each column")
			}
			val = row.Args[m.Colno-1]
		}
		if val.GetSetToDefault() != nil {
			val = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}
		}
		sets[rt.Name] = val
	}
	return sets, nil
}

// dmlInTx evaluates a DELETE or UPDATE in the session's transaction.
func (s *Session) dmlInTx(ctx context.Context, node *pg_query.Node) (*Result, error) {
	d := splitDML(node)
	if err := s.writableTx(d.op); err != nil {
		return nil, err
	}
	tbl, alias, err := s.targetTable(d.rel, d.returning)
	if err != nil {
		return nil, err
	}
	name := tbl.Name
	var sets map[string]*pg_query.Node
	if d.op == "UPDATE" {
		if sets, err = assignments(tbl, d.targets); err != nil {
			return nil, err
		}
	}
	tx := s.tx
	// The rows are named where they are: they must stay there until the
	// transaction ends.
	if err := tx.lock(ctx, s, name); err != nil {
		return nil, err
	}
	if err := s.checkUnchanged(ctx, name, false); err != nil {
		return nil, err
	}
	tt, err := tx.tableFor(s, name)
	if err != nil {
		return nil, err
	}
	tbl = tt.t
	if cur, ok := s.p.store.Table(name); ok && len(cur.Columns) > len(tbl.Columns) {
		tbl = cur
	}

	// SELECT DISTINCT ON (source, row) source, row, <the new row>
	// FROM <identity view> AS alias [, USING/FROM …] WHERE … : each
	// changed row once, however many rows of a join match it.
	target := &pg_query.RangeVar{Relname: name, Inh: true, Relpersistence: "p", Alias: &pg_query.Alias{Aliasname: alias}}
	list := []*pg_query.Node{resTarget(srcColumn, columnRef(alias, srcColumn)), resTarget(rowNumColumn, columnRef(alias, rowNumColumn))}
	for _, c := range tbl.Columns {
		val := columnRef(alias, c.Name)
		if e, ok := sets[c.Name]; ok {
			if c.Type == schema.Bit || c.Type == schema.VarBit {
				val = dialect.BitAssign(e, c.Name, c.Type == schema.VarBit) // its length: applyTypmods
			} else {
				val = sqltree.Cast(e, c.Type.UDTName())
				if c.Type == schema.Decimal {
					// numeric(p, s): the value rounded to the column's
					// scale, as PostgreSQL assigns it.
					val.GetTypeCast().TypeName.Typmods = []*pg_query.Node{pg_query.MakeAConstIntNode(int64(c.Digits), -1), pg_query.MakeAConstIntNode(int64(c.Scale), -1)}
				}
			}
		}
		list = append(list, resTarget(c.Name, val))
	}
	sel := &pg_query.SelectStmt{
		TargetList:  list,
		FromClause:  append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: target}}}, d.from...),
		WhereClause: d.where,
		WithClause:  d.with,
		Op:          pg_query.SetOperation_SETOP_NONE,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	if len(d.from) > 0 {
		sel.DistinctClause = []*pg_query.Node{columnRef(alias, srcColumn), columnRef(alias, rowNumColumn)}
	}
	// Before the table is renamed to its identity view: the column types
	// come from the table.
	s.typeOperands(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}})
	r, err := collectRefs(sel, s)
	if err != nil {
		return nil, err
	}
	b, err := s.bindOpts(ctx, r.tables, sel, bindOptions{identity: name})
	if err != nil {
		return nil, err
	}
	defer b.done()
	var snapPruned *pruned
	for _, p := range b.pruned {
		if p.snap.Table.Name == name {
			snapPruned = p
		}
	}
	target.Relname = identityView(name)
	selNode := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}
	if err := s.rewriteDateTimes(selNode); err != nil {
		return nil, err
	}
	dialect.RewriteTree(selNode.ProtoReflect(), s.settings.Input(s.statementTime()))
	text, err := deparse(s.p.pgVersion, selNode)
	if err != nil {
		return nil, err
	}
	if d.op == "DELETE" && len(d.returning) == 0 {
		// Nothing but where the rows are is needed: read as the engine
		// finds them, never stored in between.
		sel.TargetList = list[:2]
		if text, err = deparse(s.p.pgVersion, selNode); err != nil {
			return nil, err
		}
		runs, n, err := s.scanTombstones(ctx, text, fileRowsLeft(snapPruned.snap))
		if err != nil {
			return nil, err
		}
		if n > 0 {
			if err := tx.addTombstones(s, tt, snapPruned.snap, runs); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: fmt.Sprintf("DELETE %d", n)}, nil
	}
	if err := s.execGuarded(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s", dmlRowsTable, text)); err != nil {
		return nil, engineError(err)
	}
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp.main."+dmlRowsTable)

	var n int64
	if err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+dmlRowsTable).Scan(&n); err != nil {
		return nil, engineError(err)
	}
	if d.op == "UPDATE" {
		for _, c := range tbl.Columns {
			if _, set := sets[c.Name]; !set || !c.NotNull {
				continue
			}
			var nulls int64
			if err := s.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", dmlRowsTable, schema.QuoteIdent(c.Name))).Scan(&nulls); err != nil {
				return nil, engineError(err)
			}
			if nulls > 0 {
				return nil, &sqlerr.Error{Code: sqlerr.NotNullViolation, Message: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c.Name, name)}
			}
		}
	}
	cols := make([]string, len(tbl.Columns))
	for i, c := range tbl.Columns {
		cols[i] = schema.QuoteIdent(c.Name)
	}
	// In the order the rows are stored — files ("/…"), buffered batches
	// ("b<ID>") by ID, then the transaction's own ("p<n>") — which is the
	// order RETURNING shows them in.
	rowsSQL := fmt.Sprintf("SELECT %s FROM %s ORDER BY left(%s, 1), length(%s), %s, %s", strings.Join(cols, ", "), dmlRowsTable, srcColumn, srcColumn, srcColumn, rowNumColumn)
	res := &Result{Tag: fmt.Sprintf("%s %d", d.op, n)}
	if len(d.returning) > 0 {
		// Evaluated before anything changes: an error in it fails the
		// statement with nothing done.
		if res.Columns, res.Rows, err = s.returning(ctx, name, alias, d.returning, rowsSQL); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return res, nil
	}
	runs, _, err := s.scanTombstones(ctx, fmt.Sprintf("SELECT %s, %s FROM %s", srcColumn, rowNumColumn, dmlRowsTable), fileRowsLeft(snapPruned.snap))
	if err != nil {
		return nil, err
	}
	if d.op == "UPDATE" {
		// The new versions of rows of data files go into a file of the
		// commit that rewrites those files, the others into the buffer:
		// another reader of the table sees each row once, old or new.
		fromFiles := fmt.Sprintf("left(%s, 1) NOT IN ('b', 'p')", srcColumn)
		for _, toFile := range []bool{true, false} {
			cond := fromFiles
			if !toFile {
				cond = "NOT " + fromFiles
			}
			rec, err := s.scanTableRecord(ctx, tbl, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), dmlRowsTable, cond))
			if err != nil {
				return nil, err
			}
			recs, err := applyTypmods(tbl, []arrow.RecordBatch{rec})
			if err != nil {
				return nil, err
			}
			if _, err := tx.insertAs(s, name, recs, toFile); err != nil {
				return nil, err
			}
		}
	}
	if err := tx.addTombstones(s, tt, snapPruned.snap, runs); err != nil {
		return nil, err
	}
	return res, nil
}

// checkReturning refuses a RETURNING list that names another relation
// than the one the statement changes: it is evaluated over that
// relation's rows alone.
func checkReturning(list []*pg_query.Node, alias, table string) error {
	for _, it := range list {
		err := sqltree.Walk(it.ProtoReflect(), func(m proto.Message) error {
			switch x := m.(type) {
			case *pg_query.ColumnRef:
				if len(x.Fields) >= 2 {
					if q := x.Fields[0].GetString_(); q != nil && q.Sval != alias && q.Sval != table {
						return sqlerr.New(sqlerr.FeatureNotSupported, "RETURNING may name only the columns of %q, not of %q", table, q.Sval)
					}
				}
			case *pg_query.SubLink:
				return sqlerr.New(sqlerr.FeatureNotSupported, "subqueries in RETURNING are not supported")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// returning evaluates a RETURNING list over the rows source (SQL with the
// columns of table) as relation alias, into rows held in memory.
func (s *Session) returning(ctx context.Context, table, alias string, list []*pg_query.Node, source string) ([]Column, Rows, error) {
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s", returningView, source)); err != nil {
		return nil, nil, engineError(err)
	}
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS temp.main."+returningView)
	sel := returningSelect(returningView, alias, list)
	node := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}
	asWritten := proto.Clone(sel).(*pg_query.SelectStmt)
	dialect.RewriteTree(node.ProtoReflect(), s.settings.Input(s.statementTime()))
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.engineQuerier().QueryContext(ctx, text)
	if err != nil {
		return nil, nil, engineError(err)
	}
	defer rows.Close()
	cols, err := sqlColumns(rows)
	if err != nil {
		return nil, nil, engineError(err)
	}
	nameColumns(cols, asWritten)
	// character(n) columns shown padded, as the table's.
	if err := s.padCharacters(cols, returningSelect(table, alias, list)); err != nil {
		return nil, nil, err
	}
	var out [][]any
	for rows.Next() {
		vals, err := scanValues(rows, len(cols))
		if err != nil {
			return nil, nil, engineError(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, engineError(err)
	}
	return cols, NewStaticRows(out), nil
}

// returningSelect is SELECT <list> FROM relation AS alias.
func returningSelect(relation, alias string, list []*pg_query.Node) *pg_query.SelectStmt {
	targets := make([]*pg_query.Node, len(list))
	for i, it := range list {
		targets[i] = proto.Clone(it).(*pg_query.Node)
	}
	rv := &pg_query.RangeVar{Relname: relation, Inh: true, Relpersistence: "p", Alias: &pg_query.Alias{Aliasname: alias}}
	return &pg_query.SelectStmt{TargetList: targets, FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rv}}},
		Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
}

// sqlColumns describes the columns of rows the PostgreSQL way.
func sqlColumns(rows *sql.Rows) ([]Column, error) {
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(names))
	for i := range names {
		cols[i] = columnFor(names[i], types[i].DatabaseTypeName())
	}
	return cols, nil
}

// execGuarded runs a statement that makes the engine plan client SQL on
// the session's connection, as engineCall: a cancel answers while the
// engine plans.
// scanTombstones runs q, whose rows are (source, row number) pairs, and
// gathers the row numbers by source. It reads the engine's vectors as
// they come: a statement deleting millions of rows makes no Go value per
// row, only per source. A run that reaches the rows left of a file (left,
// fileRowsLeft) is every row of it and drops its row numbers at once:
// a DELETE of a large table's old files holds one file's numbers at most.
func (s *Session) scanTombstones(ctx context.Context, q string, left map[string][2]int64) ([]tombRun, int64, error) {
	p, err := s.prepare(ctx, q)
	if err != nil {
		return nil, 0, engineError(err)
	}
	defer p.close()
	if !slices.Equal(p.kinds, []Kind{KindString, KindInt64}) {
		return nil, 0, fmt.Errorf("planner: the rows a statement changes are named by %v, not a source and a row number", p.kinds)
	}
	rows, err := runChunks(ctx, s, p.raw, p.kinds)
	if err != nil {
		return nil, 0, engineError(err)
	}
	defer rows.Close()
	var runs []tombRun
	// rowsLeft[j] are the rows left of run j's file, -1 when unknown:
	// looked up once per source, not per row.
	var rowsLeft []int64
	at := map[string]int{}
	last := -1
	var n int64
	for {
		c, ok := rows.NextChunk()
		if !ok {
			break
		}
		src, row := c.Column(0), c.Column(1)
		for i := range c.Len() {
			b := src.Bytes(i)
			// Rows come in long stretches of one source.
			if last < 0 || runs[last].src != string(b) {
				j, ok := at[string(b)]
				if !ok {
					j = len(runs)
					runs = append(runs, tombRun{src: string(b)})
					at[runs[j].src] = j
					counts, known := left[runs[j].src]
					rowsLeft = append(rowsLeft, -1)
					if known {
						rowsLeft[j], runs[j].whole = counts[0], counts[1]
					}
				}
				last = j
			}
			r := &runs[last]
			if r.all {
				return nil, 0, fmt.Errorf("planner: more rows of %s than it holds", r.src)
			}
			r.rows = append(r.rows, row.Int64(i))
			if int64(len(r.rows)) == rowsLeft[last] {
				r.all, r.rows = true, nil
			}
		}
		n += int64(c.Len())
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return runs, n, nil
}

// typeKinds are the kinds the engine gives columns of these types in; a
// column of another type is read only through database/sql.
var typeKinds = map[schema.Type]Kind{
	schema.Timestamptz: KindTimestampTZ, schema.Timestamp: KindTimestamp, schema.Date: KindDate,
	schema.Int64: KindInt64, schema.Int32: KindInt32, schema.Int16: KindInt16,
	schema.Float64: KindFloat64, schema.Float32: KindFloat32, schema.Bool: KindBool, schema.Text: KindString,
}

// chunkKinds are the kinds of t's columns, or nil when one has none.
func chunkKinds(t schema.Table) []Kind {
	kinds := make([]Kind, len(t.Columns))
	for i, c := range t.Columns {
		k, ok := typeKinds[c.Type]
		if !ok {
			return nil
		}
		kinds[i] = k
	}
	return kinds
}

// scanTableRecord is scanRecord read from the engine's vectors straight
// into Arrow builders, when every column of tbl has a kind: an UPDATE of
// a million rows boxes no value.
func (s *Session) scanTableRecord(ctx context.Context, tbl schema.Table, q string) (arrow.RecordBatch, error) {
	want := chunkKinds(tbl)
	if want == nil {
		return scanRecord(ctx, s.engineQuerier(), tbl, q)
	}
	p, err := s.prepare(ctx, q)
	if err != nil {
		return nil, engineError(err)
	}
	defer p.close()
	if !slices.Equal(p.kinds, want) {
		return scanRecord(ctx, s.engineQuerier(), tbl, q)
	}
	rows, err := runChunks(ctx, s, p.raw, p.kinds)
	if err != nil {
		return nil, engineError(err)
	}
	defer rows.Close()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	for {
		c, ok := rows.NextChunk()
		if !ok {
			break
		}
		for i := range c.Columns() {
			appendVector(bld.Field(i), c.Column(i), c.Len())
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return bld.NewRecordBatch(), nil
}

// appendVector appends a vector's n values to b, a builder of the Arrow
// type the vector's kind holds (chunkKinds).
func appendVector(b array.Builder, v *Vector, n int) {
	b.Reserve(n)
	for r := range n {
		if v.Null(r) {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.TimestampBuilder:
			bb.UnsafeAppend(arrow.Timestamp(v.Int64(r)))
		case *array.Int64Builder:
			bb.UnsafeAppend(v.Int64(r))
		case *array.Int32Builder:
			bb.UnsafeAppend(int32(v.Int64(r)))
		case *array.Int16Builder:
			bb.UnsafeAppend(int16(v.Int64(r)))
		case *array.Float64Builder:
			bb.UnsafeAppend(v.Float64(r))
		case *array.Float32Builder:
			bb.UnsafeAppend(float32(v.Float64(r)))
		case *array.BooleanBuilder:
			bb.UnsafeAppend(v.Bool(r))
		case *array.StringBuilder:
			bb.BinaryBuilder.Append(v.Bytes(r))
		case *array.Date32Builder:
			bb.UnsafeAppend(arrow.Date32(v.Int64(r)))
		}
	}
}

func (s *Session) execGuarded(ctx context.Context, q string) error {
	conn := s.conn
	_, err := engineCall(ctx, s, func() (sql.Result, error) { return conn.ExecContext(ctx, q) }, nil)
	return err
}
