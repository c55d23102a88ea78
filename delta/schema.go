package delta

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"tsdb/internal/schema"
)

// Keys tsdb keeps in the Delta metadata. Other readers ignore them.
const (
	confTimeColumn = "tsdb.timeColumn"
	fieldTypeKey   = "tsdb.type"
	// fieldMaxLengthKey and fieldPrecisionKey keep varchar(n)'s n and
	// timestamp(p)'s p.
	fieldMaxLengthKey = "tsdb.maxLength"
	// fieldPaddedKey marks a character(n) column (with fieldMaxLengthKey
	// its n): stored without trailing spaces, shown padded.
	fieldPaddedKey    = "tsdb.padded"
	fieldPrecisionKey = "tsdb.precision"
	// ClusterKey names the table's cluster column (schema.Table.Cluster);
	// absent means its first TEXT column.
	ClusterKey = "tsdb.clusterColumn"
	// confKeys holds the table's PRIMARY KEY and UNIQUE constraints
	// (schema.Table.Keys) as JSON. Delta has no such constraints: they
	// hold for what tsdb writes; other writers are not checked.
	confKeys = "tsdb.keys"
	// DedupKey holds the columns that identify a point
	// (schema.Table.Dedup) as a JSON list, the time column first;
	// DedupTagsKey is "true" when they are a line-protocol table's tag
	// set. Other writers are not checked either.
	DedupKey     = "tsdb.dedupKeys"
	DedupTagsKey = "tsdb.dedupTags"

	// The Delta protocol's column mapping (mode name): the table's mode
	// and highest column id, and each field's id and physical name, the
	// name its data files and statistics use.
	confMappingMode    = "delta.columnMapping.mode"
	confMaxColumnID    = "delta.columnMapping.maxColumnId"
	fieldIDKey         = "delta.columnMapping.id"
	fieldPhysicalKey   = "delta.columnMapping.physicalName"
	physicalNamePrefix = "col-"
)

// keyJSON is a schema.Key in the table configuration.
type keyJSON struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Primary bool     `json:"primary,omitempty"`
}

type structType struct {
	Type   string        `json:"type"`
	Fields []structField `json:"fields"`
}

type structField struct {
	Name string `json:"name"`
	// Type is a primitive type's name, or an object for nested types.
	Type     any            `json:"type"`
	Nullable bool           `json:"nullable"`
	Metadata map[string]any `json:"metadata"`
}

// metadataFor builds the metaData action of a table: Spark's JSON schema with
// Delta primitive types; the PostgreSQL type and the time column are kept in
// field metadata and the table configuration.
func metadataFor(t schema.Table) (*Metadata, error) {
	st := structType{Type: "struct"}
	for _, c := range t.Columns {
		md := map[string]any{fieldTypeKey: c.Type.UDTName()}
		if c.MaxLength > 0 {
			md[fieldMaxLengthKey] = c.MaxLength
			if c.Padded {
				md[fieldPaddedKey] = true
			}
		}
		if p, ok := c.Precision(); ok {
			md[fieldPrecisionKey] = p
		}
		if t.ColumnMapping() {
			md[fieldIDKey], md[fieldPhysicalKey] = c.FieldID, c.FileName()
		}
		st.Fields = append(st.Fields, structField{Name: c.Name, Type: c.DeltaType(), Nullable: !c.NotNull, Metadata: md})
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("delta: encode schema: %w", err)
	}
	return &Metadata{
		ID:               t.ID,
		Name:             t.Name,
		Format:           Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     string(b),
		PartitionColumns: []string{},
		Configuration:    configurationFor(t),
	}, nil
}

func configurationFor(t schema.Table) map[string]string {
	cfg := map[string]string{confTimeColumn: t.TimeColumn().Name}
	if t.Cluster != "" {
		cfg[ClusterKey] = t.Cluster
	}
	if len(t.Keys) > 0 {
		keys := make([]keyJSON, len(t.Keys))
		for i, k := range t.Keys {
			keys[i] = keyJSON{Name: k.Name, Columns: k.Columns, Primary: k.Primary}
		}
		b, _ := json.Marshal(keys) // strings only: cannot fail
		cfg[confKeys] = string(b)
	}
	for k, v := range DedupConfiguration(t.Dedup, t.DedupTags) {
		if v != "" {
			cfg[k] = v
		}
	}
	maps.Copy(cfg, mappingConfiguration(t))
	return cfg
}

// mappingConfiguration is the configuration of t's column mapping: none
// without it.
func mappingConfiguration(t schema.Table) map[string]string {
	if !t.ColumnMapping() {
		return nil
	}
	return map[string]string{confMappingMode: "name", confMaxColumnID: strconv.Itoa(t.MaxColumnID)}
}

// withColumnMapping returns t with the Delta column mapping its names
// need. Columns [0, existing) are in the table already, the others are
// new. A table without mapping gets it when one of its names needs it
// (schema.NeedsColumnMapping), as Spark would refuse the name otherwise:
// every column then gets an id, the existing ones keep their names as
// physical names, which their files use already, and so do the new ones
// whose names need no mapping. Once a table is mapped, every new column
// gets "col-" and a UUID as its physical name, as Spark names them:
// under mapping another writer may have dropped a column, whose name the
// old files (and their statistics) still hold, and a new column of that
// name must not read them back. A table of plain names stays as it is,
// its files readable by name by any reader.
func withColumnMapping(t schema.Table, existing int) schema.Table {
	mapped := t.ColumnMapping()
	if !mapped {
		need := false
		for _, c := range t.Columns {
			need = need || schema.NeedsColumnMapping(c.Name)
		}
		if !need {
			return t
		}
	}
	t.Columns = slices.Clone(t.Columns)
	if !mapped {
		for i := range t.Columns[:existing] {
			c := &t.Columns[i]
			t.MaxColumnID++
			c.FieldID, c.Physical = t.MaxColumnID, c.Name
		}
	}
	for i := existing; i < len(t.Columns); i++ {
		c := &t.Columns[i]
		if c.FieldID > 0 {
			continue
		}
		t.MaxColumnID++
		c.FieldID, c.Physical = t.MaxColumnID, c.Name
		if mapped || schema.NeedsColumnMapping(c.Name) {
			c.Physical = physicalNamePrefix + uuid.NewString()
		}
	}
	return t
}

// DedupConfiguration renders a table's point identity as configuration
// changes (an empty value removes the key).
func DedupConfiguration(cols []string, tags bool) map[string]string {
	cfg := map[string]string{DedupKey: "", DedupTagsKey: ""}
	if len(cols) > 0 {
		b, _ := json.Marshal(cols) // strings only: cannot fail
		cfg[DedupKey] = string(b)
		if tags {
			cfg[DedupTagsKey] = "true"
		}
	}
	return cfg
}

// dedupFromConfiguration reads DedupKey back, checked against t.
func dedupFromConfiguration(t schema.Table, cfg map[string]string) ([]string, bool, error) {
	v := cfg[DedupKey]
	if v == "" {
		return nil, false, nil
	}
	var cols []string
	if err := json.Unmarshal([]byte(v), &cols); err != nil {
		return nil, false, fmt.Errorf("parse %s: %w", DedupKey, err)
	}
	if len(cols) == 0 {
		return nil, false, nil
	}
	if err := schema.CheckDedup(t, cols); err != nil {
		return nil, false, fmt.Errorf("%s: %w", DedupKey, err)
	}
	return cols, cfg[DedupTagsKey] == "true", nil
}

// keysFromConfiguration reads confKeys back; every column a key names
// must be one of t's.
func keysFromConfiguration(t schema.Table, v string) ([]schema.Key, error) {
	if v == "" {
		return nil, nil
	}
	var keys []keyJSON
	if err := json.Unmarshal([]byte(v), &keys); err != nil {
		return nil, fmt.Errorf("parse %s: %w", confKeys, err)
	}
	out := make([]schema.Key, len(keys))
	for i, k := range keys {
		if len(k.Columns) == 0 {
			return nil, fmt.Errorf("%s: key %q has no columns", confKeys, k.Name)
		}
		for _, c := range k.Columns {
			if t.ColumnIndex(c) < 0 {
				return nil, fmt.Errorf("%s: key %q names column %q, which the table does not have", confKeys, k.Name, c)
			}
		}
		out[i] = schema.Key{Name: k.Name, Columns: k.Columns, Primary: k.Primary}
	}
	return out, nil
}

// deltaTypes maps Delta types to tsdb types for tables written by others.
var deltaTypes = map[string]schema.Type{
	"long": schema.Int64, "integer": schema.Int32, "short": schema.Int16,
	"double": schema.Float64, "float": schema.Float32, "boolean": schema.Bool,
	"string": schema.Text, "timestamp": schema.Timestamptz, "timestamp_ntz": schema.Timestamp,
	"date": schema.Date, "binary": schema.Bytea,
}

func schemaFromMetadata(md Metadata) (schema.Table, error) {
	var st structType
	if err := json.Unmarshal([]byte(md.SchemaString), &st); err != nil {
		return schema.Table{}, fmt.Errorf("parse schemaString: %w", err)
	}
	t := schema.Table{Name: md.Name, ID: md.ID, TimeIndex: -1, Cluster: md.Configuration[ClusterKey]}
	timeCol := md.Configuration[confTimeColumn]
	mapped := columnMappingMode(&md) == "name"
	if mapped {
		// At least 1, so that the table counts as mapped whatever another
		// writer put there.
		n, _ := strconv.Atoi(md.Configuration[confMaxColumnID])
		t.MaxColumnID = max(n, 1)
	}
	for _, f := range st.Fields {
		var ty schema.Type
		if udt, ok := f.Metadata[fieldTypeKey].(string); ok {
			ty, _ = schema.TypeFromUDTName(udt)
		}
		name, _ := f.Type.(string)
		digits, scale, isDecimal := parseDecimalType(name)
		if isDecimal {
			if err := schema.CheckDecimal(digits, scale); err != nil {
				return schema.Table{}, fmt.Errorf("%w: column %q: %v", ErrUnsupportedFeature, f.Name, err)
			}
			ty = schema.Decimal
		}
		if ty == schema.Invalid {
			var ok bool
			if ty, ok = deltaTypes[name]; !ok {
				return schema.Table{}, fmt.Errorf("%w: column %q has the Delta type %s, which tsdb does not support", ErrUnsupportedFeature, f.Name, typeText(f.Type))
			}
		}
		if (timeCol == f.Name || (timeCol == "" && t.TimeIndex < 0)) && ty.IsTimestamp() {
			t.TimeIndex = len(t.Columns)
		}
		if ty == schema.Decimal && !isDecimal {
			return schema.Table{}, fmt.Errorf("column %q: numeric column of Delta type %s", f.Name, typeText(f.Type))
		}
		col := schema.Column{Name: f.Name, Type: ty, NotNull: !f.Nullable, Digits: digits, Scale: scale, NTZ: ty == schema.Timestamp && name == "timestamp_ntz"}
		if n, ok := f.Metadata[fieldMaxLengthKey].(float64); ok && (ty == schema.Text || ty == schema.Bit || ty == schema.VarBit) && n >= 1 {
			col.MaxLength = int(n)
			col.Padded = f.Metadata[fieldPaddedKey] == true
		}
		if p, ok := f.Metadata[fieldPrecisionKey].(float64); ok && ty.IsTimestamp() && p >= 0 && p < 6 {
			col.FracDigits = int(p) + 1
		}
		if mapped {
			// A field without a physical name keeps its name in files, as
			// the columns of a table that turned mapping on later do.
			if p, ok := f.Metadata[fieldPhysicalKey].(string); ok && p != "" && p != f.Name {
				col.Physical = p
			}
			if id, ok := f.Metadata[fieldIDKey].(float64); ok && id >= 1 {
				col.FieldID = int(id)
				t.MaxColumnID = max(t.MaxColumnID, col.FieldID)
			}
		}
		t.Columns = append(t.Columns, col)
	}
	if t.TimeIndex < 0 {
		return schema.Table{}, fmt.Errorf("table has no timestamp column")
	}
	keys, err := keysFromConfiguration(t, md.Configuration[confKeys])
	if err != nil {
		return schema.Table{}, err
	}
	t.Keys = keys
	// A point identity tsdb cannot use (another writer's edit of the
	// property) leaves the table readable and writable without one:
	// refusing it would make the table unavailable over a setting.
	t.Dedup, t.DedupTags, _ = dedupFromConfiguration(t, md.Configuration)
	return t, nil
}

// typeText renders a field's Delta type for a message: a primitive's name,
// or the JSON of a nested type.
func typeText(t any) string {
	if s, ok := t.(string); ok {
		return strconv.Quote(s)
	}
	b, _ := json.Marshal(t)
	return string(b)
}

// parseDecimalType reads the Delta type decimal(p,s).
func parseDecimalType(t string) (p, s int, ok bool) {
	t = strings.ReplaceAll(t, " ", "")
	if !strings.HasPrefix(t, "decimal(") || !strings.HasSuffix(t, ")") {
		return 0, 0, false
	}
	ps := strings.Split(t[len("decimal("):len(t)-1], ",")
	if len(ps) != 2 {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(ps[0])
	s, err2 := strconv.Atoi(ps[1])
	return p, s, err1 == nil && err2 == nil
}
