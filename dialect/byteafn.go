package dialect

import (
	"math/bits"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PostgreSQL's functions of bytea that the engine lacks (get_byte,
// set_byte, get_bit, set_bit, bit_count, encode and decode 'escape') or
// has only for text (substring, btrim, ltrim, rtrim, overlay, LIKE): Go
// functions the planner registers, and the rewrite that calls them.
//
// substring and the others take text as well: the engine chooses by
// type, which the dialect learns only for a bytea cast, a function that
// returns bytea, or a column the planner knows to be bytea.

// byteaOverloads are the functions the engine has for text only, and
// their bytea functions.
var byteaOverloads = map[string]string{
	"substring": "_tsdb_bytea_substr", "substr": "_tsdb_bytea_substr",
	"btrim": "_tsdb_bytea_btrim", "ltrim": "_tsdb_bytea_ltrim", "rtrim": "_tsdb_bytea_rtrim",
	"overlay": "_tsdb_bytea_overlay", "length": "octet_length",
}

// byteaResults are the functions whose result is bytea.
var byteaResults = map[string]bool{
	"decode": true, "sha224": true, "sha256": true, "sha384": true, "sha512": true,
	"set_byte": true, "set_bit": true, "_tsdb_decode": true,
}

// isBytea reports whether an expression is known to be bytea.
func isBytea(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if tc := n.GetTypeCast(); tc != nil {
		return sqltree.LastName(tc.TypeName.GetNames()) == "bytea" && len(tc.TypeName.GetArrayBounds()) == 0
	}
	if fc := n.GetFuncCall(); fc != nil {
		name := sqltree.LastName(fc.Funcname)
		if byteaResults[name] || strings.HasPrefix(name, "_tsdb_bytea_") || strings.HasPrefix(name, "_tsdb_sha") {
			return true
		}
		if _, ok := byteaOverloads[name]; ok && len(fc.Args) > 0 {
			return isBytea(fc.Args[0], typeOf)
		}
		return false
	}
	return typeOf != nil && n.GetColumnRef() != nil && typeOf(n) == schema.Bytea
}

// isText reports whether an expression is known to be text: a string
// constant, a cast to text, varchar or char, or a text column.
func isText(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	if c := n.GetAConst(); c != nil {
		return c.GetSval() != nil
	}
	if tc := n.GetTypeCast(); tc != nil {
		switch sqltree.LastName(tc.TypeName.GetNames()) {
		case "text", "varchar", "bpchar":
			return len(tc.TypeName.GetArrayBounds()) == 0
		}
		return false
	}
	if fc := n.GetFuncCall(); fc != nil {
		name := sqltree.LastName(fc.Funcname)
		if _, overload := byteaOverloads[name]; overload && name != "length" {
			return len(fc.Args) > 0 && !isBytea(fc.Args[0], typeOf)
		}
		return textResults[name]
	}
	if e := n.GetAExpr(); e != nil && sqltree.LastName(e.Name) == "||" && e.Lexpr != nil && e.Rexpr != nil {
		return !isBytea(e.Lexpr, typeOf) && !isBytea(e.Rexpr, typeOf)
	}
	return typeOf != nil && n.GetColumnRef() != nil && typeOf(n) == schema.Text
}

// textResults are functions whose result is text whatever they take.
var textResults = map[string]bool{
	"upper": true, "lower": true, "initcap": true, "concat": true, "concat_ws": true, "format": true,
	"replace": true, "lpad": true, "rpad": true, "left": true, "right": true, "repeat": true, "reverse": true,
	"md5": true, "to_char": true, "split_part": true, "translate": true, "quote_ident": true,
	"quote_literal": true, "chr": true, "regexp_replace": true, "to_hex": true,
}

// ByteaFunctions rewrites, in root, the calls of byteaOverloads and the
// LIKEs whose operand is known to be bytea (isBytea) to the Go functions.
// typeOf, if not nil, gives the types of the FROM list's columns (the
// select list's scope: subqueries are left alone then).
func ByteaFunctions(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if typeOf != nil && n.GetSubLink() != nil {
			return n // its own scope
		}
		if e := n.GetAExpr(); e != nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_LIKE && e.Lexpr != nil {
			pattern, escape := e.Rexpr, sqltree.Cast(pg_query.MakeAConstStrNode(`\x5c`, -1), "bytea") // a backslash
			if f := e.Rexpr.GetFuncCall(); f != nil && sqltree.LastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
				pattern, escape = f.Args[0], f.Args[1]
			}
			if !isBytea(e.Lexpr, typeOf) && !isBytea(pattern, typeOf) {
				return nil
			}
			changed = true
			like := call("_tsdb_bytea_like", e.Lexpr, pattern, escape)
			if sqltree.LastName(e.Name) == "!~~" {
				return pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{like}, e.Location)
			}
			return like
		}
		fc := n.GetFuncCall()
		if fc == nil || len(fc.Args) == 0 {
			return nil
		}
		name := sqltree.LastName(fc.Funcname)
		if (name == "set_bit" || name == "_tsdb_set_bit_bytea") && len(fc.Args) == 3 && typeOf != nil {
			if t := columnOf(fc.Args[0], typeOf); t == schema.Bit || t == schema.VarBit {
				// set_bit of a bit string column (bitstring.go): the
				// engine's, not bytea's.
				changed = true
				return call("_tsdb_set_bit_bits", fc.Args...)
			}
		}
		if name == "string_agg" && len(fc.Args) == 2 && len(fc.Funcname) == 1 && isBytea(fc.Args[0], typeOf) {
			// string_agg of bytea is bytea; the engine's casts the bytes
			// to text. Joined as hex and made bytes again, the values and
			// delimiters keep every byte (a NULL delimiter is none).
			changed = true
			agg := proto.Clone(fc).(*pg_query.FuncCall)
			agg.Args = []*pg_query.Node{call("hex", fc.Args[0]),
				call("hex", &pg_query.Node{Node: &pg_query.Node_CoalesceExpr{CoalesceExpr: &pg_query.CoalesceExpr{
					Args: []*pg_query.Node{fc.Args[1], sqltree.Cast(pg_query.MakeAConstStrNode("", -1), "bytea")}}}})}
			return call("unhex", &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: agg}})
		}
		if name == "octet_length" && len(fc.Args) == 1 && len(fc.Funcname) == 1 && isText(fc.Args[0], typeOf) {
			// The engine's octet_length takes bytes only; strlen counts
			// a string's (UTF-8) bytes, as PostgreSQL's octet_length of
			// text does.
			changed = true
			return call("strlen", fc.Args[0])
		}
		fn, ok := byteaOverloads[name]
		if !ok || !isBytea(fc.Args[0], typeOf) {
			return nil
		}
		args := fc.Args
		if (name == "length") != (len(args) == 1) {
			return nil
		}
		switch name {
		case "substring", "substr":
			if len(args) > 3 {
				return nil
			}
			// The length, and whether there is one.
			if len(args) == 2 {
				args = append(args, pg_query.MakeAConstIntNode(0, -1), boolConst(false))
			} else {
				args = append(args, boolConst(true))
			}
		case "overlay":
			if len(args) == 3 {
				args = append(args, pg_query.MakeAConstIntNode(0, -1), boolConst(false))
			} else {
				args = append(args, boolConst(true))
			}
		}
		changed = true
		return call(fn, args...)
	}
	if r := rewrite(root); r == root {
		return false
	} else if r != nil {
		root.Node = r.Node
		return true
	}
	sqltree.ReplaceNodes(root.ProtoReflect(), rewrite)
	return changed
}

// byteIndex checks a byte or bit index n against a length.
func byteIndex(n int64, length int) error {
	if n < 0 || n >= int64(length) {
		return sqlerr.New("2202E", "index %d out of valid range, 0..%d", n, length-1)
	}
	return nil
}

// GetByte is get_byte(b, n).
func GetByte(b []byte, n int64) (int64, error) {
	if err := byteIndex(n, len(b)); err != nil {
		return 0, err
	}
	return int64(b[n]), nil
}

// SetByte is set_byte(b, n, v): a copy with byte n set to v's low byte.
func SetByte(b []byte, n, v int64) ([]byte, error) {
	if err := byteIndex(n, len(b)); err != nil {
		return nil, err
	}
	out := append([]byte(nil), b...)
	out[n] = byte(v)
	return out, nil
}

// GetBit is get_bit(b, n): bit n%8 (from the least significant) of byte
// n/8.
func GetBit(b []byte, n int64) (int64, error) {
	if err := byteIndex(n, len(b)*8); err != nil {
		return 0, err
	}
	return int64(b[n/8]>>(n%8)) & 1, nil
}

// SetBit is set_bit(b, n, v).
func SetBit(b []byte, n, v int64) ([]byte, error) {
	if err := byteIndex(n, len(b)*8); err != nil {
		return nil, err
	}
	if v != 0 && v != 1 {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "new bit must be 0 or 1")
	}
	out := append([]byte(nil), b...)
	out[n/8] = out[n/8]&^(1<<(n%8)) | byte(v)<<(n%8)
	return out, nil
}

// BitCount is bit_count(b): the bits set.
func BitCount(b []byte) int64 {
	n := 0
	for _, c := range b {
		n += bits.OnesCount8(c)
	}
	return int64(n)
}

// ByteaSubstring is substring(b FROM start [FOR length]): positions before
// the first byte hold nothing, as for text.
func ByteaSubstring(b []byte, start, length int64, hasLength bool) ([]byte, error) {
	if hasLength && length < 0 {
		return nil, sqlerr.New("22011", "negative substring length not allowed")
	}
	from := max(start, 1)
	end := int64(len(b)) + 1 // positions from and up to end, exclusive
	if hasLength {
		end = min(end, start+length) // PostgreSQL's int4 arguments cannot overflow an int64
	}
	if end <= from || from > int64(len(b)) {
		return []byte{}, nil
	}
	return append([]byte(nil), b[from-1:end-1]...), nil
}

// ByteaTrim is btrim, ltrim and rtrim of bytea: the bytes of set removed
// from the start (left), the end (right) or both.
func ByteaTrim(b, set []byte, left, right bool) []byte {
	in := func(c byte) bool {
		for _, s := range set {
			if s == c {
				return true
			}
		}
		return false
	}
	i, j := 0, len(b)
	for left && i < j && in(b[i]) {
		i++
	}
	for right && j > i && in(b[j-1]) {
		j--
	}
	return append([]byte{}, b[i:j]...)
}

// ByteaOverlay is overlay(b PLACING p FROM start [FOR count]); count
// defaults to the length of p.
func ByteaOverlay(b, p []byte, start, count int64, hasCount bool) ([]byte, error) {
	if !hasCount {
		count = int64(len(p))
	}
	if start <= 0 || count < 0 {
		return nil, sqlerr.New("22011", "negative substring length not allowed")
	}
	if start > 1<<31-1-count {
		return nil, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
	}
	head, _ := ByteaSubstring(b, 1, start-1, true)
	tail, _ := ByteaSubstring(b, start+count, 0, false)
	return append(append(head, p...), tail...), nil
}

// ByteaLike is PostgreSQL's LIKE of bytea: _ is one byte, % any bytes,
// the escape byte (none when empty) quotes the next.
func ByteaLike(s, pattern, escape []byte) (bool, error) {
	if len(escape) > 1 {
		e := sqlerr.New(sqlerr.InvalidEscapeSequence, "invalid escape string")
		e.Hint = "Escape string must be empty or one character."
		return false, e
	}
	var match func(s, p []byte) bool
	match = func(s, p []byte) bool {
		for len(p) > 0 {
			c := p[0]
			switch {
			case len(escape) == 1 && c == escape[0]:
				if len(p) < 2 || len(s) == 0 || s[0] != p[1] {
					return false
				}
				s, p = s[1:], p[2:]
			case c == '%':
				for len(p) > 0 && p[0] == '%' {
					p = p[1:]
				}
				if len(p) == 0 {
					return true
				}
				for i := 0; i <= len(s); i++ {
					if match(s[i:], p) {
						return true
					}
				}
				return false
			case c == '_':
				if len(s) == 0 {
					return false
				}
				s, p = s[1:], p[1:]
			default:
				if len(s) == 0 || s[0] != c {
					return false
				}
				s, p = s[1:], p[1:]
			}
		}
		return len(s) == 0
	}
	return match(s, pattern), nil
}

// EncodeEscape is encode(b, 'escape'): a NUL and bytes with the high bit
// set as \ooo, a backslash doubled.
func EncodeEscape(b []byte) string {
	var out strings.Builder
	for _, c := range b {
		switch {
		case c == 0 || c >= 0x80:
			out.WriteByte('\\')
			out.WriteByte('0' + c>>6)
			out.WriteByte('0' + c>>3&7)
			out.WriteByte('0' + c&7)
		case c == '\\':
			out.WriteString(`\\`)
		default:
			out.WriteByte(c)
		}
	}
	return out.String()
}

// DecodeEscape is decode(s, 'escape'): the escape format of bytea input.
func DecodeEscape(s string) ([]byte, error) {
	return parseByteaEscape(s)
}
