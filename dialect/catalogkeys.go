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
			nums := make([]string, len(k.Columns))
			for i, c := range k.Columns {
				nums[i] = fmt.Sprint(t.ColumnIndex(c) + 1)
			}
			contype, _ := keyType(k)
			rows = append(rows, fmt.Sprintf("(CAST(%d AS BIGINT), %s, CAST(%d AS BIGINT), '%s', false, false, true, CAST(%d AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT), true, 0, true, CAST([%s] AS SMALLINT[]), CAST(NULL AS SMALLINT[]))",
				keyOID(t, k), schema.QuoteString(k.Name), nsPublic, contype, TableOID(t), strings.Join(nums, ", ")))
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
