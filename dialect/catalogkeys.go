package dialect

import (
	"fmt"
	"strings"

	"tsdb/internal/schema"
)

// The catalogs' rows for tables' PRIMARY KEY and UNIQUE constraints
// (schema.Key), which ORMs and schema tools read back: pg_constraint,
// information_schema.table_constraints and key_column_usage.

// keyOID is a constraint's OID, stable for its table and name.
func keyOID(t schema.Table, k schema.Key) int64 {
	return HashOID(t.ID+"/"+k.Name, 16384, 1_000_000_000)
}

// IndexOID is the OID of the unique index that stands behind a key, as
// PostgreSQL builds one for each PRIMARY KEY and UNIQUE constraint.
func IndexOID(t schema.Table, k schema.Key) int64 {
	return HashOID(t.ID+"/index/"+k.Name, 16384, 1_000_000_000)
}

// KeyDefsRelation names the rows pg_get_indexdef and pg_get_constraintdef
// read for keys: each key's index and constraint OIDs, the texts
// PostgreSQL gives them, and the index's columns (pg_get_indexdef(oid, n,
// …) names the n-th).
const KeyDefsRelation = "tsdb.keydefs"

// keyColumns are a key's columns as a definition lists them.
func keyColumns(k schema.Key) string {
	names := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		names[i] = QuoteIdent(c)
	}
	return strings.Join(names, ", ")
}

func keyDefsRelation(ts []schema.Table) string {
	var rows []string
	for _, t := range ts {
		for _, k := range t.Keys {
			_, text := keyType(k)
			index := fmt.Sprintf("CREATE UNIQUE INDEX %s ON public.%s USING btree (%s)", QuoteIdent(k.Name), QuoteIdent(t.Name), keyColumns(k))
			cols := make([]string, len(k.Columns))
			for i, c := range k.Columns {
				cols[i] = schema.QuoteString(QuoteIdent(c))
			}
			rows = append(rows, fmt.Sprintf("(CAST(%d AS BIGINT), CAST(%d AS BIGINT), %s, %s, CAST([%s] AS VARCHAR[]))",
				IndexOID(t, k), keyOID(t, k), schema.QuoteString(index), schema.QuoteString(fmt.Sprintf("%s (%s)", text, keyColumns(k))), strings.Join(cols, ", ")))
		}
	}
	return ValuesView(rows, "_tsdb_index_oid, _tsdb_con_oid, _tsdb_indexdef, _tsdb_condef, _tsdb_columns",
		"CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR[])")
}

// pgIndexRelation lists the index behind each key, as pg_index does (JDBC's
// getPrimaryKeys, SQLAlchemy's reflection and psql's \d read it).
func pgIndexRelation(ts []schema.Table) string {
	var rows []string
	for _, t := range ts {
		for _, k := range t.Keys {
			nums := keyAttnums(t, k)
			rows = append(rows, fmt.Sprintf("(CAST(%d AS BIGINT), CAST(%d AS BIGINT), %v, true, false, true, false, CAST([%s] AS SMALLINT[]), CAST([%s] AS SMALLINT[]), NULL, NULL, %d, %d)",
				IndexOID(t, k), TableOID(t), k.Primary, strings.Join(nums, ", "), strings.TrimSuffix(strings.Repeat("0, ", len(nums)), ", "), len(nums), len(nums)))
		}
	}
	return ValuesView(rows, "indexrelid, indrelid, indisprimary, indisunique, indisclustered, indisvalid, indisreplident, indkey, indoption, indexprs, indpred, indnatts, indnkeyatts",
		"CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS SMALLINT[]), CAST(NULL AS SMALLINT[]), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER)")
}

// keyAttnums are a key's columns as attribute numbers (pg_attribute.attnum).
func keyAttnums(t schema.Table, k schema.Key) []string {
	nums := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		nums[i] = fmt.Sprint(t.ColumnIndex(c) + 1)
	}
	return nums
}

func keyType(k schema.Key) (contype, text string) {
	if k.Primary {
		return "p", "PRIMARY KEY"
	}
	return "u", "UNIQUE"
}

func pgConstraintRelation(ts []schema.Table) string {
	var rows []string
	for _, t := range ts {
		for _, k := range t.Keys {
			nums := keyAttnums(t, k)
			contype, _ := keyType(k)
			rows = append(rows, fmt.Sprintf("(CAST(%d AS BIGINT), %s, CAST(%d AS BIGINT), '%s', false, false, true, CAST(%d AS BIGINT), CAST(0 AS BIGINT), CAST(%d AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT), true, 0, true, CAST([%s] AS SMALLINT[]), CAST(NULL AS SMALLINT[]))",
				keyOID(t, k), schema.QuoteString(k.Name), nsPublic, contype, TableOID(t), IndexOID(t, k), strings.Join(nums, ", ")))
		}
	}
	return ValuesView(rows, "oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, conislocal, coninhcount, connoinherit, conkey, confkey",
		"CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), CAST(NULL AS INTEGER), CAST(NULL AS BOOLEAN), CAST(NULL AS SMALLINT[]), CAST(NULL AS SMALLINT[])")
}

func tableConstraintsRelation(ts []schema.Table) string {
	var rows []string
	for _, t := range ts {
		for _, k := range t.Keys {
			_, text := keyType(k)
			rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, 'tsdb', 'public', %s, '%s', 'NO', 'NO', 'YES', 'YES')",
				schema.QuoteString(k.Name), schema.QuoteString(t.Name), text))
		}
	}
	return ValuesView(rows, "constraint_catalog, constraint_schema, constraint_name, table_catalog, table_schema, table_name, constraint_type, is_deferrable, initially_deferred, enforced, nulls_distinct",
		strings.TrimSuffix(strings.Repeat("CAST(NULL AS VARCHAR), ", 11), ", "))
}

func keyColumnUsageRelation(ts []schema.Table) string {
	var rows []string
	for _, t := range ts {
		for _, k := range t.Keys {
			for i, c := range k.Columns {
				rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, 'tsdb', 'public', %s, %s, %d, CAST(NULL AS INTEGER))",
					schema.QuoteString(k.Name), schema.QuoteString(t.Name), schema.QuoteString(c), i+1))
			}
		}
	}
	return ValuesView(rows, "constraint_catalog, constraint_schema, constraint_name, table_catalog, table_schema, table_name, column_name, ordinal_position, position_in_unique_constraint",
		strings.Repeat("CAST(NULL AS VARCHAR), ", 7)+"CAST(NULL AS INTEGER), CAST(NULL AS INTEGER)")
}
