package dialect

import (
	"errors"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// UnicodeEscapes rewrites the escape-string literals of a query (E'…')
// that hold Unicode escapes (\uXXXX, \UXXXXXXXX) as standard literals of
// the text they denote, and refuses the escapes PostgreSQL refuses. The
// engine reads \u as a plain "u", and a statement tsdb passes to it as
// written (E'd\u0061t\U00000061' became "du0061tU00000061" where
// PostgreSQL answers "data"), or one PostgreSQL's grammar refused, kept
// its escape strings as they were. Literals without Unicode escapes mean
// the same to both.
func UnicodeEscapes(query string) (string, error) {
	query, err := unicodeLiterals(query)
	if err != nil {
		return "", err
	}
	// Every query passes here, large INSERTs too: scan only those that
	// may hold an escape string with a Unicode or byte escape.
	if !strings.Contains(query, `\`) || !strings.Contains(query, `\u`) && !strings.Contains(query, `\U`) &&
		!strings.Contains(query, "E'") && !strings.Contains(query, "e'") {
		return query, nil
	}
	res, err := pg_query.Scan(query)
	if err != nil {
		// PostgreSQL's scanner refuses bad escapes; a statement tsdb
		// cannot parse would otherwise go to the engine as it is, which
		// reads \u as "u".
		msg := err.Error()
		var e *sqlerr.Error
		switch {
		case msg == "invalid Unicode escape":
			e = sqlerr.New("22025", "%s", msg)
			e.Hint = `Unicode escapes must be \uXXXX or \UXXXXXXXX.`
		case strings.HasPrefix(msg, "invalid Unicode"):
			e = sqlerr.New(sqlerr.SyntaxError, "%s", msg)
		case strings.HasPrefix(msg, "invalid byte sequence"):
			e = sqlerr.New(sqlerr.CharacterNotInRepertoire, "%s", msg)
		default:
			return query, nil // the parser reports it
		}
		var pe *parser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			e.Position = pe.Cursorpos
		}
		return "", e
	}
	var out strings.Builder
	last := 0
	for _, t := range res.GetTokens() {
		if t.Token != pg_query.Token_SCONST {
			continue
		}
		lit := query[t.Start:t.End]
		if len(lit) < 3 || (lit[0] != 'E' && lit[0] != 'e') || lit[1] != '\'' {
			continue
		}
		if !hasUnicodeEscape(lit[2 : len(lit)-1]) {
			continue
		}
		text, err := literalText(lit)
		if err != nil {
			return "", err
		}
		out.WriteString(query[last:t.Start])
		out.WriteString(schema.QuoteString(text))
		last = int(t.End)
	}
	if last == 0 {
		return query, nil
	}
	out.WriteString(query[last:])
	return out.String(), nil
}

// hasUnicodeEscape reports whether the body of an E'…' literal holds a
// \u or \U escape (not an escaped backslash followed by a u).
func hasUnicodeEscape(body string) bool {
	for i := 0; i+1 < len(body); i++ {
		if body[i] == '\\' {
			if body[i+1] == 'u' || body[i+1] == 'U' {
				return true
			}
			i++
		}
	}
	return false
}

// literalText is the text a string literal denotes, as PostgreSQL's
// parser reads it (it decodes every escape; the scanner has checked them).
func literalText(lit string) (string, error) {
	tree, err := pg_query.Parse("SELECT " + lit)
	if err != nil {
		return "", sqlerr.New(sqlerr.SyntaxError, "%s", err.Error())
	}
	sv := tree.GetStmts()[0].GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal().GetAConst().GetSval()
	if sv == nil {
		return "", sqlerr.New(sqlerr.SyntaxError, "not a string literal: %s", lit)
	}
	return sv.Sval, nil
}
