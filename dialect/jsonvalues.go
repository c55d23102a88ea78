package dialect

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PostgreSQL writes some values into JSON otherwise than as their text:
// a timestamp as ISO 8601 ("2026-01-01T00:00:00.5+00:00", not
// "2026-01-01 00:00:00.5+00"), a numeric with its scale (1.50), a bytea
// as its hex text ("\\x78"), a real as its own shortest text (0.1). The
// engine's to_json writes the first as its own text, loses the numeric's
// scale, writes a bytea's bytes and a real's double
// (0.10000000149011612): a different answer, never an error. Until those values are written as
// PostgreSQL writes them, a JSON function over a value known to be of
// such a type is refused.

// jsonFunctions are the functions that write their arguments as JSON.
var jsonFunctions = map[string]bool{
	"to_json": true, "to_jsonb": true, "row_to_json": true, "array_to_json": true,
	"json_agg": true, "jsonb_agg": true, "json_object_agg": true, "jsonb_object_agg": true,
	"json_build_object": true, "json_build_array": true, "jsonb_build_object": true, "jsonb_build_array": true,
}

// errJSONObject refuses json_object anywhere (FeaturesOf): PostgreSQL's
// takes an array of keys and values, or of keys and one of values; the
// engine's of that name takes key and value pairs, and would answer
// json_object('{a,b}', '{1,2}') with {"{a,b}":"{1,2}"}.
func errJSONObject() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "json_object is not supported: the engine's function of that name takes key and value pairs, not PostgreSQL's arrays")
}

// jsonDiffers says, for each type whose JSON the engine writes otherwise
// than PostgreSQL, what PostgreSQL writes.
var jsonDiffers = map[schema.Type]string{
	schema.Timestamptz: `ISO 8601, such as "2026-01-01T00:00:00.5+00:00"`,
	schema.Timestamp:   `ISO 8601, such as "2026-01-01T00:00:00.5"`,
	schema.Decimal:     "the number with its scale, such as 1.50",
	schema.Bytea:       `its hex text, such as "\\x78"`,
	schema.Interval:    `its text in the session's IntervalStyle, such as "1 year 2 mons"`,
	schema.Float32:     "the shortest text of the real, such as 0.1 (the engine writes its double, 0.10000000149011612)",
}

// timestampResults are functions whose result is a timestamp with time
// zone.
var timestampResults = map[string]bool{
	"now": true, "transaction_timestamp": true, "statement_timestamp": true, "clock_timestamp": true,
}

// JSONValueTypes refuses (0A000) a JSON function of root whose argument
// is known to be of a type whose JSON the engine writes otherwise than
// PostgreSQL: a column of that type (typeOf, by root's FROM list), a cast
// to it, a function returning it, or a whole row (rowOf) holding such a
// column. Arguments of unknown type pass, and so do the SELECTs nested in
// root (subqueries, CTEs, set operations' branches), whose columns
// root's FROM list does not type.
func JSONValueTypes(root *pg_query.SelectStmt, typeOf func(*pg_query.Node) schema.Type, rowOf func(*pg_query.ColumnRef) ([]schema.Column, bool)) error {
	return sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		if sel, ok := m.(*pg_query.SelectStmt); ok && sel != root {
			return sqltree.SkipChildren
		}
		fc, ok := m.(*pg_query.FuncCall)
		if !ok {
			return nil
		}
		name := sqltree.LastName(fc.Funcname)
		if !jsonFunctions[name] {
			return nil
		}
		for _, arg := range fc.Args {
			if ty, what := jsonArgType(arg, typeOf, rowOf); ty != schema.Invalid {
				return sqlerr.New(sqlerr.FeatureNotSupported,
					"%s of %s is not supported: PostgreSQL writes a %s value as %s, which tsdb does not yet; convert it to text first (to_char, or a cast to text)",
					name, what, ty, jsonDiffers[ty])
			}
		}
		return nil
	})
}

// jsonArgType returns the type of arg, or of a column of the row it
// names, whose JSON differs (schema.Invalid: none known), and how to
// name the argument in a message.
func jsonArgType(arg *pg_query.Node, typeOf func(*pg_query.Node) schema.Type, rowOf func(*pg_query.ColumnRef) ([]schema.Column, bool)) (schema.Type, string) {
	differs := func(ty schema.Type) bool { _, ok := jsonDiffers[ty]; return ok }
	switch {
	case arg.GetTypeCast() != nil:
		ty, err := schema.ParseType(sqltree.LastName(arg.GetTypeCast().GetTypeName().GetNames()))
		if err == nil && differs(ty) {
			return ty, "a " + ty.String() + " value"
		}
	case arg.GetFuncCall() != nil:
		if timestampResults[sqltree.LastName(arg.GetFuncCall().Funcname)] {
			return schema.Timestamptz, sqltree.LastName(arg.GetFuncCall().Funcname) + "()"
		}
	case arg.GetAConst() != nil && arg.GetAConst().GetFval() != nil:
		// A number with a point is a numeric: the engine writes it as a
		// double, which drops zeros at its end and digits past 15.
		v := arg.GetAConst().GetFval().GetFval()
		if digits := strings.TrimLeft(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, v), "0"); strings.Contains(v, ".") && (strings.HasSuffix(v, "0") || len(digits) > 15) {
			return schema.Decimal, "the numeric " + v
		}
	case arg.GetSqlvalueFunction() != nil:
		switch arg.GetSqlvalueFunction().Op {
		case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
			return schema.Timestamptz, "current_timestamp"
		case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
			return schema.Timestamp, "localtimestamp"
		}
	case arg.GetColumnRef() != nil:
		cr := arg.GetColumnRef()
		if typeOf != nil {
			if ty := typeOf(arg); differs(ty) {
				return ty, fmt.Sprintf("column %s", columnRefText(cr))
			}
		}
		if rowOf != nil {
			if cols, ok := rowOf(cr); ok {
				for _, c := range cols {
					if differs(c.Type) {
						return c.Type, fmt.Sprintf("a row of %s (column %s)", columnRefText(cr), schema.QuoteIdent(c.Name))
					}
				}
			}
		}
	}
	return schema.Invalid, ""
}

// columnRefText writes a column reference as SQL.
func columnRefText(cr *pg_query.ColumnRef) string {
	parts := make([]string, len(cr.Fields))
	for i, f := range cr.Fields {
		if f.GetAStar() != nil {
			parts[i] = "*"
		} else {
			parts[i] = schema.QuoteIdent(f.GetString_().GetSval())
		}
	}
	return strings.Join(parts, ".")
}
