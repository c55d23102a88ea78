package dialect

import (
	"slices"
	"strings"
)

// The engine macros tsdb defines at startup, and the PostgreSQL functions
// they answer.

// pgFunctions maps PostgreSQL catalog functions to the engine macros that
// answer them (Macros here, and the planner's engine macros).
var pgFunctions = map[string]string{
	// PostgreSQL's negative years are BC (-44 is 44 BC, the
	// astronomical -43); there is no year 0.
	"make_date":                       "_tsdb_make_date",
	"width_bucket":                    "_tsdb_width_bucket",
	"div":                             "_tsdb_div",
	"hashint2":                        "_tsdb_hashint4",
	"hashint4":                        "_tsdb_hashint4",
	"hashint8":                        "_tsdb_hashint8",
	"interval_hash":                   "_tsdb_interval_hash",
	"ln":                              "_tsdb_ln",
	"log10":                           "_tsdb_log10",
	"sqrt":                            "_tsdb_sqrt",
	"round":                           "_tsdb_round",
	"exp":                             "_tsdb_exp",
	"pg_get_userbyid":                 "_tsdb_userbyid",
	"pg_table_is_visible":             "_tsdb_visible",
	"pg_type_is_visible":              "_tsdb_visible",
	"format_type":                     "_tsdb_format_type",
	"pg_get_expr":                     "_tsdb_null2",
	"pg_get_ruledef":                  "_tsdb_null2",
	"obj_description":                 "_tsdb_null2",
	"col_description":                 "_tsdb_null2",
	"pg_encoding_to_char":             "_tsdb_encoding",
	"pg_indexes_size":                 "_tsdb_zero",
	"pg_size_pretty":                  "_tsdb_size_pretty",
	"pg_get_indexdef":                 "_tsdb_null2",
	"pg_get_statisticsobjdef_columns": "_tsdb_null2",
	"pg_get_viewdef":                  "_tsdb_viewdef",
	"pg_sleep":                        "_tsdb_sleep",
	"split_part":                      "_tsdb_split_part",
	"sha256":                          "_tsdb_sha256",
	"sha224":                          "_tsdb_sha224",
	"sha384":                          "_tsdb_sha384",
	"sha512":                          "_tsdb_sha512",
	"unistr":                          "_tsdb_unistr",
	"get_byte":                        "_tsdb_get_byte",
	"set_byte":                        "_tsdb_set_byte",
	"get_bit":                         "_tsdb_get_bit",
	"set_bit":                         "_tsdb_set_bit_bytea", // of bit strings: bitSetBit
	"bit_count":                       "_tsdb_bit_count",
	"decode":                          "_tsdb_decode",
	"encode":                          "_tsdb_encode",
	"pg_typeof":                       "_tsdb_typeof",
	"pg_get_triggerdef":               "_tsdb_null2",
	"pg_get_partkeydef":               "_tsdb_null2",
	"pg_get_partition_constraintdef":  "_tsdb_null2",
	"pg_get_constraintdef":            "_tsdb_null2",
	"shobj_description":               "_tsdb_null2",
	"pg_has_role":                     "_tsdb_true2",
	"pg_relation_is_publishable":      "_tsdb_true2",
	"has_table_privilege":             "_tsdb_true2",
	"has_schema_privilege":            "_tsdb_true2",
	"has_database_privilege":          "_tsdb_true2",
	"pg_is_in_recovery":               "_tsdb_false0",
	"pg_postmaster_start_time":        "now",
	"_pg_expandarray":                 "_tsdb_expandarray",
	"pg_get_function_result":          "_tsdb_null2",
	"pg_get_function_arguments":       "_tsdb_null2",
	"current_schemas":                 "_tsdb_current_schemas",
	"to_hex":                          "_tsdb_to_hex",
	"chr":                             "_tsdb_chr",
	"power":                           "_tsdb_power",
	"pow":                             "_tsdb_power",
	"asin":                            "_tsdb_asin",
	"acos":                            "_tsdb_acos",
	"acosh":                           "_tsdb_acosh",
	"atanh":                           "_tsdb_atanh",
	"sind":                            "_tsdb_sind",
	"cosd":                            "_tsdb_cosd",
	"tand":                            "_tsdb_tand",
	"cotd":                            "_tsdb_cotd",
	"asind":                           "_tsdb_asind",
	"acosd":                           "_tsdb_acosd",
	"atand":                           "_tsdb_atand",
	"atan2d":                          "_tsdb_atan2d",
	"float8_accum":                    "_tsdb_float8_accum",
	"float8send":                      "_tsdb_float8send",
	"float4send":                      "_tsdb_float4send",
	"float8_combine":                  "_tsdb_float8_combine",
	"float8_regr_accum":               "_tsdb_float8_regr_accum",
	"float8_regr_combine":             "_tsdb_float8_regr_combine",
	"booland_statefunc":               "_tsdb_booland",
	"boolor_statefunc":                "_tsdb_boolor",
}

// QuotedKeywords are PostgreSQL 15's keywords other than the unreserved
// ones (pg_get_keywords() where catcode <> 'U'): quote_ident quotes them,
// as an identifier spelled so would not parse bare everywhere.
var QuotedKeywords = []string{
	"all", "analyse", "analyze", "and", "any", "array", "as", "asc",
	"asymmetric", "authorization", "between", "bigint", "binary", "bit",
	"boolean", "both", "case", "cast", "char", "character", "check",
	"coalesce", "collate", "collation", "column", "concurrently",
	"constraint", "create", "cross", "current_catalog", "current_date",
	"current_role", "current_schema", "current_time", "current_timestamp",
	"current_user", "dec", "decimal", "default", "deferrable", "desc",
	"distinct", "do", "else", "end", "except", "exists", "extract", "false",
	"fetch", "float", "for", "foreign", "freeze", "from", "full", "grant",
	"greatest", "group", "grouping", "having", "ilike", "in", "initially",
	"inner", "inout", "int", "integer", "intersect", "interval", "into", "is",
	"isnull", "join", "lateral", "leading", "least", "left", "like", "limit",
	"localtime", "localtimestamp", "national", "natural", "nchar", "none",
	"normalize", "not", "notnull", "null", "nullif", "numeric", "offset",
	"on", "only", "or", "order", "out", "outer", "overlaps", "overlay",
	"placing", "position", "precision", "primary", "real", "references",
	"returning", "right", "row", "select", "session_user", "setof", "similar",
	"smallint", "some", "substring", "symmetric", "table", "tablesample",
	"then", "time", "timestamp", "to", "trailing", "treat", "trim", "true",
	"union", "unique", "user", "using", "values", "varchar", "variadic",
	"verbose", "when", "where", "window", "with", "xmlattributes",
	"xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces",
	"xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
}

// QuoteIdent quotes a name as PostgreSQL's quote_ident does: bare when it
// is lower-case letters, digits and underscores (not first a digit) and
// no keyword of QuotedKeywords, else in double quotes.
func QuoteIdent(s string) string {
	plain := s != ""
	for i, c := range s {
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain && !slices.Contains(QuotedKeywords, s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// quotedKeywordList is QuotedKeywords as an engine list literal.
var quotedKeywordList = "['" + strings.Join(QuotedKeywords, "', '") + "']"

// Macros answer pgFunctions and a few PostgreSQL functions DuckDB lacks.
var Macros = append([]string{
	// PostgreSQL functions clients call that DuckDB lacks.
	// array_remove and array_replace compare as IS NOT DISTINCT FROM, as
	// PostgreSQL's do (array_remove(a, NULL) removes the NULLs).
	`CREATE MACRO array_remove(a, x) AS list_filter(a, lambda e: e IS DISTINCT FROM x)`,
	`CREATE MACRO array_replace(a, x, y) AS list_transform(a, lambda e: CASE WHEN e IS NOT DISTINCT FROM x THEN y ELSE e END)`,
	`CREATE MACRO btrim(s) AS trim(s, ' '), (s, chars) AS trim(s, chars)`,
	// As PostgreSQL's quote_identifier: bare only lower-case letters,
	// digits and '_' that are no keyword the grammar reserves in any way.
	`CREATE MACRO quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_]*') AND NOT list_contains(` + quotedKeywordList + `, s) THEN s ELSE '"' || replace(s, '"', '""') || '"' END`,
	// ExactAggregates: the engine's answer a, the count b, the sum c and
	// the sum of squares d, for the planner to print as PostgreSQL does.
	`CREATE MACRO _tsdb_exact_avg(a, b, c) AS struct_pack(_tsdb_avg := a, n := b, s := c)`,
	`CREATE MACRO _tsdb_exact_var_pop(a, b, c, d) AS struct_pack(_tsdb_var_pop := a, n := b, s := c, q := d)`,
	`CREATE MACRO _tsdb_exact_var_samp(a, b, c, d) AS struct_pack(_tsdb_var_samp := a, n := b, s := c, q := d)`,
	`CREATE MACRO _tsdb_exact_stddev_pop(a, b, c, d) AS struct_pack(_tsdb_stddev_pop := a, n := b, s := c, q := d)`,
	`CREATE MACRO _tsdb_exact_stddev_samp(a, b, c, d) AS struct_pack(_tsdb_stddev_samp := a, n := b, s := c, q := d)`,
	// NumericLiteralScales: a literal a with the scale b it is printed with.
	`CREATE MACRO _tsdb_num(a, b) AS struct_pack(_tsdb_numscale := CAST(a AS DECIMAL(38,10)), s := b)`,
	// NumericDivision: the operands of a numeric division, which the
	// planner divides as PostgreSQL does, after the quotient as a double
	// the struct sorts by.
	`CREATE MACRO _tsdb_numdiv(a, b) AS struct_pack(_tsdb_numdiv := CAST(a AS DOUBLE) / CAST(b AS DOUBLE), a := a, b := b)`,
	// ExactAggregates of intervals: the count p1 and the sums of months
	// p2, days p3 and microseconds p4, and each part of an interval.
	`CREATE MACRO _tsdb_exact_ivsum(p1, p2, p3, p4) AS struct_pack(_tsdb_ivsum := p1, m := p2, d := p3, u := p4)`,
	`CREATE MACRO _tsdb_exact_ivavg(p1, p2, p3, p4) AS struct_pack(_tsdb_ivavg := p1, m := p2, d := p3, u := p4)`,
	`CREATE MACRO _tsdb_iv_months(a) AS datepart('year', a) * 12 + datepart('month', a)`,
	`CREATE MACRO _tsdb_iv_days(a) AS datepart('day', a)`,
	`CREATE MACRO _tsdb_iv_micros(a) AS datepart('hour', a) * 3600000000 + datepart('minute', a) * 60000000 + datepart('microseconds', a)`,
	`CREATE MACRO array_lower(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN 1 END`,
	`CREATE MACRO array_upper(a, d) AS CASE WHEN len(a) > 0 AND d = 1 THEN len(a) END`,
	`CREATE MACRO parse_ident(s) AS list_transform(string_split(s, '.'), lambda x: trim(x, '"'))`,
	// PostgreSQL refuses what has no real answer; DuckDB answers
	// -Infinity, NaN or an overflowed Infinity.
	`CREATE MACRO _tsdb_ln(x) AS CASE WHEN x = 0 THEN error('[tsdb 2201E] cannot take logarithm of zero')
			WHEN x < 0 THEN error('[tsdb 2201E] cannot take logarithm of a negative number') ELSE ln(x) END`,
	`CREATE MACRO _tsdb_log10(x) AS CASE WHEN x = 0 THEN error('[tsdb 2201E] cannot take logarithm of zero')
			WHEN x < 0 THEN error('[tsdb 2201E] cannot take logarithm of a negative number') ELSE log10(x) END`,
	`CREATE MACRO _tsdb_make_date(y, m, d) AS make_date(CASE WHEN y < 0 THEN y + 1
			WHEN y = 0 THEN error('[tsdb 22008] date field value out of range: 0-' || m || '-' || d) ELSE y END, m, d)`,
	`CREATE MACRO _tsdb_re_match(s, p) AS regexp_matches(s, p)`,
	// PostgreSQL's initcap: a letter or digit after one that is neither
	// starts a word and is upper case, the rest lower case.
	`CREATE MACRO initcap(s) AS list_aggr(list_transform(range(1, length(s) + 1), lambda i:
			CASE WHEN i = 1 OR NOT regexp_matches(substring(s, i - 1, 1), '[[:alnum:]]') THEN upper(substring(s, i, 1))
			ELSE lower(substring(s, i, 1)) END), 'string_agg', '')`,
	// PostgreSQL's chr refuses what text cannot hold; DuckDB's returns a
	// NUL character or fails with a message of its own.
	`CREATE MACRO _tsdb_chr(x) AS CASE WHEN x = 0 THEN error('[tsdb 54000] null character not permitted')
			WHEN x < 0 THEN error('[tsdb 22023] character number must be positive')
			WHEN x > 1114111 THEN error('[tsdb 54000] requested character too large for encoding: ' || x)
			WHEN x BETWEEN 55296 AND 57343 THEN error('[tsdb 54000] requested character not valid for encoding: ' || x)
			ELSE chr(x) END`,
	// PostgreSQL's power and inverse trigonometric functions refuse what
	// has no real answer or does not fit a double; the engine's return
	// NaN or Infinity. (x ^ y is power too.)
	`CREATE MACRO _tsdb_dpower(x, y) AS CASE
			WHEN x = 0 AND y < 0 THEN error('[tsdb 2201F] zero raised to a negative power is undefined')
			WHEN x < 0 AND y <> floor(y) THEN error('[tsdb 2201F] a negative number raised to a non-integer power yields a complex result')
			WHEN isinf(pow(x, y)) AND NOT isinf(x) AND NOT isinf(y) THEN error('[tsdb 22003] value out of range: overflow')
			WHEN pow(x, y) = 0 AND x <> 0 AND NOT isinf(x) AND NOT isinf(y) THEN error('[tsdb 22003] value out of range: underflow')
			ELSE pow(x, y) END`,
	`CREATE MACRO _tsdb_power(x, y) AS _tsdb_dpower(CAST(x AS DOUBLE), CAST(y AS DOUBLE))`,
	`CREATE MACRO _tsdb_dasin(x) AS CASE WHEN (x < -1 OR x > 1) AND NOT isnan(x) THEN error('[tsdb 22003] input is out of range') ELSE asin(x) END`,
	`CREATE MACRO _tsdb_asin(x) AS _tsdb_dasin(CAST(x AS DOUBLE))`,
	`CREATE MACRO _tsdb_dacos(x) AS CASE WHEN (x < -1 OR x > 1) AND NOT isnan(x) THEN error('[tsdb 22003] input is out of range') ELSE acos(x) END`,
	`CREATE MACRO _tsdb_acos(x) AS _tsdb_dacos(CAST(x AS DOUBLE))`,
	`CREATE MACRO _tsdb_dacosh(x) AS CASE WHEN x < 1 THEN error('[tsdb 22003] input is out of range') ELSE acosh(x) END`,
	`CREATE MACRO _tsdb_acosh(x) AS _tsdb_dacosh(CAST(x AS DOUBLE))`,
	`CREATE MACRO _tsdb_datanh(x) AS CASE WHEN (x < -1 OR x > 1) AND NOT isnan(x) THEN error('[tsdb 22003] input is out of range') ELSE atanh(x) END`,
	`CREATE MACRO _tsdb_atanh(x) AS _tsdb_datanh(CAST(x AS DOUBLE))`,
	// round(float8) rounds a half to the even neighbour, as C's rint
	// does (round(2.5::float8) is 2); numeric's round, the engine's for
	// both, rounds it away from zero. (Written so that -0.5 gives -0, as
	// rint does, and a decimal keeps round's scale.)
	`CREATE MACRO _tsdb_round(x) AS CASE WHEN typeof(x) IN ('DOUBLE', 'FLOAT') AND abs(x - trunc(x)) = 0.5 AND round(x) % 2 <> 0
		THEN sign(x) * (abs(round(x)) - 1) ELSE round(x) END, (x, n) AS round(x, n)`,
	`CREATE MACRO _tsdb_sqrt(x) AS CASE WHEN x < 0 THEN error('[tsdb 2201F] cannot take square root of a negative number') ELSE sqrt(x) END`,
	`CREATE MACRO _tsdb_exp(x) AS CASE WHEN isinf(exp(x)) AND NOT isinf(x) THEN error('[tsdb 22003] value out of range: overflow')
			WHEN exp(x) = 0 AND NOT isinf(x) THEN error('[tsdb 22003] value out of range: underflow') ELSE exp(x) END`,
	`CREATE MACRO _tsdb_userbyid(x) AS 'tsdb'`,
	`CREATE MACRO _tsdb_visible(x) AS true`,
	`CREATE MACRO _tsdb_null2(a, b := NULL, c := NULL) AS CAST(NULL AS VARCHAR)`,
	`CREATE MACRO _tsdb_true2(a, b := NULL, c := NULL) AS true`,
	`CREATE MACRO _tsdb_zero(x) AS 0`,
	`CREATE MACRO _tsdb_substr2(s, st) AS substring(s, greatest(st, 1))`,
	`CREATE MACRO _tsdb_substr3(s, st, n) AS CASE WHEN n < 0 THEN error('[tsdb 22011] negative substring length not allowed')
			WHEN st < 1 THEN substring(s, 1, greatest(CAST(n AS BIGINT) + st - 1, 0)) ELSE substring(s, st, n) END`,
	// PostgreSQL writes hex digits in lower case.
	`CREATE MACRO _tsdb_to_hex(x) AS lower(to_hex(x))`,
	`CREATE MACRO _tsdb_false0() AS false`,
	`CREATE MACRO _tsdb_encoding(x) AS 'UTF8'`,
	// PostgreSQL's pg_size_pretty: bytes below 10 kB, then the largest
	// unit that keeps the number under 20,480 halves, rounded half up.
	`CREATE MACRO _tsdb_size_half(h, unit) AS CAST((h + CASE WHEN h < 0 THEN -1 ELSE 1 END) // 2 AS VARCHAR) || unit`,
	`CREATE MACRO _tsdb_size_pretty_b(x) AS CASE
			WHEN x IS NULL THEN NULL
			WHEN abs(x) < 10240 THEN CAST(x AS VARCHAR) || ' bytes'
			WHEN abs(x // 512) < 20479 THEN _tsdb_size_half(x // 512, ' kB')
			WHEN abs(x // 524288) < 20479 THEN _tsdb_size_half(x // 524288, ' MB')
			WHEN abs(x // 536870912) < 20479 THEN _tsdb_size_half(x // 536870912, ' GB')
			WHEN abs(x // 549755813888) < 20479 THEN _tsdb_size_half(x // 549755813888, ' TB')
			ELSE _tsdb_size_half(x // 562949953421312, ' PB') END`,
	`CREATE MACRO _tsdb_size_pretty(x) AS _tsdb_size_pretty_b(CAST(x AS BIGINT))`,
	`CREATE MACRO date_bin(stride, source, origin) AS time_bucket(stride, source, origin)`,
	`CREATE MACRO make_interval(years := 0, months := 0, weeks := 0, days := 0, hours := 0, mins := 0, secs := 0) AS
			to_months(CAST(years * 12 + months AS INTEGER)) + to_days(CAST(weeks * 7 + days AS INTEGER)) + to_hours(CAST(hours AS BIGINT)) + to_minutes(CAST(mins AS BIGINT)) + _tsdb_interval_secs(CAST(secs AS DOUBLE))`,
	// make_interval's seconds are a double, rounded to microseconds (rint).
	`CREATE MACRO _tsdb_interval_secs(s) AS CASE WHEN isnan(s) OR isinf(s) OR abs(s) >= 9223372036854.775807
			THEN error('[tsdb 22008] interval out of range') ELSE to_microseconds(CAST(round_even(s * 1000000, 0) AS BIGINT)) END`,
	// to_timestamp(double): infinities are the infinite timestamps, NaN
	// and what lies beyond the timestamps errors, as PostgreSQL's.
	`CREATE MACRO _tsdb_to_timestamp1(x) AS CASE WHEN CAST(x AS DOUBLE) = 'Infinity'::DOUBLE THEN 'infinity'::TIMESTAMPTZ
			WHEN CAST(x AS DOUBLE) = '-Infinity'::DOUBLE THEN '-infinity'::TIMESTAMPTZ
			WHEN isnan(CAST(x AS DOUBLE)) THEN error('[tsdb 22008] timestamp cannot be NaN')
			ELSE to_timestamp(CAST(x AS DOUBLE)) END`,
	`CREATE MACRO _tsdb_format_type(t, m) AS CASE
			WHEN t = 1184 AND m >= 0 THEN 'timestamp(' || m || ') with time zone' WHEN t = 1114 AND m >= 0 THEN 'timestamp(' || m || ') without time zone'
			WHEN t = 1043 AND m > 4 THEN 'character varying(' || (m - 4) || ')' WHEN t = 1042 AND m > 4 THEN 'character(' || (m - 4) || ')'
			WHEN t = 1560 AND m > 0 THEN 'bit(' || m || ')' WHEN t = 1562 AND m > 0 THEN 'bit varying(' || m || ')'
			WHEN t = 1700 AND m >= 4 THEN 'numeric(' || ((m - 4) // 65536) || ',' || ((m - 4) % 65536) || ')' ELSE _tsdb_format_type1(t) END`,
	`CREATE MACRO _tsdb_format_type1(t) AS CASE t WHEN 1184 THEN 'timestamp with time zone' WHEN 1114 THEN 'timestamp without time zone'
			WHEN 20 THEN 'bigint' WHEN 23 THEN 'integer' WHEN 21 THEN 'smallint' WHEN 701 THEN 'double precision' WHEN 700 THEN 'real'
			WHEN 16 THEN 'boolean' WHEN 25 THEN 'text' WHEN 1043 THEN 'character varying' WHEN 1042 THEN 'bpchar' WHEN 1700 THEN 'numeric'
			WHEN 1082 THEN 'date' WHEN 1083 THEN 'time without time zone' WHEN 1266 THEN 'time with time zone' WHEN 1186 THEN 'interval' WHEN 2950 THEN 'uuid'
			WHEN 17 THEN 'bytea' WHEN 114 THEN 'json' WHEN 1560 THEN 'bit' WHEN 1562 THEN 'bit varying' ELSE CAST(t AS VARCHAR) END`,
	// information_schema._pg_expandarray(pg_index.indkey), as JDBC's
	// getPrimaryKeys and getIndexInfo call it: a row (x, n) per element
	// of the key's columns, in the select list as PostgreSQL's
	// set-returning function is.
	// The search path as PostgreSQL reports it (DuckDB's own names its
	// internal schemas); JDBC asks it to tell types on the path.
	`CREATE MACRO _tsdb_current_schemas(implicit) AS CASE WHEN implicit THEN ['pg_catalog', 'public'] ELSE ['public'] END`,
	`CREATE MACRO _tsdb_expandarray(a) AS unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': CAST(a[i] AS INTEGER), 'n': CAST(i AS INTEGER)}))`,
	// tsdb has no views: a view named by its name does not exist (psql
	// asks by OID, and gets NULL as for any relation without a view).
	`CREATE MACRO _tsdb_viewdef(a, b := NULL) AS CASE WHEN typeof(a) = 'VARCHAR' THEN error('[tsdb 42P01] relation "' || a || '" does not exist') END`,
	// The wall clock's astronomical year (0 is 1 BC; the engine's ICU
	// gives a timestamptz its era year), and the era's year (1 BC is 1).
	// (NULL for an interval: extractTemplates bind it for intervals too.)
	`CREATE MACRO _tsdb_ayear(t) AS year(TRY_CAST(t AS TIMESTAMP))`,
	`CREATE MACRO _tsdb_eyear(t) AS CASE WHEN _tsdb_ayear(t) <= 0 THEN 1 - _tsdb_ayear(t) ELSE _tsdb_ayear(t) END`,
	`CREATE MACRO _tsdb_eisoyear(t) AS CASE WHEN isoyear(CAST(t AS TIMESTAMP)) <= 0 THEN 1 - isoyear(CAST(t AS TIMESTAMP)) ELSE isoyear(CAST(t AS TIMESTAMP)) END`,
	// A non-negative number with at least w digits (lpad alone would cut
	// a longer one).
	// to_char's TH suffix of a number's text: 1st, 2nd, 3rd, the teens th.
	// nanDivision: NaN / 0 is NaN; any other number / 0 still fails.
	// Bit strings (bitstring.go): a constant; a cast the rewrite could
	// not type, chosen by the engine's type (an integer's lowest bits,
	// a bit string fitted, text read); a shift by a negative count,
	// which PostgreSQL takes as one the other way; get_bit and bit_count
	// of bit strings or of bytea, set_bit of bit strings.
	`CREATE MACRO _tsdb_bit(s) AS CAST(s AS BIT)`,
	`CREATE MACRO _tsdb_fit_bit(b, n, varying) AS CASE WHEN n <= 0 OR length(b) = n OR (varying AND length(b) < n) THEN b
		WHEN length(b) > n THEN CAST(left(CAST(b AS VARCHAR), n) AS BIT)
		ELSE CAST(rpad(CAST(b AS VARCHAR), n, '0') AS BIT) END`,
	`CREATE MACRO _tsdb_int_bit(v, n) AS CAST(CASE WHEN greatest(n, 1) <= 64 THEN right(CAST(CAST(v AS BIT) AS VARCHAR), greatest(n, 1))
		ELSE lpad(CAST(CAST(v AS BIT) AS VARCHAR), n, CASE WHEN v < 0 THEN '1' ELSE '0' END) END AS BIT)`,
	`CREATE MACRO _tsdb_to_bit(x, n, varying) AS CASE WHEN typeof(x) = 'BIT' THEN _tsdb_fit_bit(CAST(x AS BIT), n, varying)
		WHEN typeof(x) IN ('INTEGER', 'BIGINT') AND varying THEN error('[tsdb 42846] cannot cast type ' || CASE WHEN typeof(x) = 'BIGINT' THEN 'bigint' ELSE 'integer' END || ' to bit varying')
		WHEN typeof(x) IN ('INTEGER', 'BIGINT') THEN _tsdb_int_bit(CAST(x AS BIGINT), n)
		ELSE CAST(_tsdb_bit_text(CAST(x AS VARCHAR), n, varying) AS BIT) END`,
	`CREATE MACRO _tsdb_shift(a, b, toleft) AS CASE WHEN typeof(a) = 'BIT' AND b < 0 THEN (CASE WHEN toleft THEN a >> -b ELSE a << -b END)
		WHEN toleft THEN a << b ELSE a >> b END`,
	`CREATE MACRO _tsdb_get_bit(x, n) AS CASE WHEN typeof(x) = 'BIT' THEN get_bit(CAST(x AS BIT), CAST(n AS INTEGER))
		ELSE _tsdb_get_bit_bytea(CAST(x AS BLOB), n) END`,
	// A temporary table's bit(n) or bit varying(n) column on UPDATE.
	`CREATE MACRO _tsdb_bit_check(b, n, varying) AS CASE WHEN b IS NULL OR bit_length(b) = n OR (varying AND bit_length(b) < n) THEN true
		WHEN varying THEN error('[tsdb 22001] bit string too long for type bit varying(' || n || ')')
		ELSE error('[tsdb 22026] bit string length ' || bit_length(b) || ' does not match type bit(' || n || ')') END`,
	// BitAssign of an expression: a bit string, or text read by the
	// bit input; anything else is PostgreSQL's 42804.
	`CREATE MACRO _tsdb_bit_assigned(x, name, ty) AS CASE WHEN typeof(x) = 'BIT' THEN CAST(x AS BIT)
		WHEN typeof(x) = 'VARCHAR' THEN CAST(_tsdb_bit_text(CAST(x AS VARCHAR), 0, false) AS BIT)
		WHEN typeof(x) = '"NULL"' THEN CAST(NULL AS BIT)
		ELSE error('[tsdb 42804] column "' || name || '" is of type ' || ty || ' but expression is of type ' || _tsdb_typeof(x)) END`,
	`CREATE MACRO _tsdb_bit_assign(b, n, varying) AS CASE WHEN _tsdb_bit_check(b, n, varying) THEN b END`,
	`CREATE MACRO _tsdb_set_bit_bits(x, n, v) AS set_bit(x, CAST(n AS INTEGER), CAST(v AS INTEGER))`,
	`CREATE MACRO _tsdb_bit_count(x) AS CASE WHEN typeof(x) = 'BIT' THEN bit_count(CAST(x AS BIT)) ELSE _tsdb_bit_count_bytea(CAST(x AS BLOB)) END`,
	`CREATE MACRO _tsdb_fdiv(a, b) AS CASE WHEN isnan(a) AND b IS NOT NULL THEN a ELSE a / b END`,
	// shiftLeft: a << b in two's complement of span = 2^bits; mask is
	// span - 1, top 2^(bits-1). (& binds looser than -.)
	`CREATE MACRO _tsdb_shl(a, b, mask, top, span) AS (((CAST(a AS HUGEINT) & mask) << b) & mask)
		- CASE WHEN (((CAST(a AS HUGEINT) & mask) << b) & mask) >= top THEN span ELSE 0 END`,
	`CREATE MACRO _tsdb_ordinal(s) AS CASE WHEN length(s) > 1 AND substr(s, -2, 1) = '1' THEN 'th'
		WHEN right(s, 1) = '1' THEN 'st' WHEN right(s, 1) = '2' THEN 'nd' WHEN right(s, 1) = '3' THEN 'rd' ELSE 'th' END`,
	`CREATE MACRO _tsdb_zeropad(n, w) AS lpad(CAST(n AS VARCHAR), CAST(greatest(w, length(CAST(n AS VARCHAR))) AS INTEGER), '0')`,
	// to_char's CC: the century, BC ones negative, padded to w digits.
	`CREATE MACRO _tsdb_century_text(t, w) AS CASE WHEN _tsdb_ayear(t) > 0 THEN _tsdb_zeropad((_tsdb_ayear(t) + 99) // 100, w)
			ELSE '-' || _tsdb_zeropad((99 - (_tsdb_ayear(t) - 1)) // 100, w) END`,
	// to_char's OF: the session zone's offset at t, +05:30 or -08.
	`CREATE MACRO _tsdb_tz_offset(t) AS CASE WHEN date_part('timezone', t) < 0 THEN '-' ELSE '+' END
			|| lpad(CAST(abs(date_part('timezone', t)) // 3600 AS VARCHAR), 2, '0')
			|| CASE WHEN abs(date_part('timezone', t)) % 3600 <> 0 THEN ':' || lpad(CAST(abs(date_part('timezone', t)) % 3600 // 60 AS VARCHAR), 2, '0') ELSE '' END`,
	// A timestamp rounded to a multiple of s microseconds, halves away
	// from zero (PostgreSQL's AdjustTimestampForTypmod).
	`CREATE MACRO _tsdb_round_ts(t, s) AS CASE WHEN isfinite(t) THEN t + to_microseconds(CASE WHEN epoch_us(t) >= 0
			THEN ((epoch_us(t) + s // 2) // s) * s ELSE -(((s // 2 - epoch_us(t)) // s) * s) END - epoch_us(t)) ELSE t END`,
	// varchar(n) input: spaces past n are cut, anything else past n is
	// refused, as PostgreSQL's input does.
	`CREATE MACRO _tsdb_varchar(s, n) AS CASE WHEN length(s) <= n THEN s WHEN rtrim(substr(s, n + 1), ' ') = '' THEN substr(s, 1, n)
			ELSE error('[tsdb 22001] value too long for type character varying(' || n || ')') END`,
	// character(n) input, as varchar(n)'s with its type in the error.
	`CREATE MACRO _tsdb_bpchar(s, n) AS CASE WHEN length(s) <= n THEN s WHEN rtrim(substr(s, n + 1), ' ') = '' THEN substr(s, 1, n)
			ELSE error('[tsdb 22001] value too long for type character(' || n || ')') END`,
	// Text converted to a number at run time is read by PostgreSQL's
	// input rules (CheckTextInput, in Go: _tsdb_text_ok raises the error,
	// and is not volatile, as error() is, so the cast may stand where
	// the engine wants a stable expression, such as a window's ORDER
	// BY); anything but text is left to the cast.
	`CREATE MACRO _tsdb_input(s, ty) AS CASE WHEN typeof(s) <> 'VARCHAR' OR _tsdb_text_ok(CAST(s AS VARCHAR), ty) THEN s END`,
	// void prints as an empty string.
	`CREATE MACRO _tsdb_sleep(s) AS coalesce(CAST(sleep_ms(CAST(s * 1000 AS BIGINT)) AS VARCHAR), '')`,
	// An empty delimiter leaves the string whole (field 1 or -1); DuckDB
	// splits it into characters.
	`CREATE MACRO _tsdb_split_part(s, d, n) AS CASE WHEN n = 0 THEN error('[tsdb 22023] field position must not be zero')
			WHEN d = '' THEN CASE WHEN n = 1 OR n = -1 THEN s ELSE '' END ELSE split_part(s, d, n) END`,
	// Text to bytea at run time: PostgreSQL's hex format, or text without
	// backslashes (escape sequences are read only in literals, ParseBytea).
	`CREATE MACRO _tsdb_bytea(s) AS CASE WHEN typeof(s) = 'BLOB' THEN CAST(s AS BLOB)
			WHEN starts_with(CAST(s AS VARCHAR), '\x') THEN CASE WHEN regexp_full_match(CAST(s AS VARCHAR), '\\x(\s*[0-9a-fA-F][0-9a-fA-F])*\s*')
				THEN unhex(regexp_replace(substr(CAST(s AS VARCHAR), 3), '\s', '', 'g'))
				ELSE error('[tsdb 22P02] invalid input syntax for type bytea') END
			WHEN contains(CAST(s AS VARCHAR), '\') THEN error('[tsdb 0A000] bytea escape sequences are read in literals only')
			ELSE CAST(CAST(s AS VARCHAR) AS BLOB) END`,
	// The transition and combine functions of PostgreSQL's float
	// aggregates (float.c): the state {N, Sx, Sxx} of Youngs-Cramer
	// sums, {N, Sx, Sxx, Sy, Syy, Sxy} for the regressions. An input
	// that makes a sum infinite makes Sxx NaN (an infinite input) or is
	// an overflow (finite inputs).
	`CREATE MACRO _tsdb_float8_state(s, n) AS CASE WHEN len(s) = n AND list_position(s, NULL) IS NULL THEN CAST(s AS DOUBLE[])
			ELSE error('[tsdb XX000] expected ' || n || '-element float8 array') END`,
	`CREATE MACRO _tsdb_float8_sxx(n, sx, sxx, x, newsx, newsxx) AS CASE
			WHEN n = 0 THEN CASE WHEN isnan(x) OR isinf(x) THEN 'NaN'::DOUBLE ELSE sxx END
			WHEN isinf(newsx) OR isinf(newsxx) THEN CASE WHEN NOT isinf(sx) AND NOT isinf(x)
				THEN error('[tsdb 22003] value out of range: overflow') ELSE 'NaN'::DOUBLE END
			ELSE newsxx END`,
	`CREATE MACRO _tsdb_float8_accum(s, x) AS list_transform([_tsdb_float8_state(s, 3)], lambda t: [t[1] + 1, t[2] + x,
			_tsdb_float8_sxx(t[1], t[2], t[3], x, t[2] + x, t[3] + pow(x * (t[1] + 1) - (t[2] + x), 2) / ((t[1] + 1) * t[1]))])[1]`,
	`CREATE MACRO _tsdb_float8_combine(a, b) AS list_transform([[_tsdb_float8_state(a, 3), _tsdb_float8_state(b, 3)]], lambda p:
			CASE WHEN p[1][1] = 0 THEN p[2] WHEN p[2][1] = 0 THEN p[1]
				ELSE [p[1][1] + p[2][1], p[1][2] + p[2][2],
					p[1][3] + p[2][3] + p[1][1] * p[2][1] * pow(p[1][2] / p[1][1] - p[2][2] / p[2][1], 2) / (p[1][1] + p[2][1])] END)[1]`,
	`CREATE MACRO _tsdb_float8_regr_accum(s, y, x) AS list_transform([_tsdb_float8_state(s, 6)], lambda t: CASE WHEN t[1] = 0
			THEN [1, x, CASE WHEN isnan(x) OR isinf(x) THEN 'NaN'::DOUBLE ELSE t[3] END, y,
				CASE WHEN isnan(y) OR isinf(y) THEN 'NaN'::DOUBLE ELSE t[5] END,
				CASE WHEN isnan(x) OR isinf(x) OR isnan(y) OR isinf(y) THEN 'NaN'::DOUBLE ELSE t[6] END]
			ELSE [t[1] + 1, t[2] + x,
				t[3] + pow(x * (t[1] + 1) - (t[2] + x), 2) / ((t[1] + 1) * t[1]),
				t[4] + y,
				t[5] + pow(y * (t[1] + 1) - (t[4] + y), 2) / ((t[1] + 1) * t[1]),
				t[6] + (x * (t[1] + 1) - (t[2] + x)) * (y * (t[1] + 1) - (t[4] + y)) / ((t[1] + 1) * t[1])] END)[1]`,
	`CREATE MACRO _tsdb_float8_regr_combine(a, b) AS list_transform([[_tsdb_float8_state(a, 6), _tsdb_float8_state(b, 6)]], lambda p:
			CASE WHEN p[1][1] = 0 THEN p[2] WHEN p[2][1] = 0 THEN p[1]
				ELSE [p[1][1] + p[2][1], p[1][2] + p[2][2],
					p[1][3] + p[2][3] + p[1][1] * p[2][1] * pow(p[1][2] / p[1][1] - p[2][2] / p[2][1], 2) / (p[1][1] + p[2][1]),
					p[1][4] + p[2][4],
					p[1][5] + p[2][5] + p[1][1] * p[2][1] * pow(p[1][4] / p[1][1] - p[2][4] / p[2][1], 2) / (p[1][1] + p[2][1]),
					p[1][6] + p[2][6] + p[1][1] * p[2][1] * (p[1][2] / p[1][1] - p[2][2] / p[2][1]) * (p[1][4] / p[1][1] - p[2][4] / p[2][1]) / (p[1][1] + p[2][1])] END)[1]`,
	// timestamptz - timestamptz (TimestamptzDifference): the
	// microseconds between, as whole days and a time of the same sign.
	`CREATE MACRO _tsdb_timestamptz_mi(a, b) AS CASE
			WHEN isinf(CAST(a AS TIMESTAMPTZ)) OR isinf(CAST(b AS TIMESTAMPTZ)) THEN error('[tsdb 22008] cannot subtract infinite timestamps')
			ELSE to_days(CAST((epoch_us(CAST(a AS TIMESTAMPTZ)) - epoch_us(CAST(b AS TIMESTAMPTZ))) // 86400000000 AS INTEGER))
				+ to_microseconds((epoch_us(CAST(a AS TIMESTAMPTZ)) - epoch_us(CAST(b AS TIMESTAMPTZ))) % 86400000000) END`,
	// quote_literal and quote_nullable: a string literal of the value's
	// text, quotes doubled; with a backslash the E'' form, backslashes
	// doubled, as PostgreSQL's quote.c writes it.
	`CREATE MACRO quote_literal(x) AS CASE WHEN contains(CAST(x AS VARCHAR), '\')
			THEN 'E''' || replace(replace(CAST(x AS VARCHAR), '\', '\\'), '''', '''''') || ''''
			ELSE '''' || replace(CAST(x AS VARCHAR), '''', '''''') || '''' END`,
	`CREATE MACRO quote_nullable(x) AS CASE WHEN x IS NULL THEN 'NULL' ELSE quote_literal(x) END`,
	// bool_and's and bool_or's transition functions, strict: NULL state
	// or input is NULL.
	`CREATE MACRO _tsdb_booland(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE CAST(a AS BOOLEAN) AND CAST(b AS BOOLEAN) END`,
	`CREATE MACRO _tsdb_boolor(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE CAST(a AS BOOLEAN) OR CAST(b AS BOOLEAN) END`,
	// string_agg's first argument (rewritePG): bytea refused.
	`CREATE MACRO _tsdb_not_bytea(x) AS CASE WHEN typeof(x) = 'BLOB' THEN error('[tsdb 0A000] string_agg of bytea is not supported') ELSE x END`,
	// percentile_cont and percentile_disc of a fraction that is not a
	// constant (PercentileFraction), over the group's sorted values,
	// NULLs left out, as PostgreSQL computes them.
	`CREATE MACRO _tsdb_pct_cont(l, f) AS CASE
			WHEN f IS NULL THEN NULL
			WHEN f < 0 OR f > 1 OR isnan(f) THEN error('[tsdb 22003] percentile value ' || f || ' is not between 0 and 1')
			WHEN len(l) = 0 THEN NULL
			ELSE l[CAST(floor(f * (len(l) - 1)) AS BIGINT) + 1] + (f * (len(l) - 1) - floor(f * (len(l) - 1)))
				* (l[CAST(ceil(f * (len(l) - 1)) AS BIGINT) + 1] - l[CAST(floor(f * (len(l) - 1)) AS BIGINT) + 1]) END`,
	`CREATE MACRO _tsdb_pct_disc(l, f) AS CASE
			WHEN f IS NULL THEN NULL
			WHEN f < 0 OR f > 1 OR isnan(f) THEN error('[tsdb 22003] percentile value ' || f || ' is not between 0 and 1')
			WHEN len(l) = 0 THEN NULL
			ELSE l[greatest(CAST(ceil(f * len(l)) AS BIGINT), 1)] END`,
	// PostgreSQL's sha256 returns bytea; DuckDB's returns the hex text.
	`CREATE MACRO _tsdb_sha256(x) AS unhex(sha256(x))`,
	// DuckDB's two-argument decode returned its input unchanged.
	`CREATE MACRO _tsdb_decode(s, f) AS CASE lower(f)
			WHEN 'hex' THEN CASE WHEN regexp_full_match(s, '(\s*[0-9a-fA-F][0-9a-fA-F])*\s*') THEN unhex(regexp_replace(s, '\s', '', 'g'))
				ELSE error('[tsdb 22023] invalid hexadecimal data: "' || s || '"') END
			WHEN 'base64' THEN from_base64(regexp_replace(s, '\s', '', 'g'))
			WHEN 'escape' THEN _tsdb_decode_escape(s)
			ELSE error('[tsdb 22023] unrecognized encoding: "' || f || '"') END`,
	// base64 lines end after 76 characters, as PostgreSQL writes them.
	`CREATE MACRO _tsdb_encode(b, f) AS CASE lower(f)
			WHEN 'hex' THEN lower(hex(b))
			WHEN 'base64' THEN rtrim(regexp_replace(to_base64(b), '(.{76})', '\1' || chr(10), 'g'), chr(10))
			WHEN 'escape' THEN _tsdb_encode_escape(b)
			ELSE error('[tsdb 22023] unrecognized encoding: "' || f || '"') END`,
	// PostgreSQL's type names, not DuckDB's.
	`CREATE MACRO _tsdb_pgtypename(t) AS CASE
			WHEN t = 'varchar' THEN 'text' WHEN t = 'double' THEN 'double precision' WHEN t = 'float' THEN 'real'
			WHEN t = 'blob' THEN 'bytea' WHEN t = 'timestamp' THEN 'timestamp without time zone'
			WHEN t = 'time' THEN 'time without time zone' WHEN t = '"null"' THEN 'unknown'
			WHEN t = 'hugeint' OR starts_with(t, 'decimal') THEN 'numeric' WHEN starts_with(t, 'struct') THEN 'record'
			ELSE t END`,
	// width_bucket of numerics is exact, of anything with a double
	// floating point, as PostgreSQL's two versions (dialect.WidthBucket).
	`CREATE MACRO _tsdb_width_bucket(x, lo, hi, n) AS _tsdb_width_bucket_go(CAST(x AS VARCHAR), CAST(lo AS VARCHAR), CAST(hi AS VARCHAR), CAST(n AS BIGINT),
		(typeof(x) LIKE 'DECIMAL%' OR typeof(lo) LIKE 'DECIMAL%' OR typeof(hi) LIKE 'DECIMAL%') AND NOT (typeof(x) IN ('DOUBLE', 'FLOAT') OR typeof(lo) IN ('DOUBLE', 'FLOAT') OR typeof(hi) IN ('DOUBLE', 'FLOAT')))`,
	// div takes numerics (and integers): a double is not one
	// implicitly in PostgreSQL, which has no div of it (42883).
	`CREATE MACRO _tsdb_div(a, b) AS CASE WHEN typeof(a) IN ('DOUBLE', 'FLOAT') OR typeof(b) IN ('DOUBLE', 'FLOAT')
		THEN error('[tsdb 42883] function div(double precision) does not exist')
		ELSE CAST(_tsdb_div_go(CAST(a AS VARCHAR), CAST(b AS VARCHAR)) AS DECIMAL(38,0)) END`,
	`CREATE MACRO _tsdb_typeof(x) AS _tsdb_pgtypename(regexp_replace(lower(typeof(x)), '(\[\])+$', '')) || regexp_extract(typeof(x), '(\[\])+$')`,
}, append(rowMacros(), floatCheckMacros...)...)
