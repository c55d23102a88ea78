package planner

import (
	"context"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
)

// dml runs DELETE or UPDATE: on a temporary table in the engine alone,
// on tsdb's tables evaluated into its effect (dmltx.go), which the store
// logs and applies to both layers.
func (s *Session) dml(ctx context.Context, node *pg_query.Node) (*Result, error) {
	if s.readsPadded(node) {
		// LIKE and the like over a character(n) column see its spaces.
		node = proto.Clone(node).(*pg_query.Node)
		s.padCharacterRefs(node, false)
	}
	switch n := node.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		if _, ok := isTempRelation(n.DeleteStmt.Relation); ok {
			return s.tempDML(ctx, node, "DELETE")
		}
	case *pg_query.Node_UpdateStmt:
		if _, ok := isTempRelation(n.UpdateStmt.Relation); ok {
			return s.tempDML(ctx, node, "UPDATE")
		}
		if err := s.refuseKeyUpdate(n.UpdateStmt); err != nil {
			return nil, err
		}
	}
	// What the statement changes is logged, not its text (see dmltx.go):
	// a replay needs no engine and cannot compute another answer.
	return s.dmlEffect(ctx, node)
}

// truncate is TRUNCATE: a DELETE of every row of each table named. tsdb
// has no sequences and no foreign keys, so RESTART IDENTITY and CASCADE
// change nothing. In a transaction block the tables empty together at
// COMMIT; outside one, one after the other.
func (s *Session) truncate(ctx context.Context, st *pg_query.TruncateStmt) (*Result, error) {
	for _, r := range st.Relations {
		rv := r.GetRangeVar()
		if rv == nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "TRUNCATE names a table")
		}
		del := &pg_query.Node{Node: &pg_query.Node_DeleteStmt{DeleteStmt: &pg_query.DeleteStmt{Relation: proto.Clone(rv).(*pg_query.RangeVar)}}}
		if _, err := s.dml(ctx, del); err != nil {
			return nil, err
		}
	}
	return &Result{Tag: "TRUNCATE TABLE"}, nil
}
