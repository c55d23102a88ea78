package planner

// DELETE and UPDATE evaluated once, over one snapshot, into their effect:
// the rows they delete, named by where they are, and for UPDATE the new
// version of each. That is what a transaction keeps and logs at COMMIT,
// so a statement the engine could not evaluate the same way twice (a
// join, a subquery, random()) replays exactly. Statements outside a block
// that need this (RETURNING, USING/FROM, subqueries, WITH, volatile
// functions) run in a transaction of their own; the others keep the
// logged-statement path of dml.go, which rewrites files without reading
// them into the session.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
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

// needsEffect reports whether a DELETE or UPDATE outside a block must be
// evaluated into its effect rather than logged as a statement.
func needsEffect(node *pg_query.Node) bool {
	switch n := node.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		d := n.DeleteStmt
		if len(d.UsingClause) > 0 || len(d.ReturningList) > 0 || d.WithClause != nil {
			return true
		}
	case *pg_query.Node_UpdateStmt:
		u := n.UpdateStmt
		if len(u.FromClause) > 0 || len(u.ReturningList) > 0 || u.WithClause != nil {
			return true
		}
	}
	found := false
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.SubLink, *pg_query.MultiAssignRef:
			found = true
		case *pg_query.FuncCall:
			if volatileFunctions[sqltree.LastName(x.Funcname)] {
				found = true
			}
		}
		return nil
	})
	return found
}

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
	var dels []tombstone
	rows, err := s.conn.QueryContext(ctx, fmt.Sprintf("SELECT %s, %s FROM %s", srcColumn, rowNumColumn, dmlRowsTable))
	if err != nil {
		return nil, engineError(err)
	}
	intern := map[string]string{}
	for rows.Next() {
		var t tombstone
		if err := rows.Scan(&t.src, &t.row); err != nil {
			rows.Close()
			return nil, engineError(err)
		}
		if v, ok := intern[t.src]; ok {
			t.src = v
		} else {
			intern[t.src] = t.src
		}
		dels = append(dels, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, engineError(err)
	}
	if d.op == "UPDATE" {
		rec, err := scanRecord(ctx, s.engineQuerier(), tbl, rowsSQL)
		if err != nil {
			return nil, err
		}
		recs, err := applyTypmods(tbl, []arrow.RecordBatch{rec})
		if err != nil {
			return nil, err
		}
		if _, err := tx.insert(s, name, recs); err != nil {
			return nil, err
		}
	}
	if err := tx.addTombstones(s, tt, snapPruned.snap, dels); err != nil {
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
func (s *Session) execGuarded(ctx context.Context, q string) error {
	conn := s.conn
	_, err := engineCall(ctx, s, func() (sql.Result, error) { return conn.ExecContext(ctx, q) }, nil)
	return err
}
