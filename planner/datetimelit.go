package planner

import (
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/sqltree"
)

// rewriteDateTimes rewrites, in place, every date/time constant of a
// tree by the session's DateStyle order (dialect.DateTimeLiteral), before the
// session-less rewrite would read it in MDY order. A zone-less
// timestamptz is read in the session's TimeZone, as INSERT and COPY read
// one and as the engine (which runs in that zone) reads ISO literals.
func (s *Session) rewriteDateTimes(node *pg_query.Node) error {
	var failed error
	in := s.settings.Input(s.statementTime())
	sqltree.ReplaceNodes(node.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		tc := n.GetTypeCast()
		if failed != nil || tc == nil || dialect.IsISOLiteral(tc) {
			return nil
		}
		r, ok, err := dialect.DateTimeLiteral(tc, in)
		if err != nil {
			failed = err
			return nil
		}
		if !ok {
			return nil
		}
		return r
	})
	return failed
}

// statementTime is the time 'today' and 'now' mean: the block's start in
// a transaction block, else now.
func (s *Session) statementTime() time.Time {
	if s.tx != nil && !s.tx.implicit {
		return s.tx.start
	}
	return time.Now()
}
