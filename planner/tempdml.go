package planner

// Statements on temporary tables that the engine runs itself: UPDATE,
// DELETE and INSERT … ON CONFLICT over the session's own tables.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// engineSelect is the text of a SELECT as the engine runs it (PostgreSQL's
// syntax and functions rewritten) and the tables of the store it reads.
func (s *Session) engineSelect(node *pg_query.Node) (string, []string, error) {
	r, err := collectRefs(node.GetSelectStmt(), s)
	if err != nil {
		return "", nil, err
	}
	// Not the rewrites that make a column a struct the wire layer prints
	// (exact averages, numbers with their own scales): the engine stores
	// the query's values in a table, and a struct column takes no
	// arithmetic afterwards.
	rewritten, _, err := s.rewriteSessionExact(node, false)
	if err != nil {
		return "", nil, err
	}
	if rewritten != nil {
		node = rewritten
	}
	text, err := deparse(s.p.pgVersion, node)
	return text, r.tables, err
}

// engineExec runs a statement on the session's connection with the
// store's tables it reads bound, and returns how many rows it changed.
func (s *Session) engineExec(ctx context.Context, text string, tables []string) (int64, error) {
	b, err := s.bind(ctx, tables, nil)
	if err != nil {
		return 0, err
	}
	defer b.done()
	s.dropPlans()
	res, err := s.conn.ExecContext(ctx, text)
	if err != nil {
		return 0, tempError(err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// tempDML runs UPDATE or DELETE of a temporary table (its target as
// expandTemps wrote it) on the engine, and INSERT … ON CONFLICT, which
// the engine's table answers (other INSERTs read their values as for a
// table of the store: insertTemp).
func (s *Session) tempDML(ctx context.Context, node *pg_query.Node, op string) (*Result, error) {
	if err := s.tempWritable(op); err != nil {
		return nil, err
	}
	var returning bool
	switch n := node.Node.(type) {
	case *pg_query.Node_InsertStmt:
		returning = len(n.InsertStmt.ReturningList) > 0
	case *pg_query.Node_UpdateStmt:
		returning = len(n.UpdateStmt.ReturningList) > 0
	case *pg_query.Node_DeleteStmt:
		returning = len(n.DeleteStmt.ReturningList) > 0
	}
	if returning {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s … RETURNING of a temporary table is not supported", op)
	}
	node = proto.Clone(node).(*pg_query.Node)
	if ins := node.GetInsertStmt(); ins != nil && len(ins.Cols) == 0 {
		// PostgreSQL fills the columns after the values given with their
		// defaults; the engine wants a value for each.
		name, _ := isTempRelation(ins.Relation)
		cols := s.temps[name]
		if sel := ins.SelectStmt.GetSelectStmt(); sel != nil && selectWidth(sel) > 0 && selectWidth(sel) < len(cols) {
			for _, c := range cols[:selectWidth(sel)] {
				ins.Cols = append(ins.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c.Name}}})
			}
		}
	}
	r, err := collectRefs(node, s)
	if err != nil {
		return nil, err
	}
	dialect.RewriteTree(node.ProtoReflect(), s.settings.Input(s.statementTime()))
	if oc := node.GetInsertStmt().GetOnConflictClause(); oc != nil {
		if err := s.constantSetSubqueries(ctx, oc, r.tables); err != nil {
			return nil, err
		}
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return nil, err
	}
	n, err := s.engineExec(ctx, text, r.tables)
	if err != nil {
		return nil, err
	}
	if err := s.trimPadded(ctx, node); err != nil {
		return nil, err
	}
	if op == "INSERT" {
		return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
	}
	return &Result{Tag: fmt.Sprintf("%s %d", op, n)}, nil
}

// trimPadded takes the trailing spaces off what an UPDATE or INSERT … ON
// CONFLICT the engine ran wrote to the character(n) columns of a
// temporary table: they are stored without them (schema.Column.Padded),
// and the engine's column is a plain string.
func (s *Session) trimPadded(ctx context.Context, node *pg_query.Node) error {
	rel := node.GetUpdateStmt().GetRelation()
	if rel == nil {
		rel = node.GetInsertStmt().GetRelation()
	}
	name, ok := isTempRelation(rel)
	if !ok {
		return nil
	}
	var sets, where []string
	for _, c := range s.temps[name] {
		if c.Padded {
			q := schema.QuoteIdent(c.Name)
			sets = append(sets, fmt.Sprintf("%s = rtrim(%s, ' ')", q, q))
			where = append(where, q+" LIKE '% '")
		}
	}
	if len(sets) == 0 {
		return nil
	}
	_, err := s.engineExec(ctx, fmt.Sprintf("UPDATE temp.main.%s SET %s WHERE %s", schema.QuoteIdent(tempPrefix+name),
		strings.Join(sets, ", "), strings.Join(where, " OR ")), nil)
	return err
}

// constantSetSubqueries computes the scalar subqueries of an ON CONFLICT
// DO UPDATE SET list before the statement runs, and puts each value in
// its place: the engine takes no subquery there, PostgreSQL does. A
// subquery that reads the row (excluded, or the table's columns) cannot
// be computed alone and is refused.
func (s *Session) constantSetSubqueries(ctx context.Context, oc *pg_query.OnConflictClause, tables []string) error {
	if sqltree.Walk(oc.ProtoReflect(), func(m proto.Message) error {
		if _, ok := m.(*pg_query.SubLink); ok {
			return errFound
		}
		return nil
	}) == nil {
		return nil // no subquery
	}
	b, err := s.bind(ctx, tables, nil)
	if err != nil {
		return err
	}
	defer b.done()
	var failed error
	for _, t := range oc.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		sqltree.ReplaceNodes(rt.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
			sl := n.GetSubLink()
			if failed != nil || sl == nil || sl.SubLinkType != pg_query.SubLinkType_EXPR_SUBLINK {
				return nil
			}
			expr, err := deparseExpr(s.p.pgVersion, n)
			if err != nil {
				failed = err
				return nil
			}
			var v sql.NullString
			var typ string
			// The subquery once: its value, and the engine's name of its type.
			q := fmt.Sprintf("SELECT CAST(v AS VARCHAR), typeof(v) FROM (SELECT (%s) AS v) AS s", expr)
			if err := s.conn.QueryRowContext(ctx, q).Scan(&v, &typ); err != nil {
				failed = engineError(err)
				if code := sqlerr.Code(failed); code == sqlerr.UndefinedColumn || code == sqlerr.UndefinedTable || code == "42000" {
					failed = sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT DO UPDATE SET with a subquery that reads the row is not supported")
				}
				return nil
			}
			// The engine's name of the type, read as SQL's.
			tree, err := pg_query.Parse("SELECT CAST(NULL AS " + typ + ")")
			if err != nil || len(tree.Stmts) != 1 {
				failed = sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT DO UPDATE SET with a subquery of type %s is not supported", typ)
				return nil
			}
			cast := tree.Stmts[0].Stmt.GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal()
			if v.Valid {
				cast.GetTypeCast().Arg = pg_query.MakeAConstStrNode(v.String, -1)
			}
			return cast
		})
	}
	return failed
}
