package dialect

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PostgreSQL's bit strings, bit(n) and bit varying(n). The engine's BIT
// is a bit string of any length with the same text ('0101'), ordering,
// bitwise operators and bit_and/bit_or/bit_xor; what PostgreSQL does
// differently is its input (B and X forms, a type's length checked or
// fitted) and its casts from integers, which this file answers. Values
// reach the engine as _tsdb_bit('0101') (a macro casting to BIT), so that
// the cast rewrite does not see them again.

// ParseBitString reads text as PostgreSQL's bit_in does: binary digits,
// after an optional B, or hexadecimal digits after an X, each four bits.
// It returns the bits as '0' and '1'.
func ParseBitString(s string) (string, error) {
	hex := false
	switch {
	case s != "" && (s[0] == 'b' || s[0] == 'B'):
		s = s[1:]
	case s != "" && (s[0] == 'x' || s[0] == 'X'):
		s, hex = s[1:], true
	}
	if !hex {
		for i, r := range s {
			if r != '0' && r != '1' {
				return "", sqlerr.New(sqlerr.InvalidTextRep, "\"%s\" is not a valid binary digit", s[i:i+utf8.RuneLen(r)])
			}
		}
		return s, nil
	}
	var b strings.Builder
	b.Grow(4 * len(s))
	for i, r := range s {
		v, err := strconv.ParseUint(string(r), 16, 8)
		if err != nil {
			return "", sqlerr.New(sqlerr.InvalidTextRep, "\"%s\" is not a valid hexadecimal digit", s[i:i+utf8.RuneLen(r)])
		}
		for k := 3; k >= 0; k-- {
			b.WriteByte('0' + byte(v>>k&1))
		}
	}
	return b.String(), nil
}

// BitInput is PostgreSQL's input of text as bit(n) (varying false) or
// bit varying(n): the length is checked, never fitted; n ≤ 0 takes any.
// As in bit_in, a wrong length is reported before a wrong digit.
func BitInput(s string, n int, varying bool) (string, error) {
	length := len(s)
	if s != "" && (s[0] == 'x' || s[0] == 'X') {
		length = 4 * utf8.RuneCountInString(s[1:])
	} else if s != "" && (s[0] == 'b' || s[0] == 'B') {
		length = utf8.RuneCountInString(s[1:])
	} else {
		length = utf8.RuneCountInString(s)
	}
	if err := checkBitLength(length, n, varying); err != nil {
		return "", err
	}
	return ParseBitString(s)
}

// checkBitLength is the error of a bit string of length bits stored as
// bit(n) or bit varying(n) without an explicit cast.
func checkBitLength(length, n int, varying bool) error {
	switch {
	case n <= 0:
	case !varying && length != n:
		return sqlerr.New(sqlerr.StringDataLengthMismatch, "bit string length %d does not match type bit(%d)", length, n)
	case varying && length > n:
		return sqlerr.New(sqlerr.StringDataRightTruncation, "bit string too long for type bit varying(%d)", n)
	}
	return nil
}

// CheckBitLength checks bits written to a bit(n) or bit varying(n)
// column (n ≤ 0: any length), as PostgreSQL's assignment does.
func CheckBitLength(bits string, n int, varying bool) error {
	return checkBitLength(len(bits), n, varying)
}

// FitBit is PostgreSQL's explicit cast of a bit string to bit(n), which
// cuts or pads with zeros on the right, or to bit varying(n), which cuts.
func FitBit(bits string, n int, varying bool) string {
	switch {
	case n <= 0 || len(bits) == n:
		return bits
	case len(bits) > n:
		return bits[:n]
	case varying:
		return bits
	}
	return bits + strings.Repeat("0", n-len(bits))
}

// BitFromInt is PostgreSQL's cast of an integer to bit(n): its n lowest
// bits, the sign repeated to the left of 64.
func BitFromInt(v int64, n int) string {
	if n <= 0 {
		n = 1
	}
	var b strings.Builder
	b.Grow(n)
	for i := n - 1; i >= 0; i-- {
		bit := v < 0 // beyond the 64th, the sign's
		if i < 64 {
			bit = v>>uint(i)&1 == 1
		}
		if bit {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// ErrEmptyBits refuses the empty bit string, which the engine's BIT
// cannot hold (it reads the empty text as 0).
var ErrEmptyBits = sqlerr.New(sqlerr.FeatureNotSupported, "empty bit strings are not supported")

// bitValue is the engine's expression of a bit string constant.
func bitValue(bits string) *pg_query.Node {
	if bits == "" {
		return raiseError(ErrEmptyBits)
	}
	return call("_tsdb_bit", pg_query.MakeAConstStrNode(bits, -1))
}

// BitText is text cast to bit(n) or bit varying(n) (n ≤ 0: any length):
// read by PostgreSQL's input, then fitted, as an explicit cast does.
func BitText(s string, n int, varying bool) (string, error) {
	bits, err := ParseBitString(s)
	if err != nil {
		return "", err
	}
	if bits = FitBit(bits, n, varying); bits == "" {
		return "", ErrEmptyBits
	}
	return bits, nil
}

// bitConstant rewrites B'0101' and X'1F'.
func bitConstant(bs string) *pg_query.Node {
	// The parser keeps the letter: "b0101", "x1F".
	bits, err := ParseBitString(bs)
	if err != nil {
		return raiseError(err)
	}
	return bitValue(bits)
}

// BitCast rewrites a cast to bit(n) or bit varying(n): text read by the
// input rules, a bit string fitted (explicitly cast), an integer's lowest
// bits; what the rewrite cannot type is left to _tsdb_to_bit, which
// chooses by the engine's type.
func BitCast(tc *pg_query.TypeCast) *pg_query.Node {
	tn := tc.TypeName
	if len(tn.GetArrayBounds()) > 0 {
		return Raise(sqlerr.FeatureNotSupported, "arrays of bit strings are not supported")
	}
	varying := sqltree.LastName(tn.GetNames()) == "varbit"
	n := 0
	switch mods := tn.GetTypmods(); len(mods) {
	case 0:
	case 1:
		iv := mods[0].GetAConst().GetIval()
		if iv == nil {
			return Raise(sqlerr.SyntaxError, "type modifiers must be simple constants or identifiers")
		}
		if iv.Ival < 1 {
			name := "bit"
			if varying {
				name = "varbit"
			}
			return Raise(sqlerr.InvalidParameterValue, "length for type "+name+" must be at least 1")
		}
		n = int(iv.Ival)
	default:
		return Raise(sqlerr.SyntaxError, "invalid type modifier")
	}
	c := tc.Arg.GetAConst()
	switch {
	case c != nil && c.GetIsnull():
		return call("_tsdb_bit", tc.Arg)
	case c.GetSval() != nil || c.GetBsval() != nil:
		// A constant cast explicitly is read, then fitted: '0101'::bit(3)
		// is 010 (only assignment checks the length, BitInput).
		return constantBits(c, func(bits string) string { return FitBit(bits, n, varying) })
	case c.GetIval() != nil && !varying:
		return bitValue(BitFromInt(int64(c.GetIval().Ival), n))
	}
	return call("_tsdb_to_bit", tc.Arg, pg_query.MakeAConstIntNode(int64(n), -1), boolConst(varying))
}

// constantBits is the engine's value of a string or bit string constant
// read by the bit input, then made what fit makes of it.
func constantBits(c *pg_query.A_Const, fit func(string) string) *pg_query.Node {
	text := c.GetSval().GetSval()
	if c.GetBsval() != nil {
		text = c.GetBsval().Bsval
	}
	bits, err := ParseBitString(text)
	if err != nil {
		return raiseError(err)
	}
	return bitValue(fit(bits))
}

// BitAssign is the value written to column name of a bit string type
// (varying: bit varying). PostgreSQL's assignment takes a bit string, or a string constant read by
// the bit input (its length is the column's to check), and refuses
// anything else, an integer among them (42804), where a cast would take
// its lowest bits.
func BitAssign(n *pg_query.Node, name string, varying bool) *pg_query.Node {
	ty := "bit"
	if varying {
		ty = "bit varying"
	}
	if tc := n.GetTypeCast(); tc != nil && IsBitType(tc.TypeName) {
		n = BitCast(tc) // 9::bit(4), from a row the rewrite did not walk
	}
	c := n.GetAConst()
	switch {
	case c == nil:
		return call("_tsdb_bit_assigned", n, pg_query.MakeAConstStrNode(name, -1), pg_query.MakeAConstStrNode(ty, -1))
	case c.GetIsnull():
		return call("_tsdb_bit", n)
	case c.GetSval() != nil || c.GetBsval() != nil:
		return constantBits(c, func(bits string) string { return bits })
	}
	given := "integer"
	switch {
	case c.GetFval() != nil:
		given = "numeric"
	case c.GetBoolval() != nil:
		given = "boolean"
	}
	return Raise(sqlerr.DatatypeMismatch, fmt.Sprintf("column %q is of type %s but expression is of type %s", name, ty, given))
}

// IsBitType reports whether a type name is bit or bit varying.
func IsBitType(tn *pg_query.TypeName) bool {
	name := sqltree.LastName(tn.GetNames())
	return (name == "bit" || name == "varbit") && len(tn.GetArrayBounds()) == 0
}

// isBitExpr reports whether an expression is known to be a bit string:
// a constant, a cast to bit, or what the rewrite made of them.
func isBitExpr(n *pg_query.Node) bool {
	if n.GetAConst().GetBsval() != nil {
		return true
	}
	if tc := n.GetTypeCast(); tc != nil {
		return IsBitType(tc.TypeName)
	}
	switch sqltree.LastName(n.GetFuncCall().GetFuncname()) {
	case "_tsdb_bit", "_tsdb_to_bit", "_tsdb_set_bit_bits":
		return true
	}
	return false
}
