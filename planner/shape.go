package planner

// A statement is measured before anything parses it. PostgreSQL's parser
// (pg_query, in C) and DuckDB's binder and optimizer recurse on the
// statement's tree: 30,000 terms of 1+1+… (60 KB) overflowed the C stack
// of pg_query's output step and killed the server with SIGSEGV, and DuckDB
// spends seconds to minutes planning deep or wide expressions (a sum of
// 1,000 terms: 5.5 s; 2,000: 45 s; a 20,000-term OR: 7 s; an IN list of
// a million constants: 20 s and 4 GB), none of which it can interrupt.
// measureSQL is a lexer that counts tokens and estimates the nesting depth
// of the tree a statement's text makes, without building it, in one pass
// and no allocation per token.

import "strings"

const (
	// maxStatementDepth is how deep a statement's expressions may nest,
	// as measureSQL estimates it: DuckDB refuses deeper expressions
	// (max_expression_depth), and it is far from what overflows the
	// parser's C stack (about 25,000 levels on an 8 MiB thread stack).
	// PostgreSQL refuses somewhere between 3,000 and 5,000 levels of
	// 1+1+…, with the same SQLSTATE (54001).
	maxStatementDepth = 1000
	// heavyTokens and heavyDepth mark a statement whose parsing and
	// planning may take long enough to count: such statements are parsed
	// and planned a few at a time (Limits.HeavyStatements).
	heavyTokens = 10_000
	heavyDepth  = 100
)

// sqlShape is what measureSQL found: the number of tokens and the deepest
// estimated nesting of the statement tree.
type sqlShape struct {
	tokens, depth int
}

func (sh sqlShape) heavy() bool { return sh.tokens > heavyTokens || sh.depth > heavyDepth }

// chainOps are keywords that make a node of their left operand, so that a
// run of them nests as a chain of operators does (a UNION of unions, NOT
// NOT …). AND and OR are not among them: both parsers flatten a run of
// them into one node of many arguments.
var chainOps = map[string]bool{
	"not": true, "is": true, "like": true, "ilike": true, "similar": true, "between": true, "in": true,
	"union": true, "intersect": true, "except": true, "collate": true, "at": true, "operator": true,
	"isnull": true, "notnull": true,
}

// measureSQL estimates a statement's shape from its text. Every bracket,
// and every CASE … END, nests one level; within a level, each operator
// (symbols, ::, and chainOps) since the last comma, AND or OR adds one,
// since a run of binary operators builds a chain as deep as the run is
// long. The estimate is at least the depth of the trees the parsers build
// for arithmetic, casts, set operations and function calls, which is what
// the limits need; precedence can only make the real tree shallower.
func measureSQL(q string) sqlShape {
	// chains[i] is the operator run at nesting level i; cases marks the
	// levels a CASE opened.
	var chainsBuf [64]int
	var casesBuf [64]bool
	chains, cases := chainsBuf[:1], casesBuf[:1]
	sum := 0 // of chains
	sh := sqlShape{}
	note := func() {
		if d := len(chains) - 1 + sum; d > sh.depth {
			sh.depth = d
		}
	}
	push := func(isCase bool) {
		chains, cases = append(chains, 0), append(cases, isCase)
		note()
	}
	pop := func() {
		if len(chains) > 1 {
			sum -= chains[len(chains)-1]
			chains, cases = chains[:len(chains)-1], cases[:len(cases)-1]
		}
	}
	resetChain := func() {
		sum -= chains[len(chains)-1]
		chains[len(chains)-1] = 0
	}
	chain := func() {
		chains[len(chains)-1]++
		sum++
		note()
	}
	n := len(q)
	for i := 0; i < n; {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < n && q[i+1] == '-':
			for i < n && q[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < n && q[i+1] == '*':
			// PostgreSQL's block comments nest.
			nest := 0
			for i < n {
				if q[i] == '/' && i+1 < n && q[i+1] == '*' {
					nest, i = nest+1, i+2
				} else if q[i] == '*' && i+1 < n && q[i+1] == '/' {
					nest, i = nest-1, i+2
					if nest == 0 {
						break
					}
				} else {
					i++
				}
			}
			continue
		}
		sh.tokens++
		switch {
		case c == '\'':
			i = skipQuoted(q, i, '\'', false)
		case c == '"':
			i = skipQuoted(q, i, '"', false)
		case c == '$':
			i = skipDollar(q, i)
		case c == '(' || c == '[':
			push(false)
			i++
		case c == ')' || c == ']':
			pop()
			i++
		case c == ',' || c == ';':
			resetChain()
			i++
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentPart(q[j]) {
				j++
			}
			word := q[i:j]
			i = j
			if i < n && q[i] == '\'' && len(word) <= 2 {
				// E'…' (backslash escapes), B'…', X'…', U&'…', N'…'.
				i = skipQuoted(q, i, '\'', strings.EqualFold(word, "e"))
				continue
			}
			if len(word) > 9 {
				continue
			}
			var lw [9]byte
			for k := 0; k < len(word); k++ {
				b := word[k]
				if 'A' <= b && b <= 'Z' {
					b += 'a' - 'A'
				}
				lw[k] = b
			}
			switch kw := string(lw[:len(word)]); {
			case kw == "and" || kw == "or":
				resetChain()
			case kw == "case":
				push(true)
			case kw == "end":
				if cases[len(cases)-1] {
					pop()
				}
			case chainOps[kw]:
				chain()
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < n && q[i+1] >= '0' && q[i+1] <= '9':
			i++
			for i < n && (isIdentPart(q[i]) || q[i] == '.' ||
				(q[i] == '+' || q[i] == '-') && (q[i-1] == 'e' || q[i-1] == 'E')) {
				i++
			}
		case c == ':' && i+1 < n && q[i+1] == ':':
			chain()
			i += 2
		case strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0:
			// Each character counts: PostgreSQL's lexer splits runs
			// such as ++++1 into one unary operator per character, and
			// counting a two-character operator twice only errs high.
			for i < n && strings.IndexByte("+-*/<>=~!@#%^&|`?", q[i]) >= 0 {
				if q[i] == '-' && i+1 < n && q[i+1] == '-' || q[i] == '/' && i+1 < n && q[i+1] == '*' {
					break // a comment starts
				}
				chain()
				i++
			}
		default:
			i++
		}
	}
	return sh
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

// skipQuoted returns the index after the quoted text starting at i (a
// doubled quote stands for itself; with backslashes, a backslash escapes
// the next byte), or len(q) when it does not end.
func skipQuoted(q string, i int, quote byte, backslashes bool) int {
	for i++; i < len(q); i++ {
		switch q[i] {
		case '\\':
			if backslashes {
				i++
			}
		case quote:
			if i+1 < len(q) && q[i+1] == quote {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(q)
}

// skipDollar returns the index after $n or a dollar-quoted string
// ($tag$…$tag$) starting at i.
func skipDollar(q string, i int) int {
	j := i + 1
	if j < len(q) && q[j] >= '0' && q[j] <= '9' {
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		return j
	}
	for j < len(q) && isIdentPart(q[j]) && q[j] != '$' {
		j++
	}
	if j >= len(q) || q[j] != '$' {
		return i + 1
	}
	tag := q[i : j+1]
	if end := strings.Index(q[j+1:], tag); end >= 0 {
		return j + 1 + end + len(tag)
	}
	return len(q)
}
