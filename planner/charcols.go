package planner

import (
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// character(n) values in results. A character(n) column is stored without
// its trailing spaces (schema.Column.Padded), which is what comparisons,
// length() and casts to text see in PostgreSQL too. Where PostgreSQL
// shows the padded value, tsdb pads it:
//
//   - a result column that is such a column (by name or through *, min,
//     max, COALESCE, CASE, NULLIF, GREATEST, LEAST, first_value and the
//     like, a scalar subquery, a set operation of such columns of one
//     length) is marked (Column.Pad) and written padded by the wire layer;
//     sorting and grouping still see the value without the spaces, as
//     PostgreSQL's character(n) comparisons do;
//   - where the padded value itself is what PostgreSQL computes with —
//     LIKE, SIMILAR TO, regular expressions, octet_length, concat,
//     format, JSON, arrays and row values, and a CASE or COALESCE that
//     mixes the column with other text — the reference is replaced by
//     rpad(column, n) in the statement (padCharacterRefs);
//   - a result column tsdb cannot place is refused rather than shown
//     without its spaces.

// charCol is a column of a query's result or of a FROM item: its name and
// its width (character(n)'s n; 0 for any other type; mixedWidth for a set
// operation or CASE of character(n) with other text).
type charCol struct {
	name  string
	width int
	// text: a text or varchar column (width 0), whose type a set
	// operation that starts with it keeps.
	text bool
}

// mixedWidth marks a column whose values are padded to different lengths
// or not at all, row by row.
const mixedWidth = -1

// charItem is an item of a FROM list: its name in the query and its
// columns (nil when unknown).
type charItem struct {
	name string
	cols []charCol
	// plain: a function's columns, never character(n).
	plain bool
}

// charScope is one SELECT's FROM list and the CTEs it sees.
type charScope struct {
	items []charItem
	// segments are what * expands to, FROM item by FROM item (a join
	// USING or NATURAL as PostgreSQL orders its columns).
	segments []charSegment
	// castsOnly: the analysis' castsOnly.
	castsOnly bool
}

// charSegment is the columns * takes from one FROM item: cols when known;
// else plain (a function's, which are never character(n): a count the
// result's width tells) or not.
type charSegment struct {
	cols  []charCol
	known bool
	plain bool
}

// charAnalysis resolves the character(n) columns of one statement.
type charAnalysis struct {
	s    *Session
	ctes []map[string][]charCol // innermost last
	// depth is how deep in subqueries the analysis is: 0 for the
	// statement's own select list (and its set operation's branches).
	depth int
	// width is the number of the statement's result columns; -1 when
	// unknown.
	width int
	// castsOnly: no relation of the statement has a character(n) column,
	// so only its casts make character(n) values.
	castsOnly bool
}

// sub is selectCols of a subquery.
func (a *charAnalysis) sub(sel *pg_query.SelectStmt) ([]charCol, bool) {
	a.depth++
	defer func() { a.depth-- }()
	return a.selectCols(sel)
}

// padCharacters marks the result columns of sel (the statement as
// written) that show character(n) values. It refuses a result column that
// may show one it cannot place. Statements over no relation with a
// character(n) column cost one walk of their relations.
func (s *Session) padCharacters(cols []Column, sel *pg_query.SelectStmt) error {
	if sel == nil || emptySelectList(sel) {
		return nil
	}
	tables, casts := s.paddedSources(sel)
	if !tables && !casts {
		return nil
	}
	// Only casts: a column tsdb cannot place is no character(n) column.
	a := &charAnalysis{s: s, width: len(cols), castsOnly: !tables}
	out, ok := a.selectCols(sel)
	if !ok || len(out) != len(cols) {
		return sqlerr.New(sqlerr.FeatureNotSupported, "this query's result may show character(n) values, which tsdb cannot show padded here; cast them to text or varchar")
	}
	for i, c := range out {
		switch {
		case c.width == mixedWidth:
			return sqlerr.New(sqlerr.FeatureNotSupported, "result column %q mixes character(n) values of different lengths or with other text, which tsdb cannot show padded; cast them to text or varchar", cols[i].Name)
		case c.width > 0 && (cols[i].OID == 25 || cols[i].OID == 1043):
			cols[i].OID, cols[i].Pad = 1042, c.width
		}
	}
	return nil
}

// readsPadded reports whether a relation the statement names has a
// character(n) column, or the statement casts to character(n).
func (s *Session) readsPadded(stmt proto.Message) bool {
	tables, casts := s.paddedSources(stmt)
	return tables || casts
}

// paddedSources reports whether a relation the statement names has a
// character(n) column, and whether it casts to character(n).
func (s *Session) paddedSources(stmt proto.Message) (tables, casts bool) {
	sqltree.Walk(stmt.ProtoReflect(), func(m proto.Message) error {
		if tc, ok := m.(*pg_query.TypeCast); ok && sqltree.LastName(tc.TypeName.GetNames()) == "bpchar" {
			casts = true
		}
		rv, ok := m.(*pg_query.RangeVar)
		if !ok || tables {
			return nil
		}
		if cols, ok := s.relationCharCols(rv); ok {
			for _, c := range cols {
				if c.width > 0 {
					tables = true
				}
			}
		}
		return nil
	})
	return tables, casts
}

// relationCharCols are the columns of a table, temporary table or view a
// RangeVar names.
func (s *Session) relationCharCols(rv *pg_query.RangeVar) ([]charCol, bool) {
	var cols []schema.Column
	if name, ok := isTempRelation(rv); ok {
		cols, ok = s.temps[name]
		if !ok {
			return nil, false
		}
	} else if name, err := relationName(rv); err != nil {
		return nil, false
	} else if t, ok := s.p.store.Table(name); ok {
		cols = t.Columns
	} else if v, _, ok := s.view(name); ok {
		out := make([]charCol, len(v.Columns))
		for i, c := range v.Columns {
			out[i] = charCol{name: c.Name, width: c.Pad, text: c.Pad == 0 && (c.OID == oidText || c.OID == 1043)} // text, varchar
		}
		return out, true
	} else {
		return nil, false
	}
	out := make([]charCol, len(cols))
	for i, c := range cols {
		out[i].name = c.Name
		if c.Padded {
			out[i].width = c.MaxLength
		}
		out[i].text = c.Type == schema.Text && !c.Padded
	}
	return out, true
}

// selectCols is the result columns of a query; false when its shape is
// unknown.
func (a *charAnalysis) selectCols(sel *pg_query.SelectStmt) ([]charCol, bool) {
	if sel == nil {
		return nil, false
	}
	if sel.WithClause != nil {
		ctes := map[string][]charCol{}
		a.ctes = append(a.ctes, ctes)
		defer func() { a.ctes = a.ctes[:len(a.ctes)-1] }()
		for _, n := range sel.WithClause.Ctes {
			cte := n.GetCommonTableExpr()
			q := cte.GetCtequery().GetSelectStmt()
			if q == nil {
				continue
			}
			cols, ok := a.sub(q)
			if !ok {
				ctes[cte.Ctename] = nil
				continue
			}
			ctes[cte.Ctename] = renamed(cols, cte.Aliascolnames)
		}
	}
	switch {
	case isSetOp(sel):
		l, ok := a.selectCols(sel.Larg)
		if !ok {
			return nil, false
		}
		r, ok := a.selectCols(sel.Rarg)
		if !ok || len(r) != len(l) {
			return nil, false
		}
		out := make([]charCol, len(l))
		for i := range l {
			out[i] = l[i]
			switch {
			case r[i].width == l[i].width:
			case l[i].text && r[i].width > 0:
				// text or varchar first: PostgreSQL's common type is the
				// first one's (text is preferred; varchar and bpchar
				// convert either way), in which the character(n) values
				// lose their spaces: as stored.
			default:
				out[i].width, out[i].text = mixedWidth, false
			}
		}
		return out, true
	case len(sel.ValuesLists) > 0:
		row := sel.ValuesLists[0].GetList()
		if row == nil {
			return nil, false
		}
		return make([]charCol, len(row.Items)), true
	}
	sc := a.scope(sel.FromClause)
	var out []charCol
	hole := -1 // where a function's columns go, which only the width tells
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			return nil, false
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			for _, seg := range sc.star(cr.Fields[:len(cr.Fields)-1]) {
				seg.plain = seg.plain || a.castsOnly // no character(n) column in it
				switch {
				case seg.known:
					out = append(out, seg.cols...)
				case seg.plain && hole < 0 && a.depth == 0 && a.width >= 0:
					hole = len(out)
				default:
					return nil, false
				}
			}
			continue
		}
		w, ok := a.exprWidth(sc, rt.Val)
		if !ok {
			return nil, false
		}
		text := false
		if cr := rt.Val.GetColumnRef(); cr != nil {
			c, _ := sc.columnCol(cr)
			text = c.text
		}
		if w == mixedWidth && a.depth == 0 && a.mixedPaddable(sc, rt.Val) {
			w = 0 // padded value by value in the statement (padMixedResults)
		}
		name := rt.Name
		if name == "" {
			name = figureColname(rt.Val)
		}
		out = append(out, charCol{name: name, width: w, text: text && w == 0})
	}
	if hole >= 0 {
		n := a.width - len(out)
		if n < 0 {
			return nil, false
		}
		out = slices.Insert(out, hole, make([]charCol, n)...)
	}
	return out, true
}

// isSetOp reports a set operation (statements the planner builds may
// leave Op unset).
func isSetOp(sel *pg_query.SelectStmt) bool { return sel.Larg != nil && sel.Rarg != nil }

// renamed gives cols the names of an alias's column list.
func renamed(cols []charCol, names []*pg_query.Node) []charCol {
	if len(names) == 0 {
		return cols
	}
	out := append([]charCol(nil), cols...)
	for i, n := range names {
		if i < len(out) {
			out[i].name = n.GetString_().GetSval()
		}
	}
	return out
}

// scope reads a FROM list.
func (a *charAnalysis) scope(from []*pg_query.Node) *charScope {
	sc := &charScope{castsOnly: a.castsOnly}
	for _, n := range from {
		sc.segments = append(sc.segments, a.fromItem(sc, n))
	}
	return sc
}

// fromItem adds a FROM item's names to sc and returns what * takes from
// it.
func (a *charAnalysis) fromItem(sc *charScope, n *pg_query.Node) charSegment {
	switch {
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		name := rv.Relname
		if t, ok := isTempRelation(rv); ok {
			name = t
		}
		item := charItem{name: name}
		if rv.Alias != nil {
			item.name = rv.Alias.Aliasname
		}
		if cols, ok := a.cte(rv); ok {
			item.cols = cols
		} else if cols, ok := a.s.relationCharCols(rv); ok {
			item.cols = cols
		}
		if rv.Alias != nil {
			item.cols = renamed(item.cols, rv.Alias.Colnames)
		}
		sc.items = append(sc.items, item)
		return charSegment{cols: item.cols, known: item.cols != nil}
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		item := charItem{}
		if rs.Alias != nil {
			item.name = rs.Alias.Aliasname
		}
		if q := rs.Subquery.GetSelectStmt(); q != nil {
			if cols, ok := a.sub(q); ok {
				item.cols = cols
				if rs.Alias != nil {
					item.cols = renamed(cols, rs.Alias.Colnames)
				}
			}
		}
		sc.items = append(sc.items, item)
		return charSegment{cols: item.cols, known: item.cols != nil}
	case n.GetJoinExpr() != nil:
		j := n.GetJoinExpr()
		l, r := a.fromItem(sc, j.Larg), a.fromItem(sc, j.Rarg)
		seg := charSegment{plain: l.plain && r.plain}
		if l.known && r.known {
			seg = joinSegment(j, l.cols, r.cols)
		} else if !seg.plain {
			return seg
		}
		if j.Alias != nil {
			if seg.known {
				seg.cols = renamed(seg.cols, j.Alias.Colnames)
			}
			sc.items = append(sc.items, charItem{name: j.Alias.Aliasname, cols: seg.cols})
		}
		return seg
	case n.GetRangeFunction() != nil:
		rf := n.GetRangeFunction()
		item := charItem{plain: true}
		if rf.Alias != nil {
			item.name = rf.Alias.Aliasname
			if len(rf.Alias.Colnames) > 0 && len(rf.Coldeflist) == 0 && !rf.Ordinality && len(rf.Functions) == 1 {
				item.cols = renamed(make([]charCol, len(rf.Alias.Colnames)), rf.Alias.Colnames)
			}
		}
		sc.items = append(sc.items, item)
		return charSegment{cols: item.cols, known: item.cols != nil, plain: true}
	}
	sc.items = append(sc.items, charItem{})
	return charSegment{}
}

// joinSegment is what * takes from a join of two known sides: the USING
// (or NATURAL) columns first, then the rest of each side, as PostgreSQL
// orders them.
func joinSegment(j *pg_query.JoinExpr, l, r []charCol) charSegment {
	var using []string
	if j.IsNatural {
		for _, c := range l {
			for _, d := range r {
				if c.name == d.name {
					using = append(using, c.name)
				}
			}
		}
	}
	for _, u := range j.UsingClause {
		using = append(using, u.GetString_().GetSval())
	}
	if len(using) == 0 {
		return charSegment{cols: append(append([]charCol(nil), l...), r...), known: true}
	}
	width := func(cols []charCol, name string) (int, bool) {
		for _, c := range cols {
			if c.name == name {
				return c.width, true
			}
		}
		return 0, false
	}
	var out []charCol
	for _, u := range using {
		lw, lok := width(l, u)
		rw, rok := width(r, u)
		if !lok || !rok {
			return charSegment{}
		}
		if lw != rw {
			lw = mixedWidth
		}
		out = append(out, charCol{name: u, width: lw})
	}
	rest := func(cols []charCol) {
		for _, c := range cols {
			if !slices.Contains(using, c.name) {
				out = append(out, c)
			}
		}
	}
	rest(l)
	rest(r)
	return charSegment{cols: out, known: true}
}

// cte is the columns of the CTE an unqualified RangeVar names.
func (a *charAnalysis) cte(rv *pg_query.RangeVar) ([]charCol, bool) {
	if rv.Schemaname != "" || rv.Catalogname != "" {
		return nil, false
	}
	for i := len(a.ctes) - 1; i >= 0; i-- {
		if cols, ok := a.ctes[i][rv.Relname]; ok {
			return cols, cols != nil
		}
	}
	return nil, false
}

// star expands * (no qualifier) or t.*: the segments it takes.
func (sc *charScope) star(qual []*pg_query.Node) []charSegment {
	if len(qual) == 0 {
		return sc.segments
	}
	name := qual[len(qual)-1].GetString_().GetSval()
	for _, it := range sc.items {
		if it.name == name {
			return []charSegment{{cols: it.cols, known: it.cols != nil}}
		}
	}
	return []charSegment{{}}
}

// column resolves a column reference: its width, and false when the
// scope cannot tell.
func (sc *charScope) column(cr *pg_query.ColumnRef) (int, bool) {
	c, ok := sc.columnCol(cr)
	return c.width, ok
}

// columnCol resolves a column reference to its column: false when the
// scope cannot tell.
func (sc *charScope) columnCol(cr *pg_query.ColumnRef) (charCol, bool) {
	if cr == nil || len(cr.Fields) == 0 {
		return charCol{}, false
	}
	if sc.castsOnly {
		return charCol{}, true // no relation's column is character(n)
	}
	var names []string
	for _, f := range cr.Fields {
		s := f.GetString_()
		if s == nil {
			return charCol{}, false
		}
		names = append(names, s.Sval)
	}
	col := names[len(names)-1]
	if len(names) >= 2 {
		qual := names[len(names)-2]
		for _, it := range sc.items {
			if it.name != qual {
				continue
			}
			if it.plain {
				return charCol{}, true
			}
			for _, c := range it.cols {
				if c.name == col {
					return c, true
				}
			}
			return charCol{}, false
		}
		return charCol{}, false
	}
	found, unknown, plain := false, false, false
	var match charCol
	for _, it := range sc.items {
		if it.cols == nil {
			unknown = unknown || !it.plain
			plain = plain || it.plain
			continue
		}
		for _, c := range it.cols {
			if c.name == col && !found {
				found, match = true, c
			}
		}
	}
	if !found {
		// A function's column, or a column of an outer query (which
		// this scope cannot tell).
		return charCol{}, plain && !unknown
	}
	return match, true
}

// widthFunctions return their (first) argument's type: a character(n)
// argument gives a character(n) result.
var widthFunctions = map[string]bool{
	"min": true, "max": true, "first_value": true, "last_value": true, "nth_value": true,
	"lag": true, "lead": true, "any_value": true, "first": true, "last": true, "mode": true,
}

// exprWidth is the width of a select list expression's values; false when
// it cannot be told.
func (a *charAnalysis) exprWidth(sc *charScope, n *pg_query.Node) (int, bool) {
	switch {
	case n == nil:
		return 0, true
	case n.GetColumnRef() != nil:
		return sc.column(n.GetColumnRef())
	case n.GetTypeCast() != nil:
		// x::character(n) is the value without its trailing spaces
		// (dialect.CharacterCast), shown padded.
		tn := n.GetTypeCast().TypeName
		if sqltree.LastName(tn.GetNames()) == "bpchar" && len(tn.GetTypmods()) == 1 && len(tn.GetArrayBounds()) == 0 {
			if iv := tn.Typmods[0].GetAConst().GetIval(); iv != nil && iv.Ival > 0 {
				return int(iv.Ival), true
			}
		}
		if sqltree.LastName(tn.GetNames()) == "bpchar" && len(tn.GetTypmods()) == 0 && len(tn.GetArrayBounds()) == 0 {
			// ::bpchar keeps a character(n) value as it is.
			return a.exprWidth(sc, n.GetTypeCast().Arg)
		}
		return 0, true
	case n.GetCollateClause() != nil:
		return a.exprWidth(sc, n.GetCollateClause().Arg)
	case n.GetCoalesceExpr() != nil:
		return a.combine(sc, n.GetCoalesceExpr().Args)
	case n.GetMinMaxExpr() != nil:
		return a.combine(sc, n.GetMinMaxExpr().Args)
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		var results []*pg_query.Node
		for _, w := range ce.Args {
			results = append(results, w.GetCaseWhen().GetResult())
		}
		results = append(results, ce.Defresult)
		return a.combine(sc, results)
	case n.GetAExpr() != nil && n.GetAExpr().Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF:
		return a.exprWidth(sc, n.GetAExpr().Lexpr)
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		name := sqltree.LastName(fc.Funcname)
		switch {
		case (name == "mode" || name == "percentile_disc") && fc.AggWithinGroup && len(fc.AggOrder) == 1:
			// A value of the ordered column (percentile_disc of an
			// array fraction is an array: not a character(n) value).
			if name == "percentile_disc" && (len(fc.Args) != 1 || fc.Args[0].GetAArrayExpr() != nil) {
				return 0, true
			}
			return a.exprWidth(sc, fc.AggOrder[0].GetSortBy().GetNode())
		case (name == "lag" || name == "lead") && len(fc.Args) == 3:
			// The default is shown as it is, the column's values padded.
			return a.combine(sc, []*pg_query.Node{fc.Args[0], fc.Args[2]})
		case widthFunctions[name] && len(fc.Args) > 0 && len(fc.AggOrder) == 0:
			return a.exprWidth(sc, fc.Args[0])
		}
		return 0, true
	case n.GetSubLink() != nil && n.GetSubLink().SubLinkType == pg_query.SubLinkType_EXPR_SUBLINK:
		q := n.GetSubLink().Subselect.GetSelectStmt()
		if q == nil {
			return 0, false
		}
		cols, ok := a.sub(q)
		if !ok || len(cols) != 1 || cols[0].width == mixedWidth {
			return 0, false
		}
		return cols[0].width, true
	}
	return 0, true
}

// combine is the width of a COALESCE, CASE or GREATEST of args, as
// PostgreSQL resolves their type: character(n) columns of one length give
// that length; with string constants (which take the columns' type) or
// columns of other lengths, character(n) without a length, each value
// shown as it is (mixedWidth); with any other text, text, whose values
// have no trailing spaces (0). NULLs do not count.
func (a *charAnalysis) combine(sc *charScope, args []*pg_query.Node) (int, bool) {
	width, seen, literal := 0, false, false
	for _, arg := range args {
		if arg == nil || isNullConst(arg) {
			continue
		}
		if c := arg.GetAConst(); c != nil && c.GetSval() != nil {
			literal = true
			continue
		}
		w, ok := a.exprWidth(sc, arg)
		if !ok {
			return 0, false
		}
		if w == 0 {
			return 0, true // text
		}
		if seen && w != width {
			width = mixedWidth
		} else if !seen {
			width = w
		}
		seen = true
	}
	if literal && width != 0 {
		return mixedWidth, true
	}
	return width, true
}

func isNullConst(n *pg_query.Node) bool {
	c := n.GetAConst()
	return c != nil && c.Isnull
}
