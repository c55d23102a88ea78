package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/encoding/protojson"

	"tsdb/internal/pgtest"
)

// The PostgreSQL regression referee: PostgreSQL 15's own regression
// statements (testdata/pgregress, unchanged) run on PostgreSQL 15 and on
// tsdb side by side, every result compared. Both servers get the same
// adaptation, the least that lets tsdb hold the suites' tables:
//
//   - every CREATE TABLE gets a trailing time column
//     `ts timestamptz NOT NULL` (tsdb tables have one; the test drops each
//     suite's tables when it ends), and columns of type `name` become
//     `text`; TEMP tables stay as they are (they need no time column);
//   - INSERT and COPY into such a table give ts the constant
//     regressTime, naming the columns they fill when the statement does not;
//   - any other permanent CREATE TABLE … AS SELECT selects ts as its
//     last column, regressTime;
//   - the setup's `CREATE TABLE x AS SELECT * FROM y` becomes a CREATE
//     TABLE and an INSERT … SELECT, and COPY from the suite's data files is
//     sent as COPY FROM STDIN.
//
// Sessions run with TimeZone PST8PDT (as pg_regress sets it) and the ISO
// date style (tsdb prints no other); PostgreSQL's database uses the C
// locale, whose byte order tsdb's text comparison has.

// regressSuites are the suites compared, in PostgreSQL's schedule order.
var regressSuites = []string{"select", "case", "limit", "union", "float8", "int8", "date", "interval",
	"timestamptz", "aggregates", "window", "strings", "subselect"}

const regressTime = "2000-01-01 00:00:00+00"

// regressStmt is one statement of a suite file and, for COPY FROM STDIN,
// the data lines that follow it.
type regressStmt struct {
	Suite string
	N     int // 1-based position among the suite's statements
	SQL   string
	Data  []string
}

// readRegressSuite splits a regression file into statements as psql
// would: psql's backslash commands are dropped, statements end at a ';'
// outside quotes and comments, and the lines after a COPY … FROM STDIN up
// to `\.` are its data.
func readRegressSuite(path, suite string) ([]regressStmt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []regressStmt
	var buf strings.Builder
	var copying *regressStmt
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if copying != nil {
			if line == `\.` {
				out = append(out, *copying)
				copying = nil
				continue
			}
			copying.Data = append(copying.Data, line)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if buf.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "--") || strings.HasPrefix(trimmed, `\`)) {
			continue
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		text := buf.String()
		if !endsStatement(text) {
			continue
		}
		buf.Reset()
		st := regressStmt{Suite: suite, N: len(out) + 1, SQL: strings.TrimSpace(text)}
		if isCopyFromStdin(st.SQL) {
			copying = &st
			continue
		}
		out = append(out, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if copying != nil {
		return nil, fmt.Errorf("%s: COPY data of statement %d has no end", path, copying.N)
	}
	return out, nil
}

// endsStatement reports whether text's last token is a ';'.
func endsStatement(text string) bool {
	if !strings.Contains(text, ";") {
		return false
	}
	res, err := pg_query.Scan(text)
	if err != nil {
		// A literal the scanner refuses (E'\u061'): the servers will
		// refuse it too; psql would end the statement at the line's ';'
		// — unless a dollar-quoted body (a function's) is still open.
		return strings.HasSuffix(strings.TrimSpace(text), ";") && !openQuote(text)
	}
	if len(res.Tokens) == 0 {
		return false
	}
	for i := len(res.Tokens) - 1; i >= 0; i-- {
		switch tok := res.Tokens[i].Token; tok {
		case pg_query.Token_SQL_COMMENT, pg_query.Token_C_COMMENT:
			continue // a comment after the ';' ends the line, not the statement
		default:
			return tok == pg_query.Token_ASCII_59
		}
	}
	return false
}

// openQuote reports whether text ends inside a quoted string, a
// dollar-quoted one ($$…$$ or $tag$…$tag$) or one in single quotes (a
// function body written '…' over several lines), as psql tracks them:
// comments outside one are skipped.
func openQuote(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'':
			escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e')
			for i++; i < len(text) && text[i] != '\''; i++ {
				if escapes && text[i] == '\\' {
					i++
				}
			}
			if i >= len(text) {
				return true
			}
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 3
		case c == '$' && (i == 0 || !isIdentByte(text[i-1])):
			j := i + 1
			for j < len(text) && isIdentByte(text[j]) && !(text[j] >= '0' && text[j] <= '9' && j == i+1) {
				j++
			}
			if j >= len(text) || text[j] != '$' {
				continue
			}
			tag := text[i : j+1]
			end := strings.Index(text[j+1:], tag)
			if end < 0 {
				return true
			}
			i = j + end + len(tag)
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isCopyFromStdin(sql string) bool {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return false
	}
	c := tree.Stmts[0].Stmt.GetCopyStmt()
	return c != nil && c.IsFrom && c.Filename == ""
}

// regressAdapter rewrites statements for both servers alike (see the
// comment at the top) and remembers the tables it gave a time column.
type regressAdapter struct {
	dataDir string
	tables  map[string][]string // table → its columns before ts
	created []string            // tables made by the current suite
	setup   bool                // CREATE TABLE AS of a known table is split
	colDefs map[string]string   // setup table → its column definitions
}

// adapted is one statement as sent to both servers, with COPY data.
type adapted struct {
	SQL  []string
	Data []byte
}

func (a *regressAdapter) adapt(st regressStmt) (adapted, error) {
	tree, err := pg_query.Parse(st.SQL)
	if err != nil || len(tree.Stmts) != 1 {
		return adapted{SQL: []string{st.SQL}}, nil // both servers judge it
	}
	node := tree.Stmts[0].Stmt
	deparse := func() (adapted, error) {
		sql, err := pg_query.Deparse(tree)
		return adapted{SQL: []string{sql}}, err
	}
	switch {
	case node.GetCreateStmt() != nil:
		cs := node.GetCreateStmt()
		if len(cs.InhRelations) > 0 || cs.Partspec != nil || cs.OfTypename != nil || cs.Relation.Relpersistence == "t" {
			// A TEMP table is tsdb's as PostgreSQL's: no time column.
			return adapted{SQL: []string{st.SQL}}, nil
		}
		name := strings.ToLower(cs.Relation.Relname)
		var cols []string
		for _, e := range cs.TableElts {
			cd := e.GetColumnDef()
			if cd == nil {
				continue
			}
			cols = append(cols, cd.Colname)
			if cd.TypeName != nil && typeIs(cd.TypeName, "name") {
				cd.TypeName.Names = []*pg_query.Node{pg_query.MakeStrNode("text")}
			}
		}
		cs.Relation.Relpersistence = "p"
		cs.TableElts = append(cs.TableElts, timeColumnDef())
		a.tables[name] = cols
		a.created = append(a.created, name)
		return deparse()
	case node.GetCreateTableAsStmt() != nil && a.setup:
		ctas := node.GetCreateTableAsStmt()
		src := selectStarFrom(ctas.Query)
		cols, ok := a.tables[src]
		if !ok {
			break
		}
		name := strings.ToLower(ctas.Into.Rel.Relname)
		def, ok := a.colDefs[src]
		if !ok {
			break
		}
		a.tables[name] = cols
		a.created = append(a.created, name)
		return adapted{SQL: []string{
			fmt.Sprintf("CREATE TABLE %s (%s)", name, def),
			fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", name, src),
		}}, nil
	case node.GetCreateTableAsStmt() != nil && node.GetCreateTableAsStmt().Objtype == pg_query.ObjectType_OBJECT_TABLE:
		// CREATE TABLE … AS SELECT gets its time column as one more
		// target of the query, like CREATE TABLE gets one more column.
		ctas := node.GetCreateTableAsStmt()
		sel := ctas.Query.GetSelectStmt()
		if ctas.Into.Rel.Relpersistence == "t" || sel == nil || len(sel.TargetList) == 0 || len(ctas.Into.ColNames) > 0 || selectsStarOrTs(sel) {
			break
		}
		sel.TargetList = append(sel.TargetList, pg_query.MakeResTargetNodeWithNameAndVal("ts", timeValue(), -1))
		a.created = append(a.created, strings.ToLower(ctas.Into.Rel.Relname))
		return deparse()
	case node.GetInsertStmt() != nil:
		ins := node.GetInsertStmt()
		cols, ok := a.tables[strings.ToLower(ins.Relation.Relname)]
		if !ok {
			break
		}
		if a.addTimeToInsert(ins, cols) {
			return deparse()
		}
	case node.GetCopyStmt() != nil:
		cp := node.GetCopyStmt()
		if !cp.IsFrom || cp.Relation == nil {
			break
		}
		cols, ok := a.tables[strings.ToLower(cp.Relation.Relname)]
		if !ok {
			break
		}
		data := st.Data
		if cp.Filename != "" || strings.Contains(st.SQL, ":'filename'") {
			break
		}
		if len(cp.Attlist) == 0 {
			for _, c := range cols {
				cp.Attlist = append(cp.Attlist, pg_query.MakeStrNode(c))
			}
		}
		cp.Attlist = append(cp.Attlist, pg_query.MakeStrNode("ts"))
		var b bytes.Buffer
		for _, l := range data {
			b.WriteString(l)
			b.WriteString("\t" + regressTime + "\n")
		}
		out, err := deparse()
		out.Data = b.Bytes()
		return out, err
	case node.GetDropStmt() != nil:
		for _, o := range node.GetDropStmt().Objects {
			items := o.GetList().GetItems()
			if len(items) > 0 {
				delete(a.tables, strings.ToLower(items[len(items)-1].GetString_().GetSval()))
			}
		}
	}
	out := adapted{SQL: []string{st.SQL}}
	if len(st.Data) > 0 {
		// COPY FROM STDIN into a table left as it is (a TEMP table):
		// its data as written.
		var b bytes.Buffer
		for _, l := range st.Data {
			b.WriteString(l + "\n")
		}
		out.Data = b.Bytes()
	}
	return out, nil
}

// copyFromFile adapts the setup's `COPY t FROM :'filename'` (a psql
// variable naming a data file) into COPY FROM STDIN of that file.
func (a *regressAdapter) copyFromFile(table, file string) (adapted, error) {
	cols, ok := a.tables[table]
	if !ok {
		return adapted{}, fmt.Errorf("COPY into unknown table %s", table)
	}
	raw, err := os.ReadFile(filepath.Join(a.dataDir, file))
	if err != nil {
		return adapted{}, err
	}
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		b.WriteString(l + "\t" + regressTime + "\n")
	}
	return adapted{SQL: []string{fmt.Sprintf("COPY %s (%s, ts) FROM STDIN", table, strings.Join(cols, ", "))}, Data: b.Bytes()}, nil
}

func typeIs(tn *pg_query.TypeName, name string) bool {
	last := tn.Names[len(tn.Names)-1].GetString_().GetSval()
	return last == name
}

func timeColumnDef() *pg_query.Node {
	tree, err := pg_query.Parse("CREATE TABLE x (ts timestamptz NOT NULL)")
	if err != nil {
		panic(err)
	}
	return tree.Stmts[0].Stmt.GetCreateStmt().TableElts[0]
}

// timeValue is regressTime as a timestamptz expression.
func timeValue() *pg_query.Node {
	tree, err := pg_query.Parse("SELECT '" + regressTime + "'::timestamptz")
	if err != nil {
		panic(err)
	}
	return tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
}

// selectsStarOrTs reports whether a select list has a star (over tables
// that may have ts already) or a column named ts.
func selectsStarOrTs(sel *pg_query.SelectStmt) bool {
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if strings.EqualFold(rt.GetName(), "ts") {
			return true
		}
		if cr := rt.GetVal().GetColumnRef(); cr != nil {
			last := cr.Fields[len(cr.Fields)-1]
			if last.GetAStar() != nil || strings.EqualFold(last.GetString_().GetSval(), "ts") {
				return true
			}
		}
	}
	return false
}

// selectStarFrom is the table of a plain `SELECT * FROM t`, or "".
func selectStarFrom(q *pg_query.Node) string {
	sel := q.GetSelectStmt()
	if sel == nil || len(sel.FromClause) != 1 || len(sel.TargetList) != 1 || sel.WhereClause != nil {
		return ""
	}
	if sel.TargetList[0].GetResTarget().GetVal().GetColumnRef().GetFields()[0].GetAStar() == nil {
		return ""
	}
	if rv := sel.FromClause[0].GetRangeVar(); rv != nil {
		return strings.ToLower(rv.Relname)
	}
	return ""
}

// addTimeToInsert names ts among the INSERT's columns and gives it
// regressTime in every VALUES row or as one more SELECT target; an
// INSERT without a column list first names the columns it fills.
func (a *regressAdapter) addTimeToInsert(ins *pg_query.InsertStmt, cols []string) bool {
	sel := ins.SelectStmt.GetSelectStmt()
	if ins.SelectStmt == nil {
		// DEFAULT VALUES
		tree, _ := pg_query.Parse("INSERT INTO x (ts) VALUES ('" + regressTime + "'::timestamptz)")
		x := tree.Stmts[0].Stmt.GetInsertStmt()
		ins.Cols, ins.SelectStmt = x.Cols, x.SelectStmt
		return true
	}
	if sel == nil || sel.Op != pg_query.SetOperation_SETOP_NONE {
		return false
	}
	width := 0
	switch {
	case len(sel.ValuesLists) > 0:
		width = len(sel.ValuesLists[0].GetList().GetItems())
	default:
		width = len(sel.TargetList)
		for _, t := range sel.TargetList {
			if cr := t.GetResTarget().GetVal().GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
				width = len(cols) // SELECT * of a table like this one
			}
		}
	}
	if len(ins.Cols) == 0 {
		if width > len(cols) {
			return false
		}
		for _, c := range cols[:width] {
			ins.Cols = append(ins.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c}}})
		}
	}
	ins.Cols = append(ins.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: "ts"}}})
	if len(sel.ValuesLists) > 0 {
		for _, l := range sel.ValuesLists {
			l.GetList().Items = append(l.GetList().Items, timeValue())
		}
		return true
	}
	sel.TargetList = append(sel.TargetList, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: timeValue()}}})
	return true
}

// outcome is what one server answered to one statement.
type outcome struct {
	Cols []string
	Rows []string // each row's values joined by '|', NULL as \N
	Tag  string
	Code string
	Msg  string
}

func (o outcome) failed() bool { return o.Code != "" }

// runRegress sends one adapted statement (and its COPY data) and collects
// every result as text.
func runRegress(ctx context.Context, c *pgconn.PgConn, a adapted) outcome {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var o outcome
	for _, sql := range a.SQL {
		if a.Data != nil {
			tag, err := c.CopyFrom(ctx, bytes.NewReader(a.Data), sql)
			o.Tag = tag.String()
			if err != nil {
				return errOutcome(err)
			}
			continue
		}
		o = outcome{}
		rr := c.Exec(ctx, sql)
		for rr.NextResult() {
			r := rr.ResultReader()
			o.Cols = o.Cols[:0]
			for _, f := range r.FieldDescriptions() {
				o.Cols = append(o.Cols, f.Name)
			}
			for r.NextRow() {
				var b strings.Builder
				for i, v := range r.Values() {
					if i > 0 {
						b.WriteByte('|')
					}
					if v == nil {
						b.WriteString(`\N`)
					} else {
						b.Write(v)
					}
				}
				o.Rows = append(o.Rows, b.String())
			}
			tag, err := r.Close()
			if err != nil {
				rr.Close()
				return errOutcome(err)
			}
			o.Tag = tag.String()
		}
		if err := rr.Close(); err != nil {
			return errOutcome(err)
		}
	}
	return o
}

func errOutcome(err error) outcome {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return outcome{Code: pe.Code, Msg: pe.Message}
	}
	return outcome{Code: "client", Msg: err.Error()}
}

// Classes of a comparison, best first.
const (
	classIdentical   = "identical"
	classSameError   = "same error"
	classOrder       = "same rows, other order"
	classNames       = "other column names"
	classOtherError  = "both fail, other SQLSTATE"
	classTsdbError   = "error only on tsdb"
	classPGError     = "answer where PostgreSQL fails"
	classDifferent   = "different result"
	classUnavailable = "not run"
	// classPlan is EXPLAIN answered by both: a plan is each server's own
	// (tsdb shows its pruning and DuckDB's plan), not an answer to compare.
	classPlan = "plan (not compared)"
	// classStorage is a different answer to a question about physical
	// storage (relation sizes in bytes and pages, TOAST relations): like a
	// plan, each server reports its own, and tsdb's files are not
	// PostgreSQL's heap. Sizes that tsdb can answer as PostgreSQL does
	// (an empty table has 0 bytes) still compare as answers.
	classStorage = "physical storage (not compared)"
	// classPeers is a different answer from a window whose value depends
	// on the order of rows that its ORDER BY leaves tied (peers):
	// first_value, last_value, nth_value, lead, lag, row_number, or a ROWS
	// or GROUPS frame. SQL leaves that order to the server, PostgreSQL's
	// comes from its sort (not stable), tsdb's from DuckDB's, so neither
	// answer is the other's error. Both must still name the same columns
	// and answer as many rows with the same command tag.
	classPeers = "window peers in another order"
	// classDiverged is a different answer from tables that an earlier
	// statement of the suite changed on PostgreSQL and that tsdb refused
	// with an error (a rule, inheritance, a table type it lacks): the
	// refusal was the honest answer, and what follows reads other data.
	classDiverged = "after a change refused on tsdb"
)

// classRank orders classes for the ratchet: a statement may not move to
// a higher rank than its baseline. The same rows in another order rank
// with identical answers: the suites' statements without ORDER BY leave
// the order to the server, and tsdb's threads may change it run to run.
var classRank = map[string]int{
	classIdentical: 0, classSameError: 0, classOrder: 0, classNames: 2, classOtherError: 2,
	classTsdbError: 3, classPGError: 4, classDifferent: 4, classUnavailable: 4, classPlan: 0,
	classStorage: 4, classPeers: 1, classDiverged: 3,
}

// storageQuestion finds statements that ask about physical storage.
var storageQuestion = regexp.MustCompile(`(?i)\b(pg_relation_size|pg_total_relation_size|pg_table_size|pg_indexes_size|reltoastrelid|relpages|relfilenode)\b`)

// peerSensitive finds windows whose value depends on the order of peers:
// functions that pick a row by its position, and frames counted in rows
// or groups (a RANGE frame holds whole peer groups).
var (
	peerSensitive = regexp.MustCompile(`(?i)\b(first_value|last_value|nth_value\w*|lead|lag|row_number)\s*\(|\b(rows|groups)\s+(between|unbounded|current|\d)|\bexclude\s+(current|group|ties)`)
	relnameJSON   = regexp.MustCompile(`"relname":"((?:[^"\\]|\\.)*)"`)
)

// refine reclassifies a different result that is not an error of tsdb's
// (see classStorage, classPeers and classDiverged) and says why. refused
// maps each relation that a statement refused on tsdb only would have
// changed to that statement's number.
func refine(st regressStmt, pg, ts outcome, refused map[string]int) (class, why string) {
	for _, name := range relations(st.SQL) {
		if n, ok := refused[name]; ok {
			return classDiverged, fmt.Sprintf("%s: statement %d", name, n)
		}
	}
	if storageQuestion.MatchString(st.SQL) {
		return classStorage, ""
	}
	if peerSensitive.MatchString(st.SQL) && slices.Equal(pg.Cols, ts.Cols) && pg.Tag == ts.Tag &&
		len(pg.Rows) == len(ts.Rows) && othersAgree(st.SQL, pg, ts) {
		return classPeers, ""
	}
	return classDifferent, ""
}

// othersAgree reports whether a statement has a window and its output
// columns that no window computes hold the same values on both servers
// (as multisets: the rows' order is the peers'). A statement whose
// columns cannot be told apart (SELECT * over a subquery that filters by
// a row number) has only its windows checked.
func othersAgree(sql string, pg, ts outcome) bool {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return false
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil {
		return false
	}
	js, err := protojson.Marshal(sel)
	if err != nil || !bytes.Contains(js, []byte(`"over":`)) {
		return false
	}
	if sel.Op != pg_query.SetOperation_SET_OPERATION_UNDEFINED && sel.Op != pg_query.SetOperation_SETOP_NONE {
		return true
	}
	column := func(rows []string, c int) ([]string, bool) {
		var vals []string
		for _, r := range rows {
			f := strings.Split(r, "|")
			if len(f) != len(pg.Cols) {
				return nil, false // a value holds '|': not comparable
			}
			vals = append(vals, f[c])
		}
		sort.Strings(vals)
		return vals, true
	}
	for c, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || c >= len(pg.Cols) {
			return false
		}
		if ref := rt.Val.GetColumnRef(); ref != nil && slices.ContainsFunc(ref.Fields, func(f *pg_query.Node) bool { return f.GetAStar() != nil }) {
			return true // columns unknown: the windows alone
		}
		if js, err := protojson.Marshal(rt.Val); err != nil || bytes.Contains(js, []byte(`"over":`)) {
			continue // a window's value
		}
		a, ok1 := column(pg.Rows, c)
		b, ok2 := column(ts.Rows, c)
		if !ok1 || !ok2 || !slices.Equal(a, b) {
			return false
		}
	}
	return true
}

// relations lists the relations a statement names, lower case.
func relations(sql string) []string {
	js, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return nil
	}
	var names []string
	for _, m := range relnameJSON.FindAllStringSubmatch(js, -1) {
		names = append(names, strings.ToLower(m[1]))
	}
	return names
}

// changedRelations lists, lower case, the relations a statement changes,
// rows or definition: the target of INSERT, UPDATE, DELETE, TRUNCATE and
// ALTER TABLE (and the parent an INHERIT gives it), of CREATE TABLE (and
// its parents, INHERITS or PARTITION OF), CREATE TABLE AS and CREATE RULE.
// created is true for a statement that makes a table afresh. A statement
// that only reads a table, or makes an index, a view or a cursor over it,
// changes none.
func changedRelations(sql string) (names []string, created bool) {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, false
	}
	var rels []*pg_query.RangeVar
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_InsertStmt:
		rels = append(rels, n.InsertStmt.Relation)
	case *pg_query.Node_UpdateStmt:
		rels = append(rels, n.UpdateStmt.Relation)
	case *pg_query.Node_DeleteStmt:
		rels = append(rels, n.DeleteStmt.Relation)
	case *pg_query.Node_TruncateStmt:
		for _, r := range n.TruncateStmt.Relations {
			rels = append(rels, r.GetRangeVar())
		}
	case *pg_query.Node_AlterTableStmt:
		rels = append(rels, n.AlterTableStmt.Relation)
		for _, c := range n.AlterTableStmt.Cmds {
			if cmd := c.GetAlterTableCmd(); cmd != nil && cmd.Def != nil {
				rels = append(rels, cmd.Def.GetRangeVar())
			}
		}
	case *pg_query.Node_CreateStmt:
		rels = append(rels, n.CreateStmt.Relation)
		for _, r := range n.CreateStmt.InhRelations {
			rels = append(rels, r.GetRangeVar())
		}
		created = len(n.CreateStmt.InhRelations) == 0
	case *pg_query.Node_CreateTableAsStmt:
		if n.CreateTableAsStmt.Into != nil {
			rels = append(rels, n.CreateTableAsStmt.Into.Rel)
		}
		created = true
	case *pg_query.Node_RuleStmt:
		rels = append(rels, n.RuleStmt.Relation)
	}
	for _, r := range rels {
		if r != nil {
			names = append(names, strings.ToLower(r.Relname))
		}
	}
	return names, created
}

func classify(pg, ts outcome) string {
	switch {
	case pg.failed() && ts.failed():
		if pg.Code == ts.Code {
			return classSameError
		}
		return classOtherError
	case ts.failed():
		return classTsdbError
	case pg.failed():
		return classPGError
	}
	sameRows := slices.Equal(pg.Rows, ts.Rows)
	sameTag := pg.Tag == ts.Tag
	if sameRows && sameTag && slices.Equal(pg.Cols, ts.Cols) {
		return classIdentical
	}
	if !sameTag || len(pg.Cols) != len(ts.Cols) {
		return classDifferent
	}
	if sameRows {
		return classNames
	}
	a, b := slices.Clone(pg.Rows), slices.Clone(ts.Rows)
	sort.Strings(a)
	sort.Strings(b)
	if slices.Equal(a, b) {
		if slices.Equal(pg.Cols, ts.Cols) {
			return classOrder
		}
		return classNames
	}
	return classDifferent
}

// regressResult is one statement's comparison.
type regressResult struct {
	regressStmt
	Class  string
	Why    string // for classDiverged, the refused statement
	PG, TS outcome
}

func TestPostgresRegression(t *testing.T) {
	ctx := context.Background()
	pg := startReferee(t)
	if pg.Major != "15" {
		t.Logf("the referee is PostgreSQL %s, not 15: the baseline was recorded against 15", pg.Major)
	}
	// One engine thread: the order of ties (window frames, unordered
	// results) then does not change from run to run.
	ts := startServer(t, t.TempDir(), []string{"--engine-threads", "1"})
	tsURL := fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", ts.pgAddr)

	connect := func(url string) *pgconn.PgConn {
		cfg, err := pgconn.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["TimeZone"] = "PST8PDT"
		cfg.RuntimeParams["DateStyle"] = "ISO, MDY"
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dir := filepath.Join("testdata", "pgregress")
	ad := &regressAdapter{dataDir: filepath.Join(dir, "data"), tables: map[string][]string{}, colDefs: map[string]string{}}

	// Setup: test_setup.sql's tables, adapted, on both servers.
	setup, err := readRegressSuite(filepath.Join(dir, "sql", "test_setup.sql"), "test_setup")
	if err != nil {
		t.Fatal(err)
	}
	pgc, tsc := connect(pg.URL), connect(tsURL)
	ad.setup = true
	for _, st := range setup {
		var a adapted
		if m := copyFileStmt(st.SQL); m == "-" {
			continue
		} else if m != "" {
			table := strings.ToLower(strings.Fields(st.SQL)[1])
			if a, err = ad.copyFromFile(table, m); err != nil {
				t.Fatal(err)
			}
		} else if a, err = ad.adapt(st); err != nil {
			t.Fatalf("adapt %q: %v", st.SQL, err)
		}
		p, s := runRegress(ctx, pgc, a), runRegress(ctx, tsc, a)
		if cs := ad.lastCreate(a); cs != "" && !p.failed() {
			ad.colDefs[cs] = columnDefsText(a.SQL[0])
		}
		if !p.failed() && s.failed() {
			t.Logf("setup on tsdb only: %s: %s", firstLine(a.SQL[0]), s.Msg)
		}
	}
	ad.setup = false
	ad.created = nil
	pgc.Close(ctx)
	tsc.Close(ctx)

	runAll := func() []regressResult {
		var results []regressResult
		for _, suite := range regressSuites {
			stmts, err := readRegressSuite(filepath.Join(dir, "sql", suite+".sql"), suite)
			if err != nil {
				t.Fatal(err)
			}
			pgc, tsc := connect(pg.URL), connect(tsURL)
			refused := map[string]int{}
			for _, st := range stmts {
				a, err := ad.adapt(st)
				if err != nil {
					t.Fatalf("%s %d: adapt: %v", suite, st.N, err)
				}
				p, s := runRegress(ctx, pgc, a), runRegress(ctx, tsc, a)
				class, why := classify(p, s), ""
				if !p.failed() && !s.failed() && strings.HasPrefix(strings.ToLower(st.SQL), "explain") {
					class = classPlan
				}
				if class == classDifferent {
					class, why = refine(st, p, s, refused)
				}
				// A change refused on tsdb only marks the tables it
				// changes; a table made afresh on both servers is
				// comparable again.
				switch changed, created := changedRelations(st.SQL); {
				case class == classTsdbError:
					for _, name := range changed {
						refused[name] = st.N
					}
				case created && !p.failed() && !s.failed():
					for _, name := range changed {
						delete(refused, name)
					}
				}
				results = append(results, regressResult{regressStmt: st, Class: class, Why: why, PG: p, TS: s})
				if show := os.Getenv("TSDB_REGRESS_SHOW"); slices.Contains(strings.Split(show, ","), fmt.Sprintf("%s:%d", suite, st.N)) {
					// For a reader chasing one difference: both answers whole.
					t.Logf("%s %d: %s\nPostgreSQL: %v %s %s\n%s\ntsdb: %v %s %s\n%s", suite, st.N, a, p.Cols, p.Tag, p.Msg, strings.Join(p.Rows, "\n"), s.Cols, s.Tag, s.Msg, strings.Join(s.Rows, "\n"))
				}
				if s.Code == "client" || tsc.IsClosed() {
					// The connection broke: a crash or a hang is the worst
					// answer; reconnect so the suite goes on.
					if err := ts.cmd.Process.Signal(syscall.Signal(0)); err != nil {
						t.Fatalf("tsdb died at %s %d: %s\n%s", suite, st.N, st.SQL, ts.logs.String())
					}
					tsc.Close(ctx)
					tsc = connect(tsURL)
				}
				if pgc.IsClosed() {
					pgc = connect(pg.URL)
				}
			}
			for _, name := range ad.created {
				for _, c := range []*pgconn.PgConn{pgc, tsc} {
					c.Exec(ctx, "DROP TABLE IF EXISTS "+name+" CASCADE").Close()
				}
				delete(ad.tables, name)
			}
			ad.created = nil
			pgc.Close(ctx)
			tsc.Close(ctx)
		}
		return results
	}
	results := runAll()

	baselinePath := filepath.Join(dir, "baseline.tsv")
	if os.Getenv("TSDB_REGRESS_UPDATE") != "" {
		// Record the worse class of two runs: a statement whose answer
		// depends on the order of ties or of threads is recorded at its
		// worst, so the ratchet does not trip on it by chance.
		for i, r := range runAll() {
			if classRank[r.Class] > classRank[results[i].Class] {
				results[i] = r
			}
		}
		if err := writeRegressBaseline(baselinePath, results); err != nil {
			t.Fatal(err)
		}
		if err := writeRegressReport(filepath.Join("..", "docs"), results); err != nil {
			t.Fatal(err)
		}
	}
	baseline, err := readRegressBaseline(baselinePath)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Class]++
		key := fmt.Sprintf("%s:%d", r.Suite, r.N)
		was, ok := baseline[key]
		if !ok {
			t.Errorf("%s is not in %s (run make regress-report)", key, baselinePath)
			continue
		}
		if classRank[r.Class] > classRank[was] {
			t.Errorf("%s got worse: %s, was %s\n  %s\n  PostgreSQL: %s\n  tsdb:       %s", key, r.Class, was,
				firstLine(r.SQL), r.PG.summary(), r.TS.summary())
		}
	}
	same := counts[classIdentical] + counts[classSameError]
	compared := len(results) - counts[classPlan] - counts[classStorage]
	t.Logf("%d statements compared (%d plans not): %d identical (%.1f %%), %v", compared, counts[classPlan], same, 100*float64(same)/float64(compared), counts)
}

func (o outcome) summary() string {
	if o.failed() {
		return "ERROR " + o.Code + ": " + o.Msg
	}
	s := strings.Join(o.Cols, "|") + " → "
	for i, r := range o.Rows {
		if i == 3 {
			s += fmt.Sprintf(" … (%d rows)", len(o.Rows))
			break
		}
		if i > 0 {
			s += "; "
		}
		s += r
	}
	if len(o.Rows) == 0 {
		s += o.Tag
	}
	return s
}

func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 110 {
		s = s[:107] + "…"
	}
	return s
}

// copyFileStmt is the data file of the setup's `COPY t FROM :'filename'`
// (the file named by the \set before it), or "".
func copyFileStmt(sql string) string {
	if !strings.HasPrefix(sql, "COPY ") || !strings.Contains(sql, ":'filename'") {
		return ""
	}
	table := strings.ToLower(strings.Fields(sql)[1])
	switch table {
	case "onek":
		return "onek.data"
	case "tenk1":
		return "tenk.data"
	case "aggtest":
		return "agg.data"
	}
	return "-" // a table of types tsdb lacks (person, road): not loaded
}

func (a *regressAdapter) lastCreate(ad adapted) string {
	if len(ad.SQL) == 0 || !strings.HasPrefix(strings.ToUpper(ad.SQL[0]), "CREATE TABLE") {
		return ""
	}
	tree, err := pg_query.Parse(ad.SQL[0])
	if err != nil || tree.Stmts[0].Stmt.GetCreateStmt() == nil {
		return ""
	}
	return strings.ToLower(tree.Stmts[0].Stmt.GetCreateStmt().Relation.Relname)
}

// columnDefsText is the column list of a CREATE TABLE statement, without
// ts (the copy gets its own), as text for another CREATE TABLE.
func columnDefsText(create string) string {
	i, j := strings.Index(create, "("), strings.LastIndex(create, ")")
	inner := create[i+1 : j]
	if k := strings.LastIndex(inner, ", ts "); k >= 0 {
		inner = inner[:k]
	}
	return inner + ", ts timestamptz NOT NULL"
}

func readRegressBaseline(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (run make regress-report to record it)", err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 3 || strings.HasPrefix(l, "#") {
			continue
		}
		out[f[0]+":"+f[1]] = f[2]
	}
	return out, nil
}

func writeRegressBaseline(path string, results []regressResult) error {
	var b strings.Builder
	b.WriteString("# suite\tstatement\tclass\tstatement text (for reading)\n")
	for _, r := range results {
		fmt.Fprintf(&b, "%s\t%d\t%s\t%s\n", r.Suite, r.N, r.Class, firstLine(r.SQL))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeRegressReport writes the per-suite summary into
// postgres-compatibility.md (between its regress markers) and every
// difference into pg-regress.md.
func writeRegressReport(docs string, results []regressResult) error {
	classes := []string{classIdentical, classSameError, classOrder, classNames, classOtherError, classTsdbError, classPGError,
		classDifferent, classPeers, classDiverged, classPlan, classStorage}
	per := map[string]map[string]int{}
	for _, r := range results {
		if per[r.Suite] == nil {
			per[r.Suite] = map[string]int{}
		}
		per[r.Suite][r.Class]++
		per[r.Suite]["total"]++
	}
	var sum strings.Builder
	sum.WriteString("| suite | statements | " + strings.Join(classes, " | ") + " | identical % |\n")
	sum.WriteString("| --- | ---:" + strings.Repeat(" | ---:", len(classes)+1) + " |\n")
	total := map[string]int{}
	row := func(name string, m map[string]int) {
		fmt.Fprintf(&sum, "| %s | %d", name, m["total"])
		for _, c := range classes {
			fmt.Fprintf(&sum, " | %d", m[c])
		}
		fmt.Fprintf(&sum, " | %.1f |\n", 100*float64(m[classIdentical]+m[classSameError])/float64(m["total"]-m[classPlan]-m[classStorage]))
	}
	for _, s := range regressSuites {
		row(s, per[s])
		for k, v := range per[s] {
			total[k] += v
		}
	}
	row("**all**", total)

	var det strings.Builder
	det.WriteString("# PostgreSQL regression referee: every difference\n\n")
	det.WriteString("Generated by `make regress-report` (`TestPostgresRegression` in `tests/regress_test.go`); the summary is in\n")
	det.WriteString("[postgres-compatibility.md](postgres-compatibility.md). Each statement of PostgreSQL 15's regression suites that\n")
	det.WriteString("tsdb does not answer as PostgreSQL does, with both answers (first rows only).\n")
	for _, s := range regressSuites {
		fmt.Fprintf(&det, "\n## %s\n\n| # | class | statement | PostgreSQL | tsdb |\n| ---: | --- | --- | --- | --- |\n", s)
		for _, r := range results {
			if r.Suite != s || r.Class == classIdentical || r.Class == classSameError || r.Class == classPlan {
				continue
			}
			class := r.Class
			if r.Why != "" {
				class += " (" + r.Why + ")"
			}
			fmt.Fprintf(&det, "| %d | %s | %s | %s | %s |\n", r.N, class, mdCell(firstLine(r.SQL)), mdCell(r.PG.summary()), mdCell(r.TS.summary()))
		}
	}
	if err := os.WriteFile(filepath.Join(docs, "pg-regress.md"), []byte(det.String()), 0o644); err != nil {
		return err
	}
	path := filepath.Join(docs, "postgres-compatibility.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	const begin, end = "<!-- regress:begin -->\n", "<!-- regress:end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q … %q markers", path, begin, end)
	}
	out := append([]byte{}, doc[:i+len(begin)]...)
	out = append(out, sum.String()...)
	out = append(out, doc[j:]...)
	return os.WriteFile(path, out, 0o644)
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 160 {
		s = s[:157] + "…"
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// startReferee starts PostgreSQL (Debian's server, which make test
// installs) in a temporary directory, stopped when the test ends.
func startReferee(t *testing.T) *pgtest.Server {
	t.Helper()
	if _, err := pgtest.Find(); err != nil {
		t.Fatalf("the referee needs Debian's PostgreSQL server (make test installs it): %v", err)
	}
	// PostgreSQL runs as its own user: its directory must be reachable,
	// which a test's own temporary directory is not.
	pgDir, err := os.MkdirTemp("", "tsdb-referee")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pgDir) })
	if err := os.Chmod(pgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pg, err := pgtest.Start(context.Background(), filepath.Join(pgDir, "pg"), pgtest.Options{InitdbArgs: []string{"--no-locale"}, Settings: []string{"fsync=off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	return pg
}
