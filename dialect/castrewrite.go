package dialect

import (
	"encoding/hex"
	"errors"
	"fmt"
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
		// PostgreSQL's bit is bit(1) and truncates; the engine's BIT
		// keeps every digit.
		return Raise(sqlerr.FeatureNotSupported, "type "+tn+" is not supported"), true
	}
	if r, ok := CharacterCast(tc, false); ok {
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
	if sv := tc.Arg.GetAConst().GetSval(); sv != nil {
		bits := map[string]int{"float8": 64, "float4": 32}[sqltree.LastName(tc.TypeName.GetNames())]
		if bits > 0 {
			if err := FloatInputError(sv.Sval, bits); err != nil {
				return Raise(sqlerr.NumericOutOfRange, err.(*sqlerr.Error).Message), true
			}
		}
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
	return nil, false
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
