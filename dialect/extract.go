package dialect

// extract, date_part and date_trunc: the fields whose meaning differs
// from the engine's (extractField, truncTemplates), and extract's numeric
// result for timestamps (ExtractNumeric).

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// extractTemplates compute the fields of extract and date_part whose
// meaning differs from DuckDB's, with DuckDB's own functions (a template
// must not hold what RewritePG rewrites again).
var extractTemplates = map[string]string{
	// PostgreSQL's seconds have their fraction (7.25); DuckDB's second is
	// a whole number. Its microsecond counts from the minute, as
	// PostgreSQL's microseconds do.
	"second": "microsecond(_tsdb_arg1) / 1000000.0",
	// PostgreSQL has no year 0: 1 BC is year -1. DuckDB counts
	// astronomically (1 BC is 0). An interval's years are a count.
	// (typeof is constant; both branches bind for dates, timestamps and
	// intervals alike.) A timestamptz's year is its calendar's, counted in
	// eras (97 BC is 97): made a timestamp (the session's wall clock),
	// it is astronomical too (_tsdb_ayear); an interval made one is NULL.
	"year":    "(CASE WHEN typeof(_tsdb_arg1) <> 'INTERVAL' AND _tsdb_ayear(_tsdb_arg1) <= 0 THEN _tsdb_ayear(_tsdb_arg1) - 1 ELSE year(_tsdb_arg1) END)",
	"isoyear": "(CASE WHEN isoyear(_tsdb_arg1) <= 0 THEN isoyear(_tsdb_arg1) - 1 ELSE isoyear(_tsdb_arg1) END)",
	// A BC decade counts down from the year before 1 BC as PostgreSQL's
	// timestamp_part does (2 BC is decade -1, 12 BC is -2).
	"decade": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' OR _tsdb_ayear(_tsdb_arg1) > 0 THEN decade(_tsdb_arg1) ELSE -((8 - (_tsdb_ayear(_tsdb_arg1) - 1)) // 10) END)",
	// The rest only for infinite values (infiniteFields).
	"epoch":      "epoch(_tsdb_arg1)",
	"julian":     "julian(_tsdb_arg1)",
	"century":    "century(_tsdb_arg1)",
	"millennium": "millennium(_tsdb_arg1)",
}

// fieldAliases are the other names PostgreSQL takes for a field.
var fieldAliases = map[string]string{
	"seconds": "second", "sec": "second", "secs": "second", "s": "second",
	"years": "year", "y": "year", "yr": "year", "yrs": "year",
	"decades": "decade", "dec": "decade", "decs": "decade",
	"centuries": "century", "c": "century", "cent": "century",
	"millenniums": "millennium", "millennia": "millennium", "mil": "millennium", "mils": "millennium",
	"j": "julian",
}

// infiniteFields are the fields PostgreSQL gives ±Infinity for an infinite
// date or timestamp (the others are NULL there, as in DuckDB, which gives
// NULL for all).
var infiniteFields = map[string]bool{"epoch": true, "julian": true, "year": true, "isoyear": true, "decade": true, "century": true, "millennium": true}

// extractField rewrites extract(field FROM x) or date_part(field, x) when
// DuckDB's answer would differ from PostgreSQL's.
func extractField(field string, x *pg_query.Node) (*pg_query.Node, bool) {
	if a, ok := fieldAliases[field]; ok {
		field = a
	}
	t, ok := extractTemplates[field]
	if !ok {
		return nil, false
	}
	if infiniteFields[field] {
		// DuckDB's NULL for a value that is not NULL means the value is
		// infinite; its text says which way.
		t = "coalesce(" + t + ", CASE WHEN _tsdb_arg1 IS NOT NULL THEN CASE WHEN starts_with(CAST(_tsdb_arg1 AS VARCHAR), '-') THEN CAST('-Infinity' AS DOUBLE) ELSE CAST('Infinity' AS DOUBLE) END END)"
	}
	r, err := sqltree.Template(t, x)
	return r, err == nil
}

// truncTemplates are date_trunc's fields whose meaning differs from
// DuckDB's.
var truncTemplates = map[string]string{
	// PostgreSQL's centuries and millennia begin with year 1 (1901-01-01,
	// 1001-01-01); DuckDB's with year 0. An interval's are counts, as
	// DuckDB's (datetrunc is date_trunc by a name not rewritten again).
	"century":    "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN datetrunc('century', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(((year(_tsdb_arg1) - 1) % 100 + 100) % 100 AS INTEGER)) END)",
	"millennium": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' THEN datetrunc('millennium', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(((year(_tsdb_arg1) - 1) % 1000 + 1000) % 1000 AS INTEGER)) END)",
	// A BC decade as PostgreSQL's timestamp_trunc counts it (2 BC is in
	// the decade beginning 11 BC).
	"decade": "(CASE WHEN typeof(_tsdb_arg1) = 'INTERVAL' OR year(_tsdb_arg1) > 0 THEN datetrunc('decade', _tsdb_arg1) ELSE date_trunc('year', _tsdb_arg1) - to_years(CAST(year(_tsdb_arg1) + ((8 - (year(_tsdb_arg1) - 1)) // 10) * 10 AS INTEGER)) END)",
}

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

// intervalEpochTemplate is extract(epoch FROM interval) exactly: PostgreSQL
// computes (4 × 365.25 × years + 4 × 30 × months + 4 × days) × 21600
// seconds, plus the time.
const intervalEpochTemplate = "((1461 * CAST(year(_tsdb_arg1) AS DECIMAL(38,0)) + 120 * CAST(month(_tsdb_arg1) AS DECIMAL(38,0)) + 4 * CAST(day(_tsdb_arg1) AS DECIMAL(38,0))) * 21600000000" +
	" + CAST(hour(_tsdb_arg1) AS DECIMAL(38,0)) * 3600000000 + CAST(minute(_tsdb_arg1) AS DECIMAL(38,0)) * 60000000 + CAST(microsecond(_tsdb_arg1) AS DECIMAL(38,0))) * CAST(0.000001 AS DECIMAL(7,6))"

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
		if !ok {
			return nil
		}
		template := extractNumericTemplates[field]
		if intervalExpr(fc.Args[1], typeOf) {
			// An interval's seconds and milliseconds are a timestamp's
			// (of the minute); its epoch counts a year as 365.25 days
			// and a month as 30, as PostgreSQL's interval_part does.
			if field == "epoch" {
				template = intervalEpochTemplate
			}
		} else if !argType(fc.Args[1]).IsTimestamp() {
			return nil
		}
		r, err := sqltree.Template(template, proto.Clone(fc.Args[1]).(*pg_query.Node))
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
