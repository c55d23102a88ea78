package planner

import (
	"context"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/views"
)

// CREATE INDEX is accepted and recorded, not built: tsdb reads a table by
// its time range, its files' statistics and its cluster column, and an
// index would change no answer (as in PostgreSQL, where an index only
// changes how fast a query runs). Migrations, ORMs and TimescaleDB's
// guides create indexes; refusing them broke those scripts. The index's
// name is taken as PostgreSQL takes it (a relation's name), DROP INDEX
// removes it, and a NOTICE says it is not used. A UNIQUE index is refused:
// it would be a constraint, which tsdb would not enforce.

// indexNotice is what a client is told of an index it made.
func indexNotice(name string) *sqlerr.Error {
	return &sqlerr.Error{Code: "00000", Message: fmt.Sprintf("index %q is recorded but not built: tsdb reads tables by time range, file statistics and cluster column", name)}
}

// createIndex records CREATE INDEX after checking its table and columns.
func (s *Session) createIndex(ctx context.Context, st *pg_query.IndexStmt) (*Result, error) {
	if st.Unique || st.Primary || st.Isconstraint {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "unique indexes are not supported: tsdb does not enforce uniqueness (a temporary table takes UNIQUE)")
	}
	table, temp := isTempRelation(st.Relation) // as expandTemps names a temporary table
	if !temp {
		var err error
		if table, err = relationName(st.Relation); err != nil {
			return nil, err
		}
	}
	if _, _, isView := s.view(table); isView && !temp {
		return nil, &sqlerr.Error{Code: sqlerr.WrongObjectType, Message: fmt.Sprintf("cannot create index on relation %q", table),
			Detail: "This operation is not supported for views."}
	}
	if _, ok := s.p.store.Table(table); !ok && !temp {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", table)
	}
	// The indexed columns and expressions (and a partial index's
	// predicate) must mean something over the table: planned as a query.
	sel := &pg_query.SelectStmt{
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: proto.Clone(st.Relation).(*pg_query.RangeVar)}}},
		WhereClause: st.WhereClause,
		Op:          pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	var parts []string
	for _, p := range st.IndexParams {
		e := p.GetIndexElem()
		val := e.GetExpr()
		part := "expr"
		if e.GetName() != "" {
			val, part = pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(e.Name)}, -1), e.Name
		}
		parts = append(parts, part)
		sel.TargetList = append(sel.TargetList, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: val}}})
	}
	if _, err := s.viewColumns(ctx, &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}); err != nil {
		// The query is tsdb's own: its text and positions mean nothing
		// to the client.
		line, _, _ := strings.Cut(err.Error(), "\n")
		return nil, sqlerr.New(sqlerr.Code(err), "%s", line)
	}
	name := st.Idxname
	if name == "" {
		name = s.chooseIndexName(table, parts)
	}
	if s.relationTaken(name) {
		if st.IfNotExists {
			return &Result{Tag: "CREATE INDEX", Notice: &sqlerr.Error{Code: sqlerr.DuplicateTable,
				Message: fmt.Sprintf("relation %q already exists, skipping", name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	def := proto.Clone(st).(*pg_query.IndexStmt)
	def.Idxname = name
	text, err := deparse(s.p.pgVersion, &pg_query.Node{Node: &pg_query.Node_IndexStmt{IndexStmt: def}})
	if err != nil {
		return nil, err
	}
	x := views.Index{Name: name, Table: table, Definition: text}
	if temp {
		if s.tempIndexes == nil {
			s.tempIndexes = map[string]views.Index{}
		}
		s.tempIndexes[name] = x
	} else if err := s.p.views.PutIndex(x); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return &Result{Tag: "CREATE INDEX", Notice: indexNotice(name)}, nil
}

// tempIndex is the session's index named name, while its temporary table
// lasts.
func (s *Session) tempIndex(name string) (views.Index, bool) {
	x, ok := s.tempIndexes[name]
	if ok && !s.isTemp(x.Table) {
		delete(s.tempIndexes, name)
		return views.Index{}, false
	}
	return x, ok
}

// isIndex reports whether name is an index's.
func (s *Session) isIndex(name string) bool {
	if _, ok := s.p.views.Index(name); ok {
		return true
	}
	_, ok := s.tempIndex(name)
	return ok
}

// relationTaken reports whether name is a table's, a view's or an
// index's, which share PostgreSQL's namespace of relations.
func (s *Session) relationTaken(name string) bool {
	if _, ok := s.p.store.Table(name); ok || s.isTemp(name) {
		return true
	}
	_, _, ok := s.view(name)
	return ok || s.isIndex(name)
}

// chooseIndexName is PostgreSQL's name for an unnamed index: the table's
// and the columns' names and idx, cut to fit 63 bytes, numbered until it
// is free.
func (s *Session) chooseIndexName(table string, parts []string) string {
	label := strings.Join(parts, "_")
	for i := 0; ; i++ {
		suffix := "idx"
		if i > 0 {
			suffix = fmt.Sprintf("idx%d", i)
		}
		name := makeObjectName(table, label, suffix)
		if !s.relationTaken(name) {
			return name
		}
	}
}

// makeObjectName joins name1_name2_label, cutting the longer of the two
// names until it fits schema.MaxNameLen, as PostgreSQL's makeObjectName.
func makeObjectName(name1, name2, label string) string {
	overhead := len(label) + 1
	if name2 != "" {
		overhead++
	}
	n1, n2 := len(name1), len(name2)
	for n1+n2 > schema.MaxNameLen-overhead {
		if n1 > n2 {
			n1--
		} else {
			n2--
		}
	}
	out := cutUTF8(name1, n1)
	if name2 != "" {
		out += "_" + cutUTF8(name2, n2)
	}
	return out + "_" + label
}

// cutUTF8 is s cut to at most n bytes, not inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// dropIndexes is DROP INDEX.
func (s *Session) dropIndexes(st *pg_query.DropStmt) (*Result, error) {
	var stored []string
	res := &Result{Tag: "DROP INDEX"}
	for _, obj := range st.Objects {
		var parts []string
		for _, it := range obj.GetList().GetItems() {
			parts = append(parts, it.GetString_().GetSval())
		}
		if len(parts) == 2 && (strings.EqualFold(parts[0], "public") || strings.EqualFold(parts[0], "pg_temp")) {
			parts = parts[1:]
		}
		if len(parts) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "index %q does not exist", strings.Join(parts, "."))
		}
		name := parts[0]
		if _, ok := s.tempIndex(name); ok {
			delete(s.tempIndexes, name)
			continue
		}
		if _, ok := s.p.views.Index(name); ok {
			stored = append(stored, name)
			continue
		}
		if s.relationTaken(name) {
			return nil, &sqlerr.Error{Code: sqlerr.WrongObjectType, Message: fmt.Sprintf("%q is not an index", name),
				Hint: "Use DROP TABLE or DROP VIEW to remove it."}
		}
		if !st.MissingOk {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "index %q does not exist", name)
		}
		res.Notice = &sqlerr.Error{Code: "00000", Message: fmt.Sprintf("index %q does not exist, skipping", name)}
	}
	if err := s.p.views.DropIndexes(stored, nil); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return res, nil
}
