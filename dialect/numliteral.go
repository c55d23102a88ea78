package dialect

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// maxDecimalDigits is the most digits the engine's DECIMAL holds. A
// literal with a point and more digits becomes a DOUBLE there.
const maxDecimalDigits = 38

// NumberLiterals applies numberLiteral to every number literal in root
// and reports whether any changed. A literal made a numeric keeps the
// output name PostgreSQL gives the literal (?column?), not the cast's.
func NumberLiterals(root *pg_query.Node) bool {
	changed := false
	sqltree.ReplaceNodes(root.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		if rt := n.GetResTarget(); rt != nil && rt.Name == "" && rt.Val.GetAConst().GetFval() != nil {
			if r, ok := numberLiteral(rt.Val.GetAConst(), rt.Val.GetAConst().Location); ok && r.GetTypeCast() != nil {
				rt.Name, rt.Val, changed = "?column?", r, true
			}
			return nil
		}
		if c := n.GetAConst(); c != nil && c.GetFval() != nil {
			if r, ok := numberLiteral(c, c.Location); ok {
				changed = true
				return r
			}
		}
		return nil
	})
	return changed
}

// numberLiteral gives a number literal with a point or an exponent the
// type and value PostgreSQL gives it, numeric, where the engine would
// read it otherwise:
//
//   - With an exponent (1.1e0, 1e3) the engine reads a DOUBLE, so
//     1.1e0 + 2.2e0 was 3.3000000000000003 where PostgreSQL's numeric
//     sum is 3.3. The literal is written out in plain digits with
//     PostgreSQL's scale (the mantissa's fraction digits less the
//     exponent, at least 0: 1.50e1 is 15.0, 1e3 is 1000), and an
//     integer is cast to numeric. Where the digits would not fit the
//     engine's numeric (1e100, 1e-50) the literal stays a DOUBLE: the
//     same value, printed in exponent form.
//   - Without one, a literal of more than 38 digits (0.1 followed by 40
//     digits) is a DOUBLE in the engine, its digits past the 17th lost:
//     it is refused with 22003 instead.
//
// ok is false when n is left as it is.
func numberLiteral(c *pg_query.A_Const, location int32) (*pg_query.Node, bool) {
	text := c.GetFval().GetFval()
	sign, body := "", text
	if strings.HasPrefix(body, "-") || strings.HasPrefix(body, "+") {
		if body[0] == '-' {
			sign = "-"
		}
		body = body[1:]
	}
	mantissa, expText, hasExp := strings.Cut(strings.ToLower(body), "e")
	intPart, frac, hasPoint := strings.Cut(mantissa, ".")
	if !digitsOnly(intPart) || !digitsOnly(frac) || intPart == "" && frac == "" {
		return nil, false
	}
	if !hasExp {
		if hasPoint && len(strings.TrimLeft(intPart, "0"))+len(frac) > maxDecimalDigits {
			return Raise(sqlerr.NumericOutOfRange, "the numeric constant "+text+" has more than 38 digits, more than tsdb's numeric holds (cast it to double precision to compute with it as a float)"), true
		}
		return nil, false
	}
	exp, err := strconv.Atoi(expText)
	if err != nil || exp > 1000 || exp < -1000 {
		return nil, false
	}
	digits := intPart + frac
	point := len(intPart) + exp // where the point goes in digits
	var whole, fraction string
	switch {
	case point >= len(digits):
		whole = digits + strings.Repeat("0", point-len(digits))
	case point <= 0:
		fraction = strings.Repeat("0", -point) + digits
	default:
		whole, fraction = digits[:point], digits[point:]
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if fraction == "" {
		// An integer: numeric of scale 0, within what the engine's
		// numeric holds of an integer (a cast's 38 digits, 10 of them
		// after the point).
		if len(whole) > maxLiteralIntDigits {
			return nil, false
		}
		return sqltree.Cast(&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{
			Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: sign + whole}}, Location: location}}}, "numeric"), true
	}
	if len(strings.TrimLeft(whole, "0"))+len(fraction) > maxDecimalDigits {
		return nil, false
	}
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{
		Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: sign + whole + "." + fraction}}, Location: location}}}, true
}

// digitsOnly reports whether s holds only ASCII digits (or nothing).
func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
