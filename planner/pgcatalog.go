package planner

import (
	"fmt"
	"hash/fnv"
	"strings"

	"tsdb/dialect"
	"tsdb/internal/schema"
)

// tableOID gives a table a stable OID derived from its Delta table id, so
// that psql's follow-up queries by OID find it again.
func tableOID(t schema.Table) int64 { return hashOID(t.ID, 16384, 1_000_000_000) }

// hashOID is a stable OID for key in [base, base+span): tables and roles
// take theirs from 16384 up, as PostgreSQL's user objects do, catalog
// relations theirs below.
func hashOID(key string, base, span uint32) int64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int64(base) + int64(h.Sum32()%span)
}

// emptyRelation is a catalog relation that has no rows in tsdb, with the
// columns clients select from it.
func emptyRelation(cols ...string) func([]schema.Table) string {
	return func([]schema.Table) string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			ty := "VARCHAR"
			if name, t, ok := strings.Cut(c, ":"); ok {
				c, ty = name, t
			}
			parts[i] = "CAST(NULL AS " + ty + ") AS " + schema.QuoteIdent(c)
		}
		return "SELECT " + strings.Join(parts, ", ") + " WHERE false"
	}
}

const nsPublic = 2200

// pgCatalogRelations are the pg_catalog relations psql's \dt, \d, \d+, \dn
// and \l read (information_schema and the few Grafana reads are in
// catalogRelations).
var pgCatalogRelations = map[string]func([]schema.Table) string{
	"pg_catalog.pg_class": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			// reloptions: what CREATE TABLE … WITH set (psql's \d+ shows it).
			options := ""
			if t.Cluster != "" {
				options = schema.QuoteString("cluster_by=" + t.Cluster)
			}
			rows = append(rows, fmt.Sprintf("(%d, %s, %d, 'r', 10, 2, 0, false, false, false, false, false, false, 0, 0, 'p', 'd', 0, %d, false, -1, -1, CAST([%s] AS VARCHAR[]), NULL, NULL)",
				tableOID(t), schema.QuoteString(t.Name), nsPublic, len(t.Columns), options))
		}
		return valuesView(rows, "oid, relname, relnamespace, relkind, relowner, relam, relchecks, relhasindex, relhasrules, relhastriggers, relrowsecurity, relforcerowsecurity, relispartition, reltablespace, reloftype, relpersistence, relreplident, reltoastrelid, relnatts, relhassubclass, relpages, reltuples, reloptions, relacl, relpartbound",
			"CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS INTEGER), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS INTEGER), CAST(NULL AS BOOLEAN), CAST(NULL AS INTEGER), CAST(NULL AS DOUBLE), CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)") +
			" ORDER BY 1"
	},
	"pg_catalog.pg_attribute": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			for i, c := range t.Columns {
				oid, typmod := c.Type.OID(), -1
				if p, ok := c.Precision(); ok {
					typmod = p
				}
				if c.MaxLength > 0 {
					oid, typmod = 1043, c.MaxLength+4 // varchar, PostgreSQL's VARHDRSZ added
				}
				rows = append(rows, fmt.Sprintf("(%d, %s, %d, %d, %d, %v, false, false, '', '', 0, 'p', '', -1, %d, NULL)",
					tableOID(t), schema.QuoteString(c.Name), oid, typmod, i+1, c.NotNull, typeLen(oid)))
			}
		}
		return valuesView(rows, "attrelid, attname, atttypid, atttypmod, attnum, attnotnull, attisdropped, atthasdef, attidentity, attgenerated, attcollation, attstorage, attcompression, attstattarget, attlen, attacl",
			"CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(NULL AS VARCHAR)")
	},
	"pg_catalog.pg_type": func([]schema.Table) string {
		// The types tables and results have, with the columns JDBC's
		// getColumns and psql's \dT read.
		var rows []string
		for _, ty := range pgTypes {
			arr, hasArray := arrayOIDs[ty.oid]
			rows = append(rows, fmt.Sprintf("(%d, %s, 11, 'b', 0, 10, %d, false, -1, 0, 0, 0, %d, %s, ',', true)",
				ty.oid, schema.QuoteString(ty.name), ty.len, arr, schema.QuoteString(ty.category)))
			// And its array, if results have one, named as PostgreSQL
			// names arrays.
			if hasArray {
				rows = append(rows, fmt.Sprintf("(%d, %s, 11, 'b', 0, 10, -1, false, -1, 0, 0, %d, 0, 'A', ',', true)",
					arr, schema.QuoteString("_"+ty.name), ty.oid))
			}
		}
		return valuesView(rows, "oid, typname, typnamespace, typtype, typcollation, typowner, typlen, typnotnull, typtypmod, typbasetype, typrelid, typelem, typarray, typcategory, typdelim, typisdefined", "")
	},
	"pg_catalog.pg_am": func([]schema.Table) string {
		return "SELECT * FROM (VALUES (2, 'heap', 't')) AS t(oid, amname, amtype)"
	},
	// The session binds these two with the role store (bindCatalog).
	"pg_catalog.pg_roles":        func([]schema.Table) string { return rolesRelation(nil) },
	"pg_catalog.pg_auth_members": func([]schema.Table) string { return authMembersRelation(nil) },
	"pg_catalog.pg_settings": func([]schema.Table) string {
		// In a fixed order: a session rebuilds a view whose text changed.
		var rows []string
		for _, k := range dialect.Names() {
			def, _ := dialect.Default(k)
			rows = append(rows, fmt.Sprintf("(%s, %s)", schema.QuoteString(dialect.DisplayName(k)), schema.QuoteString(def)))
		}
		return valuesView(rows, "name, setting", "")
	},
	"pg_catalog.pg_attrdef":               emptyRelation("oid", "adrelid", "adnum", "adbin"),
	"pg_catalog.pg_collation":             emptyRelation("oid", "collname", "collnamespace"),
	"pg_catalog.pg_index":                 emptyRelation("indexrelid", "indrelid", "indisprimary", "indisunique", "indisclustered", "indisvalid", "indisreplident", "indkey", "indoption:SMALLINT[]", "indexprs", "indpred", "indnatts:INTEGER"),
	"pg_catalog.pg_constraint":            emptyRelation("oid", "conname", "conrelid", "contype", "conindid", "conparentid", "confrelid", "conislocal", "connoinherit"),
	"pg_catalog.pg_inherits":              emptyRelation("inhrelid", "inhparent", "inhseqno", "inhdetachpending"),
	"pg_catalog.pg_policy":                emptyRelation("oid", "polname", "polrelid", "polpermissive", "polroles:BIGINT[]", "polqual", "polwithcheck", "polcmd"),
	"pg_catalog.pg_statistic_ext":         emptyRelation("oid", "stxrelid", "stxname", "stxnamespace", "stxkeys:BIGINT[]", "stxkind:VARCHAR[]", "stxstattarget", "stxexprs"),
	"pg_catalog.pg_publication":           emptyRelation("oid", "pubname", "puballtables"),
	"pg_catalog.pg_publication_rel":       emptyRelation("oid", "prpubid", "prrelid", "prqual", "prattrs:SMALLINT[]"),
	"pg_catalog.pg_publication_namespace": emptyRelation("oid", "pnpubid", "pnnspid"),
	"pg_catalog.pg_trigger":               emptyRelation("oid", "tgrelid", "tgname", "tgisinternal", "tgenabled", "tgparentid"),
	"pg_catalog.pg_rewrite":               emptyRelation("oid", "rulename", "ev_class"),
	"pg_catalog.pg_foreign_table":         emptyRelation("ftrelid", "ftserver"),
	"pg_catalog.pg_partitioned_table":     emptyRelation("partrelid", "partstrat"),
	"pg_catalog.pg_tablespace":            emptyRelation("oid", "spcname"),
	"pg_catalog.pg_description":           emptyRelation("objoid", "classoid", "objsubid", "description"),
	"pg_catalog.pg_proc":                  emptyRelation("oid", "proname", "pronamespace", "prokind", "prorettype", "proargtypes", "proretset:BOOLEAN", "prolang"),
	"pg_catalog.pg_event_trigger":         emptyRelation("oid", "evtname"),
	"pg_catalog.pg_namespace": func([]schema.Table) string {
		return "SELECT * FROM (VALUES (2200, 'public', 10, NULL), (11, 'pg_catalog', 10, NULL), (13000, 'information_schema', 10, NULL)) AS t(oid, nspname, nspowner, nspacl)"
	},
	"pg_catalog.pg_database": func([]schema.Table) string {
		return "SELECT * FROM (VALUES (16384, 'tsdb', 10, 6, 'C', 'C', 'c', NULL, false, true, -1, NULL, 1663)) AS t(oid, datname, datdba, encoding, datcollate, datctype, datlocprovider, daticulocale, datistemplate, datallowconn, datconnlimit, datacl, dattablespace)"
	},
}

// pgTypes are the rows of pg_type: the types of tables' columns and of
// query results.
var pgTypes = []struct {
	oid      uint32
	name     string
	len      int
	category string
}{
	{16, "bool", 1, "B"}, {17, "bytea", -1, "U"}, {20, "int8", 8, "N"}, {21, "int2", 2, "N"}, {23, "int4", 4, "N"},
	{25, "text", -1, "S"}, {700, "float4", 4, "N"}, {701, "float8", 8, "N"}, {1043, "varchar", -1, "S"},
	{1082, "date", 4, "D"}, {1083, "time", 8, "D"}, {1114, "timestamp", 8, "D"}, {1184, "timestamptz", 8, "D"},
	{1186, "interval", 16, "T"}, {1700, "numeric", -1, "N"}, {2950, "uuid", 16, "U"}, {114, "json", -1, "U"},
}

// typeLen is pg_type.typlen of a type OID.
func typeLen(oid uint32) int {
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.len
		}
	}
	return -1
}
