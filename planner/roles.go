package planner

import (
	"errors"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/auth"
	"tsdb/internal/sqlerr"
)

// role runs CREATE ROLE … LOGIN PASSWORD, ALTER ROLE … PASSWORD, DROP ROLE
// and GRANT/REVOKE of pg_read_all_data and pg_write_all_data.
func (s *Session) role(n *pg_query.Node) (*Result, error) {
	if s.p.roles == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "roles are not configured")
	}
	wrap := func(err error) error {
		switch {
		case err == nil:
			return nil
		case errors.Is(err, auth.ErrNoRole):
			return sqlerr.New(sqlerr.UndefinedObject, "%s", err.Error())
		case strings.Contains(err.Error(), "already exists"):
			return sqlerr.New("42710", "%s", err.Error())
		}
		return sqlerr.New(sqlerr.InvalidParameterValue, "%s", err.Error())
	}
	password := func(opts []*pg_query.Node) (string, bool) {
		for _, o := range opts {
			if d := o.GetDefElem(); d != nil && d.Defname == "password" && d.Arg != nil {
				return constString(d.Arg), true
			}
		}
		return "", false
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_CreateRoleStmt:
		pw, ok := password(x.CreateRoleStmt.Options)
		if !ok || pw == "" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "CREATE ROLE needs LOGIN PASSWORD '…': tsdb roles are login roles")
		}
		if err := wrap(s.p.roles.Create(x.CreateRoleStmt.Role, pw)); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE ROLE"}, nil
	case *pg_query.Node_AlterRoleStmt:
		pw, ok := password(x.AlterRoleStmt.Options)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER ROLE supports PASSWORD only")
		}
		if err := wrap(s.p.roles.SetPassword(x.AlterRoleStmt.Role.GetRolename(), pw)); err != nil {
			return nil, err
		}
		return &Result{Tag: "ALTER ROLE"}, nil
	case *pg_query.Node_DropRoleStmt:
		for _, r := range x.DropRoleStmt.Roles {
			if err := wrap(s.p.roles.Drop(r.GetRoleSpec().GetRolename(), x.DropRoleStmt.MissingOk)); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: "DROP ROLE"}, nil
	case *pg_query.Node_GrantRoleStmt:
		g := x.GrantRoleStmt
		for _, granted := range g.GrantedRoles {
			for _, grantee := range g.GranteeRoles {
				if err := wrap(s.p.roles.Grant(grantee.GetRoleSpec().GetRolename(), granted.GetAccessPriv().GetPrivName(), !g.IsGrant)); err != nil {
					return nil, err
				}
			}
		}
		if g.IsGrant {
			return &Result{Tag: "GRANT ROLE"}, nil
		}
		return &Result{Tag: "REVOKE ROLE"}, nil
	case *pg_query.Node_GrantStmt:
		// GRANT/REVOKE CREATE ON SCHEMA public: making tables and
		// columns, by SQL and by the line protocol alike.
		g := x.GrantStmt
		onPublic := g.Objtype == pg_query.ObjectType_OBJECT_SCHEMA && len(g.Objects) == 1 && strings.EqualFold(g.Objects[0].GetString_().GetSval(), "public")
		create := len(g.Privileges) == 1 && strings.EqualFold(g.Privileges[0].GetAccessPriv().GetPrivName(), "create")
		if !onPublic || !create {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "tsdb grants pg_read_all_data, pg_write_all_data and CREATE ON SCHEMA public only")
		}
		for _, grantee := range g.Grantees {
			if err := wrap(s.p.roles.GrantCreate(grantee.GetRoleSpec().GetRolename(), !g.IsGrant)); err != nil {
				return nil, err
			}
		}
		if g.IsGrant {
			return &Result{Tag: "GRANT"}, nil
		}
		return &Result{Tag: "REVOKE"}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "unsupported role statement")
}
