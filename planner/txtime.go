package planner

// The time of a transaction block: now() and its kin mean the block's
// start in every statement of the block, as in PostgreSQL.

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// transactionTimeFunctions give the transaction's start in PostgreSQL;
// statement_timestamp() and clock_timestamp() do not.
var transactionTimeFunctions = map[string]bool{"now": true, "transaction_timestamp": true, "current_timestamp": true}

// fixTransactionTime replaces, in a copy of node, now(),
// transaction_timestamp(), CURRENT_TIMESTAMP and 'now'::timestamptz by
// the block's start, so every statement of a block sees one time, as in
// PostgreSQL (the engine's now() is each statement's). Outside a block it
// returns node itself.
func (s *Session) fixTransactionTime(node *pg_query.Node) *pg_query.Node {
	if s.tx == nil || s.tx.implicit {
		return node
	}
	lit := s.transactionTime
	if isTransactionTime(node) {
		return lit()
	}
	found := false
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.FuncCall:
			found = found || transactionTimeFunctions[sqltree.LastName(x.Funcname)]
		case *pg_query.SQLValueFunction:
			found = true
		case *pg_query.A_Const:
			found = found || strings.EqualFold(strings.TrimSpace(x.GetSval().GetSval()), "now")
		}
		return nil
	})
	if !found {
		return node
	}
	out := proto.Clone(node).(*pg_query.Node)
	// A result column keeps the name PostgreSQL gives what was written
	// (now, current_timestamp), not the constant's.
	_ = sqltree.Walk(out.ProtoReflect(), func(m proto.Message) error {
		if rt, ok := m.(*pg_query.ResTarget); ok && rt.Name == "" && rt.Val != nil && rt.Val.GetColumnRef() == nil {
			if name := figureColname(rt.Val); name != "?column?" {
				rt.Name = name
			}
		}
		return nil
	})
	sqltree.ReplaceNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if isTransactionTime(n) {
			return lit()
		}
		if tc := n.GetTypeCast(); tc != nil {
			if sv := tc.Arg.GetAConst().GetSval(); sv != nil && strings.EqualFold(strings.TrimSpace(sv.Sval), "now") {
				switch sqltree.LastName(tc.TypeName.GetNames()) {
				case "timestamptz", "timestamp", "date":
					tc.Arg = lit()
					return n
				}
			}
		}
		return nil
	})
	return out
}

// transactionTime is the block's start as a timestamptz constant.
func (s *Session) transactionTime() *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
		Arg:      pg_query.MakeAConstStrNode(s.tx.start.UTC().Format("2006-01-02 15:04:05.999999+00"), -1),
		TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("timestamptz")}, Typemod: -1},
	}}}
}

// isTransactionTime reports whether n is now(), transaction_timestamp()
// or CURRENT_TIMESTAMP.
func isTransactionTime(n *pg_query.Node) bool {
	if fc := n.GetFuncCall(); fc != nil && len(fc.Args) == 0 && transactionTimeFunctions[sqltree.LastName(fc.Funcname)] {
		return true
	}
	if sv := n.GetSqlvalueFunction(); sv != nil && (sv.Op == pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP || sv.Op == pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N) {
		return true
	}
	return false
}

// mentionsNow is a cheap test before fixTransactionTime walks a tree:
// whether the text has "now" or "current_timestamp"/"transaction_timestamp"
// in any case.
func mentionsNow(text string) bool {
	for i := 0; i+3 <= len(text); i++ {
		c := text[i] | 0x20
		if c == 'n' && text[i+1]|0x20 == 'o' && text[i+2]|0x20 == 'w' {
			return true
		}
		if c == 't' && i+9 <= len(text) && strings.EqualFold(text[i:i+9], "timestamp") {
			return true
		}
	}
	return false
}
