package dialect

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// Set operations and VALUES lists as PostgreSQL resolves their columns,
// and the rules it applies to their ORDER BY.

// UnknownSetOpLiterals reads, in every set operation and VALUES list under
// root, a quoted constant as the type the other rows of its column have
// (a cast, a number, a boolean), as PostgreSQL resolves an unknown literal:
// SELECT 3.4::numeric UNION SELECT 'foo' fails there ('foo' is no
// numeric), where the engine made the column text and answered.
func UnknownSetOpLiterals(root *pg_query.Node) bool {
	changed := false
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || (!isSetOp(sel) && len(sel.ValuesLists) < 2) {
			return nil
		}
		rows, ok := branchRows(sel)
		if !ok || len(rows) < 2 {
			return nil
		}
		for j := range rows[0] {
			var known *pg_query.TypeName
			resolvable := true
			for _, r := range rows {
				if j >= len(r) {
					return nil
				}
				if r[j].GetAConst().GetSval() != nil || r[j].GetAConst().GetIsnull() {
					continue
				}
				t := staticType(r[j])
				if t == nil {
					resolvable = false
					break
				}
				if known == nil {
					known = t
				} else if typeKey(known) != typeKey(t) {
					known = widerNumber(known, t)
					if known == nil {
						resolvable = false
						break
					}
				}
			}
			if !resolvable || known == nil || typeKey(known) == "text" {
				continue
			}
			for _, r := range rows {
				if r[j].GetAConst().GetSval() != nil {
					tc := &pg_query.TypeCast{Arg: proto.Clone(r[j]).(*pg_query.Node), TypeName: proto.Clone(known).(*pg_query.TypeName)}
					r[j].Node = &pg_query.Node_TypeCast{TypeCast: tc}
					changed = true
				}
			}
		}
		return nil
	})
	return changed
}

// branchRows are the rows of a set operation's branches (each branch's
// select list, or its VALUES rows) or of a VALUES list: the nodes in
// place, to be changed there. false when a branch's width is not known
// here (SELECT *).
func branchRows(sel *pg_query.SelectStmt) ([][]*pg_query.Node, bool) {
	if isSetOp(sel) {
		l, ok := branchRows(sel.Larg)
		if !ok {
			return nil, false
		}
		r, ok := branchRows(sel.Rarg)
		return append(l, r...), ok
	}
	if len(sel.ValuesLists) > 0 {
		return valuesRows(sel), true
	}
	var row []*pg_query.Node
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil || rt.Val.GetColumnRef().GetFields() != nil && rt.Val.GetColumnRef().GetFields()[len(rt.Val.GetColumnRef().GetFields())-1].GetAStar() != nil {
			return nil, false
		}
		row = append(row, rt.Val)
	}
	return [][]*pg_query.Node{row}, true
}

// staticType is the type of an expression known without the engine: a
// cast's, a number literal's, a boolean's; nil for anything else.
func staticType(n *pg_query.Node) *pg_query.TypeName {
	named := catalogType
	switch {
	case n.GetTypeCast() != nil:
		return n.GetTypeCast().TypeName
	case n.GetAConst().GetIval() != nil:
		return named("int4")
	case n.GetAConst().GetFval() != nil:
		return named("numeric")
	case n.GetAConst().GetBoolval() != nil:
		return named("bool")
	}
	return nil
}

// typeKey names a type for comparison.
func typeKey(t *pg_query.TypeName) string {
	name := sqltree.LastName(t.GetNames())
	switch name {
	case "varchar", "bpchar", "char":
		return "text"
	case "integer", "int":
		return "int4"
	case "decimal":
		return "numeric"
	}
	if len(t.GetArrayBounds()) > 0 {
		return name + "[]"
	}
	return name
}

// widerNumber is the type PostgreSQL resolves two number types to (int4
// and numeric to numeric, anything and float8 to float8), nil when they
// are not both numbers.
func widerNumber(a, b *pg_query.TypeName) *pg_query.TypeName {
	rank := map[string]int{"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}
	ra, rb := rank[typeKey(a)], rank[typeKey(b)]
	if ra == 0 || rb == 0 {
		return nil
	}
	if ra >= rb {
		return catalogType(typeKey(a))
	}
	return catalogType(typeKey(b))
}

// catalogType is pg_catalog's type name, as the parser writes a
// built-in type.
func catalogType(name string) *pg_query.TypeName {
	return &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("pg_catalog"), pg_query.MakeStrNode(name)}, Typemod: -1}
}

// CheckSetOpOrder refuses, as PostgreSQL does, an ORDER BY of a set
// operation's result that names a column the result does not have (the
// engine looked it up in a branch). Positions and expressions are left to
// the engine.
func CheckSetOpOrder(sel *pg_query.SelectStmt) error {
	if sel == nil || !isSetOp(sel) || len(sel.SortClause) == 0 {
		return nil
	}
	leaf := sel
	for isSetOp(leaf) {
		leaf = leaf.Larg
	}
	if len(leaf.ValuesLists) > 0 {
		return nil
	}
	names := map[string]bool{}
	for _, t := range leaf.TargetList {
		rt := t.GetResTarget()
		switch {
		case rt == nil:
			return nil
		case rt.Name != "":
			names[rt.Name] = true
		case rt.Val.GetColumnRef() != nil:
			f := rt.Val.GetColumnRef().Fields
			if f[len(f)-1].GetAStar() != nil {
				return nil // the names are the engine's to know
			}
			names[f[len(f)-1].GetString_().GetSval()] = true
		}
	}
	for _, s := range sel.SortClause {
		cr := s.GetSortBy().GetNode().GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
			continue
		}
		if name := cr.Fields[0].GetString_().Sval; !names[name] {
			return sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist", name)
		}
	}
	return nil
}

// isSetOp reports whether sel is a set operation. (Its branches, not Op,
// decide: a statement built in code may leave Op unset.)
func isSetOp(sel *pg_query.SelectStmt) bool {
	return sel != nil && sel.Larg != nil && sel.Rarg != nil
}

// IntegerSums types sum() of a smallint or integer column (typeOf) as
// PostgreSQL does, bigint: the engine's sum of them is a 128-bit integer,
// which tsdb sends as numeric (a driver then returns a Decimal, not an
// int). The cast overflows where PostgreSQL's bigint sum does. Calls in a
// subquery are their own scope and left alone.
func IntegerSums(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if typeOf == nil {
		return false
	}
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if n.GetSubLink() != nil {
			return n // its own scope: left as it is (and not walked)
		}
		fc := n.GetFuncCall()
		if fc == nil || sqltree.LastName(fc.Funcname) != "sum" || len(fc.Args) != 1 || fc.AggStar {
			return nil
		}
		if t := typeOf(fc.Args[0]); t != schema.Int32 && t != schema.Int16 {
			return nil
		}
		changed = true
		return sqltree.Cast(proto.Clone(n).(*pg_query.Node), "int8")
	}
	substituteScope(root, rewrite)
	return changed
}

// floatVarianceKinds are the variance functions FloatVariances answers,
// by the kind number _tsdb_float_var takes.
var floatVarianceKinds = map[string]int{"var_pop": 0, "var_samp": 1, "variance": 1, "stddev_pop": 2, "stddev_samp": 3, "stddev": 3}

// floatFunctions return double precision.
var floatFunctions = map[string]bool{"sin": true, "cos": true, "tan": true, "asin": true, "acos": true, "atan": true, "atan2": true,
	"sqrt": true, "cbrt": true, "exp": true, "ln": true, "log10": true, "power": true, "pow": true, "random": true, "degrees": true,
	"radians": true, "pi": true, "sind": true, "cosd": true, "tand": true, "cotd": true, "asind": true, "acosd": true, "atand": true,
	"atan2d": true, "sinh": true, "cosh": true, "tanh": true, "float8": true}

// floatExpr reports whether an expression is double precision or real
// by what is known here: a cast, a column (typeOf), a float function, or
// arithmetic with one of those.
func floatExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	switch {
	case n.GetTypeCast() != nil:
		switch sqltree.LastName(n.GetTypeCast().TypeName.GetNames()) {
		case "float8", "float4", "float", "double", "real":
			return len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0
		}
	case n.GetColumnRef() != nil:
		t := typeOf(n)
		return t == schema.Float64 || t == schema.Float32
	case n.GetFuncCall() != nil:
		return floatFunctions[sqltree.LastName(n.GetFuncCall().Funcname)] && n.GetFuncCall().Over == nil
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		switch sqltree.LastName(e.Name) {
		case "+", "-", "*", "/":
		default:
			return false
		}
		return e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && (e.Lexpr != nil && floatExpr(e.Lexpr, typeOf) || floatExpr(e.Rexpr, typeOf))
	}
	return false
}

// FloatVariances answers var_pop, var_samp, variance, stddev_pop,
// stddev_samp and stddev of double precision values as PostgreSQL
// computes them (the Youngs-Cramer sums of float.c's float8_accum, in the
// order the rows come), where the engine's algorithm differed in the last
// digits (stddev_samp 70.75963553242767 for PostgreSQL's
// 70.75963553242771). The values go to a Go function as a list: aggregate
// calls of the select list only, not window ones. typeOf gives the FROM
// list's column types.
func FloatVariances(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if typeOf == nil {
		return false
	}
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if n.GetSubLink() != nil {
			return n
		}
		fc := n.GetFuncCall()
		if fc == nil || len(fc.Args) != 1 || fc.Over != nil || fc.AggStar || len(fc.AggOrder) > 0 || len(fc.Funcname) > 1 {
			return nil
		}
		kind, ok := floatVarianceKinds[sqltree.LastName(fc.Funcname)]
		if !ok || !floatExpr(fc.Args[0], typeOf) {
			return nil
		}
		list := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("list")},
			Args: []*pg_query.Node{sqltree.Cast(fc.Args[0], "float8")}, AggFilter: fc.AggFilter, AggDistinct: fc.AggDistinct,
			Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL}
		changed = true
		return call("_tsdb_float_var", &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: list}}, pg_query.MakeAConstIntNode(int64(kind), -1))
	}
	substituteScope(root, rewrite)
	return changed
}

// substituteScope applies rewrite to root and, unless rewrite keeps root
// as it is (a subquery, its own scope), to the nodes under it, without
// walking into what it puts in place (sqltree.SubstituteNodes).
func substituteScope(root *pg_query.Node, rewrite func(*pg_query.Node) *pg_query.Node) {
	if r := rewrite(root); r == root {
		return
	} else if r != nil {
		root.Node = r.Node
		return
	}
	sqltree.SubstituteNodes(root.ProtoReflect(), rewrite)
}

// intervalExpr reports whether an expression is an interval by what is
// known here: a cast, a column (typeOf, when given), the difference of
// two intervals or their sum, an interval scaled.
func intervalExpr(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	switch {
	case n.GetTypeCast() != nil:
		return sqltree.LastName(n.GetTypeCast().TypeName.GetNames()) == "interval" && len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0
	case n.GetColumnRef() != nil:
		return typeOf != nil && typeOf(n) == schema.Interval
	case n.GetFuncCall() != nil:
		switch sqltree.LastName(n.GetFuncCall().Funcname) {
		case "make_interval", "justify_days", "justify_hours", "justify_interval", "_tsdb_interval_scale":
			return true
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil {
			return false
		}
		switch sqltree.LastName(e.Name) {
		case "+", "-":
			return intervalExpr(e.Lexpr, typeOf) && intervalExpr(e.Rexpr, typeOf)
		case "*", "/":
			return intervalExpr(e.Lexpr, typeOf)
		}
	}
	return false
}

// IntervalArithmetic answers an interval multiplied or divided by a
// number as PostgreSQL's interval_mul and interval_div do (a Go function
// the engine calls): the engine's / of an interval does not bind (tsdb
// runs it with PostgreSQL's integer division, which has no interval
// form), and its * rounds differently. Where the interval is only known
// by the engine (an expression of columns) it is left alone.
func IntervalArithmetic(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if typeOf != nil && n.GetSubLink() != nil {
			return n
		}
		e := n.GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
			return nil
		}
		op := sqltree.LastName(e.Name)
		if op != "*" && op != "/" {
			return nil
		}
		iv, factor := e.Lexpr, e.Rexpr
		if !intervalExpr(iv, typeOf) {
			if op == "/" || !intervalExpr(e.Rexpr, typeOf) {
				return nil
			}
			iv, factor = e.Rexpr, e.Lexpr // number * interval
		}
		if intervalExpr(factor, typeOf) {
			return nil // interval * interval: no such operator
		}
		changed = true
		// Its operands walked too: (interval '1 day' * 2) / 3.
		IntervalArithmetic(iv, typeOf)
		return call("_tsdb_interval_scale", iv, sqltree.Cast(factor, "float8"), boolConst(op == "/"))
	}
	substituteScope(root, rewrite)
	return changed
}

// HasVariance reports whether a select list calls one of the variance
// functions FloatVariances answers.
func HasVariance(targets []*pg_query.Node) bool {
	found := false
	for _, t := range targets {
		_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			if fc, ok := m.(*pg_query.FuncCall); ok {
				if _, ok := floatVarianceKinds[sqltree.LastName(fc.Funcname)]; ok {
					found = true
				}
			}
			return nil
		})
	}
	return found
}

// Features are what a statement holds that the whole-tree rewrites look
// for, found in one walk: a statement of 20,000 terms must not be walked
// once per rewrite.
type Features struct {
	SetOps   bool // a set operation or a VALUES list
	Bytea    bool // a bytea cast or a bytea function
	Interval bool // an interval cast or function
}

// FeaturesOf walks n once.
func FeaturesOf(n *pg_query.Node) Features {
	var f Features
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.SelectStmt:
			f.SetOps = f.SetOps || isSetOp(x) || len(x.ValuesLists) > 0
		case *pg_query.TypeName:
			switch sqltree.LastName(x.Names) {
			case "bytea":
				f.Bytea = true
			case "interval":
				f.Interval = true
			}
		case *pg_query.FuncCall:
			name := sqltree.LastName(x.Funcname)
			f.Bytea = f.Bytea || byteaResults[name]
			f.Interval = f.Interval || strings.HasPrefix(name, "justify_") || name == "make_interval"
		}
		return nil
	})
	return f
}

// HasRaise reports whether n is or holds an expression Raise made.
func HasRaise(n *pg_query.Node) bool {
	found := false
	if isRaise(n) {
		return true
	}
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok && sqltree.LastName(fc.Funcname) == "error" {
			found = true
		}
		return nil
	})
	return found
}
