package planner

// pg_get_viewdef: a view's query as PostgreSQL writes it back
// (dialect/viewdef), for psql's \d+, pg_dump and the tools that show a
// view's source.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/dialect/viewdef"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
	"tsdb/internal/views"
)

// viewDef answers pg_get_viewdef(view [, pretty]): a string constant for a
// view named or numbered by a constant (psql sends '16385'::oid), a
// lookup among the session's views for any other argument (SELECT
// pg_get_viewdef(oid) FROM pg_class). NULL for a relation that is not a
// view, as in PostgreSQL.
func (s *Session) viewDef(fc *pg_query.FuncCall) (*pg_query.Node, error) {
	if len(fc.Args) == 0 || len(fc.Args) > 2 {
		return nil, nil
	}
	pretty := false
	if len(fc.Args) == 2 {
		b, ok := constantBool(fc.Args[1])
		if !ok {
			// pg_get_viewdef(view, wrap_column) and a computed flag.
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "pg_get_viewdef with a wrap column or a computed pretty flag is not supported")
		}
		pretty = b
	}
	if oid, ok := constantOID(fc.Args[0]); ok {
		return s.viewDefOf(oid, pretty)
	}
	if sv := fc.Args[0].GetAConst().GetSval(); sv != nil || fc.Args[0].GetTypeCast() != nil {
		name := ""
		if sv != nil {
			name = sv.Sval
		} else if rel, ok := regclassLiteral(fc.Args[0]); ok {
			name = rel
		} else {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "pg_get_viewdef of this argument is not supported")
		}
		oid, err := s.relationOID(name)
		if err != nil {
			return nil, err // no such relation: 42P01, as in PostgreSQL
		}
		return s.viewDefOf(oid, pretty)
	}
	// Any other argument: each view's text beside its OID, a view
	// tsdb cannot write failing only when it is asked for.
	rows := []string{"(CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), false)"}
	for _, t := range s.viewTables() {
		v, _, _ := s.view(t.Name)
		def, err := s.writeViewDef(v, pretty)
		if err != nil {
			def = err.Error()
		}
		rows = append(rows, fmt.Sprintf("(%d, %s, %v)", dialect.TableOID(t), schema.QuoteString(def), err == nil))
	}
	// CASE reaches error() only for the row asked for (VALUES would
	// raise it for every row).
	return sqltree.Template("(SELECT CASE WHEN _tsdb_vd_ok THEN _tsdb_vd_def ELSE error('[tsdb 0A000] ' || _tsdb_vd_def) END FROM (VALUES "+
		strings.Join(rows, ", ")+") AS _tsdb_vd(_tsdb_vd_oid, _tsdb_vd_def, _tsdb_vd_ok) WHERE _tsdb_vd_oid = CAST(_tsdb_arg1 AS BIGINT))", fc.Args[0])
}

// viewDefOf is the text of the view with OID oid as a constant: NULL
// when no view has it.
func (s *Session) viewDefOf(oid int64, pretty bool) (*pg_query.Node, error) {
	v, found := s.viewByOID(oid)
	if !found {
		return sqltree.Cast(&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, "text"), nil
	}
	def, err := s.writeViewDef(v, pretty)
	if err != nil {
		return nil, err
	}
	return pg_query.MakeAConstStrNode(def, -1), nil
}

// constantBool reads a boolean constant: true, or a literal cast to
// boolean ('t'::bool).
func constantBool(n *pg_query.Node) (bool, bool) {
	if b := n.GetAConst().GetBoolval(); b != nil {
		return b.Boolval, true
	}
	tc := n.GetTypeCast()
	if name := sqltree.LastName(tc.GetTypeName().GetNames()); tc == nil || name != "bool" && name != "boolean" {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(tc.Arg.GetAConst().GetSval().GetSval())) {
	case "t", "true", "on", "yes", "1":
		return true, true
	case "f", "false", "off", "no", "0":
		return false, true
	}
	return false, false
}

// constantOID reads an OID written as a number, or a string cast to oid.
func constantOID(n *pg_query.Node) (int64, bool) {
	if iv := n.GetAConst().GetIval(); iv != nil {
		return int64(iv.Ival), true
	}
	tc := n.GetTypeCast()
	if tc == nil || sqltree.LastName(tc.TypeName.GetNames()) != "oid" {
		return 0, false
	}
	if iv := tc.Arg.GetAConst().GetIval(); iv != nil {
		return int64(iv.Ival), true
	}
	if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
		oid, err := strconv.ParseInt(strings.TrimSpace(sv.Sval), 10, 64)
		return oid, err == nil
	}
	return 0, false
}

// viewByOID finds the session's view with the OID the catalogs give it.
func (s *Session) viewByOID(oid int64) (views.View, bool) {
	for _, t := range s.viewTables() {
		if dialect.TableOID(t) == oid {
			v, _, ok := s.view(t.Name)
			return v, ok
		}
	}
	return views.View{}, false
}

// writeViewDef writes v's query as pg_get_viewdef does, in the session's
// settings; a query tsdb cannot write exactly so is refused (0A000).
func (s *Session) writeViewDef(v views.View, pretty bool) (string, error) {
	in := s.settings.Input(s.statementTime())
	env := viewdef.Env{Relation: s.viewdefRelation, Loc: in.Loc, Dates: in.Dates, Order: in.Order, Intervals: in.Intervals, FloatDigits: in.FloatDigits}
	names := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		names[i] = c.Name
	}
	def, err := viewdef.Def(v.Query, names, env, pretty)
	if errors.Is(err, viewdef.ErrUnsupported) {
		return "", &sqlerr.Error{Code: sqlerr.FeatureNotSupported, Message: fmt.Sprintf("pg_get_viewdef of view %q: %v", v.Name, err), Err: err,
			Hint: "pg_views.definition holds the view's query as written."}
	}
	return def, err
}

// viewdefRelation gives the columns of a relation a view reads, with
// PostgreSQL's types: the session's temporary tables and views first, as
// its search path finds them.
func (s *Session) viewdefRelation(name string) ([]viewdef.Column, bool) {
	var cols []schema.Column
	switch {
	case s.isTemp(name):
		cols = s.temps[name]
	default:
		if v, _, ok := s.view(name); ok {
			out := make([]viewdef.Column, len(v.Columns))
			for i, c := range v.Columns {
				out[i] = viewdef.Column{Name: c.Name, Type: viewdef.Type{OID: c.OID, Mod: -1}}
			}
			return out, true
		}
		t, ok := s.p.store.Table(name)
		if !ok {
			return nil, false
		}
		cols = t.Columns
	}
	out := make([]viewdef.Column, len(cols))
	for i, c := range cols {
		ty := viewdef.Type{OID: c.Type.OID(), Mod: -1}
		switch {
		case c.MaxLength > 0 && (c.Type == schema.Bit || c.Type == schema.VarBit):
			ty.Mod = int32(c.MaxLength) // bit(n)'s typmod is n
		case c.MaxLength > 0:
			ty = viewdef.Type{OID: 1043, Mod: int32(c.MaxLength + 4)} // varchar(n)
			if c.Padded {
				ty.OID = 1042 // character(n)
			}
		case c.Type == schema.Decimal && c.Digits > 0:
			ty.Mod = int32(c.Digits<<16 | c.Scale + 4)
		}
		out[i] = viewdef.Column{Name: c.Name, Type: ty}
	}
	return out, true
}
