package planner

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/auth"
	"tsdb/internal/schema"
)

// The INSERT fast path. A query string that is exactly one
//
//	INSERT INTO name [(col, …)] VALUES (literal, …), …[;]
//
// with plain literals (numbers, '…' strings, NULL, TRUE, FALSE, DEFAULT) is
// read by this scanner straight into Arrow builders: PostgreSQL's parser
// turns a 1,000-row statement into tens of thousands of tree nodes, which
// cost more than the write itself. The scanner gives up on anything else
// (comments, casts, E'' strings, expressions, a second statement, a value
// it cannot convert without the engine's rules), and the statement then
// takes the general path, so both paths accept and produce the same.

// insertScan is a parsed fast-path INSERT.
type insertScan struct {
	table string
	cols  []string // nil: all columns
	width int
	n     int // rows
	// parts hold the values row after row, width to a row, each a whole
	// number of rows: one allocation per part instead of one per row,
	// and a large statement is read in parts at once (see splitRows).
	parts [][]literal
}

// maxSpareCells bounds the cells a session keeps for its next INSERT
// (about 40 bytes each).
const maxSpareCells = 1 << 17

// insertPartBytes is the least VALUES text a part of a statement read on
// its own core gets: below it, starting a goroutine costs more than it
// saves.
const insertPartBytes = 32 << 10

type scanner struct {
	s   string
	pos int
}

func (sc *scanner) space() {
	for sc.pos < len(sc.s) {
		switch sc.s[sc.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			sc.pos++
		default:
			return
		}
	}
}

// keyword consumes kw (case-insensitive) followed by a non-identifier byte.
func (sc *scanner) keyword(kw string) bool {
	sc.space()
	end := sc.pos + len(kw)
	if end > len(sc.s) || !strings.EqualFold(sc.s[sc.pos:end], kw) || (end < len(sc.s) && identByte(sc.s[end])) {
		return false
	}
	sc.pos = end
	return true
}

func (sc *scanner) punct(c byte) bool {
	sc.space()
	if sc.pos < len(sc.s) && sc.s[sc.pos] == c {
		sc.pos++
		return true
	}
	return false
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '$' || c >= 0x80
}

// ident reads an unquoted (folded to lower case) or a double-quoted name.
func (sc *scanner) ident() (string, bool) {
	sc.space()
	if sc.pos >= len(sc.s) {
		return "", false
	}
	if sc.s[sc.pos] == '"' {
		var b strings.Builder
		for i := sc.pos + 1; i < len(sc.s); i++ {
			if sc.s[i] != '"' {
				b.WriteByte(sc.s[i])
				continue
			}
			if i+1 < len(sc.s) && sc.s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			sc.pos = i + 1
			return b.String(), b.Len() > 0
		}
		return "", false
	}
	start := sc.pos
	c := sc.s[sc.pos]
	if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return "", false
	}
	for sc.pos < len(sc.s) && identByte(sc.s[sc.pos]) {
		if sc.s[sc.pos] >= 0x80 {
			return "", false // non-ASCII folding is PostgreSQL's business
		}
		sc.pos++
	}
	name := strings.ToLower(sc.s[start:sc.pos])
	if reservedAfterInto[name] {
		return "", false
	}
	return name, true
}

// reservedAfterInto are words that would make the statement something else.
var reservedAfterInto = map[string]bool{"values": true, "select": true, "default": true, "table": true, "with": true, "only": true}

// value reads one literal cell.
func (sc *scanner) value() (literal, bool) {
	sc.space()
	if sc.pos >= len(sc.s) {
		return literal{}, false
	}
	switch c := sc.s[sc.pos]; {
	case c == '\'':
		// Most strings have no doubled quote: the text is a piece of the
		// query, not a copy.
		if j := strings.IndexByte(sc.s[sc.pos+1:], '\''); j >= 0 {
			end := sc.pos + 1 + j
			if end+1 >= len(sc.s) || sc.s[end+1] != '\'' {
				text := sc.s[sc.pos+1 : end]
				sc.pos = end + 1
				sc.space()
				if sc.pos >= len(sc.s) || (sc.s[sc.pos] != ',' && sc.s[sc.pos] != ')') {
					return literal{}, false
				}
				return literal{kind: 's', text: text}, true
			}
		}
		var b strings.Builder
		i := sc.pos + 1
		for {
			j := strings.IndexByte(sc.s[i:], '\'')
			if j < 0 {
				return literal{}, false
			}
			b.WriteString(sc.s[i : i+j])
			i += j + 1
			if i < len(sc.s) && sc.s[i] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			break
		}
		sc.pos = i
		// 'a' 'b' on two lines is one literal in PostgreSQL; and a cast
		// or operator may follow. Only a comma or a parenthesis is plain.
		sc.space()
		if sc.pos >= len(sc.s) || (sc.s[sc.pos] != ',' && sc.s[sc.pos] != ')') {
			return literal{}, false
		}
		return literal{kind: 's', text: b.String()}, true
	case c == '-' || c >= '0' && c <= '9' || c == '.':
		neg := c == '-'
		if neg {
			sc.pos++
			sc.space()
		}
		lit, ok := sc.number()
		if !ok {
			return literal{}, false
		}
		if neg {
			// PostgreSQL's grammar folds the minus into the constant.
			if lit.kind == 'i' {
				lit.i = -lit.i
			} else {
				lit.text = "-" + lit.text
			}
		}
		return lit, true
	default:
		switch {
		case sc.keyword("null"), sc.keyword("default"):
			return literal{kind: 'n'}, true
		case sc.keyword("true"):
			return literal{kind: 'b', b: true}, true
		case sc.keyword("false"):
			return literal{kind: 'b', b: false}, true
		}
	}
	return literal{}, false
}

// number reads digits[.digits][e[±]digits]: an integer within int32 is an
// integer constant, anything else a numeric one (as in PostgreSQL).
func (sc *scanner) number() (literal, bool) {
	start, s := sc.pos, sc.s
	digits := func() int {
		n := 0
		for sc.pos < len(s) && s[sc.pos] >= '0' && s[sc.pos] <= '9' {
			sc.pos++
			n++
		}
		return n
	}
	whole := digits()
	isInt := true
	if sc.pos < len(s) && s[sc.pos] == '.' {
		sc.pos++
		isInt = false
		if whole+digits() == 0 {
			return literal{}, false
		}
	} else if whole == 0 {
		return literal{}, false
	}
	if sc.pos < len(s) && (s[sc.pos] == 'e' || s[sc.pos] == 'E') {
		sc.pos++
		isInt = false
		if sc.pos < len(s) && (s[sc.pos] == '+' || s[sc.pos] == '-') {
			sc.pos++
		}
		if digits() == 0 {
			return literal{}, false
		}
	}
	// 1x, 1_000 and 0x1f are other tokens or errors: not ours.
	if sc.pos < len(s) && (identByte(s[sc.pos]) || s[sc.pos] == '.') {
		return literal{}, false
	}
	text := s[start:sc.pos]
	if isInt {
		if v, err := strconv.ParseInt(text, 10, 32); err == nil {
			return literal{kind: 'i', i: v}, true
		}
	}
	return literal{kind: 'f', text: text}, true
}

// scanInsert parses query as a fast-path INSERT, or reports false.
func scanInsert(query string) (*insertScan, bool) {
	return scanInsertParts(query, insertPartBytes, runtime.GOMAXPROCS(0), nil)
}

// scanInsertParts is scanInsert reading VALUES in up to maxParts parts of
// at least partBytes, concurrently. Part i reuses spare[i] when it is
// large enough.
func scanInsertParts(query string, partBytes, maxParts int, spare [][]literal) (*insertScan, bool) {
	// PostgreSQL's parser reads a C string: a NUL byte ends the query
	// there. (Over the wire it cannot occur inside a query string.) And
	// text that is not UTF-8 is refused by the parser, not stored. The
	// scanner declines both, and Session.Execute then refuses the query
	// (checkQueryText), so that the check runs once per query.
	if strings.IndexByte(query, 0) >= 0 || !utf8.ValidString(query) {
		return nil, false
	}
	sc := &scanner{s: query}
	if !sc.keyword("insert") || !sc.keyword("into") {
		return nil, false
	}
	name, ok := sc.ident()
	if !ok {
		return nil, false
	}
	if sc.punct('.') {
		if name != "public" {
			return nil, false
		}
		if name, ok = sc.ident(); !ok {
			return nil, false
		}
	}
	ins := &insertScan{table: name}
	if sc.punct('(') {
		for {
			col, ok := sc.ident()
			if !ok {
				return nil, false
			}
			ins.cols = append(ins.cols, col)
			if sc.punct(')') {
				break
			}
			if !sc.punct(',') {
				return nil, false
			}
		}
	}
	if !namesAreIdentifiers(query[:sc.pos]) || !sc.keyword("values") {
		return nil, false
	}
	first, ok := sc.row(nil, -1)
	if !ok {
		return nil, false
	}
	ins.width = len(first)
	// The rest is cut at row ends into parts read concurrently; the last
	// part ends the statement.
	bounds := splitRows(query, sc.pos, partBytes, maxParts)
	ins.parts = make([][]literal, len(bounds))
	counts := make([]int, len(bounds))
	oks := make([]bool, len(bounds))
	read := func(i int) {
		from, to := bounds[i][0], bounds[i][1]
		ps := &scanner{s: query[:to], pos: from}
		// Every row opens with '(' and takes at least 2·width+1 bytes:
		// room for that many rows is enough and not absurd.
		rows := min(strings.Count(query[from:to], "("), (to-from)/(2*ins.width+1)) + 1
		var cells []literal
		if i < len(spare) && cap(spare[i]) >= ins.width*rows {
			cells = spare[i][:0]
		} else {
			cells = make([]literal, 0, ins.width*rows)
		}
		if i == 0 {
			cells = append(cells, first...)
			counts[i] = 1
		}
		n, ok := 0, true
		// Part 0 continues after the first row; the others start at a
		// row.
		if i == 0 {
			if ps.punct(',') {
				cells, n, ok = ps.rows(cells, ins.width)
			}
		} else {
			cells, n, ok = ps.rows(cells, ins.width)
		}
		if ok && i == len(bounds)-1 {
			ps.punct(';')
			ps.space()
		}
		ins.parts[i], counts[i], oks[i] = cells, counts[i]+n, ok && ps.pos == to
	}
	var wg sync.WaitGroup
	for i := 1; i < len(bounds); i++ {
		wg.Go(func() { read(i) })
	}
	read(0)
	wg.Wait()
	for i := range bounds {
		if !oks[i] {
			return nil, false
		}
		ins.n += counts[i]
	}
	return ins, true
}

// row reads one parenthesized row of literals onto cells; width < 0
// takes any width, else the row must have exactly width values.
func (sc *scanner) row(cells []literal, width int) ([]literal, bool) {
	if !sc.punct('(') {
		return nil, false
	}
	start := len(cells)
	for {
		v, ok := sc.value()
		if !ok {
			return nil, false
		}
		cells = append(cells, v)
		if sc.punct(')') {
			break
		}
		if !sc.punct(',') {
			return nil, false
		}
	}
	if width >= 0 && len(cells)-start != width {
		return nil, false // the general path reports the mismatch
	}
	return cells, true
}

// rows reads comma-separated rows of width values until one is not
// followed by a comma, and returns how many it read.
func (sc *scanner) rows(cells []literal, width int) ([]literal, int, bool) {
	n := 0
	for {
		var ok bool
		if cells, ok = sc.row(cells, width); !ok {
			return nil, 0, false
		}
		n++
		if !sc.punct(',') {
			return cells, n, true
		}
	}
}

// splitRows cuts query[from:] (the rows after the first, from a comma
// on) into up to maxParts pieces of at least partBytes, at row ends: a ')'
// outside string literals followed by a comma and the next '('. The
// scanner takes quotes only as the delimiters of '…' literals (a doubled
// quote inside one counts twice), so an even count of quotes before a
// position means it is outside any literal; statements with anything else
// that could hold a quote (comments, dollar quotes, quoted names) are
// not cut. Each piece is [start, end): the first starts at from, the
// others at their '(', and the last ends the query.
func splitRows(query string, from, partBytes, maxParts int) [][2]int {
	rest := query[from:]
	parts := min(maxParts, len(rest)/max(partBytes, 1))
	if parts < 2 || strings.IndexByte(rest, '"') >= 0 || strings.IndexByte(rest, '$') >= 0 || strings.Contains(rest, "--") || strings.Contains(rest, "/*") {
		return [][2]int{{from, len(query)}}
	}
	var bounds [][2]int
	start, counted, quotes := from, from, 0
	for k := 1; k < parts; k++ {
		target := from + k*len(rest)/parts
		for at := max(target, start); ; at++ {
			j := strings.IndexByte(query[at:], ')')
			if j < 0 {
				return append(bounds, [2]int{start, len(query)})
			}
			at += j
			quotes += strings.Count(query[counted:at], "'")
			counted = at
			if quotes%2 != 0 {
				continue
			}
			sc := &scanner{s: query, pos: at + 1}
			if !sc.punct(',') || !sc.punct('(') {
				continue
			}
			bounds = append(bounds, [2]int{start, at + 1})
			start = sc.pos - 1
			break
		}
	}
	return append(bounds, [2]int{start, len(query)})
}

// namesAreIdentifiers checks the statement head with PostgreSQL's lexer:
// a reserved word is no table or column name there (INSERT INTO t (user)
// is a syntax error), so such a statement takes the general path.
func namesAreIdentifiers(head string) bool {
	res, err := pg_query.Scan(head)
	if err != nil {
		return false
	}
	for i, t := range res.GetTokens() {
		if i < 2 {
			continue // INSERT INTO
		}
		switch t.KeywordKind {
		case pg_query.KeywordKind_RESERVED_KEYWORD, pg_query.KeywordKind_TYPE_FUNC_NAME_KEYWORD:
			return false
		}
	}
	return true
}

// fastInsert runs a fast-path INSERT. It reports false, having done
// nothing, when the statement must take the general path.
func (s *Session) fastInsert(ctx context.Context, query string) (*Result, bool, error) {
	ins, ok := scanInsertParts(query, insertPartBytes, runtime.GOMAXPROCS(0), s.cells)
	if !ok {
		return nil, false, nil
	}
	// The cell arrays serve the session's next INSERT: fresh ones cost a
	// page fault per 4 KiB on this kind of machine, more than the scan.
	defer func() {
		size := 0
		for _, p := range ins.parts {
			size += cap(p)
		}
		if size <= maxSpareCells {
			// Cleared: their strings point into the query text, which
			// must not stay alive with them.
			for _, p := range ins.parts {
				clear(p)
			}
			s.cells = ins.parts
		}
	}()
	if s.p.roles != nil && !s.p.roles.Allowed(s.user, auth.Write) {
		return nil, false, nil // the general path words the refusal
	}
	if s.isTemp(ins.table) {
		return nil, false, nil // a temporary table hides the store's
	}
	tbl, ok := s.p.store.Table(ins.table)
	if !ok {
		return nil, false, nil
	}
	targets, err := targetColumns(tbl, ins.cols)
	if err != nil || ins.n == 0 {
		return nil, false, nil
	}
	// Without a column list fewer values fill the first columns, as on
	// the general path.
	if w := ins.width; len(ins.cols) == 0 && w > 0 && w < len(targets) {
		targets = targets[:w]
	}
	if ins.width != len(targets) {
		return nil, false, nil
	}
	// The scanner made every row as wide as the first. Parts convert
	// concurrently, one record each.
	recs := make([]arrow.RecordBatch, len(ins.parts))
	in := s.textInput()
	convert := func(i int) {
		cells := ins.parts[i]
		recs[i], _ = literalRecord(tbl, targets, len(cells)/ins.width, in, func(r, j int, _ schema.Type) (literal, bool) {
			return cells[r*ins.width+j], true
		})
	}
	var wg sync.WaitGroup
	for i := 1; i < len(recs); i++ {
		wg.Go(func() { convert(i) })
	}
	convert(0)
	wg.Wait()
	for _, rec := range recs {
		if rec == nil {
			for _, r := range recs {
				if r != nil {
					r.Release()
				}
			}
			return nil, false, nil
		}
	}
	// The store keeps the records (they become MemBuffer batches).
	n, err := s.writeRows(ctx, ins.table, recs)
	if err != nil {
		return nil, true, err
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, true, nil
}
