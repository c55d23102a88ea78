package dialect

import (
	"regexp"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// engineKeywords are the words DuckDB reserves, or allows only as
// function and type names, that PostgreSQL takes as names: a column,
// table or alias called so is written bare by PostgreSQL's deparser
// (AT, BY, MAP, STRUCT, …) and was a syntax error to the engine (found by
// comparing duckdb_keywords() with PostgreSQL's keyword list).
var engineKeywords = regexp.MustCompile(`\b(anti|asof|at|by|columns|describe|generated|glob|lambda|map|pivot|pivot_longer|pivot_wider|positional|qualify|semi|show|struct|summarize|try_cast|tuple|unpack|unpivot)\b`)

// EngineColumns is the function name a rewrite gives the engine's
// COLUMNS(pattern) expression, the columns of the FROM list whose names
// match: QuoteEngineKeywords writes it as the keyword.
const EngineColumns = "_tsdb_columns"

// QuoteEngineKeywords quotes, in SQL text as PostgreSQL's deparser writes
// it, the names that are keywords to the engine. The deparser writes
// keywords in upper case and names as they are (lower case unless
// quoted), so a lower-case word of engineKeywords outside a literal is a
// name.
func QuoteEngineKeywords(sql string) string {
	// The engine's COLUMNS(pattern) star (see WithTies) is written as a
	// function the deparser prints as a name.
	sql = strings.ReplaceAll(sql, EngineColumns+"(", "COLUMNS(")
	if !engineKeywords.MatchString(sql) {
		return sql
	}
	res, err := pg_query.Scan(sql)
	if err != nil {
		return sql
	}
	var b strings.Builder
	last := 0
	for _, t := range res.GetTokens() {
		word := sql[t.Start:t.End]
		if t.Token == pg_query.Token_SCONST || word == "" || word[0] == '"' || !engineKeywords.MatchString(word) || len(engineKeywords.FindString(word)) != len(word) {
			continue
		}
		b.WriteString(sql[last:t.Start])
		b.WriteString(`"` + word + `"`)
		last = int(t.End)
	}
	if last == 0 {
		return sql
	}
	b.WriteString(sql[last:])
	return b.String()
}

// engineKeywordsFold is engineKeywords in any case, for text as written.
var engineKeywordsFold = regexp.MustCompile(`(?i)` + engineKeywords.String())

// mayNameEngineKeyword reports whether text has a word of engineKeywords
// other than the BY of GROUP BY and ORDER BY, which nearly
// every query has and which names nothing: only then is the statement's
// tree walked (a reflective walk, a tenth of a short query's time).
func mayNameEngineKeyword(text string) bool {
	for _, m := range engineKeywordsFold.FindAllStringIndex(text, -1) {
		if !strings.EqualFold(text[m[0]:m[1]], "by") {
			return true
		}
		before := strings.TrimRight(text[:m[0]], " \t\r\n")
		i := strings.LastIndexAny(before, " \t\r\n(),") + 1
		switch strings.ToLower(before[i:]) {
		case "group", "order":
		default:
			return true
		}
	}
	return false
}

// NamesEngineKeyword reports whether a statement written as text names a
// column, table or alias with one of engineKeywords: such a statement
// must reach the engine deparsed (QuoteEngineKeywords), not as written.
func NamesEngineKeyword(text string, stmt *pg_query.Node) bool {
	if !mayNameEngineKeyword(text) {
		return false
	}
	found := false
	isKW := func(s string) bool { return len(engineKeywords.FindString(s)) == len(s) && s != "" }
	_ = sqltree.Walk(stmt.ProtoReflect(), func(m proto.Message) error {
		switch n := m.(type) {
		case *pg_query.ColumnRef:
			for _, f := range n.Fields {
				if isKW(f.GetString_().GetSval()) {
					found = true
				}
			}
		case *pg_query.RangeVar:
			found = found || isKW(n.Relname)
		case *pg_query.ResTarget:
			found = found || isKW(n.Name)
		case *pg_query.Alias:
			found = found || isKW(n.Aliasname)
			for _, c := range n.Colnames {
				found = found || isKW(c.GetString_().GetSval())
			}
		case *pg_query.ColumnDef:
			found = found || isKW(n.Colname)
		}
		return nil
	})
	return found
}
