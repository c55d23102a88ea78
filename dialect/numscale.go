package dialect

import (
	"fmt"
	"math/big"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PostgreSQL's numeric keeps each value's scale: SELECT 1.1 UNION SELECT 2
// prints 1.1 and 2, VALUES (2), (77.7) prints 2 and 77.7. The engine's
// decimal has one scale per column and prints 2.0. NumericLiteralScales
// handles the common case, a column of a query's result made only of
// number literals by a set operation or VALUES: each value travels with
// its scale in a struct (_tsdb_num), which sorts by value, and the planner
// prints it with that scale (ScaledNumberField).

// ScaledNumberField is the first field of the struct _tsdb_num makes: the
// value as DECIMAL(38,10); the second, s, is the scale to print it with.
const ScaledNumberField = "_tsdb_numscale"

// maxLiteralIntDigits and maxLiteralScale are what DECIMAL(38,10) holds.
const (
	maxLiteralIntDigits = 28
	maxLiteralScale     = 10
)

// NumericLiteralScales rewrites the columns of a set operation or VALUES
// list at the top of a query whose items are all number literals (or
// integer constant expressions), at least one with a decimal point. A set
// operation that removes duplicates (UNION, INTERSECT, EXCEPT without ALL)
// is rewritten only when no value appears with two scales (2 and 2.0 are
// one value to PostgreSQL, two to the struct).
func NumericLiteralScales(sel *pg_query.SelectStmt) bool {
	if sel == nil {
		return false
	}
	var rows [][]*pg_query.Node
	switch {
	case len(sel.ValuesLists) > 0:
		rows = valuesRows(sel)
	case sel.Op != pg_query.SetOperation_SETOP_NONE:
		var ok bool
		if rows, ok = setOpRows(sel); !ok {
			return false
		}
	default:
		return false
	}
	if len(rows) < 2 {
		return false
	}
	width := len(rows[0])
	for _, r := range rows {
		if len(r) != width {
			return false
		}
	}
	distinct := len(sel.ValuesLists) == 0 && removesDuplicates(sel)
	changed := false
	for j := range width {
		scales := make([]int, len(rows))
		decimals := false
		ok := true
		seen := map[string]int{} // value → scale, for set operations that deduplicate
		for i, r := range rows {
			s, isDecimal, literal, good := literalScale(r[j])
			if !good || distinct && !literal {
				ok = false
				break
			}
			if literal && distinct {
				key := numberKey(r[j])
				if prev, dup := seen[key]; dup && prev != s {
					ok = false
					break
				}
				seen[key] = s
			}
			scales[i] = s
			decimals = decimals || isDecimal
		}
		if !ok || !decimals {
			continue
		}
		for i, r := range rows {
			r[j].Node = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_num")},
				[]*pg_query.Node{{Node: r[j].Node}, pg_query.MakeAConstIntNode(int64(scales[i]), -1)}, -1).Node
		}
		changed = true
	}
	return changed
}

// valuesRows are the items of a VALUES list.
func valuesRows(sel *pg_query.SelectStmt) [][]*pg_query.Node {
	var rows [][]*pg_query.Node
	for _, l := range sel.ValuesLists {
		rows = append(rows, l.GetList().GetItems())
	}
	return rows
}

// setOpRows are the select list values of the branches of a set
// operation, as rows; false if a branch is not a plain select list.
func setOpRows(sel *pg_query.SelectStmt) ([][]*pg_query.Node, bool) {
	if sel == nil {
		return nil, false
	}
	if sel.Op != pg_query.SetOperation_SETOP_NONE {
		l, ok := setOpRows(sel.Larg)
		if !ok {
			return nil, false
		}
		r, ok := setOpRows(sel.Rarg)
		return append(l, r...), ok
	}
	if len(sel.ValuesLists) > 0 {
		return valuesRows(sel), true
	}
	if len(sel.FromClause) > 0 || sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil {
		return nil, false
	}
	var row []*pg_query.Node
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil {
			return nil, false
		}
		row = append(row, rt.Val)
	}
	return [][]*pg_query.Node{row}, true
}

// removesDuplicates reports whether a set operation tree has a UNION,
// INTERSECT or EXCEPT without ALL.
func removesDuplicates(sel *pg_query.SelectStmt) bool {
	if sel == nil || sel.Op == pg_query.SetOperation_SETOP_NONE {
		return false
	}
	return !sel.All || removesDuplicates(sel.Larg) || removesDuplicates(sel.Rarg)
}

// literalScale is the scale PostgreSQL gives a number literal (the digits
// written after its point; 0 for an integer or an integer constant
// expression), whether it has a point, and whether it is a literal; good
// is false for anything else, or a literal DECIMAL(38,10) cannot hold.
func literalScale(n *pg_query.Node) (scale int, decimal, literal, good bool) {
	if tc := n.GetTypeCast(); tc != nil && len(tc.TypeName.GetTypmods()) == 0 && len(tc.TypeName.GetArrayBounds()) == 0 {
		// 1.5::numeric is a numeric of the literal's scale, 1::numeric
		// one of scale 0.
		switch sqltree.LastName(tc.TypeName.GetNames()) {
		case "numeric", "decimal":
			if s, _, literal, good := literalScale(tc.Arg); literal && good {
				return s, true, true, true
			}
		}
		return 0, false, false, false
	}
	if c := n.GetAConst(); c != nil {
		switch {
		case c.GetIval() != nil:
			return 0, false, true, true
		case c.GetFval() != nil:
			f := strings.TrimPrefix(c.GetFval().Fval, "-")
			if strings.ContainsAny(f, "eE") {
				return 0, false, false, false
			}
			intPart, frac, hasPoint := strings.Cut(f, ".")
			if len(strings.TrimLeft(intPart, "0")) > maxLiteralIntDigits || len(frac) > maxLiteralScale {
				return 0, false, false, false
			}
			return len(frac), hasPoint, true, true
		}
		return 0, false, false, false
	}
	if e := n.GetAExpr(); e != nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && len(e.Name) == 1 {
		switch e.Name[0].GetString_().GetSval() {
		case "+", "-", "*":
		default:
			return 0, false, false, false
		}
		for _, side := range []*pg_query.Node{e.Lexpr, e.Rexpr} {
			if side == nil {
				continue // unary minus
			}
			if s, dec, _, ok := literalScale(side); !ok || dec || s != 0 {
				return 0, false, false, false
			}
		}
		return 0, false, false, true
	}
	return 0, false, false, false
}

// numberKey is a number literal's value as an exact rational's text.
func numberKey(n *pg_query.Node) string {
	c := n.GetAConst()
	text := ""
	switch {
	case c.GetIval() != nil:
		return big.NewRat(int64(c.GetIval().Ival), 1).String()
	case c.GetFval() != nil:
		text = c.GetFval().Fval
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return text
	}
	return r.String()
}

// ScaledWindowDefault gives lead(value, n, default) and lag(…) the scale
// of each value, as PostgreSQL's numeric result has it, where the value is
// an integer and the default a decimal literal: lag(ten, four, 0.7) is
// numeric and prints 0 for ten = 0 and 0.7 for the default; the engine's
// common decimal printed 0.0. Each side travels with its scale as
// NumericLiteralScales' struct. Only a select list's item itself is
// rewritten (the planner prints the struct; an expression over it would
// not take it), and only where typeOf (or the expression) says the value
// is an integer. It reports whether rt changed.
func ScaledWindowDefault(rt *pg_query.ResTarget, typeOf func(*pg_query.Node) schema.Type) bool {
	fc := rt.GetVal().GetFuncCall()
	if fc == nil || fc.Over == nil || len(fc.Args) != 3 || len(fc.Funcname) != 1 {
		return false
	}
	if name := fc.Funcname[0].GetString_().GetSval(); name != "lead" && name != "lag" {
		return false
	}
	scale, decimal, literal, good := literalScale(fc.Args[2])
	if !literal || !good || !decimal || !integerExpr(fc.Args[0], typeOf) {
		return false
	}
	if rt.Name == "" {
		rt.Name = fc.Funcname[0].GetString_().GetSval()
	}
	num := func(v *pg_query.Node, s int) *pg_query.Node {
		return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_num")},
			[]*pg_query.Node{v, pg_query.MakeAConstIntNode(int64(s), -1)}, -1)
	}
	fc.Args[0], fc.Args[2] = num(fc.Args[0], 0), num(fc.Args[2], scale)
	return true
}

// integerExpr reports whether n is an integer by what is known here
// (intWidth).
func integerExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	return intWidth(n, typeOf) != 0
}

// ScaledValuesColumns gives a column of a VALUES list in FROM each value's
// own scale where the select list shows the column as it is: in
// PostgreSQL, SELECT x FROM (VALUES (-1), (-0.5)) AS t(x) prints -1 and
// -0.5, where the engine's common decimal printed -1.0. The VALUES list
// gets one more column holding each row's scale, and the select list
// item becomes NumericLiteralScales' struct of the value and that scale.
// Only a query of that one FROM item without DISTINCT, GROUP BY or a star
// is rewritten (a star would show the added column, and grouping would
// tell 1 from 1.0, which PostgreSQL counts as one value). It reports
// whether sel changed.
func ScaledValuesColumns(sel *pg_query.SelectStmt) bool {
	if sel == nil || IsSetOp(sel) || len(sel.FromClause) != 1 || len(sel.DistinctClause) > 0 ||
		len(sel.GroupClause) > 0 || sel.HavingClause != nil {
		return false
	}
	rs := sel.FromClause[0].GetRangeSubselect()
	if rs == nil || rs.Lateral || rs.Alias == nil {
		return false
	}
	values := rs.Subquery.GetSelectStmt()
	if values == nil || len(values.ValuesLists) < 2 {
		return false
	}
	rows := valuesRows(values)
	width := len(rows[0])
	if len(rs.Alias.Colnames) != width {
		return false
	}
	for _, r := range rows {
		if len(r) != width {
			return false
		}
	}
	for _, t := range sel.TargetList {
		if cr := t.GetResTarget().GetVal().GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return false
		}
	}
	// A whole-row reference (to_json(t), t.*, row(t.*)) would show the
	// added column too.
	wholeRow := false
	for _, part := range append(append([]*pg_query.Node{sel.WhereClause}, sel.TargetList...), sel.SortClause...) {
		if part == nil {
			continue
		}
		_ = sqltree.Walk(part.ProtoReflect(), func(m proto.Message) error {
			if cr, ok := m.(*pg_query.ColumnRef); ok && len(cr.Fields) > 0 {
				first := cr.Fields[0].GetString_().GetSval()
				if len(cr.Fields) == 1 && first == rs.Alias.Aliasname || len(cr.Fields) == 2 && first == rs.Alias.Aliasname && cr.Fields[1].GetAStar() != nil {
					wholeRow = true
				}
			}
			return nil
		})
	}
	if wholeRow {
		return false
	}
	changed := false
	for j := range width {
		scales := make([]int, len(rows))
		decimals, mixed, ok := false, false, true
		for i, r := range rows {
			s, isDecimal, _, good := literalScale(r[j])
			if !good {
				ok = false
				break
			}
			scales[i] = s
			decimals = decimals || isDecimal
			mixed = mixed || s != scales[0]
		}
		if !ok || !decimals || !mixed {
			continue
		}
		name := rs.Alias.Colnames[j].GetString_().GetSval()
		var shown []*pg_query.ResTarget
		for _, t := range sel.TargetList {
			rt := t.GetResTarget()
			if cr := rt.GetVal().GetColumnRef(); cr != nil && refersTo(cr, rs.Alias.Aliasname, name) {
				shown = append(shown, rt)
			}
		}
		if len(shown) == 0 {
			continue
		}
		scaleCol := fmt.Sprintf("_tsdb_scale_%d", j)
		for i, l := range values.ValuesLists {
			items := l.GetList()
			items.Items = append(items.Items, pg_query.MakeAConstIntNode(int64(scales[i]), -1))
		}
		rs.Alias.Colnames = append(rs.Alias.Colnames, pg_query.MakeStrNode(scaleCol))
		for _, rt := range shown {
			if rt.Name == "" {
				rt.Name = name
			}
			scale := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(rs.Alias.Aliasname), pg_query.MakeStrNode(scaleCol)}, -1)
			rt.Val = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_num")}, []*pg_query.Node{rt.Val, scale}, -1)
		}
		changed = true
	}
	return changed
}

// refersTo reports whether a column reference names column of the FROM
// item alias (unqualified, or qualified by the alias).
func refersTo(cr *pg_query.ColumnRef, alias, column string) bool {
	switch len(cr.Fields) {
	case 1:
		return cr.Fields[0].GetString_().GetSval() == column
	case 2:
		return cr.Fields[0].GetString_().GetSval() == alias && cr.Fields[1].GetString_().GetSval() == column
	}
	return false
}

// NumericDivisionField is the first field of the struct _tsdb_numdiv
// makes: the quotient as a double, which the struct sorts by; a and b are
// the operands.
const NumericDivisionField = "_tsdb_numdiv"

// NumericDivision answers a select list item that divides numerics, as
// PostgreSQL's numeric_div does: the quotient with at least 16 significant
// digits and no fewer places than either operand (1::numeric / 3 is
// 0.33333333333333333333), where the engine divides decimals as doubles
// (0.3333333333333333). The item becomes a struct of the operands that
// the planner divides. Both operands must be known numeric or integer and
// one numeric: a literal with a point, a cast to numeric, a numeric
// column, their sums, minima, maxima and rounds, and +, - and * of them.
// Only the item itself is rewritten (an expression over the quotient
// takes the engine's double), and not in a query whose GROUP BY names a
// select list item (a struct groups 1/2 apart from 2/4). It reports
// whether rt changed.
func NumericDivision(sel *pg_query.SelectStmt, rt *pg_query.ResTarget, typeOf func(*pg_query.Node) schema.Type) bool {
	e := rt.GetVal().GetAExpr()
	if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || sqltree.LastName(e.Name) != "/" {
		return false
	}
	ln, li := numericOperand(e.Lexpr, typeOf)
	rn, ri := numericOperand(e.Rexpr, typeOf)
	if !(ln || li) || !(rn || ri) || !(ln || rn) {
		return false
	}
	for _, g := range sel.GroupClause {
		if c := g.GetAConst(); c != nil || g.GetColumnRef() != nil && len(g.GetColumnRef().Fields) == 1 && rt.Name != "" &&
			g.GetColumnRef().Fields[0].GetString_().GetSval() == rt.Name {
			return false
		}
	}
	if len(sel.DistinctClause) > 0 {
		return false
	}
	if rt.Name == "" {
		rt.Name = "?column?"
	}
	rt.Val = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_numdiv")}, []*pg_query.Node{e.Lexpr, e.Rexpr}, e.Location)
	return true
}

// numericOperand reports whether n is known to be a numeric, or an integer.
func numericOperand(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) (numeric, integer bool) {
	switch {
	case n.GetAConst() != nil:
		c := n.GetAConst()
		if f := c.GetFval(); f != nil {
			return !strings.ContainsAny(f.Fval, "eE"), false
		}
		return false, c.GetIval() != nil
	case n.GetTypeCast() != nil:
		if len(n.GetTypeCast().TypeName.GetArrayBounds()) > 0 {
			return false, false
		}
		t, _ := schema.ParseType(sqltree.LastName(n.GetTypeCast().TypeName.GetNames()))
		return t == schema.Decimal, integerExpr(n, typeOf)
	case n.GetColumnRef() != nil:
		if typeOf != nil && typeOf(n) == schema.Decimal {
			return true, false
		}
		return false, integerExpr(n, typeOf)
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		if fc.AggFilter != nil || fc.AggDistinct || len(fc.AggOrder) > 0 {
			return false, false
		}
		// (Over a window, count, sum, min and max have the types they
		// have as aggregates.)
		switch name := sqltree.LastName(fc.Funcname); {
		case name == "count":
			return false, true
		case name == "sum" && len(fc.Args) == 1:
			// The sum of bigints is a numeric, of smaller integers a
			// bigint.
			num, integer := numericOperand(fc.Args[0], typeOf)
			if integer && intWidth(fc.Args[0], typeOf) == 64 {
				return true, false
			}
			return num, integer && intWidth(fc.Args[0], typeOf) != 0
		case (name == "min" || name == "max") && len(fc.Args) == 1:
			return numericOperand(fc.Args[0], typeOf)
		case (name == "round" || name == "_tsdb_round") && len(fc.Args) >= 1 && fc.Over == nil:
			num, _ := numericOperand(fc.Args[0], typeOf)
			return num, false
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil {
			return false, false
		}
		switch sqltree.LastName(e.Name) {
		case "+", "-", "*":
			ln, li := numericOperand(e.Lexpr, typeOf)
			rn, ri := numericOperand(e.Rexpr, typeOf)
			return (ln || rn) && (ln || li) && (rn || ri), li && ri
		}
	}
	return false, false
}

// CheckArrayScales refuses a select list that shows an ARRAY[…] of
// number literals of different scales (ARRAY[1.5, 2], ARRAY[1.50, 2.5],
// an element of one): PostgreSQL's numeric[] keeps each element's own
// scale ({1.5,2}), the engine's decimal list one scale for all
// ({1.5,2.0}), a different value PostgreSQL would not print. An array a
// function takes (percentile_cont(ARRAY[0, 0.25])) or WHERE compares is
// left alone.
func CheckArrayScales(sel *pg_query.SelectStmt) error {
	if sel == nil {
		return nil
	}
	if err := CheckArrayScales(sel.Larg); err != nil {
		return err
	}
	if err := CheckArrayScales(sel.Rarg); err != nil {
		return err
	}
	rows := [][]*pg_query.Node{}
	for _, t := range sel.TargetList {
		rows = append(rows, []*pg_query.Node{t.GetResTarget().GetVal()})
	}
	for _, row := range sel.ValuesLists {
		rows = append(rows, row.GetList().GetItems())
	}
	for _, row := range rows {
		for _, v := range row {
			if ind := v.GetAIndirection(); ind != nil {
				v = ind.Arg
			}
			if a := v.GetAArrayExpr(); a != nil && mixedScales(a) {
				return sqlerr.New(sqlerr.FeatureNotSupported, "ARRAY[…] of numbers of different scales is not supported: PostgreSQL shows each with its own scale, tsdb would show all with the largest; give them one scale (1.50, 2.00) or cast them to float8")
			}
		}
	}
	return nil
}

// mixedScales reports an array (of arrays) of number literals of more
// than one scale, one of them with a decimal point.
func mixedScales(a *pg_query.A_ArrayExpr) bool {
	scales := map[int]bool{}
	decimals := false
	var walk func(a *pg_query.A_ArrayExpr)
	walk = func(a *pg_query.A_ArrayExpr) {
		for _, el := range a.Elements {
			if inner := el.GetAArrayExpr(); inner != nil {
				walk(inner)
				continue
			}
			if s, dec, literal, good := literalScale(el); literal && good {
				scales[s] = true
				decimals = decimals || dec
			}
		}
	}
	walk(a)
	return decimals && len(scales) > 1
}
