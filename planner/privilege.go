package planner

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/auth"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// modifyingCTE reports whether a statement holds an INSERT, UPDATE or
// DELETE in a WITH clause: it writes, whatever its top level reads.
func modifyingCTE(n *pg_query.Node) bool {
	found := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if c, ok := m.(*pg_query.CommonTableExpr); ok {
			switch c.Ctequery.GetNode().(type) {
			case *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt:
				found = true
			}
		}
		return nil
	})
	return found
}

// privilegeOf is what a statement needs: reading, writing rows, or
// managing tables, the store and roles.
func privilegeOf(n *pg_query.Node) auth.Privilege {
	switch x := n.Node.(type) {
	case *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt:
		return auth.Write
	case *pg_query.Node_CopyStmt:
		if x.CopyStmt.IsFrom {
			return auth.Write
		}
		return auth.Read
	case *pg_query.Node_SelectStmt:
		if _, repair, _ := repairCall(n); repair {
			return auth.Manage
		}
		if modifyingCTE(n) {
			return auth.Write
		}
		return auth.Read
	case *pg_query.Node_CreateStmt, *pg_query.Node_CreateTableAsStmt, *pg_query.Node_ViewStmt, *pg_query.Node_CreateFunctionStmt,
		*pg_query.Node_IndexStmt:
		return auth.Create
	case *pg_query.Node_AlterTableStmt:
		// Adding columns is creating, as the line protocol does; other
		// changes of a table (its options) are the admin's.
		for _, c := range x.AlterTableStmt.Cmds {
			if c.GetAlterTableCmd().GetSubtype() != pg_query.AlterTableType_AT_AddColumn {
				return auth.Manage
			}
		}
		return auth.Create
	case *pg_query.Node_ExplainStmt, *pg_query.Node_VariableShowStmt,
		*pg_query.Node_VariableSetStmt, *pg_query.Node_TransactionStmt, *pg_query.Node_DeclareCursorStmt,
		*pg_query.Node_FetchStmt, *pg_query.Node_ClosePortalStmt, *pg_query.Node_PrepareStmt, *pg_query.Node_ExecuteStmt,
		*pg_query.Node_DeallocateStmt, *pg_query.Node_DiscardStmt:
		// PREPARE and EXECUTE: the statement itself is checked when it
		// runs.
		return auth.Read
	}
	return auth.Manage
}

func (s *Session) checkPrivilege(n *pg_query.Node) error {
	if s.p.roles == nil {
		return nil
	}
	priv := auth.Read
	if n != nil {
		priv = privilegeOf(n)
	}
	if s.p.roles.Allowed(s.user, priv) {
		return nil
	}
	what := map[auth.Privilege]string{auth.Read: "read tables", auth.Write: "write rows (grant pg_write_all_data)",
		auth.Create: "create tables or columns (GRANT CREATE ON SCHEMA public)", auth.Manage: "change tables, the store or roles (admin only)"}[priv]
	return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied: role %q may not %s", s.user, what)
}
