package dialect

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// NonZeroMantissa reports whether decimal text has a nonzero digit
// before its exponent: a value that parsed as 0 then underflowed.
func NonZeroMantissa(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// FloatInputError is PostgreSQL's error for float text it refuses: 22P02
// for text that is not a number (1_000, 1.5f, which the engine reads),
// 22003 for a value out of the type's range (bits 64 or 32): 1e500 and
// 1e-400, which the engine reads as Infinity and 0. Hexadecimal (0x10,
// which C's strtod reads) is left to the engine, which refuses it.
func FloatInputError(s string, bits int) error {
	typ := "double precision"
	if bits == 32 {
		typ = "real"
	}
	t := strings.Trim(s, pgBlanks)
	word := strings.ToLower(t)
	if len(word) > 0 && (word[0] == '+' || word[0] == '-') {
		word = word[1:]
	}
	switch word {
	case "nan", "inf", "infinity":
		return nil
	}
	if !floatText.MatchString(t) {
		if hexFloat.MatchString(t) {
			return nil
		}
		return sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	f, err := strconv.ParseFloat(t, bits)
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) || err == nil && f == 0 && NonZeroMantissa(t) {
		return sqlerr.New(sqlerr.NumericOutOfRange, "\"%s\" is out of range for type %s", s, typ)
	}
	return nil
}

// floatText is decimal float input as C's strtod reads it and PostgreSQL
// accepts it (a sign, digits with an optional point, an exponent);
// hexFloat its hexadecimal form.
var (
	floatText = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	hexFloat  = regexp.MustCompile(`^[+-]?0[xX]`)
)

// unknownIntegerOperand answers arithmetic with a quoted integer (f1 *
// '-1'): PostgreSQL reads the literal as the other operand's type, the
// engine cannot choose an operator for a string. A quoted integer means
// the same as the integer to every type the operators take (an integer
// operand keeps an integer result, a float a float). Other quoted numbers
// are left alone: '1.5' is an error for an integer in PostgreSQL.
func unknownIntegerOperand(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
		return nil, false
	}
	switch sqltree.LastName(e.Name) {
	case "+", "-", "*", "/", "%":
	default:
		return nil, false
	}
	integer := func(n *pg_query.Node) (*pg_query.Node, bool) {
		sv := n.GetAConst().GetSval()
		if sv == nil {
			return nil, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(sv.Sval), 10, 64)
		if err != nil {
			return nil, false
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return pg_query.MakeAConstIntNode(v, -1), true
		}
		return sqltree.Cast(pg_query.MakeAConstStrNode(strconv.FormatInt(v, 10), -1), "int8"), true
	}
	l, r := e.Lexpr, e.Rexpr
	if e.Lexpr.GetAConst().GetSval() != nil && e.Rexpr.GetAConst().GetSval() != nil {
		return nil, false // unknown with unknown: PostgreSQL refuses most
	}
	// A date, time or interval operand of + and - reads the literal as
	// its own type, where an integer is no valid input.
	additive := sqltree.LastName(e.Name) == "+" || sqltree.LastName(e.Name) == "-"
	temporal := func(n *pg_query.Node) bool {
		if !additive {
			return false // interval * '2' is interval * float8
		}
		switch sqltree.LastName(n.GetTypeCast().GetTypeName().GetNames()) {
		case "date", "timestamp", "timestamptz", "time", "timetz", "interval":
			return true
		}
		return false
	}
	if v, ok := integer(l); ok && !temporal(r) {
		l = v
	} else if v, ok := integer(r); ok && !temporal(l) {
		r = v
	} else {
		return nil, false
	}
	return pg_query.MakeAExprNode(e.Kind, e.Name, l, r, e.Location), true
}

// moduloMinusOne answers an integer taken modulo the constant -1 as
// PostgreSQL does, 0 for every value: the engine computes it by dividing,
// and the smallest value of a type divided by -1 overflows
// ((-9223372036854775808)::int8 % -1 failed with an overflow error). The
// value times zero keeps its type and NULL.
func moduloMinusOne(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || sqltree.LastName(e.Name) != "%" {
		return nil, false
	}
	r := e.Rexpr
	if tc := r.GetTypeCast(); tc != nil && integerExpr(r, nil) {
		r = tc.Arg
	}
	if c := r.GetAConst().GetIval(); c == nil || c.Ival != -1 || !integerExpr(e.Lexpr, nil) {
		return nil, false
	}
	return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("*")},
		e.Lexpr, pg_query.MakeAConstIntNode(0, -1), e.Location), true
}

// intWidth is the width in bits (16, 32 or 64) of an integer expression
// by what is known here: a column typeOf knows, an integer literal (32:
// pg_query gives larger integers as Fval) or cast, or +, - and * of them;
// 0 for anything else.
func intWidth(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) int {
	byType := func(t schema.Type) int {
		switch t {
		case schema.Int16:
			return 16
		case schema.Int32:
			return 32
		case schema.Int64:
			return 64
		}
		return 0
	}
	switch {
	case n.GetAConst() != nil:
		if n.GetAConst().GetIval() != nil {
			return 32
		}
	case n.GetColumnRef() != nil:
		if typeOf != nil {
			return byType(typeOf(n))
		}
	case n.GetTypeCast() != nil:
		if len(n.GetTypeCast().TypeName.GetArrayBounds()) == 0 {
			t, _ := schema.ParseType(sqltree.LastName(n.GetTypeCast().TypeName.GetNames()))
			return byType(t)
		}
	case n.GetFuncCall() != nil:
		// count is a bigint, also over a window.
		if fc := n.GetFuncCall(); sqltree.LastName(fc.Funcname) == "count" && len(fc.Funcname) == 1 {
			return 64
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return 0
		}
		switch sqltree.LastName(e.Name) {
		case "+", "-", "*":
			if e.Lexpr == nil {
				return intWidth(e.Rexpr, typeOf)
			}
			l, r := intWidth(e.Lexpr, typeOf), intWidth(e.Rexpr, typeOf)
			if l == 0 || r == 0 {
				return 0
			}
			return max(l, r)
		}
	}
	return 0
}

// shiftLeft answers an integer's << as PostgreSQL's int2shl, int4shl and
// int8shl do, in two's complement with the bits shifted out dropped
// ((-1::int8 << 63) is the smallest bigint, 1::int4 << 31 the smallest
// integer), where the engine refuses to shift a negative number and
// fails on overflow. It takes integers whose width their casts and
// literals say.
func shiftLeft(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || sqltree.LastName(e.Name) != "<<" {
		return nil, false
	}
	bits := intWidth(e.Lexpr, nil)
	if bits == 0 || intWidth(e.Rexpr, nil) == 0 {
		return nil, false
	}
	typ := map[int]string{16: "int2", 32: "int4", 64: "int8"}[bits]
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bits)), big.NewInt(1))
	r, err := sqltree.Template(fmt.Sprintf("_tsdb_shl(_tsdb_arg1, _tsdb_arg2, %s, %s, %s)::%s",
		mask, new(big.Int).Lsh(big.NewInt(1), uint(bits-1)), new(big.Int).Lsh(big.NewInt(1), uint(bits)), typ), e.Lexpr, e.Rexpr)
	return r, err == nil
}

// nanDivision answers NaN divided by zero as PostgreSQL's float8div does,
// NaN, where the engine raises division by zero; a number divided by zero
// still does. It takes a dividend cast to double precision.
func nanDivision(e *pg_query.A_Expr) (*pg_query.Node, bool) {
	if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || sqltree.LastName(e.Name) != "/" {
		return nil, false
	}
	switch sqltree.LastName(e.Lexpr.GetTypeCast().GetTypeName().GetNames()) {
	case "float8", "double precision":
	default:
		return nil, false
	}
	// A call of a macro, not a CASE over another /: the tree's rewrite
	// walks into what it put in place and would rewrite that / again,
	// without end.
	return call("_tsdb_fdiv", e.Lexpr, e.Rexpr), true
}

// literalOwnScale is the scale a number literal is written with (1.50:
// 2, 7: 0) and its digits, when DECIMAL(38, that scale) holds it: at most
// 10 places, no exponent.
func literalOwnScale(n *pg_query.Node) (scale, digits int, ok bool) {
	c := n.GetAConst()
	switch {
	case c == nil:
		return 0, 0, false
	case c.GetIval() != nil:
		return 0, len(strconv.Itoa(int(c.GetIval().Ival))), true
	case c.GetFval() != nil || c.GetSval() != nil:
		text := c.GetFval().GetFval()
		if sv := c.GetSval(); sv != nil {
			// '1.50'::numeric: numeric input keeps its scale too;
			// blanks around it are allowed, anything else is left to
			// the cast.
			text = strings.Trim(sv.Sval, pgBlanks)
			if len(text) > 1 && (text[0] == '+' || text[0] == '-') {
				text = text[1:]
			}
			if strings.Trim(text, "0123456789.") != "" || strings.Count(text, ".") > 1 || strings.Trim(text, ".") == "" {
				return 0, 0, false
			}
		}
		text = strings.TrimLeft(text, "+-")
		if strings.ContainsAny(text, "eE") {
			return 0, 0, false
		}
		whole, frac, _ := strings.Cut(text, ".")
		digits := len(strings.TrimLeft(whole, "0")) + len(frac)
		if len(frac) > 10 || digits > 38 {
			return 0, 0, false
		}
		return len(frac), digits, true
	}
	return 0, 0, false
}
