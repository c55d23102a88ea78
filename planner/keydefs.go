package planner

// PRIMARY KEY and UNIQUE constraints as CREATE TABLE writes them: read
// from its column and table constraints, checked against the columns and
// named as PostgreSQL names them (unique.go keeps them).

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// keyDef is a PRIMARY KEY or UNIQUE constraint as CREATE TABLE writes
// it, before its name is chosen.
type keyDef struct {
	name    string // empty: PostgreSQL's default
	columns []string
	primary bool
}

// tableKey reads a table constraint; only PRIMARY KEY and UNIQUE are
// kept by tsdb's tables.
func tableKey(con *pg_query.Constraint) (keyDef, error) {
	k, ok, err := keyOf(con)
	if err != nil {
		return keyDef{}, err
	}
	if !ok {
		return keyDef{}, sqlerr.New(sqlerr.FeatureNotSupported, "table constraints other than PRIMARY KEY and UNIQUE (CHECK, FOREIGN KEY, EXCLUDE) are not supported")
	}
	for _, n := range con.Keys {
		k.columns = append(k.columns, n.GetString_().GetSval())
	}
	return k, nil
}

// columnKeys takes a column's PRIMARY KEY and UNIQUE constraints out of
// its definition: the keys on that column, and the definition without
// them.
func columnKeys(cd *pg_query.ColumnDef) ([]keyDef, *pg_query.ColumnDef, error) {
	var keys []keyDef
	var rest []*pg_query.Node
	for _, n := range cd.Constraints {
		k, ok, err := keyOf(n.GetConstraint())
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rest = append(rest, n)
			continue
		}
		k.columns = []string{cd.Colname}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, cd, nil
	}
	plain := proto.Clone(cd).(*pg_query.ColumnDef)
	plain.Constraints = rest
	return keys, plain, nil
}

// keyOf reads a PRIMARY KEY or UNIQUE constraint (ok false for any other
// kind), refusing the options tsdb does not keep.
func keyOf(con *pg_query.Constraint) (keyDef, bool, error) {
	if con == nil {
		return keyDef{}, false, nil
	}
	var k keyDef
	switch con.Contype {
	case pg_query.ConstrType_CONSTR_PRIMARY:
		k.primary = true
	case pg_query.ConstrType_CONSTR_UNIQUE:
	default:
		return keyDef{}, false, nil
	}
	switch {
	case con.Deferrable || con.Initdeferred:
		return keyDef{}, false, sqlerr.New(sqlerr.FeatureNotSupported, "DEFERRABLE constraints are not supported")
	case con.NullsNotDistinct:
		return keyDef{}, false, sqlerr.New(sqlerr.FeatureNotSupported, "UNIQUE NULLS NOT DISTINCT is not supported")
	case len(con.Including) > 0, len(con.Options) > 0, con.Indexspace != "", con.Indexname != "":
		return keyDef{}, false, sqlerr.New(sqlerr.FeatureNotSupported, "index options of a key (INCLUDE, WITH, USING INDEX) are not supported")
	}
	k.name = con.Conname
	return k, true, nil
}

// tableKeys checks a new table's keys against its columns and names them
// as PostgreSQL does: t_pkey for the primary key, t_a_b_key for UNIQUE
// (a, b), numbered when a relation or another key has the name. A
// primary key's columns become NOT NULL.
func (s *Session) tableKeys(t *schema.Table, defs []keyDef) ([]schema.Key, error) {
	var keys []schema.Key
	taken := func(name string) bool {
		for _, k := range keys {
			if k.Name == name {
				return true
			}
		}
		return s.relationTaken(name) || name == t.Name
	}
	primary := false
	for _, d := range defs {
		if d.primary {
			if primary {
				return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "multiple primary keys for table %q are not allowed", t.Name)
			}
			primary = true
		}
		for i, c := range d.columns {
			j := t.ColumnIndex(c)
			if j < 0 {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q named in key does not exist", c)
			}
			for _, prev := range d.columns[:i] {
				if prev == c {
					return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q appears twice in primary key constraint", c)
				}
			}
			if d.primary {
				t.Columns[j].NotNull = true
			}
		}
		name := d.name
		if name == "" {
			label, second := "key", strings.Join(d.columns, "_")
			if d.primary {
				label, second = "pkey", ""
			}
			for i := 0; ; i++ {
				suffix := label
				if i > 0 {
					suffix = fmt.Sprintf("%s%d", label, i)
				}
				if name = makeObjectName(t.Name, second, suffix); !taken(name) {
					break
				}
			}
		} else if taken(name) {
			return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
		}
		keys = append(keys, schema.Key{Name: name, Columns: d.columns, Primary: d.primary})
	}
	return keys, nil
}
