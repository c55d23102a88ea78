package planner

import (
	"context"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/auth"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// catalogPrefix names the per-statement temporary views that stand in for
// PostgreSQL's catalog relations.
const catalogPrefix = "_tsdb_catalog_"

// catalogRelations are the catalog relations tsdb answers itself, from its
// own tables, in PostgreSQL's shape (the subset clients such as Grafana
// read). DuckDB's own catalogs would list engine internals instead.
var catalogRelations = map[string]func(tables []schema.Table) string{
	"information_schema.tables": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, 'BASE TABLE', 'YES', 'NO')", schema.QuoteString(t.Name)))
		}
		return valuesView(rows, "table_catalog, table_schema, table_name, table_type, is_insertable_into, is_typed",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)")
	},
	"information_schema.columns": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			for i, c := range t.Columns {
				nullable := "YES"
				if c.NotNull {
					nullable = "NO"
				}
				dataType, udt, maxLen, precision := c.Type.String(), c.Type.UDTName(), "NULL", "NULL"
				if c.MaxLength > 0 {
					dataType, udt, maxLen = "character varying", "varchar", fmt.Sprint(c.MaxLength)
				}
				if c.Type.IsTimestamp() {
					precision = "6"
					if p, ok := c.Precision(); ok {
						precision = fmt.Sprint(p)
					}
				}
				rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, %s, %d, %s, %s, %s, 'pg_catalog', NULL, %s, %s)",
					schema.QuoteString(t.Name), schema.QuoteString(c.Name), i+1, schema.QuoteString(nullable), schema.QuoteString(dataType), schema.QuoteString(udt), maxLen, precision))
			}
		}
		return valuesView(rows, "table_catalog, table_schema, table_name, column_name, ordinal_position, is_nullable, data_type, udt_name, udt_schema, column_default, character_maximum_length, datetime_precision",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER)")
	},
	"information_schema.schemata": func([]schema.Table) string {
		return "SELECT * FROM (VALUES ('tsdb', 'public', 'tsdb'), ('tsdb', 'information_schema', 'tsdb'), ('tsdb', 'pg_catalog', 'tsdb')) AS t(catalog_name, schema_name, schema_owner)"
	},
	"pg_catalog.pg_extension": func([]schema.Table) string {
		// No extensions: Grafana looks for TimescaleDB here.
		return "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS VARCHAR) AS extname, CAST(NULL AS BIGINT) AS extowner, CAST(NULL AS BIGINT) AS extnamespace, CAST(NULL AS BOOLEAN) AS extrelocatable, CAST(NULL AS VARCHAR) AS extversion WHERE false"
	},
}

func valuesView(rows []string, cols, emptyRow string) string {
	if len(rows) == 0 {
		return fmt.Sprintf("SELECT * FROM (SELECT %s) AS t(%s) WHERE false", emptyRow, cols)
	}
	return fmt.Sprintf("SELECT * FROM (VALUES %s) AS t(%s)", strings.Join(rows, ", "), cols)
}

// catalogName returns the catalog relation a RangeVar names, if tsdb
// answers it: schema-qualified, or a bare pg_catalog name.
func catalogName(rv *pg_query.RangeVar) string {
	schemaName := strings.ToLower(rv.Schemaname)
	rel := strings.ToLower(rv.Relname)
	if schemaName == "" {
		schemaName = "pg_catalog"
	}
	name := schemaName + "." + rel
	if catalogRelation(name) != nil {
		return name
	}
	return ""
}

// catalogRelation returns the view body of a catalog relation, or nil.
func catalogRelation(name string) func([]schema.Table) string {
	if f, ok := catalogRelations[name]; ok {
		return f
	}
	return pgCatalogRelations[name]
}

func catalogView(name string) string {
	return catalogPrefix + strings.ReplaceAll(name, ".", "_")
}

// sessionFunction is the value of a function of the session:
// current_setting('x'), version(), current_database(), current_schema().
func (s *Session) sessionFunction(fc *pg_query.FuncCall) (*pg_query.Node, bool) {
	switch sqltree.LastName(fc.Funcname) {
	case "current_setting":
		if len(fc.Args) >= 1 {
			if c := fc.Args[0].GetAConst(); c != nil && c.GetSval() != nil {
				name := strings.ToLower(c.GetSval().Sval)
				if dialect.Known(name) {
					return pg_query.MakeAConstStrNode(s.settings.Get(name), -1), true
				}
			}
		}
	case "version":
		if len(fc.Args) == 0 {
			return pg_query.MakeAConstStrNode("PostgreSQL "+dialect.ServerVersion+" (tsdb, a time-series store on DuckDB) on x86_64-pc-linux-gnu, 64-bit", -1), true
		}
	case "current_database":
		return pg_query.MakeAConstStrNode("tsdb", -1), true
	case "current_schema":
		return pg_query.MakeAConstStrNode("public", -1), true
	}
	return nil, false
}

// rewriteSession replaces, in a copy of the tree, catalog relations by
// tsdb's catalog views and session functions by their values:
// current_setting('x'), version(), current_database(), current_schema(),
// current_user, session_user, user. It returns nil when nothing changed.
func (s *Session) rewriteSession(node *pg_query.Node) (*pg_query.Node, []string, error) {
	out := proto.Clone(node).(*pg_query.Node)
	// Before the rewrite below renames functions (ln → _tsdb_ln).
	changed := nameSubqueryColumns(out)
	changed = fillEmptySelectLists(out) || changed
	var used []string
	var failed error
	seen := map[string]bool{}
	in := s.settings.Input(s.statementTime())
	use := func(name string) {
		if !seen[name] {
			seen[name] = true
			used = append(used, name)
		}
	}
	sqltree.ReplaceNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if failed != nil {
			return nil
		}
		if name, ok := regclassLiteral(n); ok {
			// 'cpu'::regclass is the table's OID, as pg_class and
			// pg_attribute give it: tools join on it.
			oid, err := s.relationOID(name)
			if err != nil {
				failed = err
				return nil
			}
			changed = true
			return pg_query.MakeAConstIntNode(oid, -1)
		}
		if fc := n.GetFuncCall(); fc != nil {
			r, rel, ok, err := s.rewriteCall(fc)
			if err != nil {
				failed = err
				return nil
			}
			if ok {
				changed = true
				if rel != "" {
					use(rel)
				}
				return r
			}
		}
		if fc := n.GetFuncCall(); fc != nil {
			// Before rewritePG, which takes pg_catalog. off the name.
			if r, ok := s.sessionFunction(fc); ok {
				changed = true
				return r
			}
		}
		if tc := n.GetTypeCast(); tc != nil && !dialect.IsISOLiteral(tc) {
			r, ok, err := dialect.DateTimeLiteral(tc, in)
			if err != nil {
				failed = err
				return nil
			}
			if ok {
				changed = true
				return r
			}
		}
		if r, ok := dialect.RewritePG(n, in); ok {
			changed = true
			return r
		}
		switch {
		case n.GetRangeFunction() != nil:
			rf := n.GetRangeFunction()
			if len(rf.Functions) != 1 || rf.Ordinality || rf.Alias == nil {
				return nil
			}
			items := rf.Functions[0].GetList().GetItems()
			if len(items) == 0 || items[0].GetFuncCall() == nil || !scalarInFrom[sqltree.LastName(items[0].GetFuncCall().Funcname)] {
				return nil
			}
			// FROM f(x) AS s  →  FROM (SELECT f(x) AS s) AS s
			changed = true
			sub := &pg_query.SelectStmt{TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: rf.Alias.Aliasname, Val: items[0]}}}}}
			return &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
				Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}},
				Alias:    &pg_query.Alias{Aliasname: rf.Alias.Aliasname},
			}}}
		case n.GetRangeVar() != nil:
			rv := n.GetRangeVar()
			name := catalogName(rv)
			if name == "" {
				return nil
			}
			use(name)
			alias := rv.Alias
			if alias == nil {
				alias = &pg_query.Alias{Aliasname: rv.Relname}
			}
			changed = true
			return &pg_query.Node{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: catalogView(name), Inh: true, Relpersistence: "p", Alias: alias, Location: rv.Location}}}
		case n.GetSqlvalueFunction() != nil:
			switch n.GetSqlvalueFunction().Op {
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER, pg_query.SQLValueFunctionOp_SVFOP_USER, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
				changed = true
				return pg_query.MakeAConstStrNode("tsdb", -1)
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
				changed = true
				return pg_query.MakeAConstStrNode("tsdb", -1)
			case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
				changed = true
				return pg_query.MakeAConstStrNode("public", -1)
			}
		}
		return nil
	})
	if failed != nil {
		return nil, nil, failed
	}
	if !changed {
		return nil, nil, nil
	}
	return out, used, nil
}

// rewriteCall translates a call tsdb answers itself, not the engine:
// format() and to_char() with a constant format, and the size functions
// (which read the relation rel). ok is false for any other call.
func (s *Session) rewriteCall(fc *pg_query.FuncCall) (r *pg_query.Node, rel string, ok bool, err error) {
	switch name := sqltree.LastName(fc.Funcname); {
	case name == "format" && len(fc.Args) >= 1 && !fc.FuncVariadic:
		r, err = dialect.FormatCall(fc.Args)
	case name == "to_char" && len(fc.Args) == 2:
		r, err = dialect.ToCharCall(fc.Args[0], fc.Args[1])
	case relationSizeFuncs[name] && len(fc.Args) == 1:
		r, err = s.relationSize(fc.Args[0])
		rel = sizesRelation
	case name == "pg_backend_pid" && len(fc.Args) == 0:
		r = sqltree.Cast(pg_query.MakeAConstIntNode(int64(s.pid), -1), "int4")
	default:
		return nil, "", false, nil
	}
	return r, rel, true, err
}

// bindCatalog makes the catalog views a statement uses, over the tables
// as they are now.
func (s *Session) bindCatalog(ctx context.Context, used []string) error {
	if len(used) == 0 {
		return nil
	}
	tables := s.p.store.Tables()
	for _, name := range used {
		view := catalogView(name)
		var def string
		switch name {
		case "pg_catalog.pg_roles":
			def = rolesRelation(s.p.roles)
		case "pg_catalog.pg_auth_members":
			def = authMembersRelation(s.p.roles)
		case sizesRelation:
			if err := s.refreshSizes(ctx, tables); err != nil {
				return err
			}
			continue
		default:
			def = catalogRelation(name)(tables)
		}
		if err := s.ensureView(ctx, view, sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s", schema.QuoteIdent(view), def)}); err != nil {
			return err
		}
	}
	return nil
}

// Roles in pg_roles: the admin (OID 10, as PostgreSQL's bootstrap
// superuser), PostgreSQL's two predefined roles tsdb grants, with their
// OIDs, and the roles made with CREATE ROLE.
var predefinedRoleOIDs = map[string]int64{auth.ReadAll: 6181, auth.WriteAll: 6182}

// roleOID gives a created role a stable OID from its name.
func roleOID(name string) int64 { return hashOID(name, 16384, 1_000_000_000) }

// rolesRelation is pg_roles for the roles of roles (nil: the admin only).
func rolesRelation(roles *auth.Store) string {
	row := func(oid int64, name string, super, login bool) string {
		return fmt.Sprintf("(%d, %s, %v, true, %v, %v, %v, -1, CAST(NULL AS TIMESTAMPTZ), false, %v)", oid, schema.QuoteString(name), super, super, super, login, super)
	}
	rows := []string{row(10, auth.Admin, true, true)}
	for _, name := range []string{auth.ReadAll, auth.WriteAll} {
		rows = append(rows, row(predefinedRoleOIDs[name], name, false, false))
	}
	if roles != nil {
		for _, r := range roles.Roles() {
			rows = append(rows, row(roleOID(r.Name), r.Name, false, true))
		}
	}
	return valuesView(rows, "oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit, rolvaliduntil, rolreplication, rolbypassrls", "")
}

// authMembersRelation is pg_auth_members: which created role holds which
// predefined one.
func authMembersRelation(roles *auth.Store) string {
	var rows []string
	if roles != nil {
		for _, r := range roles.Roles() {
			for _, g := range r.Granted {
				if oid, ok := predefinedRoleOIDs[g]; ok {
					rows = append(rows, fmt.Sprintf("(%d, %d, %d, 10, false, true, true)", int64(len(rows))+1, oid, roleOID(r.Name)))
				}
			}
		}
	}
	return valuesView(rows, "oid, roleid, member, grantor, admin_option, inherit_option, set_option",
		"CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN)")
}

// engineMacros are PostgreSQL functions clients call that DuckDB lacks,
// defined once when the engine starts (before its configuration is locked).
var engineMacros = []string{
	`CREATE MACRO quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') THEN s ELSE '"' || replace(s, '"', '""') || '"' END`,
	`CREATE MACRO array_lower(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN 1 END`,
	`CREATE MACRO array_upper(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN len(a) END`,
	`CREATE MACRO parse_ident(s) AS list_transform(string_split(s, '.'), lambda x: trim(x, '"'))`,
}
