package dialect

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// rewriteTypeCast is RewritePG of a cast: PostgreSQL's types and input
// rules where the engine's differ (bit strings, char(n), intervals and
// floats as text, timestamp(p), OID aliases, bytea input, numeric's
// precision and special values).
func rewriteTypeCast(n *pg_query.Node, in Input) (*pg_query.Node, bool) {
	tc := n.GetTypeCast()
	if tn := sqltree.LastName(tc.TypeName.GetNames()); tn == "bit" || tn == "varbit" {
		// PostgreSQL's bit is bit(1) and cuts; the engine's BIT keeps
		// every digit (bitstring.go).
		return BitCast(tc), true
	}
	if r, ok := CharacterCast(tc, false); ok {
		return r, true
	}
	if r, ok := booleanConstant(tc); ok {
		return r, true
	}
	if r, ok := intervalTextCast(tc, in); ok {
		return r, true
	}
	if tn := sqltree.LastName(tc.TypeName.GetNames()); (tn == "timestamptz" || tn == "timestamp") && len(tc.TypeName.GetTypmods()) == 1 {
		// timestamp(p): PostgreSQL rounds to p fractional digits;
		// DuckDB's types take no precision.
		p := tc.TypeName.Typmods[0].GetAConst().GetIval()
		if p == nil || p.Ival < 0 {
			return Raise(sqlerr.InvalidParameterValue, "TIMESTAMP precision must not be negative"), true
		}
		tc.TypeName.Typmods = nil
		if p.Ival >= 6 {
			return nil, true
		}
		scale := int64(1)
		for range 6 - p.Ival {
			scale *= 10
		}
		r, err := sqltree.Template(fmt.Sprintf("_tsdb_round_ts(_tsdb_arg1, %d)", scale), n)
		if err == nil {
			return r, true
		}
	}
	if sqltree.LastName(tc.TypeName.GetNames()) == "interval" && len(tc.TypeName.GetTypmods()) > 0 && tc.Arg.GetAConst().GetSval() == nil {
		return intervalTruncation(tc), true
	}
	if !IsISOLiteral(tc) {
		// Refused input fails the statement when it runs.
		r, ok, err := DateTimeLiteral(tc, in)
		if err != nil {
			var se *sqlerr.Error
			if errors.As(err, &se) {
				return Raise(se.Code, se.Message), true
			}
			return Raise(sqlerr.InvalidDatetimeFormat, err.Error()), true
		}
		if ok {
			return r, true
		}
	}
	// Text read as a number by PostgreSQL's rules; the cast's other
	// rewrites (numeric's precision) still apply.
	checked, err := numberInput(tc)
	if err != nil {
		var se *sqlerr.Error
		errors.As(err, &se)
		return Raise(se.Code, se.Message), true
	}
	if sv := tc.Arg.GetAConst().GetSval(); sv != nil && len(tc.TypeName.GetArrayBounds()) > 0 {
		// '{1,2}'::int[]: PostgreSQL's array text; the engine reads
		// only its own list text.
		elems, err := ParseArrayText(sv.Sval)
		if err != nil {
			return Raise(sqlerr.InvalidTextRep, fmt.Sprintf("malformed array literal: %q", sv.Sval)), true
		}
		tc.Arg = elems
		return nil, true
	}
	switch name := sqltree.LastName(tc.TypeName.GetNames()); {
	case name == "oid" && tc.Arg.GetAConst() == nil && !oidAliasTypes[sqltree.LastName(tc.Arg.GetTypeCast().GetTypeName().GetNames())]:
		// A number made an oid: a bigint must be 0 to 2^32-1 (22003
		// otherwise), where the cast would keep any value. (PostgreSQL
		// reads a negative integer as unsigned, -1 as 4294967295; not
		// knowing the operand's type, tsdb refuses every negative one.)
		r, err := sqltree.Template(`CASE WHEN _tsdb_arg1 IS NULL THEN NULL WHEN _tsdb_arg1 BETWEEN 0 AND 4294967295 THEN CAST(_tsdb_arg1 AS BIGINT)
			ELSE error('[tsdb 22003] OID out of range') END`, tc.Arg)
		if err != nil {
			return nil, false
		}
		return r, true
	case oidAliasTypes[name]:
		arg := tc.Arg
		for arg.GetTypeCast() != nil && oidAliasTypes[sqltree.LastName(arg.GetTypeCast().TypeName.GetNames())] {
			arg = arg.GetTypeCast().Arg
		}
		return arg, true
	case name == "bytea":
		// '\x00ff'::bytea is PostgreSQL's hex format; DuckDB reads only
		// \x00 as a byte escape and "ff" as two letters.
		if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
			b, err := ParseBytea(sv.Sval)
			if err != nil {
				code := sqlerr.InvalidTextRep
				if c := sqlerr.Code(err); c != sqlerr.InternalError {
					code = c
				}
				// Typed, so that a function of it raises it
				// (TypedRaises); "blob" is not rewritten again.
				return sqltree.Cast(Raise(code, err.Error()), "blob"), true
			}
			return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unhex")},
				[]*pg_query.Node{pg_query.MakeAConstStrNode(hex.EncodeToString(b), -1)}, -1), true
		}
		if tc.Arg.GetAConst() == nil {
			// Text converted at run time, by the same rules.
			return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_bytea")}, []*pg_query.Node{tc.Arg}, -1), true
		}
	case (name == "numeric" || name == "decimal") && tc.Arg.GetAConst().GetSval() != nil && specialNumeric(tc.Arg.GetAConst().GetSval().Sval):
		// PostgreSQL's numeric has NaN and ±Infinity; the engine's
		// decimal has neither. The double that has them stands in.
		tc.TypeName = &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("float8")}, Typemod: -1}
		return nil, true
	case name == "numeric" || name == "decimal":
		if len(tc.TypeName.Typmods) == 0 {
			// PostgreSQL's numeric without precision keeps any value;
			// DuckDB's is DECIMAL(18,3) and silently rounds to 3 places
			// (1.23456::numeric was 1.235). 38 digits, 10 after the
			// point, keep what metrics and round(x::numeric, n) need.
			// A number literal keeps its own scale, as PostgreSQL's
			// value does (1.50::numeric is 1.50, 0.0::numeric 0.0),
			// where 10 places would print trimmed (1.5, 0).
			// Such a literal gets 28 digits before the point, as
			// DECIMAL(38,10) has: the engine's common type of two
			// decimals caps at 38 digits and then rounds to the lower
			// scale (1.5::numeric as DECIMAL(38,1) made 2.25 2.3 in a
			// UNION, VALUES or CASE beside it).
			precision, scale := int64(38), int64(10)
			if s, digits, ok := literalOwnScale(tc.Arg); ok {
				precision, scale = min(38, max(28+int64(s), int64(digits))), int64(s)
			}
			tc.TypeName.Typmods = []*pg_query.Node{pg_query.MakeAConstIntNode(precision, -1), pg_query.MakeAConstIntNode(scale, -1)}
			return nil, true
		}
	}
	if names := tc.TypeName.GetNames(); len(names) == 2 && strings.EqualFold(names[0].GetString_().GetSval(), "pg_catalog") {
		tc.TypeName.Names = names[1:]
		return nil, true
	}
	return nil, checked
}

// specialNumeric reports whether s is numeric input for NaN or an
// infinity.
func specialNumeric(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf":
		return true
	}
	return false
}

// numberTypes are PostgreSQL's number types by the names a parse tree
// gives them, with the names their messages use (CheckTextInput's).
var numberTypes = map[string]string{
	"int2": "smallint", "int4": "integer", "int8": "bigint",
	"float4": "real", "float8": "double precision", "numeric": "numeric", "decimal": "numeric",
}

// numberInput makes a cast of text to a number read the text as
// PostgreSQL's input function of the type does (CheckTextInput): the
// engine also reads '1.5' as the integer 2, '1e3', '0x1F' and '1_000' as
// numbers, '1e500' as Infinity. A literal is checked now (the error is
// PostgreSQL's); any other operand at run time, when it is text
// (_tsdb_input leaves numbers to the cast, which rounds as PostgreSQL's
// does). It reports whether it changed tc.
func numberInput(tc *pg_query.TypeCast) (bool, error) {
	typ, ok := numberTypes[sqltree.LastName(tc.TypeName.GetNames())]
	if !ok || len(tc.TypeName.GetArrayBounds()) > 0 {
		return false, nil
	}
	if c := tc.Arg.GetAConst(); c != nil {
		if sv := c.GetSval(); sv != nil {
			return false, CheckTextInput(sv.Sval, typ)
		}
		return false, nil
	}
	if isTextChecked(tc.Arg) {
		return false, nil
	}
	tc.Arg = textInput(tc.Arg, typ)
	return true, nil
}

// CheckConstantInput is the input error of a string constant cast to a
// number, date or time type (tc), by PostgreSQL's input rules, which its
// parse analysis raises before the statement runs, wherever the cast
// stands (in a CASE branch never taken too); nil for any other cast.
func CheckConstantInput(tc *pg_query.TypeCast, in Input) error {
	sv := tc.Arg.GetAConst().GetSval()
	if sv == nil || len(tc.TypeName.GetArrayBounds()) > 0 {
		return nil
	}
	if typ, ok := numberTypes[sqltree.LastName(tc.TypeName.GetNames())]; ok {
		if typ == "numeric" && specialNumeric(sv.Sval) {
			return nil
		}
		return CheckTextInput(sv.Sval, typ)
	}
	if IsISOLiteral(tc) && (strings.HasPrefix(sv.Sval, "-") || strings.HasPrefix(sv.Sval, "0000-")) {
		// The year 0 and the years before, astronomically numbered: the
		// form tsdb writes a bound parameter of a BC date in, which the
		// engine reads.
		return nil
	}
	_, _, err := DateTimeLiteral(tc, in)
	return err
}

// NumberInput is numberInput of a cast the planner makes after the
// dialect's rewrite (an INSERT's cell typed as its column).
func NumberInput(n *pg_query.Node) (*pg_query.Node, error) {
	if tc := n.GetTypeCast(); tc != nil {
		if _, err := numberInput(tc); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// textInput is n read by the input rules of PostgreSQL's type typ
// (CheckTextInput) when it is text.
func textInput(n *pg_query.Node, typ string) *pg_query.Node {
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("_tsdb_input")},
		[]*pg_query.Node{n, pg_query.MakeAConstStrNode(typ, -1)}, -1)
}

// isTextChecked reports whether n is already checked by _tsdb_input or
// cannot be text (a number constant, a cast to a non-text type).
func isTextChecked(n *pg_query.Node) bool {
	if fc := n.GetFuncCall(); fc != nil && sqltree.LastName(fc.Funcname) == "_tsdb_input" {
		return true
	}
	if c := n.GetAConst(); c != nil {
		return c.GetIval() != nil || c.GetFval() != nil || c.GetIsnull()
	}
	if inner := n.GetTypeCast(); inner != nil {
		switch sqltree.LastName(inner.TypeName.GetNames()) {
		case "text", "varchar", "bpchar", "char", "name", "unknown":
			return false
		}
		return len(inner.TypeName.GetArrayBounds()) == 0
	}
	return false
}

// checkInteger reads s as PostgreSQL 15's integer input does
// (pg_strtoint): optional blanks, an optional sign, decimal digits,
// optional blanks. The error is 22P02 for other text and 22003 for a
// value out of the type's range (bits 16, 32 or 64; name the type's name
// in messages).
func checkInteger(s string, bits int, name string) error {
	t := strings.Trim(s, pgBlanks)
	body := strings.TrimPrefix(strings.TrimPrefix(t, "+"), "-")
	if len(t)-len(body) > 1 || body == "" || strings.TrimLeft(body, "0123456789") != "" {
		return sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: \"%s\"", name, s)
	}
	if _, err := strconv.ParseInt(t, 10, bits); err != nil {
		return sqlerr.New(sqlerr.NumericOutOfRange, "value \"%s\" is out of range for type %s", s, name)
	}
	return nil
}

// pgBlanks are the blanks PostgreSQL's number input skips around a
// number (C's isspace).
const pgBlanks = " \t\n\r\v\f"

// numericText is numeric input PostgreSQL 15 reads: a decimal number with
// an optional exponent (floatText), or NaN and the infinities (which
// specialNumeric turns into a float before this is asked).
var numericText = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^(?i:nan)$|^[+-]?(?i:inf|infinity)$`)

// CheckTextInput reports whether PostgreSQL's input function of typ
// (integer, smallint, bigint, real, double precision or numeric) reads s,
// and with what error when it does not.
func CheckTextInput(s, typ string) error {
	switch typ {
	case "smallint":
		return checkInteger(s, 16, typ)
	case "integer":
		return checkInteger(s, 32, typ)
	case "bigint":
		return checkInteger(s, 64, typ)
	case "real":
		return FloatInputError(s, 32)
	case "double precision":
		return FloatInputError(s, 64)
	case "numeric":
		if !numericText.MatchString(strings.Trim(s, pgBlanks)) {
			return sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type numeric: \"%s\"", s)
		}
		return nil
	}
	return sqlerr.New(sqlerr.InternalError, "no input rules for type %s", typ)
}

// booleanConstant reads a string constant cast to boolean by PostgreSQL's
// boolin: 'on', 'off', and unique prefixes such as 'of', 'tr' and 'ye'
// are booleans there and input errors in the engine, which also refused
// spaces around the word.
func booleanConstant(tc *pg_query.TypeCast) (*pg_query.Node, bool) {
	sv := tc.Arg.GetAConst().GetSval()
	if sv == nil || len(tc.TypeName.GetArrayBounds()) > 0 {
		return nil, false
	}
	switch sqltree.LastName(tc.TypeName.GetNames()) {
	case "bool", "boolean":
	default:
		return nil, false
	}
	v, ok := BoolInput(sv.Sval)
	if !ok {
		return Raise(sqlerr.InvalidTextRep, fmt.Sprintf("invalid input syntax for type boolean: %q", sv.Sval)), true
	}
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{
		Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: v}}, Location: tc.Location}}}, true
}

// BoolInput is PostgreSQL's boolean input (boolin): surrounding spaces
// ignored, any case, a prefix of true, false, yes or no, on, off or a
// prefix of it of two letters at least, 1 or 0.
func BoolInput(s string) (value, ok bool) {
	s = strings.ToLower(strings.TrimFunc(s, func(r rune) bool { return r == ' ' || r >= '\t' && r <= '\r' }))
	if s == "" {
		return false, false
	}
	prefix := func(word string, min int) bool {
		return len(s) >= min && len(s) <= len(word) && word[:len(s)] == s
	}
	switch {
	case prefix("true", 1), prefix("yes", 1), prefix("on", 2), s == "1":
		return true, true
	case prefix("false", 1), prefix("no", 1), prefix("off", 2), s == "0":
		return false, true
	}
	return false, false
}
