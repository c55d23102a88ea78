package planner

// PostgreSQL names a table by OID in its catalog functions: 'cpu'::regclass
// is that OID, and pg_total_relation_size(oid) what the table takes. tsdb
// answers both from its store.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// sizesRelation is the session table of table sizes that relationSize reads
// (refreshSizes fills it).
// No client names it: only the rewrite of the size functions uses it.
const sizesRelation = "tsdb.sizes"

// relationSizeFuncs are PostgreSQL's size functions of one relation. A tsdb
// table has no indexes and no TOAST, so all three are what its rows take.
var relationSizeFuncs = map[string]bool{
	"pg_table_size":          true,
	"pg_relation_size":       true,
	"pg_total_relation_size": true,
}

// regclassLiteral reports whether n is a string constant cast to regclass
// (through any further OID alias casts, as in 'cpu'::regclass::oid), and
// returns the string.
func regclassLiteral(n *pg_query.Node) (string, bool) {
	regclass := false
	for n.GetTypeCast() != nil {
		tc := n.GetTypeCast()
		name := sqltree.LastName(tc.TypeName.GetNames())
		if !dialect.IsOIDAlias(name) {
			return "", false
		}
		regclass = regclass || name == "regclass"
		n = tc.Arg
	}
	sv := n.GetAConst().GetSval()
	if !regclass || sv == nil {
		return "", false
	}
	return sv.Sval, true
}

// relationOID resolves a relation name as regclass input does: an
// unquoted name is folded to lower case, a schema other than public (or
// pg_catalog, for the catalog relations tsdb answers) names nothing.
func (s *Session) relationOID(text string) (int64, error) {
	if oid, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil && oid >= 0 {
		return oid, nil // digits are an OID, as regclass input takes them
	}
	names, err := parseQualifiedName(text)
	if err != nil {
		return 0, err
	}
	rel := names[len(names)-1]
	schemaName := "public"
	if len(names) == 2 {
		schemaName = names[0]
	}
	if len(names) == 1 && s.isTemp(rel) || schemaName == "pg_temp" && s.isTemp(rel) {
		return dialect.TableOID(schema.Table{Name: rel, ID: dialect.TempTableID + rel}), nil
	}
	if schemaName == "public" {
		if t, ok := s.p.store.Table(rel); ok {
			return dialect.TableOID(t), nil
		}
		if v, _, ok := s.view(rel); ok {
			return dialect.TableOID(viewTable(v)), nil
		}
	}
	if (schemaName == "pg_catalog" || len(names) == 1) && dialect.CatalogRelation("pg_catalog."+rel) != nil {
		return catalogOID(rel), nil
	}
	return 0, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", text)
}

// catalogOID gives a catalog relation its OID: PostgreSQL's for those
// pg_class lists, else a stable one between those and tables'
// (tableOID, from 16384).
func catalogOID(rel string) int64 {
	if oid, ok := dialect.CatalogClassOID(rel); ok {
		return oid
	}
	return dialect.HashOID(rel, 13001, 3000) // above PostgreSQL's catalog OIDs pg_class lists, below tables'
}

// parseQualifiedName splits a relation name as PostgreSQL reads it:
// dot-separated parts, each either a double-quoted identifier kept as
// written or a bare one folded to lower case.
func parseQualifiedName(text string) ([]string, error) {
	var names []string
	rest := strings.TrimSpace(text)
	for {
		var part string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			var b strings.Builder
			for {
				i := strings.IndexByte(rest[end:], '"')
				if i < 0 {
					return nil, sqlerr.New(sqlerr.InvalidName, "invalid name syntax: %q", text)
				}
				b.WriteString(rest[end : end+i])
				end += i + 1
				if !strings.HasPrefix(rest[end:], `"`) {
					break
				}
				b.WriteByte('"')
				end++
			}
			part, rest = b.String(), rest[end:]
		} else {
			i := strings.IndexByte(rest, '.')
			if i < 0 {
				i = len(rest)
			}
			// Folded as an unquoted identifier is: A-Z only.
			part, rest = foldIdent(strings.TrimSpace(rest[:i])), rest[i:]
		}
		if part == "" {
			return nil, sqlerr.New(sqlerr.InvalidName, "invalid name syntax: %q", text)
		}
		names = append(names, part)
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, ".") || len(names) == 2 {
			return nil, sqlerr.New(sqlerr.InvalidName, "invalid name syntax: %q", text)
		}
		rest = rest[1:]
	}
	return names, nil
}

// relationSize is the expression that answers a size function of arg: the
// bytes of the table arg names, NULL for one it does not (as PostgreSQL
// gives NULL for an OID that names nothing). A text constant is a relation
// name, resolved now; any other argument is an OID (pg_class.oid) or a
// name computed by the query (quote_ident(table_name)), matched as text.
func (s *Session) relationSize(arg *pg_query.Node) (*pg_query.Node, error) {
	// The table's columns have names no query's columns have: the argument
	// (pg_table_size(oid) over pg_class) must bind to the outer query.
	sizes := schema.QuoteIdent(catalogView(sizesRelation))
	if sv := arg.GetAConst().GetSval(); sv != nil {
		oid, err := s.relationOID(sv.Sval)
		if err != nil {
			return nil, err
		}
		return sqltree.Template("(SELECT _tsdb_bytes FROM "+sizes+" WHERE _tsdb_oid = _tsdb_arg1)", pg_query.MakeAConstIntNode(oid, -1))
	}
	return sqltree.Template("(SELECT _tsdb_bytes FROM "+sizes+" WHERE CAST(_tsdb_oid AS VARCHAR) = CAST(_tsdb_arg1 AS VARCHAR)"+
		" OR _tsdb_name = CAST(_tsdb_arg1 AS VARCHAR) OR 'public.' || _tsdb_name = CAST(_tsdb_arg1 AS VARCHAR))", arg)
}

// refreshSizes fills the sizes table with each table's OID, name and
// bytes as they are now. It is a table, refilled, not a view: a view is
// made anew when its text changes, which drops the session's prepared
// plans, and sizes change with every write. A table dropped since the list
// was taken is left out (the only error Size gives).
func (s *Session) refreshSizes(ctx context.Context, tables []schema.Table) error {
	name := schema.QuoteIdent(catalogView(sizesRelation))
	stmts := []string{
		"CREATE TEMP TABLE IF NOT EXISTS " + name + " (_tsdb_oid BIGINT, _tsdb_name VARCHAR, _tsdb_bytes BIGINT)",
		"DELETE FROM " + name,
	}
	var rows []string
	for _, t := range tables {
		if z, err := s.p.store.Size(t.Name); err == nil {
			rows = append(rows, fmt.Sprintf("(%d, %s, %d)", dialect.TableOID(t), schema.QuoteString(t.Name), z.Bytes()))
		}
	}
	// Views and the catalog relations take no storage in tsdb: 0, as a
	// view's size is in PostgreSQL.
	for _, t := range s.viewTables() {
		rows = append(rows, fmt.Sprintf("(%d, NULL, 0)", dialect.TableOID(t)))
	}
	for _, oid := range dialect.CatalogClassOIDs() {
		rows = append(rows, fmt.Sprintf("(%d, NULL, 0)", oid))
	}
	if len(rows) > 0 {
		stmts = append(stmts, "INSERT INTO "+name+" VALUES "+strings.Join(rows, ", "))
	}
	for _, q := range stmts {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return engineError(err)
		}
	}
	return nil
}

// foldIdent folds a name as PostgreSQL folds an unquoted identifier: the
// ASCII letters A-Z to lower case, nothing else.
func foldIdent(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}
