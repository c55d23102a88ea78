package dialect

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"tsdb/internal/sqlerr"
)

// PostgreSQL's regular expression functions that the engine's own cannot
// answer as PostgreSQL does, in Go: regexp_replace (with its start and N
// arguments, its \& and \1 replacement escapes, and the matches PostgreSQL
// finds where the engine skips an empty match after another match),
// regexp_instr (every argument, subexpressions too), regexp_matches with
// 'g' and regexp_split_to_array/_table (the empty matches PostgreSQL finds
// and keeps or skips), and substring(… SIMILAR … ESCAPE …). The planner
// registers them as engine functions.
//
// Patterns are read as the engine reads them (RE2 syntax, which Go's
// regexp shares), with PostgreSQL's flags; positions count characters.

// RegexpCache compiles patterns once per distinct pattern and flags. It is
// safe for concurrent use: the engine calls a function from its threads.
type RegexpCache struct {
	mu sync.Mutex
	m  map[[2]string]*regexp.Regexp
}

// regexpCacheSize bounds a cache: past it, the cache starts over (a
// column of distinct patterns must not grow it without end).
const regexpCacheSize = 256

// Compile returns the regular expression of pattern under PostgreSQL's
// flags (without 'g', which callers read themselves).
func (c *RegexpCache) Compile(fn, pattern, flags string) (*regexp.Regexp, error) {
	return c.cached([2]string{pattern, flags}, func() (string, error) {
		prefix, expanded, err := goRegexpFlags(fn, flags)
		if err != nil {
			return "", err
		}
		if expanded {
			return prefix + expandedPattern(pattern), nil
		}
		return prefix + pattern, nil
	})
}

// cached is the compiled expression of key, compiling the source that
// source gives when the cache does not hold it.
func (c *RegexpCache) cached(key [2]string, source func() (string, error)) (*regexp.Regexp, error) {
	c.mu.Lock()
	re, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return re, nil
	}
	src, err := source()
	if err != nil {
		return nil, err
	}
	re, err = regexp.Compile(src)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidRegularExpression, "invalid regular expression: %s", regexpReason(err))
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= regexpCacheSize {
		c.m = map[[2]string]*regexp.Regexp{}
	}
	c.m[key] = re
	c.mu.Unlock()
	return re, nil
}

// regexpReason is Go's reason a pattern does not compile, without Go's
// "error parsing regexp: " prefix.
func regexpReason(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// goRegexpFlags is regexpFlags for Go's regexp: 'g' is allowed (the caller
// has read it), and 'x' (expanded syntax) is reported rather than refused.
func goRegexpFlags(fn, flags string) (prefix string, expanded bool, err error) {
	var plain strings.Builder
	for _, f := range flags {
		switch f {
		case 'g':
		case 'x':
			expanded = true
		case 't':
			expanded = false
		default:
			plain.WriteRune(f)
		}
	}
	p, e := regexpFlags(fn, plain.String())
	if e != nil {
		return "", false, e
	}
	return p, expanded, nil
}

// expandedPattern removes what PostgreSQL's expanded syntax ('x') ignores:
// white space and #-comments outside bracket expressions, unless escaped.
func expandedPattern(p string) string {
	var b strings.Builder
	inBracket := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
		case inBracket:
			if c == ']' {
				inBracket = false
			}
			b.WriteByte(c)
		case c == '[':
			inBracket = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hasFlag reports whether PostgreSQL's flags hold f.
func hasFlag(flags string, f rune) bool { return strings.ContainsRune(flags, f) }

// contextual reports whether a pattern's match at a position depends on
// the text before it (^, \A, \b, \B): such a pattern cannot be run on a
// tail of the text alone.
func contextual(re *regexp.Regexp) bool {
	s := re.String()
	return strings.Contains(s, "^") || strings.Contains(s, `\A`) || strings.Contains(s, `\b`) || strings.Contains(s, `\B`)
}

// withContext returns re preceded by one character of any kind. Run on
// the text from the character before a search position, its match of re
// sees that character, as ^ (after a newline), \b and \B must, where re
// run on the tail alone would take the position for the text's start.
func (c *RegexpCache) withContext(re *regexp.Regexp) (*regexp.Regexp, error) {
	return c.cached([2]string{re.String(), "\x00context"}, func() (string, error) {
		return `(?s:.)(?:` + re.String() + `)`, nil
	})
}

// searchAt is the first match of re in src at or after byte offset pos,
// with the text before pos as its context; offsets are into src.
func (c *RegexpCache) searchAt(re *regexp.Regexp, src string, pos int) ([]int, error) {
	if pos == 0 {
		return re.FindStringSubmatchIndex(src), nil
	}
	if !contextual(re) {
		m := re.FindStringSubmatchIndex(src[pos:])
		for k := range m {
			if m[k] >= 0 {
				m[k] += pos
			}
		}
		return m, nil
	}
	ctx, err := c.withContext(re)
	if err != nil {
		return nil, err
	}
	_, w := utf8.DecodeLastRuneInString(src[:pos])
	back := pos - w
	m := ctx.FindStringSubmatchIndex(src[back:])
	if m == nil {
		return nil, nil
	}
	_, lead := utf8.DecodeRuneInString(src[back+m[0]:])
	m[0] += lead // the context character is not the match's
	for k := range m {
		if m[k] >= 0 {
			m[k] += back
		}
	}
	return m, nil
}

// pgMatches returns the matches PostgreSQL finds searching src from byte
// offset from, as its setup_regexp_matches does: each search starts where
// the last match ended, one character later after an empty match, and
// sees the text before it. (Go's FindAll drops an empty match that
// directly follows another match; PostgreSQL keeps it.) With
// ignoreDegenerate, as for splitting, empty matches at the text's start
// or end or right after the previous match are skipped. limit > 0 stops
// after that many matches. Offsets are into src.
func (c *RegexpCache) pgMatches(re *regexp.Regexp, src string, from int, limit int, ignoreDegenerate bool) ([][]int, error) {
	var out [][]int
	prevEnd := from
	for start := from; start <= len(src); {
		m, err := c.searchAt(re, src, start)
		if err != nil || m == nil {
			return out, err
		}
		if !ignoreDegenerate || m[0] < len(src) && m[1] > prevEnd {
			out = append(out, m)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		prevEnd, start = m[1], m[1]
		if m[0] == m[1] {
			if start >= len(src) {
				break
			}
			_, w := utf8.DecodeRuneInString(src[start:])
			start += w
		}
	}
	return out, nil
}

// RegexpMatches answers regexp_matches(src, pattern, flags) with 'g':
// each match's captured groups (the whole match without groups), a group
// that took no part NULL.
func (c *RegexpCache) RegexpMatches(src, pattern, flags string) ([]any, error) {
	re, err := c.Compile("regexp_matches", pattern, flags)
	if err != nil {
		return nil, err
	}
	matches, err := c.pgMatches(re, src, 0, 0, false)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(matches))
	for _, m := range matches {
		groups := m
		if len(m) > 2 {
			groups = m[2:]
		}
		row := make([]any, 0, len(groups)/2)
		for k := 0; k+1 < len(groups); k += 2 {
			if groups[k] < 0 {
				row = append(row, nil)
				continue
			}
			row = append(row, src[groups[k]:groups[k+1]])
		}
		out = append(out, row)
	}
	return out, nil
}

// RegexpSplit answers regexp_split_to_array (and, unnested,
// regexp_split_to_table): the text between the matches, where empty
// matches at the text's ends and right after another match do not split.
func (c *RegexpCache) RegexpSplit(fn, src, pattern, flags string) ([]any, error) {
	if hasFlag(flags, 'g') {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "%s() does not support the \"global\" option", fn)
	}
	re, err := c.Compile(fn, pattern, flags)
	if err != nil {
		return nil, err
	}
	matches, err := c.pgMatches(re, src, 0, 0, true)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(matches)+1)
	last := 0
	for _, m := range matches {
		out = append(out, src[last:m[0]])
		last = m[1]
	}
	return append(out, src[last:]), nil
}

// runeOffset is the byte offset of the character at 1-based position pos,
// or -1 when the text is shorter.
func runeOffset(s string, pos int64) int {
	if pos <= 1 {
		return 0
	}
	n := int64(1)
	for i := range s {
		if n == pos {
			return i
		}
		n++
	}
	if n == pos {
		return len(s)
	}
	return -1
}

// positiveArgument checks one of the optional integer arguments.
func positiveArgument(name string, v, min int64) error {
	if v < min {
		return sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %d", name, v)
	}
	return nil
}

// RegexpReplace is PostgreSQL's regexp_replace(src, pattern, repl, start,
// n, flags). Without an N (nGiven false) 'g' replaces every match and its
// absence the first.
func (c *RegexpCache) RegexpReplace(src, pattern, repl string, start, n int64, nGiven bool, flags string) (string, error) {
	if err := positiveArgument("start", start, 1); err != nil {
		return "", err
	}
	if nGiven {
		if err := positiveArgument("n", n, 0); err != nil {
			return "", err
		}
	} else {
		n = 1
		if hasFlag(flags, 'g') {
			n = 0
		}
	}
	re, err := c.Compile("regexp_replace", pattern, flags)
	if err != nil {
		return "", err
	}
	from := runeOffset(src, start)
	if from < 0 {
		return src, nil
	}
	limit := 0
	if n > 0 {
		limit = int(n)
	}
	matches, err := c.pgMatches(re, src, from, limit, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	last := 0
	for i, m := range matches {
		if n > 0 && int64(i+1) != n {
			continue
		}
		b.WriteString(src[last:m[0]])
		appendReplacement(&b, src, repl, m)
		last = m[1]
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// appendReplacement writes PostgreSQL's replacement text for match m:
// \1 to \9 are groups (nothing for a group that does not exist or took
// no part), \& the whole match, \\ one backslash; any other backslash is
// itself.
func appendReplacement(b *strings.Builder, src, repl string, m []int) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '\\' || i+1 == len(repl) {
			b.WriteByte(c)
			continue
		}
		next := repl[i+1]
		group := -1
		switch {
		case next >= '1' && next <= '9':
			group = int(next - '0')
		case next == '&':
			group = 0
		case next == '\\':
			b.WriteByte('\\')
			i++
			continue
		default:
			b.WriteByte('\\')
			continue
		}
		i++
		if 2*group+1 < len(m) && m[2*group] >= 0 {
			b.WriteString(src[m[2*group]:m[2*group+1]])
		}
	}
}

// RegexpInstr is PostgreSQL's regexp_instr(src, pattern, start, n,
// endoption, flags, subexpr): the position of the n-th match (or of its
// subexpr-th group), or after it with endoption 1; 0 when there is none.
func (c *RegexpCache) RegexpInstr(src, pattern string, start, n, endoption int64, flags string, subexpr int64) (int64, error) {
	for _, a := range []struct {
		name   string
		v, min int64
	}{{"start", start, 1}, {"n", n, 1}, {"endoption", endoption, 0}, {"subexpr", subexpr, 0}} {
		if err := positiveArgument(a.name, a.v, a.min); err != nil {
			return 0, err
		}
	}
	if endoption > 1 {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter \"endoption\": %d", endoption)
	}
	if hasFlag(flags, 'g') {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "regexp_instr() does not support the \"global\" option")
	}
	re, err := c.Compile("regexp_instr", pattern, flags)
	if err != nil {
		return 0, err
	}
	from := runeOffset(src, start)
	if from < 0 {
		return 0, nil
	}
	matches, err := c.pgMatches(re, src, from, int(n), false)
	if err != nil {
		return 0, err
	}
	if int64(len(matches)) < n {
		return 0, nil
	}
	m := matches[n-1]
	if 2*subexpr+1 >= int64(len(m)) || m[2*subexpr] < 0 {
		return 0, nil
	}
	at := m[2*subexpr]
	if endoption == 1 {
		at = m[2*subexpr+1]
	}
	return int64(utf8.RuneCountInString(src[:at])) + 1, nil
}

// similarParts turns a SQL regular expression (SIMILAR TO's) into Go
// patterns, one per part that escape-double-quote separators delimit (at
// most three), as PostgreSQL's similar_escape reads it: % and _ are
// wildcards, the escape character quotes the next one, parentheses group
// without capturing, bracket expressions stand as written and the
// regular expression metacharacters . ^ $ are literal.
func similarParts(pattern, escape string) ([]string, error) {
	if utf8.RuneCountInString(escape) > 1 {
		e := sqlerr.New(sqlerr.InvalidEscapeSequence, "invalid escape string")
		e.Hint = "Escape string must be empty or one character."
		return nil, e
	}
	esc, _ := utf8.DecodeRuneInString(escape)
	if escape == "" {
		esc = -1
	}
	var parts []string
	var b strings.Builder
	afterEscape, inBracket, bracketStart := false, false, false
	for _, r := range pattern {
		switch {
		case afterEscape:
			afterEscape = false
			if r == '"' && !inBracket {
				if len(parts) == 2 {
					return nil, sqlerr.New(sqlerr.InvalidUseOfEscapeCharacter, "SQL regular expression may not contain more than two escape-double-quote separators")
				}
				parts = append(parts, b.String())
				b.Reset()
				continue
			}
			b.WriteString(regexp.QuoteMeta(string(r)))
		case r == esc:
			afterEscape = true
		case inBracket:
			if r == ']' && !bracketStart {
				inBracket = false
			}
			bracketStart = bracketStart && r == '^'
			if r == '\\' {
				b.WriteString(`\\`)
			} else {
				b.WriteRune(r)
			}
		case r == '[':
			inBracket, bracketStart = true, true
			b.WriteRune(r)
		case r == '%':
			b.WriteString("(?s:.*)")
		case r == '_':
			b.WriteString("(?s:.)")
		case r == '(':
			b.WriteString("(?:")
		case r == '.' || r == '^' || r == '$' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	if afterEscape {
		// A trailing escape character quotes nothing; PostgreSQL keeps
		// it as a literal backslash in the regular expression.
		b.WriteString(`\\`)
	}
	return append(parts, b.String()), nil
}

// SimilarRegex is the Go pattern a whole SIMILAR TO pattern means.
func SimilarRegex(pattern, escape string) (string, error) {
	parts, err := similarParts(pattern, escape)
	if err != nil {
		return "", err
	}
	re := anchoredParts(parts)
	if _, err := regexp.Compile(re); err != nil {
		return "", sqlerr.New(sqlerr.InvalidRegularExpression, "invalid regular expression: %s", regexpReason(err))
	}
	return re, nil
}

// anchoredParts is the pattern matching all of a text that the parts
// match in turn, each part a group of its own (a | in one part
// alternates within it).
func anchoredParts(parts []string) string {
	var b strings.Builder
	b.WriteString("^(?:")
	for _, p := range parts {
		b.WriteString("(?:" + p + ")")
	}
	b.WriteString(")$")
	return b.String()
}

// maxSimilarSplit bounds the text SubstringSimilar splits (see there).
const maxSimilarSplit = 4096

// SubstringSimilar is PostgreSQL's substring(s SIMILAR pattern ESCAPE
// escape): the pattern must match all of s; the part between the two
// separators (after the one, when there is one) is returned, the part
// before them as short as it can be and the part between as long. ok is
// false when the pattern does not match.
func (c *RegexpCache) SubstringSimilar(s, pattern, escape string) (out string, ok bool, err error) {
	parts, err := similarParts(pattern, escape)
	if err != nil {
		return "", false, err
	}
	whole, err := c.Compile("substring", anchoredParts(parts), "")
	if err != nil {
		return "", false, err
	}
	if !whole.MatchString(s) {
		return "", false, nil
	}
	if len(parts) == 1 {
		return s, true, nil
	}
	if len(s) > maxSimilarSplit {
		// Finding the split takes time growing with the square of the
		// length; the engine cannot cancel a function while it runs.
		return "", false, sqlerr.New(sqlerr.ProgramLimitExceeded, "substring(… SIMILAR …) with separators is supported on texts of up to %d bytes", maxSimilarSplit)
	}
	full := make([]*regexp.Regexp, len(parts))
	for i, p := range parts {
		if full[i], err = c.Compile("substring", anchoredParts([]string{p}), ""); err != nil {
			return "", false, err
		}
	}
	restRe, err := c.Compile("substring", anchoredParts(parts[1:]), "")
	if err != nil {
		return "", false, err
	}
	// The shortest first part after which the rest can match.
	cuts := append(runeCuts(s), len(s))
	for _, i := range cuts {
		if !full[0].MatchString(s[:i]) || !restRe.MatchString(s[i:]) {
			continue
		}
		if len(parts) == 2 {
			return s[i:], true, nil
		}
		// The longest middle part after which the last can match.
		for k := len(cuts) - 1; k >= 0; k-- {
			j := cuts[k]
			if j < i {
				break
			}
			if full[1].MatchString(s[i:j]) && full[2].MatchString(s[j:]) {
				return s[i:j], true, nil
			}
		}
	}
	return "", false, fmt.Errorf("substring: no split of a matching string")
}

// runeCuts are the byte offsets where characters of s start.
func runeCuts(s string) []int {
	cuts := make([]int, 0, len(s))
	for i := range s {
		cuts = append(cuts, i)
	}
	return cuts
}
