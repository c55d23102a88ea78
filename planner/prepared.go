package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PostgreSQL type OIDs of parameters.
const (
	oidUnknown     = 0
	oidBool        = 16
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidVarchar     = 1043
	oidFloat4      = 700
	oidFloat8      = 701
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidDate        = 1082
	oidNumeric     = 1700
	oidInterval    = 1186
)

// castParamOIDs are the types, beyond those tables store, that a cast
// gives its parameter ($1::date), as PostgreSQL infers them; the wire
// layer reads each of them in binary.
var castParamOIDs = map[string]uint32{
	"date": oidDate, "interval": oidInterval, "numeric": oidNumeric, "decimal": oidNumeric,
}

// Prepared is a statement of the extended query protocol: parsed once,
// described, executed with parameters many times (each execution reads a
// fresh snapshot).
type Prepared struct {
	// ParamOIDs are the parameters' types: what the client declared, else
	// what tsdb infers from the context ($1 compared with a timestamptz
	// column is a timestamptz), else text.
	ParamOIDs []uint32
	// Columns describe the result rows; nil if the statement returns none.
	Columns []Column
	// Empty is an empty query.
	Empty bool
	stmt  statement
	// heavy: each execution takes a heavy-statement slot (see admit).
	heavy bool
	// Fetch names the cursor a FETCH reads: its rows are the cursor's,
	// which the session executor describes. Declares is set for DECLARE
	// … CURSOR, whose rows outlive the execution. Executes names the
	// prepared statement an EXECUTE runs, whose rows it returns.
	Fetch    string
	Declares bool
	Executes string
}

// Prepare parses one statement, infers its parameter types and describes
// its result columns without running it.
func (s *Session) Prepare(ctx context.Context, query string, declared []uint32) (_ *Prepared, err error) {
	defer s.rewriteBug(&err)
	defer sqltree.RecoverTooDeep(&err)
	p, err := s.prepareStatement(ctx, query, declared)
	return p, s.clientError(ctx, err)
}

func (s *Session) prepareStatement(ctx context.Context, query string, declared []uint32) (*Prepared, error) {
	if err := checkQueryText(query); err != nil {
		return nil, err
	}
	release, err := s.admit(ctx, query)
	if err != nil {
		return nil, err
	}
	defer release()
	stmts, err := s.parseCall(ctx, query)
	if err != nil {
		return nil, err
	}
	if len(stmts) == 0 {
		return &Prepared{Empty: true}, nil
	}
	if len(stmts) > 1 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	p, err := s.prepareParsed(ctx, stmts[0], declared, s.slot != nil)
	return p, atOffset(err, query, stmts[0])
}

// prepareParsed is prepareStatement of a parsed statement.
func (s *Session) prepareParsed(ctx context.Context, st statement, declared []uint32, heavy bool) (*Prepared, error) {
	p := &Prepared{stmt: st, heavy: heavy}
	var err error
	if p.stmt, err = s.expandFunctions(p.stmt); err != nil {
		return nil, err
	}
	if p.stmt, err = s.expandTemps(p.stmt); err != nil {
		return nil, err
	}
	if p.stmt, err = s.expandSequences(p.stmt); err != nil {
		return nil, err
	}
	if p.stmt, err = s.unqualified(p.stmt); err != nil {
		return nil, err
	}
	before := p.stmt.text
	if p.stmt, err = s.expandViews(p.stmt); err != nil {
		return nil, err
	}
	if p.stmt.text != before {
		// A view's query may call functions.
		if p.stmt, err = s.expandFunctions(p.stmt); err != nil {
			return nil, err
		}
	}
	switch n := p.stmt.node.GetNode().(type) {
	case *pg_query.Node_FetchStmt:
		if !n.FetchStmt.Ismove {
			p.Fetch = n.FetchStmt.Portalname
		}
	case *pg_query.Node_DeclareCursorStmt:
		p.Declares = true
	case *pg_query.Node_ExecuteStmt:
		p.Executes = n.ExecuteStmt.Name
	}
	switch p.stmt.node.GetNode().(type) {
	case *pg_query.Node_FetchStmt, *pg_query.Node_ClosePortalStmt, *pg_query.Node_TransactionStmt,
		*pg_query.Node_DeallocateStmt, *pg_query.Node_DiscardStmt:
		// Described without the engine: a cursor it may read stays open.
	default:
		if err := s.useEngine(ctx); err != nil {
			return nil, err
		}
	}
	if p.stmt.node == nil {
		// DuckDB's dialect: no parameters, described by running DESCRIBE.
		if strings.Contains(p.stmt.text, "$") {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameters are supported in PostgreSQL syntax only")
		}
	} else if p.stmt.node.GetPrepareStmt() == nil {
		// (PREPARE's own $n are its statement's, bound by EXECUTE.)
		p.ParamOIDs = s.inferParams(p.stmt.node, declared)
	}
	if err := s.describe(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// returnsRows reports whether a statement sends result rows.
func returnsRows(n *pg_query.Node) bool {
	if n == nil {
		return true
	}
	switch n.Node.(type) {
	case *pg_query.Node_SelectStmt, *pg_query.Node_ExplainStmt, *pg_query.Node_VariableShowStmt:
		return true
	}
	return len(returningList(n)) > 0
}

// returningList is the RETURNING list of an INSERT, UPDATE or DELETE, with
// the relation it names.
func returningList(n *pg_query.Node) []*pg_query.Node {
	rel, list := returningOf(n)
	if rel == nil {
		return nil
	}
	return list
}

func returningOf(n *pg_query.Node) (*pg_query.RangeVar, []*pg_query.Node) {
	switch x := n.GetNode().(type) {
	case *pg_query.Node_InsertStmt:
		return x.InsertStmt.Relation, x.InsertStmt.ReturningList
	case *pg_query.Node_UpdateStmt:
		return x.UpdateStmt.Relation, x.UpdateStmt.ReturningList
	case *pg_query.Node_DeleteStmt:
		return x.DeleteStmt.Relation, x.DeleteStmt.ReturningList
	}
	return nil, nil
}

// describeReturning describes the rows of a RETURNING list: as those of
// SELECT <list> FROM the table.
func (s *Session) describeReturning(ctx context.Context, p *Prepared) error {
	rel, list := returningOf(p.stmt.node)
	tbl, alias, err := s.targetTable(rel, list)
	if err != nil {
		return err
	}
	name := tbl.Name
	nulls := make([]any, len(p.ParamOIDs))
	node, err := substituteParams(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: returningSelect(name, alias, list)}}, p.ParamOIDs, nulls)
	if err != nil {
		return err
	}
	asWritten := proto.Clone(node.GetSelectStmt()).(*pg_query.SelectStmt)
	dialect.RewriteTree(node.ProtoReflect(), s.settings.Input(s.statementTime()))
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return err
	}
	b, err := s.bind(ctx, []string{name}, nil)
	if err != nil {
		return err
	}
	defer b.done()
	rows, err := s.engineQuerier().QueryContext(ctx, "SELECT * FROM ("+text+") WHERE false")
	if err != nil {
		return engineError(err)
	}
	defer rows.Close()
	cols, err := sqlColumns(rows)
	if err != nil {
		return engineError(err)
	}
	nameColumns(cols, asWritten)
	if err := s.padCharacters(cols, asWritten); err != nil {
		return err
	}
	p.Columns = cols
	return nil
}

// describe fills in the result columns: DuckDB's DESCRIBE over the bound
// views with the parameters as typed NULLs, names by PostgreSQL's rules.
func (s *Session) describe(ctx context.Context, p *Prepared) error {
	if !returnsRows(p.stmt.node) {
		return nil
	}
	if _, ok, err := repairCall(p.stmt.node); ok || err != nil {
		p.Columns = slices.Clone(repairColumns)
		return err
	}
	if _, terminate, ok, err := signalCall(p.stmt.node); ok || err != nil {
		name := "pg_cancel_backend"
		if terminate {
			name = "pg_terminate_backend"
		}
		p.Columns = []Column{{Name: name, OID: oidBool, Size: 1}}
		return err
	}
	if len(returningList(p.stmt.node)) > 0 {
		return s.describeReturning(ctx, p)
	}
	switch n := p.stmt.node.GetNode().(type) {
	case *pg_query.Node_VariableShowStmt:
		res, err := s.show(n.VariableShowStmt.Name)
		if err != nil {
			return err
		}
		p.Columns = res.Columns
		return nil
	case *pg_query.Node_ExplainStmt:
		p.Columns = []Column{{Name: "QUERY PLAN", OID: oidText, Size: -1}}
		return nil
	}
	if cols, ok := s.fastAggColumns(p.stmt.node.GetSelectStmt(), p.ParamOIDs); ok {
		p.Columns = cols
		return nil
	}
	if cols, ok := s.newestColumns(p.stmt.node.GetSelectStmt()); ok {
		p.Columns = cols
		return nil
	}
	text := p.stmt.text
	var tables, catalog []string
	var sel *pg_query.SelectStmt
	// inexact is the text without exact aggregates (retryInexact).
	var inexact func() (string, error)
	if p.stmt.node != nil {
		nulls := make([]any, len(p.ParamOIDs))
		node, err := substituteParams(p.stmt.node, p.ParamOIDs, nulls)
		if err != nil {
			return err
		}
		node = stripLocking(node) // taken when it runs
		r, err := collectRefs(node.GetSelectStmt(), s)
		if err != nil {
			return err
		}
		tables = r.tables
		// Described as executed: catalog relations read tsdb's views,
		// not DuckDB's own catalog of the same name.
		rewritten, used, err := s.rewriteSession(node)
		if err != nil {
			return err
		}
		asIs := node
		inexact = func() (string, error) {
			plain, _, err := s.rewriteSessionExact(asIs, false)
			if err != nil || plain == nil {
				return deparse(s.p.pgVersion, asIs)
			}
			return deparse(s.p.pgVersion, plain)
		}
		if rewritten != nil {
			node, catalog = rewritten, used
		}
		if text, err = deparse(s.p.pgVersion, node); err != nil {
			return err
		}
		// Named as written: the rewrite turns version() into a constant
		// and format_type() into an engine macro.
		sel = p.stmt.node.GetSelectStmt()
	} else {
		r, err := duckdbRefs(ctx, s.engineQuerier(), text, s)
		if err != nil {
			return err
		}
		tables = r.tables
	}
	key := text
	for _, name := range tables {
		if t, ok := s.p.store.Table(name); ok {
			key += "\x00" + t.ID + viewShape(t)
		}
	}
	if cols, ok := s.described[key]; ok {
		p.Columns = slices.Clone(cols)
		return nil
	}
	defer func() {
		if p.Columns != nil {
			if len(s.described) >= maxSessionPlans {
				clear(s.described)
			}
			s.described[key] = slices.Clone(p.Columns)
		}
	}()
	// The result's shape depends on the tables' columns, not on which
	// files and batches a view reads: views an earlier statement left are
	// used as they are. Binding the full range here would replace the
	// pruned views that executions use, and with them the session's
	// plans, on every Parse of a client that does not keep statements.
	// A kept view may name a file VACUUM has deleted since: then bind.
	if err := s.dropStaleViews(ctx); err != nil {
		return err
	}
	kept := s.viewsFit(tables)
	if !kept {
		b, err := s.bind(ctx, tables, nil)
		if err != nil {
			return err
		}
		defer b.done()
	}
	if err := s.bindCatalog(ctx, catalog); err != nil {
		return err
	}
	rows, err := s.engineQuerier().QueryContext(ctx, "DESCRIBE "+text)
	if err != nil && kept {
		b, berr := s.bind(ctx, tables, nil)
		if berr != nil {
			return berr
		}
		defer b.done()
		rows, err = s.engineQuerier().QueryContext(ctx, "DESCRIBE "+text)
	}
	if err != nil && inexact != nil && retryInexact(err, text) {
		if text, err = inexact(); err != nil {
			return err
		}
		rows, err = s.engineQuerier().QueryContext(ctx, "DESCRIBE "+text)
	}
	if err != nil {
		return engineError(err)
	}
	defer rows.Close()
	var names, types []string
	for rows.Next() {
		vals := make([]any, 6)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		cols, _ := rows.Columns()
		if err := rows.Scan(ptrs[:len(cols)]...); err != nil {
			return engineError(err)
		}
		names = append(names, fmt.Sprint(vals[0]))
		types = append(types, fmt.Sprint(vals[1]))
	}
	if err := rows.Err(); err != nil {
		return engineError(err)
	}
	if sel != nil {
		if pg := pgColumnNames(sel, len(names)); pg != nil {
			for i, n := range pg {
				if n != "" {
					names[i] = n
				}
			}
		}
	}
	p.Columns = make([]Column, len(names))
	for i := range names {
		p.Columns[i] = columnFor(names[i], types[i])
	}
	if sel != nil && emptySelectList(sel) && len(p.Columns) == 1 {
		p.Columns = []Column{}
	}
	if err := s.padCharacters(p.Columns, sel); err != nil {
		p.Columns = nil // not kept as described (the deferred cache)
		return err
	}
	return nil
}

// ExecutePrepared runs a prepared statement with parameter values (Go
// values decoded by the wire layer: nil, string, int64, float64, bool,
// time.Time). Parameters become typed literals in the statement, so every
// path (the INSERT fast path, DML logging, pruning) sees constants.
func (s *Session) ExecutePrepared(ctx context.Context, p *Prepared, params []any, emit func(*Result) error) (err error) {
	defer s.rewriteBug(&err)
	defer sqltree.RecoverTooDeep(&err)
	return s.clientError(ctx, charPosition(s.executePrepared(ctx, p, params, emit), p.stmt.text))
}

func (s *Session) executePrepared(ctx context.Context, p *Prepared, params []any, emit func(*Result) error) error {
	if p.Empty {
		return emit(&Result{Empty: true})
	}
	if p.heavy {
		release, err := s.takeHeavySlot(ctx)
		if err != nil {
			return err
		}
		defer release()
	}
	st := p.stmt
	if st.node != nil && len(p.ParamOIDs) > 0 {
		if len(params) != len(p.ParamOIDs) {
			return sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(params), len(p.ParamOIDs))
		}
		node, err := substituteParams(st.node, p.ParamOIDs, params)
		if err != nil {
			return err
		}
		text, err := deparse(s.p.pgVersion, node)
		if err != nil {
			return err
		}
		st = statement{text: text, node: node}
	} else if st.node != nil && st.node.GetSelectStmt() == nil {
		// Executing writes into the tree (DML fixes now(), INSERT casts
		// its values, the PostgreSQL rewrites replace nodes): each run
		// gets its own copy, as each run with parameters does, so that a
		// prepared statement means the same every time.
		st.node = proto.Clone(st.node).(*pg_query.Node)
	}
	res, err := s.execute(ctx, st)
	if err != nil {
		return err
	}
	return emit(res)
}
