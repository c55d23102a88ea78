package planner

// INSERT … ON CONFLICT on a table of tsdb's: its target is one of the
// table's keys (conflictKey). DO NOTHING leaves out the rows that repeat
// it (unique.go's skipConflicts). DO UPDATE checks the statement's rows
// as every write is checked (unique.go); then, in the session's
// transaction or one of its own, the rows of the table whose key a new
// row repeats are updated by the statement's SET list (an UPDATE … FROM
// the new rows AS excluded, the transaction's DML path) and the other new
// rows inserted. Both land at COMMIT, together.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// conflictKey reads INSERT's ON CONFLICT clause for a table of tsdb's:
// the key its target names (columns in any order, or ON CONSTRAINT name),
// or without a target (DO NOTHING only) the table's one key. It returns
// nil when nothing can conflict (no keys, no target).
func conflictKey(tbl schema.Table, oc *pg_query.OnConflictClause, returning []*pg_query.Node) (*schema.Key, error) {
	switch {
	case oc.Action == pg_query.OnConflictAction_ONCONFLICT_UPDATE && oc.Infer == nil:
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError, Message: "ON CONFLICT DO UPDATE requires inference specification or constraint name",
			Hint: "For example, ON CONFLICT (column_name)."}
	case len(returning) > 0:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT … ON CONFLICT … RETURNING is not supported on tsdb's tables")
	case oc.Infer.GetWhereClause() != nil:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT (…) WHERE is not supported: tsdb's keys have no predicate")
	}
	if oc.Infer == nil {
		switch len(tbl.Keys) {
		case 0:
			return nil, nil
		case 1:
			return &tbl.Keys[0], nil
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT DO NOTHING without a target on table %q, which has %d keys, is not supported; name the key: ON CONFLICT (columns)", tbl.Name, len(tbl.Keys))
	}
	if name := oc.Infer.Conname; name != "" {
		for i, k := range tbl.Keys {
			if k.Name == name {
				return &tbl.Keys[i], nil
			}
		}
		return nil, sqlerr.New(sqlerr.UndefinedObject, "constraint %q for table %q does not exist", name, tbl.Name)
	}
	var cols []string
	for _, n := range oc.Infer.IndexElems {
		ie := n.GetIndexElem()
		if ie == nil || ie.Name == "" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT with an expression is not supported: tsdb's keys are on columns")
		}
		cols = append(cols, ie.Name)
	}
	for i, k := range tbl.Keys {
		if sameColumns(k.Columns, cols) {
			return &tbl.Keys[i], nil
		}
	}
	return nil, sqlerr.New("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
}

// sameColumns reports whether a and b name the same columns, in any
// order.
func sameColumns(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// upsert runs ON CONFLICT … DO UPDATE for recs, the rows of an INSERT
// into tbl (whose relation st names), with key the conflict target. It
// returns the rows inserted and updated.
func (s *Session) upsert(ctx context.Context, tbl schema.Table, key schema.Key, st *pg_query.InsertStmt, recs []arrow.RecordBatch) (n int64, err error) {
	oc := st.OnConflictClause
	for _, t := range oc.TargetList {
		if c := t.GetResTarget().GetName(); tbl.KeyColumn(c) {
			return 0, sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT DO UPDATE SET of column %q, which is in a PRIMARY KEY or UNIQUE constraint of table %q, is not supported", c, tbl.Name)
		}
	}
	if recs, err = applyTypmods(tbl, recs); err != nil {
		return 0, err
	}
	if err := s.p.store.Validate(tbl.Name, recs); err != nil {
		return 0, err
	}
	return s.inTx(ctx, func() (int64, error) { return s.upsertInTx(ctx, tbl, key, st, recs) })
}

// upsertInTx is upsert's work in the transaction.
func (s *Session) upsertInTx(ctx context.Context, tbl schema.Table, key schema.Key, st *pg_query.InsertStmt, recs []arrow.RecordBatch) (int64, error) {
	if err := s.lockKeyed(ctx, tbl.Name); err != nil {
		return 0, err
	}
	excluded := fmt.Sprintf("_excluded_%d", s.p.txSeq.Add(1))
	if err := s.stageExcluded(ctx, tbl, excluded, recs); err != nil {
		return 0, err
	}
	defer s.dropExcluded(ctx, excluded)
	if err := s.checkOneRowPerKey(ctx, key, excluded); err != nil {
		return 0, err
	}
	// The rows to insert: those whose key the table does not have yet
	// (the others are the ones to update), checked against its keys.
	kept, err := s.checkKeys(ctx, tbl, recs, &key)
	if err != nil {
		return 0, err
	}
	res, err := s.dmlInTx(ctx, &pg_query.Node{Node: &pg_query.Node_UpdateStmt{UpdateStmt: conflictUpdate(st, key, excluded)}})
	if err != nil {
		return 0, err
	}
	var updated int64
	fmt.Sscanf(res.Tag, "UPDATE %d", &updated)
	inserted, err := s.tx.insert(s, tbl.Name, kept)
	if err != nil {
		return 0, err
	}
	return updated + inserted, nil
}

// stageExcluded makes recs the engine's temporary table excluded, in the
// types queries read tbl's columns with, and lets this statement's
// relations name it (as a temporary table of the session's).
func (s *Session) stageExcluded(ctx context.Context, tbl schema.Table, excluded string, recs []arrow.RecordBatch) error {
	raw := fmt.Sprintf(`%s."%s_raw"`, mirrorSchema, excluded)
	if err := createMirrorTable(ctx, s.conn, tbl, raw); err != nil {
		return engineError(err)
	}
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+raw)
	if err := appendBatches(ctx, s.conn, tbl, &mirrorTable{name: raw}, recs, make([]uint64, len(recs))); err != nil {
		return engineError(err)
	}
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT %s FROM %s",
		schema.QuoteIdent(tempPrefix+excluded), selectList(tbl, len(tbl.Columns)), raw)); err != nil {
		return engineError(err)
	}
	return s.addTemp(ctx, excluded, tbl.Columns)
}

// dropExcluded removes what stageExcluded made.
func (s *Session) dropExcluded(ctx context.Context, excluded string) {
	delete(s.temps, excluded)
	s.dropPlans()
	s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp.main."+schema.QuoteIdent(tempPrefix+excluded))
}

// checkOneRowPerKey refuses (21000) new rows that repeat one key: DO
// UPDATE would change the row of that key twice.
func (s *Session) checkOneRowPerKey(ctx context.Context, key schema.Key, excluded string) error {
	cols := make([]string, len(key.Columns))
	for i, c := range key.Columns {
		cols[i] = "n." + schema.QuoteIdent(c)
	}
	notNull, _ := keyPredicates(key)
	q := fmt.Sprintf("SELECT 'x' FROM temp.main.%s AS n WHERE %s GROUP BY %s HAVING count(*) > 1 LIMIT 1",
		schema.QuoteIdent(tempPrefix+excluded), notNull, strings.Join(cols, ", "))
	_, found, err := s.firstText(ctx, q)
	if err != nil {
		return err
	}
	if found {
		return &sqlerr.Error{Code: sqlerr.CardinalityViolation, Message: "ON CONFLICT DO UPDATE command cannot affect row a second time",
			Hint: "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."}
	}
	return nil
}

// conflictUpdate is the UPDATE that ON CONFLICT DO UPDATE makes of the
// rows of the table whose key a new row has: UPDATE t [AS alias] SET …
// FROM excluded WHERE <the key is excluded's> [AND <its WHERE>].
func conflictUpdate(st *pg_query.InsertStmt, key schema.Key, excluded string) *pg_query.UpdateStmt {
	alias := st.Relation.Relname
	if st.Relation.Alias != nil {
		alias = st.Relation.Alias.Aliasname
	}
	var conds []*pg_query.Node
	for _, c := range key.Columns {
		conds = append(conds, pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")},
			columnRef(alias, c), columnRef("excluded", c), -1))
	}
	if w := st.OnConflictClause.WhereClause; w != nil {
		conds = append(conds, w)
	}
	where := conds[0]
	if len(conds) > 1 {
		where = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, conds, -1)
	}
	rel := tempRelation(excluded, &pg_query.Alias{Aliasname: "excluded"})
	return &pg_query.UpdateStmt{
		Relation:    st.Relation,
		TargetList:  st.OnConflictClause.TargetList,
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}},
		WhereClause: where,
	}
}
