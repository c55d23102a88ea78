package dialect

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// PostgreSQL's extract returns numeric (date_part stays double): the
// seconds of a timestamp with six decimals (7.000000), its milliseconds
// with three, its epoch with six. The engine answers a double (7). Where
// the argument is known to be a timestamp, ExtractNumeric computes the
// numeric from the engine's microseconds, exactly.

// extractScales are the fields whose numeric has decimals, by the
// names PostgreSQL takes for them.
var extractScales = map[string]string{
	"epoch":  "epoch",
	"second": "second", "seconds": "second", "sec": "second", "secs": "second", "s": "second",
	"millisecond": "ms", "milliseconds": "ms", "ms": "ms", "msec": "ms", "msecs": "ms", "msecond": "ms", "mseconds": "ms",
}

var extractNumericTemplates = map[string]string{
	// An infinite timestamp's epoch is numeric ±Infinity in PostgreSQL,
	// which the engine's decimal has not: refused rather than answered.
	"epoch": "CASE WHEN NOT isfinite(_tsdb_arg1) THEN error('[tsdb 0A000] extract(epoch …) of an infinite timestamp is not supported') " +
		"ELSE CAST(epoch_us(_tsdb_arg1) AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(7,6)) END",
	"second": "CAST(microsecond(_tsdb_arg1) AS DECIMAL(38,0)) * CAST(0.000001 AS DECIMAL(7,6))",
	"ms":     "CAST(microsecond(_tsdb_arg1) AS DECIMAL(38,0)) * CAST(0.001 AS DECIMAL(4,3))",
}

// ExtractNumeric rewrites extract(epoch, second or milliseconds FROM x)
// under root where x is a timestamp: a cast to timestamptz or timestamp
// anywhere, or an expression typeOf knows (nil: casts only). It does not
// look into subqueries when typeOf is given, since their columns are
// another FROM list's.
func ExtractNumeric(root *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	argType := func(x *pg_query.Node) schema.Type {
		if tc := x.GetTypeCast(); tc != nil && len(tc.TypeName.GetArrayBounds()) == 0 {
			if sv := tc.Arg.GetAConst().GetSval(); sv != nil && strings.Contains(strings.ToLower(sv.Sval), "infinity") {
				return schema.Invalid // the engine's double answers ±Infinity, as PostgreSQL does
			}
			switch sqltree.LastName(tc.TypeName.GetNames()) {
			case "timestamptz":
				return schema.Timestamptz
			case "timestamp":
				return schema.Timestamp
			}
		}
		if typeOf != nil {
			return typeOf(x)
		}
		return schema.Invalid
	}
	rewrite := func(n *pg_query.Node) *pg_query.Node {
		if typeOf != nil && n.GetSubLink() != nil {
			return n // its own scope: left as it is (and not walked)
		}
		fc := n.GetFuncCall()
		if fc == nil || sqltree.LastName(fc.Funcname) != "extract" || len(fc.Args) != 2 || fc.Funcformat != pg_query.CoercionForm_COERCE_SQL_SYNTAX {
			return nil
		}
		f := fc.Args[0].GetAConst().GetSval()
		if f == nil {
			return nil
		}
		field, ok := extractScales[strings.ToLower(f.Sval)]
		if !ok || !argType(fc.Args[1]).IsTimestamp() {
			return nil
		}
		r, err := sqltree.Template(extractNumericTemplates[field], proto.Clone(fc.Args[1]).(*pg_query.Node))
		if err != nil {
			return nil
		}
		changed = true
		return r
	}
	if r := rewrite(root); r == root {
		return false // a subquery
	} else if r != nil {
		root.Node = r.Node
		return true
	}
	sqltree.SubstituteNodes(root.ProtoReflect(), rewrite)
	return changed
}
