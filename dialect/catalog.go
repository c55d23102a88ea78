package dialect

// PostgreSQL's catalog as tsdb answers it: the information_schema and
// pg_catalog relations clients read (psql's \d, Grafana, JDBC), built
// from tsdb's tables in PostgreSQL's shape, and the OIDs they give tables
// and roles.

import (
	"fmt"
	"hash/fnv"
	"strings"

	"tsdb/internal/auth"
	"tsdb/internal/schema"
)

// catalogRelations are the catalog relations tsdb answers itself, from its
// own tables, in PostgreSQL's shape (the subset clients such as Grafana
// read). DuckDB's own catalogs would list engine internals instead.
var catalogRelations = map[string]func(tables []schema.Table) string{
	"information_schema.table_constraints": tableConstraintsRelation,
	"information_schema.key_column_usage":  keyColumnUsageRelation,
	"information_schema.tables": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			kind, insertable := "BASE TABLE", "YES"
			if t.ViewQuery != "" {
				kind, insertable = "VIEW", "NO"
			}
			if IsTempTable(t) {
				kind = "LOCAL TEMPORARY"
			}
			rows = append(rows, fmt.Sprintf("('tsdb', %s, %s, '%s', '%s', 'NO')", schema.QuoteString(schemaOf(t)), schema.QuoteString(t.Name), kind, insertable))
		}
		return ValuesView(rows, "table_catalog, table_schema, table_name, table_type, is_insertable_into, is_typed",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)")
	},
	"information_schema.columns": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			for i, c := range t.Columns {
				nullable := "YES"
				if c.NotNull {
					nullable = "NO"
				}
				dataType, udt, maxLen, precision := c.Type.String(), c.Type.UDTName(), "NULL", "NULL"
				numPrecision, numRadix, numScale := "NULL", "NULL", "NULL"
				switch c.Type {
				case schema.Decimal:
					if c.Digits == 0 {
						break // numeric without a precision (a view's column)
					}
					numPrecision, numRadix, numScale = fmt.Sprint(c.Digits), "10", fmt.Sprint(c.Scale)
				case schema.Int64:
					numPrecision, numRadix, numScale = "64", "2", "0"
				case schema.Int32:
					numPrecision, numRadix, numScale = "32", "2", "0"
				case schema.Int16:
					numPrecision, numRadix, numScale = "16", "2", "0"
				case schema.Float64:
					numPrecision, numRadix = "53", "2"
				case schema.Float32:
					numPrecision, numRadix = "24", "2"
				}
				if c.MaxLength > 0 && (c.Type == schema.Bit || c.Type == schema.VarBit) {
					maxLen = fmt.Sprint(c.MaxLength)
				} else if c.MaxLength > 0 {
					dataType, udt, maxLen = "character varying", "varchar", fmt.Sprint(c.MaxLength)
					if c.Padded {
						dataType, udt = "character", "bpchar"
					}
				}
				if c.Type.IsTimestamp() {
					precision = "6"
					if p, ok := c.Precision(); ok {
						precision = fmt.Sprint(p)
					}
				}
				rows = append(rows, fmt.Sprintf("('tsdb', %s, %s, %s, %d, %s, %s, %s, 'pg_catalog', NULL, %s, %s, %s, %s, %s)",
					schema.QuoteString(schemaOf(t)), schema.QuoteString(t.Name), schema.QuoteString(c.Name), i+1, schema.QuoteString(nullable), schema.QuoteString(dataType), schema.QuoteString(udt), maxLen, precision,
					numPrecision, numRadix, numScale))
			}
		}
		return ValuesView(rows, "table_catalog, table_schema, table_name, column_name, ordinal_position, is_nullable, data_type, udt_name, udt_schema, column_default, character_maximum_length, datetime_precision, numeric_precision, numeric_precision_radix, numeric_scale",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER)")
	},
	"information_schema.views": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			if t.ViewQuery != "" {
				rows = append(rows, fmt.Sprintf("('tsdb', 'public', %s, %s, 'NONE', 'NO', 'NO', 'NO', 'NO', 'NO')", schema.QuoteString(t.Name), schema.QuoteString(ViewDefinition(t.ViewQuery))))
			}
		}
		return ValuesView(rows, "table_catalog, table_schema, table_name, view_definition, check_option, is_updatable, is_insertable_into, is_trigger_updatable, is_trigger_deletable, is_trigger_insertable_into",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)")
	},
	"information_schema.schemata": func([]schema.Table) string {
		return "SELECT * FROM (VALUES ('tsdb', 'public', 'tsdb'), ('tsdb', 'information_schema', 'tsdb'), ('tsdb', 'pg_catalog', 'tsdb')) AS t(catalog_name, schema_name, schema_owner)"
	},
	"pg_catalog.pg_extension": func([]schema.Table) string {
		// No extensions: Grafana looks for TimescaleDB here.
		return "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS VARCHAR) AS extname, CAST(NULL AS BIGINT) AS extowner, CAST(NULL AS BIGINT) AS extnamespace, CAST(NULL AS BOOLEAN) AS extrelocatable, CAST(NULL AS VARCHAR) AS extversion WHERE false"
	},
}

func ValuesView(rows []string, cols, emptyRow string) string {
	if len(rows) == 0 {
		return fmt.Sprintf("SELECT * FROM (SELECT %s) AS t(%s) WHERE false", emptyRow, cols)
	}
	return fmt.Sprintf("SELECT * FROM (VALUES %s) AS t(%s)", strings.Join(rows, ", "), cols)
}

// CatalogRelation returns the view body of a catalog relation, or nil.
func CatalogRelation(name string) func([]schema.Table) string {
	if f, ok := catalogRelations[name]; ok {
		return f
	}
	return pgCatalogRelations[name]
}

// Roles in pg_roles: the admin (OID 10, as PostgreSQL's bootstrap
// superuser), PostgreSQL's two predefined roles tsdb grants, with their
// OIDs, and the roles made with CREATE ROLE.
var predefinedRoleOIDs = map[string]int64{auth.ReadAll: 6181, auth.WriteAll: 6182}

// roleOID gives a created role a stable OID from its name.
func roleOID(name string) int64 { return HashOID(name, 16384, 1_000_000_000) }

// RolesRelation is pg_roles for the roles of roles (nil: the admin only).
func RolesRelation(roles *auth.Store) string {
	row := func(oid int64, name string, super, login bool) string {
		return fmt.Sprintf("(%d, %s, %v, true, %v, %v, %v, -1, CAST(NULL AS TIMESTAMPTZ), false, %v)", oid, schema.QuoteString(name), super, super, super, login, super)
	}
	rows := []string{row(10, auth.Admin, true, true)}
	for _, name := range []string{auth.ReadAll, auth.WriteAll} {
		rows = append(rows, row(predefinedRoleOIDs[name], name, false, false))
	}
	if roles != nil {
		for _, r := range roles.Roles() {
			rows = append(rows, row(roleOID(r.Name), r.Name, false, true))
		}
	}
	return ValuesView(rows, "oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit, rolvaliduntil, rolreplication, rolbypassrls", "")
}

// AuthMembersRelation is pg_auth_members: which created role holds which
// predefined one.
func AuthMembersRelation(roles *auth.Store) string {
	var rows []string
	if roles != nil {
		for _, r := range roles.Roles() {
			for _, g := range r.Granted {
				if oid, ok := predefinedRoleOIDs[g]; ok {
					rows = append(rows, fmt.Sprintf("(%d, %d, %d, 10, false, true, true)", int64(len(rows))+1, oid, roleOID(r.Name)))
				}
			}
		}
	}
	return ValuesView(rows, "oid, roleid, member, grantor, admin_option, inherit_option, set_option",
		"CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN)")
}

// TableOID gives a table a stable OID derived from its Delta table id, so
// that psql's follow-up queries by OID find it again.
func TableOID(t schema.Table) int64 { return HashOID(t.ID, 16384, 1_000_000_000) }

// HashOID is a stable OID for key in [base, base+span): tables and roles
// take theirs from 16384 up, as PostgreSQL's user objects do, catalog
// relations theirs below.
func HashOID(key string, base, span uint32) int64 {
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

// nsTemp is the namespace of the session's temporary tables, which
// PostgreSQL calls pg_temp_N; tempSchema is its name.
const (
	nsTemp     = 16300
	tempSchema = "pg_temp_1"
)

// TempTableID marks the ID of a temporary table as the catalogs list it.
const TempTableID = "temp:"

// IsTempTable reports whether a catalog's table is a session's temporary
// table.
func IsTempTable(t schema.Table) bool { return strings.HasPrefix(t.ID, TempTableID) }

// schemaOf is the schema a catalog shows a table in.
func schemaOf(t schema.Table) string {
	if IsTempTable(t) {
		return tempSchema
	}
	return "public"
}

// pgCatalogRelations are the pg_catalog relations psql's \dt, \d, \d+, \dn
// and \l read (information_schema and the few Grafana reads are in
// catalogRelations).
var pgCatalogRelations = map[string]func([]schema.Table) string{
	"pg_catalog.pg_class": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			// reloptions: what CREATE TABLE … WITH set (psql's \d+ shows it).
			var opts []string
			if t.Cluster != "" {
				opts = append(opts, schema.QuoteString("cluster_by="+t.Cluster))
			}
			if len(t.Dedup) > 0 {
				opts = append(opts, schema.QuoteString("dedup_keys="+strings.Join(t.Dedup, ",")))
			}
			options := strings.Join(opts, ", ")
			kind, am, rules := "r", 2, false
			if t.ViewQuery != "" {
				kind, am, rules = "v", 0, true // a view is a rule over no storage
			}
			ns, persistence := nsPublic, "p"
			if IsTempTable(t) {
				ns, persistence = nsTemp, "t"
			}
			rows = append(rows, fmt.Sprintf("(%d, %s, %d, '%s', 10, %d, 0, %v, %v, false, false, false, false, 0, 0, '%s', 'd', 0, %d, false, -1, -1, CAST([%s] AS VARCHAR[]), NULL, NULL)",
				TableOID(t), schema.QuoteString(t.Name), ns, kind, am, len(t.Keys) > 0, rules, persistence, len(t.Columns), options))
			// The index behind each key (btree, access method 403).
			for _, k := range t.Keys {
				rows = append(rows, fmt.Sprintf("(%d, %s, %d, 'i', 10, 403, 0, false, false, false, false, false, false, 0, 0, '%s', 'n', 0, %d, false, -1, -1, CAST([] AS VARCHAR[]), NULL, NULL)",
					IndexOID(t, k), schema.QuoteString(k.Name), ns, persistence, len(k.Columns)))
			}
		}
		// The catalog relations themselves, with PostgreSQL 15's OIDs, as
		// clients look them up by name (relname = 'pg_class', JDBC's
		// system tables).
		for _, r := range catalogClasses {
			kind, am, index := "r", 2, true
			if r.view {
				kind, am, index = "v", 0, false
			}
			rows = append(rows, fmt.Sprintf("(%d, '%s', 11, '%s', 10, %d, 0, %v, %v, false, false, false, false, 0, 0, 'p', 'n', 0, %d, false, -1, -1, CAST([] AS VARCHAR[]), NULL, NULL)",
				r.oid, r.name, kind, am, index, r.view, r.natts))
		}
		return ValuesView(rows, "oid, relname, relnamespace, relkind, relowner, relam, relchecks, relhasindex, relhasrules, relhastriggers, relrowsecurity, relforcerowsecurity, relispartition, reltablespace, reloftype, relpersistence, relreplident, reltoastrelid, relnatts, relhassubclass, relpages, reltuples, reloptions, relacl, relpartbound",
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
				if c.MaxLength > 0 && (c.Type == schema.Bit || c.Type == schema.VarBit) {
					typmod = c.MaxLength // bit(n)'s is n
				} else if c.MaxLength > 0 {
					oid, typmod = 1043, c.MaxLength+4 // varchar, PostgreSQL's VARHDRSZ added
					if c.Padded {
						oid = 1042 // bpchar
					}
				}
				if c.Type == schema.Decimal && c.Digits > 0 {
					typmod = c.Digits<<16 | c.Scale + 4 // numeric(p, s) as PostgreSQL packs it
				}
				// attstorage: the type's storage, as psql's \d+ shows it
				// (text and character types extended, numeric main).
				storage := "p"
				switch oid {
				case 25, 1042, 1043, 17, 114, 3802, 1560, 1562:
					storage = "x"
				case 1700:
					storage = "m"
				}
				rows = append(rows, fmt.Sprintf("(%d, %s, %d, %d, %d, %v, false, false, '', '', 0, '%s', '', -1, %d, NULL)",
					TableOID(t), schema.QuoteString(c.Name), oid, typmod, i+1, c.NotNull, storage, TypeLen(oid)))
			}
		}
		return ValuesView(rows, "attrelid, attname, atttypid, atttypmod, attnum, attnotnull, attisdropped, atthasdef, attidentity, attgenerated, attcollation, attstorage, attcompression, attstattarget, attlen, attacl",
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
		return ValuesView(rows, "oid, typname, typnamespace, typtype, typcollation, typowner, typlen, typnotnull, typtypmod, typbasetype, typrelid, typelem, typarray, typcategory, typdelim, typisdefined", "")
	},
	"pg_catalog.pg_am": func([]schema.Table) string {
		return "SELECT * FROM (VALUES (2, 'heap', 't'), (403, 'btree', 'i')) AS t(oid, amname, amtype)"
	},
	// The session binds these two with the role store (bindCatalog).
	"pg_catalog.pg_roles":        func([]schema.Table) string { return RolesRelation(nil) },
	"pg_catalog.pg_auth_members": func([]schema.Table) string { return AuthMembersRelation(nil) },
	"pg_catalog.pg_settings": func([]schema.Table) string {
		// In a fixed order: a session rebuilds a view whose text changed.
		var rows []string
		for _, k := range Names() {
			def, _ := Default(k)
			rows = append(rows, fmt.Sprintf("(%s, %s)", schema.QuoteString(DisplayName(k)), schema.QuoteString(def)))
		}
		return ValuesView(rows, "name, setting", "")
	},
	"pg_catalog.pg_attrdef":               emptyRelation("oid", "adrelid", "adnum", "adbin"),
	"pg_catalog.pg_collation":             emptyRelation("oid", "collname", "collnamespace"),
	"pg_catalog.pg_index":                 pgIndexRelation,
	KeyDefsRelation:                       keyDefsRelation,
	"pg_catalog.pg_constraint":            pgConstraintRelation,
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
	"pg_catalog.pg_views": func(ts []schema.Table) string {
		var rows []string
		for _, t := range ts {
			if t.ViewQuery != "" {
				rows = append(rows, fmt.Sprintf("('public', %s, 'tsdb', %s)", schema.QuoteString(t.Name), schema.QuoteString(ViewDefinition(t.ViewQuery))))
			}
		}
		return ValuesView(rows, "schemaname, viewname, viewowner, definition",
			"CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR)")
	},
	"pg_catalog.pg_namespace": func([]schema.Table) string {
		return fmt.Sprintf("SELECT * FROM (VALUES (2200, 'public', 10, NULL), (11, 'pg_catalog', 10, NULL), (13000, 'information_schema', 10, NULL), (%d, '%s', 10, NULL)) AS t(oid, nspname, nspowner, nspacl)", nsTemp, tempSchema)
	},
	"pg_catalog.pg_database": func([]schema.Table) string {
		return "SELECT * FROM (VALUES (16384, 'tsdb', 10, 6, 'C.UTF-8', 'C.UTF-8', 'c', NULL, false, true, -1, NULL, 1663)) AS t(oid, datname, datdba, encoding, datcollate, datctype, datlocprovider, daticulocale, datistemplate, datallowconn, datconnlimit, datacl, dattablespace)"
	},
}

// catalogClasses are pg_catalog's relations tsdb answers for, with the
// OIDs and column counts PostgreSQL 15 gives them.
var catalogClasses = []struct {
	oid   int
	name  string
	natts int
	view  bool
}{
	{1213, "pg_tablespace", 5, false}, {1247, "pg_type", 32, false},
	{1249, "pg_attribute", 26, false}, {1255, "pg_proc", 30, false},
	{1259, "pg_class", 33, false}, {1261, "pg_auth_members", 4, false},
	{1262, "pg_database", 16, false}, {2601, "pg_am", 4, false},
	{2604, "pg_attrdef", 4, false}, {2606, "pg_constraint", 26, false},
	{2609, "pg_description", 4, false}, {2610, "pg_index", 21, false},
	{2611, "pg_inherits", 4, false}, {2615, "pg_namespace", 4, false},
	{2618, "pg_rewrite", 8, false}, {2620, "pg_trigger", 19, false},
	{3079, "pg_extension", 8, false}, {3118, "pg_foreign_table", 3, false},
	{3256, "pg_policy", 8, false}, {3350, "pg_partitioned_table", 8, false},
	{3381, "pg_statistic_ext", 9, false}, {3456, "pg_collation", 11, false},
	{3466, "pg_event_trigger", 7, false}, {6104, "pg_publication", 9, false},
	{6106, "pg_publication_rel", 5, false}, {6237, "pg_publication_namespace", 3, false},
	{12000, "pg_roles", 13, true}, {12028, "pg_views", 4, true},
	{12104, "pg_settings", 17, true},
}

// CatalogClassOID is the OID PostgreSQL 15 gives the catalog relation
// name (pg_class, pg_type, …), if tsdb answers for it.
func CatalogClassOID(name string) (int64, bool) {
	for _, r := range catalogClasses {
		if r.name == name {
			return int64(r.oid), true
		}
	}
	return 0, false
}

// CatalogClassOIDs are the OIDs of the catalog relations pg_class lists.
func CatalogClassOIDs() []int64 {
	out := make([]int64, len(catalogClasses))
	for i, r := range catalogClasses {
		out[i] = int64(r.oid)
	}
	return out
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
	{1042, "bpchar", -1, "S"},
	{1082, "date", 4, "D"}, {1083, "time", 8, "D"}, {1266, "timetz", 12, "D"}, {1114, "timestamp", 8, "D"}, {1184, "timestamptz", 8, "D"},
	{1186, "interval", 16, "T"}, {1700, "numeric", -1, "N"}, {2950, "uuid", 16, "U"}, {114, "json", -1, "U"},
	{1560, "bit", -1, "V"}, {1562, "varbit", -1, "V"},
}

// TypeLen is pg_type.typlen of a type OID.
func TypeLen(oid uint32) int {
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.len
		}
	}
	return -1
}

// arrayOIDs are the PostgreSQL array types of the element types results
// have, by element OID.
var arrayOIDs = map[uint32]uint32{
	16: 1000, 21: 1005, 23: 1007, 20: 1016, 700: 1021, 701: 1022, 25: 1009,
	1082: 1182, 1083: 1183, 1266: 1270, 1114: 1115, 1184: 1185, 1186: 1187, 1700: 1231, 2950: 2951, 1560: 1561,
}

// arrayElements is arrayOIDs turned around, for the wire layer, which asks
// for every value it writes that its own cases do not cover.
var arrayElements = func() map[uint32]uint32 {
	m := make(map[uint32]uint32, len(arrayOIDs))
	for elem, arr := range arrayOIDs {
		m[arr] = elem
	}
	return m
}()

// ArrayOf returns the array type of an element type results have.
func ArrayOf(elem uint32) (uint32, bool) {
	arr, ok := arrayOIDs[elem]
	return arr, ok
}

// ArrayElement returns the element type of an array type, or 0.
func ArrayElement(oid uint32) uint32 { return arrayElements[oid] }

// ViewDefinition is a view's query as pg_get_viewdef and the catalogs show
// it: PostgreSQL's form, a leading space and a closing semicolon (the
// text is tsdb's deparse of the query, not PostgreSQL's).
func ViewDefinition(query string) string { return " " + query + ";" }
