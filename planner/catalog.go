package planner

import (
	"context"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
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
				rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, %s, %d, %s, %s, %s, 'pg_catalog', NULL)",
					schema.QuoteString(t.Name), schema.QuoteString(c.Name), i+1, schema.QuoteString(nullable), schema.QuoteString(c.Type.String()), schema.QuoteString(c.Type.UDTName())))
			}
		}
		return valuesView(rows, "table_catalog, table_schema, table_name, column_name, ordinal_position, is_nullable, data_type, udt_name, udt_schema, column_default",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)")
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

// rewriteSession replaces, in a copy of the tree, catalog relations by
// tsdb's catalog views and session functions by their values:
// current_setting('x'), version(), current_database(), current_schema(),
// current_user, session_user, user. It returns nil when nothing changed.
func (s *Session) rewriteSession(node *pg_query.Node) (*pg_query.Node, []string) {
	out := proto.Clone(node).(*pg_query.Node)
	changed := false
	var used []string
	seen := map[string]bool{}
	replaceNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if r, ok := rewritePG(n); ok {
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
			if len(items) == 0 || items[0].GetFuncCall() == nil || !scalarInFrom[lastName(items[0].GetFuncCall().Funcname)] {
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
			if !seen[name] {
				seen[name] = true
				used = append(used, name)
			}
			alias := rv.Alias
			if alias == nil {
				alias = &pg_query.Alias{Aliasname: rv.Relname}
			}
			changed = true
			return &pg_query.Node{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: catalogView(name), Inh: true, Relpersistence: "p", Alias: alias, Location: rv.Location}}}
		case n.GetFuncCall() != nil:
			fc := n.GetFuncCall()
			switch lastName(fc.Funcname) {
			case "current_setting":
				if len(fc.Args) >= 1 {
					if c := fc.Args[0].GetAConst(); c != nil && c.GetSval() != nil {
						name := strings.ToLower(c.GetSval().Sval)
						if _, ok := settingDefs[name]; ok {
							changed = true
							return pg_query.MakeAConstStrNode(s.settings.Get(name), -1)
						}
					}
				}
			case "version":
				if len(fc.Args) == 0 {
					changed = true
					return pg_query.MakeAConstStrNode("PostgreSQL "+ServerVersion+" (tsdb, a time-series store on DuckDB) on x86_64-pc-linux-gnu, 64-bit", -1)
				}
			case "current_database":
				changed = true
				return pg_query.MakeAConstStrNode("tsdb", -1)
			case "current_schema":
				changed = true
				return pg_query.MakeAConstStrNode("public", -1)
			}
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
	if !changed {
		return nil, nil
	}
	return out, used
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
		if err := s.ensureView(ctx, view, sessionView{create: fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s", schema.QuoteIdent(view), catalogRelation(name)(tables))}); err != nil {
			return err
		}
	}
	return nil
}

// engineMacros are PostgreSQL functions clients call that DuckDB lacks,
// defined once when the engine starts (before its configuration is locked).
var engineMacros = []string{
	`CREATE MACRO quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') THEN s ELSE '"' || replace(s, '"', '""') || '"' END`,
	`CREATE MACRO array_lower(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN 1 END`,
	`CREATE MACRO array_upper(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN len(a) END`,
	`CREATE MACRO parse_ident(s) AS list_transform(string_split(s, '.'), lambda x: trim(x, '"'))`,
}
