package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// createTable creates a Delta table. Column constraints NOT NULL and NULL are
// kept; the first timestamp column is the time column (always NOT NULL).
// WITH (cluster_by = 'col', retention = '…', dedup_keys = 'a,b') sets
// the table's cluster column, retention and point identity (dedup.go).
func (s *Session) createTable(ctx context.Context, st *pg_query.CreateStmt) (*Result, error) {
	name, err := relationName(st.Relation)
	if err != nil {
		return nil, err
	}
	if st.Relation.Relpersistence == "t" {
		return s.createTempTable(ctx, st)
	}
	if _, _, ok := s.view(name); ok || s.isIndex(name) {
		if st.IfNotExists {
			return &Result{Tag: "CREATE TABLE"}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	if len(st.InhRelations) > 0 || st.Partspec != nil || st.OfTypename != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "inheritance, partitioning and typed tables are not supported")
	}
	var cols []schema.Column
	var keys []keyDef
	for _, elt := range st.TableElts {
		if con := elt.GetConstraint(); con != nil {
			k, err := tableKey(con)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
			continue
		}
		cd := elt.GetColumnDef()
		if cd == nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "CREATE TABLE … LIKE is not supported")
		}
		colKeys, plain, err := columnKeys(cd)
		if err != nil {
			return nil, err
		}
		keys = append(keys, colKeys...)
		col, err := columnFromDef(plain)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	tbl, err := schema.New(name, cols)
	if err != nil {
		code := schemaErrorCode(err)
		return nil, &sqlerr.Error{Code: code, Message: err.Error()}
	}
	if tbl.Keys, err = s.tableKeys(&tbl, keys); err != nil {
		return nil, err
	}
	// WITH (cluster_by = 'host', retention = '30 days'): checked before
	// the table exists and written in its first commit, so a bad option
	// creates nothing and a table never exists without its options.
	var opts ingest.TableOptions
	for _, o := range st.Options {
		def := o.GetDefElem()
		v, err := optionValue(def)
		if err != nil {
			return nil, err
		}
		switch def.GetDefname() {
		case "cluster_by":
			tbl.Cluster = v
			if err := ingest.CheckCluster(tbl, tbl.Cluster); err != nil {
				return nil, err
			}
		case "retention":
			d, err := parseRetention(v)
			if err != nil {
				return nil, err
			}
			opts.Retention = &d
		case "dedup_keys":
			if tbl.Dedup, err = parseDedupKeys(tbl, v); err != nil {
				return nil, err
			}
		default:
			if !pgStorageParameter(def) { // taken, changing nothing (alter.go)
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized parameter %q (tsdb tables have cluster_by, retention and dedup_keys)", def.GetDefname())
			}
		}
	}
	if _, err := s.p.store.CreateTableWith(ctx, tbl, st.IfNotExists, opts); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE TABLE"}, nil
}

func (s *Session) drop(ctx context.Context, st *pg_query.DropStmt) (*Result, error) {
	switch st.RemoveType {
	case pg_query.ObjectType_OBJECT_FUNCTION:
		return s.dropFunctions(st)
	case pg_query.ObjectType_OBJECT_INDEX:
		return s.dropIndexes(st)
	case pg_query.ObjectType_OBJECT_SEQUENCE:
		if s.tx != nil {
			return nil, sqlerr.New(sqlerr.ActiveSQLTransaction, "DROP SEQUENCE cannot run inside a transaction block")
		}
		return s.dropSequences(ctx, st)
	}
	if st.RemoveType != pg_query.ObjectType_OBJECT_TABLE && st.RemoveType != pg_query.ObjectType_OBJECT_VIEW {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "only DROP TABLE, DROP VIEW, DROP FUNCTION, DROP INDEX and DROP SEQUENCE are supported")
	}
	cascade := st.Behavior == pg_query.DropBehavior_DROP_CASCADE
	var names, temps []string
	for _, obj := range st.Objects {
		var parts []string
		for _, it := range obj.GetList().GetItems() {
			parts = append(parts, it.GetString_().GetSval())
		}
		if len(parts) == 2 && strings.EqualFold(parts[0], "pg_temp") && st.RemoveType == pg_query.ObjectType_OBJECT_TABLE {
			if !s.isTemp(parts[1]) {
				if st.MissingOk {
					continue
				}
				return nil, sqlerr.New(sqlerr.UndefinedTable, "table %q does not exist", parts[1])
			}
			temps = append(temps, parts[1])
			continue
		}
		if len(parts) == 2 && strings.EqualFold(parts[0], "public") {
			parts = parts[1:]
		}
		if len(parts) != 1 {
			return nil, sqlerr.New(sqlerr.InvalidName, "tsdb tables live in schema public: %s", strings.Join(parts, "."))
		}
		if st.RemoveType == pg_query.ObjectType_OBJECT_TABLE && s.isTemp(parts[0]) {
			temps = append(temps, parts[0]) // pg_temp comes first
			continue
		}
		names = append(names, parts[0])
	}
	if len(temps) > 0 {
		if err := s.dropTemps(ctx, temps); err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return &Result{Tag: "DROP TABLE"}, nil
		}
	}
	if st.RemoveType == pg_query.ObjectType_OBJECT_VIEW {
		return s.dropViews(names, st.MissingOk, cascade)
	}
	// Check all first, so that a failing DROP of several tables drops none.
	for _, n := range names {
		if _, _, isView := s.view(n); isView && !s.known(n) {
			return nil, &sqlerr.Error{Code: sqlerr.WrongObjectType, Message: fmt.Sprintf("%q is not a table", n), Hint: "Use DROP VIEW to remove a view."}
		}
		if !st.MissingOk && !s.known(n) && s.p.store.Unavailable(n) == nil {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "table %q does not exist", n)
		}
	}
	// Views reading a dropped table go with it (CASCADE) or keep it
	// (2BP01), as in PostgreSQL.
	dependents, err := s.viewDependents(names, cascade)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		tbl, ok := s.p.store.Table(n)
		dropped, err := s.p.store.DropTable(ctx, n, st.MissingOk)
		if err != nil {
			return nil, err
		}
		if dropped && ok {
			if err := s.p.mirror.drop(ctx, s.conn, tbl); err != nil {
				s.p.logger.Warn("cannot drop mirror of dropped table", "table", n, "err", err)
			}
			s.p.newest.forget(tbl.ID, &s.p.mirror.epochs)
			s.p.points.forget(tbl.Name)
		}
	}
	if err := s.forgetViews(dependents); err != nil {
		return nil, err
	}
	// A table's indexes go with it.
	if err := s.p.views.DropIndexes(nil, names); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return &Result{Tag: "DROP TABLE"}, nil
}

// columnFromDef reads a column definition of CREATE TABLE or ALTER TABLE
// ADD COLUMN: a type tsdb stores and at most NOT NULL / NULL.
func columnFromDef(cd *pg_query.ColumnDef) (schema.Column, error) {
	if cd.TypeName == nil || len(cd.TypeName.ArrayBounds) > 0 {
		return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: array types are not supported", cd.Colname)
	}
	switch sqltree.TypeName(cd.TypeName) {
	case "bpchar":
		col, err := characterColumn(cd)
		if err != nil {
			return col, err
		}
		return col, columnConstraints(cd, &col)
	case "char", "character":
		// "char" (quoted), PostgreSQL's one-byte internal type.
		return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: type \"char\" is not supported; use character(1), text or varchar", cd.Colname)
	}
	ty, err := schema.ParseType(sqltree.TypeName(cd.TypeName))
	if err != nil {
		return schema.Column{}, &sqlerr.Error{Code: sqlerr.UndefinedObject, Message: err.Error()}
	}
	col := schema.Column{Name: cd.Colname, Type: ty, NotNull: cd.IsNotNull, NTZ: ty == schema.Timestamp}
	if (ty == schema.Time || ty == schema.TimeTZ) && len(cd.TypeName.Typmods) > 0 {
		return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: %s with a precision is not supported; use %s", cd.Colname, ty.UDTName(), ty.UDTName())
	}
	if ty == schema.Interval && len(cd.TypeName.Typmods) > 0 {
		return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: interval with fields or a precision is not supported; use interval", cd.Colname)
	}
	if ty == schema.Decimal {
		// numeric(p, s): the engine's decimal of p digits, s after the
		// point. PostgreSQL's numeric without them keeps each value's
		// own scale, which a decimal column cannot: refused, not rounded.
		mods := cd.TypeName.Typmods
		if len(mods) == 0 || len(mods) > 2 {
			return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: numeric without precision and scale is not supported; use numeric(p, s) with p up to %d", cd.Colname, schema.MaxDecimalDigits)
		}
		var ps [2]int
		for i, m := range mods {
			iv := m.GetAConst().GetIval()
			if iv == nil {
				return schema.Column{}, sqlerr.New(sqlerr.SyntaxError, "column %q: invalid type modifier", cd.Colname)
			}
			ps[i] = int(iv.Ival)
		}
		if err := schema.CheckDecimal(ps[0], ps[1]); err != nil {
			code := sqlerr.InvalidParameterValue
			if ps[0] > schema.MaxDecimalDigits {
				code = sqlerr.FeatureNotSupported
			}
			return schema.Column{}, sqlerr.New(code, "column %q: %v", cd.Colname, err)
		}
		col.Digits, col.Scale = ps[0], ps[1]
	} else if mods := cd.TypeName.Typmods; len(mods) > 0 {
		// varchar(n) and timestamp(p): kept, and applied to what is
		// written (typmod.go).
		iv := mods[0].GetAConst().GetIval()
		if iv == nil || len(mods) > 1 {
			return schema.Column{}, sqlerr.New(sqlerr.SyntaxError, "column %q: invalid type modifier", cd.Colname)
		}
		switch n := int(iv.Ival); {
		case ty == schema.Text && n >= 1 && n <= 10485760:
			col.MaxLength = n
		case ty == schema.Text:
			return schema.Column{}, sqlerr.New(sqlerr.InvalidParameterValue, "length for type varchar must be between 1 and 10485760")
		case (ty == schema.Bit || ty == schema.VarBit) && n >= 1 && n <= maxBitLength:
			col.MaxLength = n
		case ty == schema.Bit || ty == schema.VarBit:
			if n < 1 {
				return schema.Column{}, sqlerr.New(sqlerr.InvalidParameterValue, "length for type %s must be at least 1", ty.UDTName())
			}
			return schema.Column{}, sqlerr.New(sqlerr.InvalidParameterValue, "length for type %s cannot exceed %d", ty.UDTName(), maxBitLength)
		case ty.IsTimestamp() && n >= 0 && n < 6:
			col.FracDigits = n + 1
		case ty.IsTimestamp() && n >= 6:
			// PostgreSQL keeps microseconds at 6 and above.
		case ty.IsTimestamp():
			return schema.Column{}, sqlerr.New(sqlerr.InvalidParameterValue, "TIMESTAMP(%d) precision must not be negative", n)
		default:
			return schema.Column{}, sqlerr.New(sqlerr.SyntaxError, "column %q: type %s takes no modifier", cd.Colname, ty)
		}
	}
	return col, columnConstraints(cd, &col)
}

// columnConstraints applies a column definition's constraints to col: at
// most NOT NULL / NULL.
func columnConstraints(cd *pg_query.ColumnDef, col *schema.Column) error {
	for _, c := range cd.Constraints {
		switch c.GetConstraint().GetContype() {
		case pg_query.ConstrType_CONSTR_NOTNULL:
			col.NotNull = true
		case pg_query.ConstrType_CONSTR_NULL:
		default:
			return sqlerr.New(sqlerr.FeatureNotSupported, "column %q: only NOT NULL and NULL constraints are supported", cd.Colname)
		}
	}
	return nil
}

// characterColumn reads a character(n) column: text of at most n
// characters, stored without its trailing spaces and shown padded to n
// (schema.Column.Padded). character without a length is character(1), as
// the grammar gives it; bpchar without one keeps each value's own
// trailing spaces in PostgreSQL, which a column stored without them
// cannot, so it is refused.
func characterColumn(cd *pg_query.ColumnDef) (schema.Column, error) {
	mods := cd.TypeName.Typmods
	if len(mods) != 1 {
		return schema.Column{}, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: bpchar without a length is not supported; use character(n), text or varchar", cd.Colname)
	}
	iv := mods[0].GetAConst().GetIval()
	if iv == nil {
		return schema.Column{}, sqlerr.New(sqlerr.SyntaxError, "column %q: invalid type modifier", cd.Colname)
	}
	if iv.Ival < 1 || iv.Ival > 10485760 {
		return schema.Column{}, sqlerr.New(sqlerr.InvalidParameterValue, "length for type char must be between 1 and 10485760")
	}
	return schema.Column{Name: cd.Colname, Type: schema.Text, NotNull: cd.IsNotNull, MaxLength: int(iv.Ival), Padded: true}, nil
}

// schemaErrorCode is the SQLSTATE of a table definition schema.New
// refuses.
func schemaErrorCode(err error) string {
	var dup *schema.DuplicateColumnError
	var reserved *schema.ReservedNameError
	var wide *schema.TooManyColumnsError
	switch {
	case errors.As(err, &dup):
		return sqlerr.DuplicateColumn
	case errors.As(err, &reserved):
		return "42939" // reserved_name
	case errors.As(err, &wide):
		return "54011" // too_many_columns
	case strings.Contains(err.Error(), "time column"):
		return "42P16" // invalid_table_definition
	}
	return sqlerr.InvalidName
}

// storableTypes are the result types a table made by CREATE TABLE AS can
// store, by PostgreSQL type OID.
var storableTypes = map[uint32]schema.Type{
	1184: schema.Timestamptz, 1114: schema.Timestamp, 20: schema.Int64, 23: schema.Int32, 21: schema.Int16,
	701: schema.Float64, 700: schema.Float32, 16: schema.Bool, 25: schema.Text, 1043: schema.Text, 1042: schema.Text, 1082: schema.Date,
	1186: schema.Interval, 1083: schema.Time, 1266: schema.TimeTZ, 1560: schema.Bit,
}

// maxBitLength is the longest bit(n) PostgreSQL takes (MaxAttrSize in
// bits).
const maxBitLength = 83886080

// createTableAs is CREATE TABLE … AS SELECT: a table of the query's
// columns (its first timestamp column is the time column, as in CREATE
// TABLE), then INSERT … SELECT of the query; the tag is SELECT n, as in
// PostgreSQL. The table is dropped again if the insert fails.
func (s *Session) createTableAs(ctx context.Context, st *pg_query.CreateTableAsStmt) (*Result, error) {
	if st.Objtype != pg_query.ObjectType_OBJECT_TABLE {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "materialized views are not supported")
	}
	into := st.Into
	if into == nil || into.Rel == nil || st.Query.GetSelectStmt() == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "CREATE TABLE … AS takes a SELECT")
	}
	if into.Rel.Relpersistence == "t" {
		return s.createTempTableAs(ctx, st)
	}
	name, err := relationName(into.Rel)
	if err != nil {
		return nil, err
	}
	if _, _, ok := s.view(name); ok || s.isIndex(name) {
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	if st.IfNotExists && s.known(name) {
		return &Result{Tag: "CREATE TABLE AS"}, nil // as CREATE TABLE IF NOT EXISTS: nothing to do
	}
	// The query's columns, from a run that returns no rows.
	probe := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}}}}},
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: proto.Clone(st.Query).(*pg_query.Node), Alias: &pg_query.Alias{Aliasname: "_tsdb_ctas"}}}}},
		LimitCount: pg_query.MakeAConstIntNode(0, -1), LimitOption: pg_query.LimitOption_LIMIT_OPTION_COUNT,
	}}}
	text, err := deparse(s.p.pgVersion, probe)
	if err != nil {
		return nil, err
	}
	res, err := s.executeStatement(ctx, statement{text: text, node: probe})
	if err != nil {
		return nil, err
	}
	if res.Rows != nil {
		res.Rows.Close()
	}
	if len(into.ColNames) > len(res.Columns) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE TABLE AS specifies too many column names")
	}
	cols := make([]schema.Column, len(res.Columns))
	targets := make([]*pg_query.Node, len(res.Columns))
	for i, c := range res.Columns {
		colName := c.Name
		if i < len(into.ColNames) {
			colName = into.ColNames[i].GetString_().GetSval()
		}
		ty, ok := storableTypes[c.OID]
		if c.OID == oidNumeric && c.exact == exactNone && c.digits > 0 {
			// The engine's decimal of the query: a numeric(p, s) column
			// holds its values as they are (numeric without precision
			// is computed as numeric(38, 10), printed with the digits a
			// value has, in the table as in the query).
			ty, ok = schema.Decimal, true
		}
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "column %q of the query is of type %s, which tsdb tables do not store; cast it to one they do", colName, pgTypeName(c.OID))
		}
		cols[i] = schema.Column{Name: colName, Type: ty, NTZ: ty == schema.Timestamp}
		if c.Pad > 0 {
			cols[i].MaxLength, cols[i].Padded = c.Pad, true // character(n), as the query's
		}
		if ty == schema.Decimal {
			cols[i].Digits, cols[i].Scale = c.digits, c.scale
		}
		targets[i] = &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: colName}}}
	}
	tbl, err := schema.New(name, cols)
	if err != nil {
		return nil, &sqlerr.Error{Code: schemaErrorCode(err), Message: err.Error()}
	}
	if _, err := s.p.store.CreateTableWith(ctx, tbl, false, ingest.TableOptions{}); err != nil {
		return nil, err
	}
	if into.SkipData {
		return &Result{Tag: "CREATE TABLE AS"}, nil
	}
	ins := &pg_query.InsertStmt{Relation: proto.Clone(into.Rel).(*pg_query.RangeVar), Cols: targets, SelectStmt: st.Query,
		Override: pg_query.OverridingKind_OVERRIDING_NOT_SET}
	r, err := s.insert(ctx, ins)
	if err != nil {
		if _, derr := s.p.store.DropTable(context.WithoutCancel(ctx), name, true); derr != nil {
			s.p.logger.Warn("CREATE TABLE AS: dropping the table after its insert failed", "table", name, "err", derr)
		}
		return nil, err
	}
	return &Result{Tag: "SELECT " + strings.TrimPrefix(r.Tag, "INSERT 0 ")}, nil
}

// pgTypeName names a result type for a message.
func pgTypeName(oid uint32) string {
	if t, ok := storableTypes[oid]; ok {
		return t.String()
	}
	if n, ok := map[uint32]string{1186: "interval", 1700: "numeric", 17: "bytea", 2249: "record", 1083: "time without time zone", 1266: "time with time zone",
		114: "json", 2950: "uuid"}[oid]; ok {
		return n
	}
	if ArrayElement(oid) != 0 {
		return "an array"
	}
	return fmt.Sprintf("OID %d", oid)
}
