package dialect

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// PostgreSQL's float arithmetic fails where IEEE's gives up: a product,
// sum or difference of finite values that overflows is 22003 "value out
// of range: overflow", a product of non-zero values that underflows to 0
// "…: underflow" (float8mul, float8pl, float8mi and their float4 twins).
// The engine answers Infinity and 0. FloatOverflow puts those checks
// (the _tsdb_fmul, _tsdb_fadd and _tsdb_fsub macros) on the arithmetic
// that is known to be float: an operand is a float column or a cast to a
// float type, and the other a number (column, literal or cast) —
// integer, numeric and float4 meeting float8 are float8 arithmetic in
// PostgreSQL too. Arithmetic the types of which are not known stays as it
// is, and so does arithmetic over checked results: a macro names its
// operands three to five times, and checks nested in checks would grow a
// sum of 16 columns to millions of nodes.

// floatOps are the checked operators and their macros.
var floatOps = map[string]string{"*": "_tsdb_fmul", "+": "_tsdb_fadd", "-": "_tsdb_fsub"}

// floatCheckMacros define floatOps' macros.
var floatCheckMacros = []string{
	`CREATE MACRO _tsdb_fmul(a, b) AS CASE WHEN isinf(a * b) AND NOT isinf(a) AND NOT isinf(b) THEN error('[tsdb 22003] value out of range: overflow')
		WHEN a * b = 0 AND a <> 0 AND b <> 0 THEN error('[tsdb 22003] value out of range: underflow') ELSE a * b END`,
	`CREATE MACRO _tsdb_fadd(a, b) AS CASE WHEN isinf(a + b) AND NOT isinf(a) AND NOT isinf(b) THEN error('[tsdb 22003] value out of range: overflow') ELSE a + b END`,
	`CREATE MACRO _tsdb_fsub(a, b) AS CASE WHEN isinf(a - b) AND NOT isinf(a) AND NOT isinf(b) THEN error('[tsdb 22003] value out of range: overflow') ELSE a - b END`,
}

// FloatOverflow checks the float arithmetic in *slot (not in its
// subqueries, whose columns are their own), typeOf giving the columns'
// types. It reports whether anything changed.
func FloatOverflow(slot **pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if slot == nil || *slot == nil || typeOf == nil {
		return false
	}
	changed := false
	var visit func(n *pg_query.Node) *pg_query.Node
	visit = func(n *pg_query.Node) *pg_query.Node {
		switch n.Node.(type) {
		case *pg_query.Node_SubLink, *pg_query.Node_SelectStmt:
			return nil
		}
		// Children first: a checked result is a float operand above.
		sqltree.ReplaceChildren(n.ProtoReflect(), visit)
		e := n.GetAExpr()
		if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil || len(e.Name) != 1 {
			return nil
		}
		macro, ok := floatOps[sqltree.LastName(e.Name)]
		if !ok {
			return nil
		}
		if !(floatOperand(e.Lexpr, typeOf) && numberOperand(e.Rexpr, typeOf) || floatOperand(e.Rexpr, typeOf) && numberOperand(e.Lexpr, typeOf)) {
			return nil
		}
		changed = true
		return call(macro, e.Lexpr, e.Rexpr)
	}
	if r := visit(*slot); r != nil {
		*slot = r
	}
	return changed
}

// floatOperand reports whether n is known to be a float: a float column
// or a cast to a float type (of a column or a constant), or its negation.
func floatOperand(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if tc := n.GetTypeCast(); tc != nil && tc.Arg.GetColumnRef() == nil && tc.Arg.GetAConst() == nil {
		return false // a cast of an expression, which may hold checks
	}
	if e := n.GetAExpr(); e != nil && e.Lexpr == nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP {
		// -x and +x of a float.
		if op := sqltree.LastName(e.Name); op == "-" || op == "+" {
			return floatOperand(e.Rexpr, typeOf)
		}
	}
	t := knownNumberType(n, typeOf)
	return t == schema.Float64 || t == schema.Float32
}

// numberOperand reports whether n is known to be a number: a number
// column, literal or cast (of a column or a constant).
func numberOperand(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if c := n.GetAConst(); c != nil {
		return c.GetIval() != nil || c.GetFval() != nil
	}
	if floatOperand(n, typeOf) {
		return true
	}
	if tc := n.GetTypeCast(); tc != nil && tc.Arg.GetColumnRef() == nil && tc.Arg.GetAConst() == nil {
		return false
	}
	switch knownNumberType(n, typeOf) {
	case schema.Int16, schema.Int32, schema.Int64, schema.Decimal:
		return true
	}
	return false
}

// knownNumberType is the type of a column or of a cast, else Invalid.
func knownNumberType(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	switch {
	case n.GetTypeCast() != nil && len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0:
		t, _ := schema.ParseType(sqltree.LastName(n.GetTypeCast().TypeName.GetNames()))
		return t
	case n.GetColumnRef() != nil:
		return typeOf(n)
	}
	return schema.Invalid
}
