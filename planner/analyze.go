package planner

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// statement is one statement of a query string, parsed.
type statement struct {
	text string
	// offset is where text starts in the query string, in bytes.
	offset int
	// node is the PostgreSQL parse tree; nil when only DuckDB's parser
	// understood the statement (a SELECT in DuckDB's dialect).
	node *pg_query.Node
}

// splitStatements splits a query string into statements and parses each with
// the PostgreSQL grammar. Empty and comment-only pieces are dropped.
// standardStrings is standard_conforming_strings when the query arrived.
func splitStatements(query string, standardStrings bool) ([]statement, error) {
	if !standardStrings {
		var err error
		if query, err = dialect.NonstandardStrings(query); err != nil {
			return nil, err
		}
	}
	query, err := dialect.UnicodeEscapes(query)
	if err != nil {
		return nil, err
	}
	pieces, err := splitSQL(query)
	if err != nil {
		return nil, err
	}
	var out []statement
	from := 0
	for _, p := range pieces {
		off := from
		if i := strings.Index(query[from:], p); i >= 0 {
			off = from + i
			from = off + len(p)
		}
		if strings.TrimSpace(p) == "" {
			continue
		}
		tree, err := pg_query.Parse(p)
		if err != nil {
			// Not PostgreSQL; DuckDB may still accept it as a SELECT.
			out = append(out, statement{text: p, offset: off})
			continue
		}
		for _, rs := range tree.GetStmts() {
			text := p
			// (An INSERT's text never reaches the engine as written:
			// its rows are read here, its SELECT deparsed; a large one
			// is not scanned again.)
			if containsFold(p, "only") && !insertValues(rs.GetStmt()) && inheritAll(rs.GetStmt()) {
				// FROM ONLY t, UPDATE ONLY t, ALTER TABLE ONLY t (pg_dump
				// writes it): no table has children here, so ONLY t is
				// t, which the engine does not read.
				if d, err := deparse(tree.Version, rs.GetStmt()); err == nil {
					text = d
				}
			} else if rs.GetStmt().GetInsertStmt() == nil && dialect.NamesEngineKeyword(p, rs.GetStmt()) {
				// A name the engine reads as a keyword: deparsed, which
				// quotes it.
				if d, err := deparse(tree.Version, rs.GetStmt()); err == nil {
					text = d
				}
			}
			out = append(out, statement{text: text, offset: off, node: rs.GetStmt()})
		}
	}
	return out, nil
}

// insertValues reports an INSERT … VALUES, which has no ONLY to drop (and
// whose tree may be large).
func insertValues(n *pg_query.Node) bool {
	ins := n.GetInsertStmt()
	return ins != nil && len(ins.GetSelectStmt().GetSelectStmt().GetValuesLists()) > 0
}

// inheritAll drops ONLY from the relations of a statement; it reports
// whether there was one.
func inheritAll(n *pg_query.Node) bool {
	found := false
	sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if rv, ok := m.(*pg_query.RangeVar); ok && !rv.Inh {
			rv.Inh, found = true, true
		}
		return nil
	})
	return found
}

// splitSQL cuts a query string at top-level semicolons using PostgreSQL's
// lexer, so semicolons in strings, quoted names and comments do not split.
// (pg_query's own splitter silently drops statements that do not start with
// a PostgreSQL keyword, such as DuckDB's PRAGMA.) Pieces holding only
// comments are dropped.
func splitSQL(query string) ([]string, error) {
	// Most query strings hold one statement without comments: no need to
	// run the lexer for those.
	one := strings.TrimSpace(query)
	one = strings.TrimSpace(strings.TrimSuffix(one, ";"))
	if !strings.ContainsAny(one, ";-/") {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	res, err := pg_query.Scan(query)
	if err != nil {
		return nil, sqlerr.New(sqlerr.SyntaxError, "%s", err.Error())
	}
	var out []string
	start, hasToken := 0, false
	for _, t := range res.GetTokens() {
		switch t.Token {
		case pg_query.Token_ASCII_59:
			if hasToken {
				out = append(out, strings.TrimSpace(query[start:t.Start]))
			}
			start, hasToken = int(t.End), false
		case pg_query.Token_SQL_COMMENT, pg_query.Token_C_COMMENT:
		default:
			hasToken = true
		}
	}
	if hasToken {
		out = append(out, strings.TrimSpace(query[start:]))
	}
	return out, nil
}

// allowedTableFunctions may appear in FROM: they compute rows and touch no
// file. Every other table function (read_csv, read_parquet, glob,
// duckdb_settings…) is refused: the engine is sandboxed.
var allowedTableFunctions = map[string]bool{
	"generate_series": true, "range": true, "unnest": true, "generate_subscripts": true,
}

// scalarInFrom are scalar functions PostgreSQL lets a query call in FROM
// (one row, the value as a column named by the alias); tsdb rewrites them
// into a subquery because DuckDB does not.
var scalarInFrom = map[string]bool{"string_to_array": true, "regexp_split_to_array": true, "regexp_split_to_table": true, "current_setting": true}

// refs are the relations a statement reads.
type refs struct {
	tables []string // tsdb tables, each once, in order of appearance
}

// collectRefs finds the tsdb tables a parse tree reads and refuses what the
// sandbox forbids: table functions that read files or engine state,
// relations in internal schemas, and names that DuckDB would resolve to
// files (replacement scans such as FROM 'x.parquet').
// tableLookup tells which names are tsdb tables, and why a name that is
// not one fails: absent (42P01), or there but unavailable (damaged).
type tableLookup interface {
	known(name string) bool
	missing(name string) error
}

func collectRefs(node proto.Message, tables tableLookup) (refs, error) {
	ctes := map[string]bool{}
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		if c, ok := m.(*pg_query.CommonTableExpr); ok {
			ctes[c.Ctename] = true
		}
		return nil
	})
	var r refs
	seen := map[string]bool{}
	err := sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch n := m.(type) {
		case *pg_query.LockingClause:
			return sqltree.SkipChildren // FOR UPDATE OF names FROM items (rowlocks.go)
		case *pg_query.RangeVar:
			return r.addRangeVar(n.Catalogname, n.Schemaname, n.Relname, ctes, tables, seen)
		case *pg_query.FuncCall:
			return checkScalarFunction(n)
		case *pg_query.RangeFunction:
			for _, f := range n.Functions {
				for _, item := range f.GetList().GetItems() {
					if fc := item.GetFuncCall(); fc != nil {
						if name := sqltree.LastName(fc.Funcname); !allowedTableFunctions[name] && !scalarInFrom[name] {
							return refusedTableFunction(name)
						}
					}
				}
			}
		}
		return nil
	})
	return r, err
}

func (r *refs) addRangeVar(catalog, schemaName, rel string, ctes map[string]bool, tables tableLookup, seen map[string]bool) error {
	if catalogName(&pg_query.RangeVar{Schemaname: schemaName, Relname: rel}) != "" {
		return nil // answered by tsdb's catalog views
	}
	if name, ok := isTempRelation(&pg_query.RangeVar{Catalogname: catalog, Schemaname: schemaName, Relname: rel}); ok {
		if t, ok := tables.(interface{ isTemp(string) bool }); ok && t.isTemp(name) {
			return nil // the engine's own table (temptables.go)
		}
	}
	switch strings.ToLower(schemaName) {
	case "", "public", "main":
	case "information_schema", "pg_catalog":
		return sqlerr.New(sqlerr.FeatureNotSupported, "catalog relation %s.%s is not supported yet", schemaName, rel)
	default:
		return sqlerr.New(sqlerr.UndefinedTable, "relation \"%s.%s\" does not exist", schemaName, rel)
	}
	if catalog != "" {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-database references are not implemented: %s.%s.%s", catalog, schemaName, rel)
	}
	if schemaName == "" && ctes[rel] {
		// A CTE by a table's name still leaves the table to references
		// outside its scope and inside its own body: bind the table too.
		// Otherwise such a reference would reach DuckDB unbound and read
		// whatever view of the table an earlier statement left.
		if tables.known(rel) && !seen[rel] {
			seen[rel] = true
			r.tables = append(r.tables, rel)
		}
		return nil
	}
	if !tables.known(rel) {
		if strings.ContainsAny(rel, "/'\\:") {
			// A path: the engine would read the file it names.
			return sqlerr.New(sqlerr.InsufficientPrivilege, "reading files is not allowed: %q", rel)
		}
		return tables.missing(rel)
	}
	if schemaName != "" {
		// unqualified removes public. and main. from tsdb tables first.
		return sqlerr.New(sqlerr.InternalError, "planner: table %s.%s reached the engine qualified", schemaName, rel)
	}
	if !seen[rel] {
		seen[rel] = true
		r.tables = append(r.tables, rel)
	}
	return nil
}

// unqualified returns st with public.t and main.t written t where t is a
// tsdb table: each statement reads its tables through views by their bare
// names, which a qualified name would miss. Tools (DBeaver, Metabase,
// Superset) qualify every table with its schema.
func (s *Session) unqualified(st statement) (statement, error) {
	// Every statement passes here: the tree is walked only when its text
	// can name a schema at all.
	if st.node == nil || !containsFold(st.text, "public") && !containsFold(st.text, "main") {
		return st, nil
	}
	qualified := func(rv *pg_query.RangeVar) bool {
		switch strings.ToLower(rv.Schemaname) {
		case "public", "main":
			return rv.Catalogname == "" && catalogName(rv) == "" && s.known(rv.Relname)
		}
		return false
	}
	stripped := map[string]bool{} // tables written qualified
	ctes := map[string]bool{}
	_ = sqltree.Walk(st.node.ProtoReflect(), func(m proto.Message) error {
		switch n := m.(type) {
		case *pg_query.RangeVar:
			if qualified(n) {
				stripped[n.Relname] = true
			}
		case *pg_query.CommonTableExpr:
			ctes[n.Ctename] = true
		}
		return nil
	})
	if len(stripped) == 0 {
		return st, nil
	}
	for name := range stripped {
		if ctes[name] {
			// Unqualified, the table's name would read the WITH query.
			return st, sqlerr.New(sqlerr.FeatureNotSupported, "public.%s in a statement with a WITH query named %s is not supported: rename the WITH query", name, name)
		}
	}
	node := proto.Clone(st.node).(*pg_query.Node)
	_ = sqltree.Walk(node.ProtoReflect(), func(m proto.Message) error {
		switch n := m.(type) {
		case *pg_query.RangeVar:
			if qualified(n) {
				n.Schemaname = ""
			}
		case *pg_query.ColumnRef:
			// public.cpu.host, as Metabase writes columns.
			if f := n.Fields; len(f) >= 3 && f[0].GetString_() != nil && f[1].GetString_() != nil {
				switch strings.ToLower(f[0].GetString_().Sval) {
				case "public", "main":
					if stripped[f[1].GetString_().Sval] {
						n.Fields = f[1:]
					}
				}
			}
		}
		return nil
	})
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return st, err
	}
	return statement{text: text, node: node}, nil
}

// containsFold reports whether s contains the lower-case ASCII word sub
// in any case.
func containsFold(s, sub string) bool {
	first := sub[0]
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == first && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// duckdbRefs analyses a statement that only DuckDB's grammar accepts, using
// DuckDB's own parser (json_serialize_sql, which accepts SELECT statements
// only). It applies the same sandbox rules as collectRefs.
func duckdbRefs(ctx context.Context, conn querier, text string, tables tableLookup) (refs, error) {
	var raw any
	rows, err := conn.QueryContext(ctx, "SELECT json_serialize_sql($1::VARCHAR)", text)
	if err != nil {
		return refs{}, engineError(err)
	}
	if rows.Next() {
		err = rows.Scan(&raw)
	} else if err = rows.Err(); err == nil {
		err = sql.ErrNoRows
	}
	rows.Close()
	if err != nil {
		return refs{}, engineError(err)
	}
	var tree map[string]any
	switch v := raw.(type) {
	case map[string]any:
		tree = v
	case string:
		if err := json.Unmarshal([]byte(v), &tree); err != nil {
			return refs{}, fmt.Errorf("planner: parse duckdb ast: %w", err)
		}
	default:
		return refs{}, fmt.Errorf("planner: unexpected duckdb ast type %T", raw)
	}
	if isErr, _ := tree["error"].(bool); isErr {
		msg, _ := tree["error_message"].(string)
		return refs{}, sqlerr.New(sqlerr.SyntaxError, "%s", msg)
	}
	// One statement, as PostgreSQL's scanner split it: were DuckDB's own
	// parser to find two, the text would run both.
	if stmts, _ := tree["statements"].([]any); len(stmts) != 1 {
		return refs{}, sqlerr.New(sqlerr.SyntaxError, "a statement in DuckDB's dialect must be one SELECT")
	}
	ctes := map[string]bool{}
	jsonWalk(tree, func(m map[string]any) {
		if cm, ok := m["cte_map"].(map[string]any); ok {
			if entries, ok := cm["map"].([]any); ok {
				for _, e := range entries {
					if em, ok := e.(map[string]any); ok {
						if k, ok := em["key"].(string); ok {
							ctes[k] = true
						}
					}
				}
			}
		}
	})
	var r refs
	seen := map[string]bool{}
	err = nil
	jsonWalk(tree, func(m map[string]any) {
		if err != nil {
			return
		}
		if m["class"] == "PARAMETER" {
			// $name is DuckDB's, not PostgreSQL's, and no Bind fills it:
			// most often a client macro left unexpanded.
			err = sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"$\": $name placeholders are not PostgreSQL syntax (an unexpanded client macro, such as Grafana's $__timeFilter?)")
			return
		}
		switch m["type"] {
		case "BASE_TABLE":
			cat, _ := m["catalog_name"].(string)
			sch, _ := m["schema_name"].(string)
			name, _ := m["table_name"].(string)
			err = r.addRangeVar(cat, sch, name, ctes, tables, seen)
		case "TABLE_FUNCTION":
			fn, _ := m["function"].(map[string]any)
			name, _ := fn["function_name"].(string)
			if !allowedTableFunctions[strings.ToLower(name)] {
				err = refusedTableFunction(strings.ToLower(name))
			}
		case "FUNCTION":
			name, _ := m["function_name"].(string)
			name = strings.ToLower(name)
			if forbiddenFunctions[name] || strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") || name == "current_setting" {
				err = sqlerr.New(sqlerr.InsufficientPrivilege, "function %s() is not allowed", name)
			}
		}
	})
	return r, err
}

func jsonWalk(v any, fn func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		fn(t)
		for _, c := range t {
			jsonWalk(c, fn)
		}
	case []any:
		for _, c := range t {
			jsonWalk(c, fn)
		}
	}
}

// forbiddenFunctions read the environment, files or engine state.
var forbiddenFunctions = map[string]bool{
	"getenv": true, "read_blob": true, "read_text": true, "read_csv": true, "read_csv_auto": true, "read_json": true,
	"read_json_auto": true, "read_parquet": true, "parquet_scan": true, "parquet_metadata": true, "parquet_schema": true,
	"glob": true, "sniff_csv": true, "delta_scan": true, "iceberg_scan": true, "query": true, "query_table": true,
	"duckdb_settings": true, "duckdb_secrets": true, "duckdb_extensions": true, "which_secret": true,
}

// refusedTableFunction is the error for a function in FROM that tsdb does
// not run: the engine's readers of files and state are refused (42501);
// any other name is a function tsdb does not have (42883, as PostgreSQL
// answers for one nobody created).
func refusedTableFunction(name string) error {
	if forbiddenFunctions[name] || strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") ||
		strings.HasPrefix(name, "read_") || strings.HasPrefix(name, "parquet_") {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "table function %s() is not allowed", name)
	}
	return sqlerr.New(sqlerr.UndefinedFunction, "function %s does not exist", name)
}

// checkScalarFunction refuses functions that reach outside the sandbox and
// current_setting() of anything but a session setting (engine settings
// stay private).
func checkScalarFunction(fc *pg_query.FuncCall) error {
	name := sqltree.LastName(fc.Funcname)
	if forbiddenFunctions[name] || strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "function %s() is not allowed", name)
	}
	if name == "current_setting" {
		if len(fc.Args) == 0 || fc.Args[0].GetAConst().GetSval() == nil {
			return sqlerr.New(sqlerr.FeatureNotSupported, "current_setting() takes a constant setting name")
		}
		setting := strings.ToLower(fc.Args[0].GetAConst().GetSval().Sval)
		if !dialect.Known(setting) {
			return sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", setting)
		}
	}
	return nil
}

// forbiddenKeywords start statements that reach outside the sandbox. The
// PostgreSQL grammar rejects most of them anyway; this gives a clear error
// instead of a syntax error.
var forbiddenKeywords = map[string]bool{
	"attach": true, "detach": true, "install": true, "load": true, "pragma": true,
	"export": true, "import": true, "call": true, "use": true, "force": true,
}

// duckdbQueryKeywords start the statements of DuckDB's dialect tsdb runs
// when PostgreSQL's grammar refuses them: queries (FROM-first, EXCLUDE,
// and the like), nothing that reads the engine's catalog or settings.
var duckdbQueryKeywords = map[string]bool{"select": true, "with": true, "from": true, "values": true, "table": true}

func firstKeyword(text string) string {
	f := strings.Fields(strings.ToLower(text))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], ";(")
}

// deparse renders a parse tree node back to SQL. version is the parse
// tree format version of the linked libpg_query.
func deparse(version int32, n *pg_query.Node) (string, error) {
	out, err := pg_query.Deparse(&pg_query.ParseResult{Version: version, Stmts: []*pg_query.RawStmt{{Stmt: n}}})
	if err != nil {
		return "", fmt.Errorf("planner: deparse: %w", err)
	}
	return dialect.QuoteEngineKeywords(out), nil
}

// parseError is PostgreSQL's syntax error for text, with its position
// (in characters from 1, as PostgreSQL counts) when the parser gives one.
func parseError(perr error) *sqlerr.Error {
	e := sqlerr.New(sqlerr.SyntaxError, "%s", perr.Error())
	var pe *parser.Error
	if errors.As(perr, &pe) && pe.Cursorpos > 0 {
		e.Position = pe.Cursorpos
	}
	return e
}

// atOffset moves an error's position, counted in its statement, to the
// query string the statement was cut from.
func atOffset(err error, query string, st statement) error {
	err = charPosition(err, st.text)
	var se *sqlerr.Error
	if errors.As(err, &se) && se.Position > 0 && st.offset > 0 && st.offset <= len(query) {
		se.Position += utf8.RuneCountInString(query[:st.offset])
	}
	return err
}

// charPosition gives an error that knows its byte offset in the
// statement's text (sqlerr.Error.Offset, from a parse-tree location) the
// position PostgreSQL reports, which counts characters. The offset must
// point at a string constant of text: a statement tsdb rewrote before
// (a view expanded in it) has locations in another text, and no caret is
// better than one under the wrong word.
func charPosition(err error, text string) error {
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Position != 0 || se.Offset <= 0 || se.Offset > len(text) {
		return err
	}
	if strings.IndexByte("'$EeUuBbXxNn", text[se.Offset-1]) >= 0 {
		se.Position = utf8.RuneCountInString(text[:se.Offset-1]) + 1
	}
	se.Offset = 0
	return err
}

// emptyColumn names the placeholder an empty select list is given: the
// engine refuses SELECT FROM t, which PostgreSQL answers with rows of no
// columns.
const emptyColumn = "_tsdb_no_column"
