package planner

import (
	"context"
	"errors"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// SELECT … FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE and FOR KEY SHARE.
// tsdb has no row locks: a locking clause takes the write lock of each
// table of the store whose rows it would lock — the lock UPDATE and
// DELETE take — until the transaction ends (at once, outside a block).
// That is more than PostgreSQL locks (every row of the table, and FOR
// SHARE excludes FOR SHARE), never less: no UPDATE, DELETE or other
// locking SELECT changes or locks the rows until COMMIT or ROLLBACK.
// NOWAIT fails at once (55P03) when another transaction holds the lock;
// SKIP LOCKED then skips every row (all of them are locked), which keeps
// a queue's workers apart, one transaction at a time.

// lockRows takes the locks of a SELECT's locking clauses over the store
// tables it reads and returns the statement without them (a copy), for
// the engine, which has none. tables are the store tables the statement
// reads.
func (s *Session) lockRows(ctx context.Context, node *pg_query.Node, tables []string) (*pg_query.Node, error) {
	node = proto.Clone(node).(*pg_query.Node)
	if err := checkLockable(node.GetSelectStmt()); err != nil {
		return nil, err
	}
	lock := map[string]bool{}
	all := false
	nowait, skip := false, false
	strength := ""
	var failed error
	top := node.GetSelectStmt()
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || len(sel.LockingClause) == 0 {
			return nil
		}
		for _, n := range sel.LockingClause {
			lc := n.GetLockingClause()
			if lc == nil {
				continue
			}
			if strength == "" {
				strength = lockStrengthName(lc.Strength)
			}
			nowait = nowait || lc.WaitPolicy == pg_query.LockWaitPolicy_LockWaitError
			if lc.WaitPolicy == pg_query.LockWaitPolicy_LockWaitSkip {
				if sel != top {
					// Skipping rows of a subquery's table is not skipping
					// the statement's rows.
					failed = sqlerr.New(sqlerr.FeatureNotSupported, "SKIP LOCKED is supported on the statement's own SELECT only, not in a subquery")
					return failed
				}
				skip = true
			}
			if len(lc.LockedRels) == 0 {
				all = true
				continue
			}
			for _, r := range lc.LockedRels {
				name, found, whole := lockedTable(sel, r.GetRangeVar())
				if !found {
					failed = sqlerr.New(sqlerr.UndefinedTable, "relation %q in FOR %s clause not found in FROM clause", r.GetRangeVar().GetRelname(), strength)
					return failed
				}
				// A view or a subquery locks the tables it reads: all
				// the statement's, to be sure.
				all = all || whole || name != "" && !slices.Contains(tables, name)
				lock[name] = true
			}
		}
		sel.LockingClause = nil
		return nil
	})
	if failed != nil {
		return nil, failed
	}
	if err := s.writableTx("SELECT FOR " + strength); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range tables {
		if all || lock[t] {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return node, nil // temporary tables, views of them: the session's own
	}
	tx := s.tx
	if tx == nil {
		// Outside a block the locks end with the statement: taken, so
		// that it waits for the transactions that hold them, and given
		// back.
		tx = s.newTx(true)
		defer func() {
			for _, unlock := range tx.unlocks {
				unlock()
			}
		}()
	}
	take := s.p.store.LockTable
	if nowait || skip {
		// Not waiting for another transaction's lock (a flush holding it
		// a moment is waited for: it locks no rows).
		take = s.p.store.LockTableUnlessTx
	}
	for _, name := range names {
		if err := tx.lockWith(ctx, s, name, take); err != nil {
			if !errors.Is(err, ingest.ErrLockedByTx) {
				return nil, err
			}
			if nowait {
				return nil, sqlerr.New("55P03", "could not obtain lock on row in relation %q", name)
			}
			// SKIP LOCKED: every row of the table is locked by another
			// transaction, so every row is skipped.
			node.GetSelectStmt().WhereClause = sqltree.Cast(pg_query.MakeAConstStrNode("f", -1), "bool")
			return node, nil
		}
		if s.tx != nil {
			if err := s.checkUnchanged(ctx, name, false); err != nil {
				return nil, err
			}
		}
	}
	return node, nil
}

// lockedTable resolves a relation of FOR UPDATE OF: a table of the
// store the SELECT's FROM list names so (by alias or name). found is false
// for a name the FROM list does not have; whole is true for a subquery,
// whose tables it locks; a temporary table gives "".
func lockedTable(sel *pg_query.SelectStmt, rv *pg_query.RangeVar) (name string, found, whole bool) {
	if rv == nil {
		return "", false, false
	}
	want := rv.Relname
	for _, f := range sel.FromClause {
		_ = sqltree.Walk(f.ProtoReflect(), func(m proto.Message) error {
			switch x := m.(type) {
			case *pg_query.RangeSubselect:
				if x.Alias != nil && x.Alias.Aliasname == want && !found {
					found, whole = true, true
				}
				return sqltree.SkipChildren
			case *pg_query.RangeVar:
				alias := x.Relname
				if x.Alias != nil {
					alias = x.Alias.Aliasname
				}
				if alias == want && !found {
					found = true
					if _, temp := isTempRelation(x); !temp {
						name, _ = relationName(x)
					}
				}
			}
			return nil
		})
	}
	return name, found, whole
}

// checkLockable refuses what PostgreSQL refuses with a locking clause:
// rows that are not rows of a table (grouped, distinct, of a set
// operation).
func checkLockable(sel *pg_query.SelectStmt) error {
	if sel == nil || len(sel.LockingClause) == 0 {
		return nil
	}
	strength := lockStrengthName(sel.LockingClause[0].GetLockingClause().GetStrength())
	refuse := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "FOR %s is not allowed with %s", strength, what)
	}
	switch {
	case isSetOp(sel):
		return refuse("UNION/INTERSECT/EXCEPT")
	case len(sel.DistinctClause) > 0:
		return refuse("DISTINCT clause")
	case len(sel.GroupClause) > 0:
		return refuse("GROUP BY clause")
	case sel.HavingClause != nil:
		return refuse("HAVING clause")
	}
	var found error
	for _, t := range sel.TargetList {
		_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			switch x := m.(type) {
			case *pg_query.SelectStmt:
				return sqltree.SkipChildren
			case *pg_query.FuncCall:
				if found == nil && dialect.IsAggregate(x) {
					found = refuse("aggregate functions")
				} else if found == nil && x.Over != nil {
					found = refuse("window functions")
				}
			}
			return nil
		})
	}
	return found
}

// lockStrengthName is a locking clause as PostgreSQL's messages name it.
func lockStrengthName(st pg_query.LockClauseStrength) string {
	switch st {
	case pg_query.LockClauseStrength_LCS_FORKEYSHARE:
		return "KEY SHARE"
	case pg_query.LockClauseStrength_LCS_FORSHARE:
		return "SHARE"
	case pg_query.LockClauseStrength_LCS_FORNOKEYUPDATE:
		return "NO KEY UPDATE"
	}
	return "UPDATE"
}

// stripLocking removes the locking clauses of a statement EXPLAIN
// describes (it takes no lock).
func stripLocking(node *pg_query.Node) *pg_query.Node {
	if !hasLockingClause(node) {
		return node
	}
	node = proto.Clone(node).(*pg_query.Node)
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if sel, ok := m.(*pg_query.SelectStmt); ok {
			sel.LockingClause = nil
		}
		return nil
	})
	return node
}

// hasLockingClause reports whether a statement asks for row locks
// anywhere (FOR UPDATE, FOR SHARE and their variants).
func hasLockingClause(n *pg_query.Node) bool {
	found := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if sel, ok := m.(*pg_query.SelectStmt); ok && len(sel.LockingClause) > 0 {
			found = true
		}
		return nil
	})
	return found
}
