package planner

// PRIMARY KEY and UNIQUE constraints of tsdb's tables (schema.Key): read
// from CREATE TABLE, and kept by every write the planner makes. Storage
// refuses other writers of such a table (line protocol), so every row
// reaches it through writeKeyed: the table's write lock taken, the new
// keys compared with each other and with the table (buffered rows, files
// and the transaction's own pending rows, as a query of the session
// reads it), the rows written, the lock released (at COMMIT in a block).
// A key that includes the time column prunes the comparison to the time
// range of the new rows.

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/ingest"
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

// writeKeyed writes recs to a table with keys: under the table's write
// lock (the transaction's, held until it ends, in a block), after
// checkKeys.
func (s *Session) writeKeyed(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch) (int64, error) {
	if err := s.p.store.Validate(tbl.Name, recs); err != nil {
		return 0, err
	}
	if s.tx != nil {
		if err := s.writableTx("INSERT"); err != nil {
			return 0, err
		}
		if err := s.tx.lock(ctx, s, tbl.Name); err != nil {
			return 0, err
		}
		if err := s.checkUnchanged(ctx, tbl.Name, true); err != nil {
			return 0, err
		}
		if err := s.checkKeys(ctx, tbl, recs); err != nil {
			return 0, err
		}
		return s.tx.insert(s, tbl.Name, recs)
	}
	held, unlock, err := s.p.store.LockTable(ctx, ingest.TxID(s.p.txSeq.Add(1)), tbl.Name)
	if err != nil {
		return 0, err
	}
	if !held {
		defer unlock()
	}
	// The table as it is under the lock: a column added meanwhile.
	if cur, ok := s.p.store.Table(tbl.Name); ok {
		tbl = cur
	}
	if err := s.checkKeys(ctx, tbl, recs); err != nil {
		return 0, err
	}
	return s.p.store.InsertKeyed(ctx, tbl.Name, recs)
}

// refuseKeyUpdate refuses an UPDATE that sets a column of one of its
// table's keys: the rows it rewrites are not checked against the keys.
func (s *Session) refuseKeyUpdate(u *pg_query.UpdateStmt) error {
	name, err := relationName(u.Relation)
	if err != nil {
		return nil // the statement's own path reports it
	}
	tbl, ok := s.p.store.Table(name)
	if !ok || len(tbl.Keys) == 0 {
		return nil
	}
	for _, t := range u.TargetList {
		if c := t.GetResTarget().GetName(); tbl.KeyColumn(c) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE of column %q, which is in a PRIMARY KEY or UNIQUE constraint of table %q, is not supported; DELETE the row and INSERT it again", c, tbl.Name)
		}
	}
	return nil
}

// checkKeys refuses recs (23505) when two of them, or one of them and a
// row of the table, have equal values in every column of one of its keys
// (rows with a NULL there aside). The caller holds the table's lock.
func (s *Session) checkKeys(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch) error {
	if len(tbl.Keys) == 0 {
		return nil
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil
	}
	scratch := fmt.Sprintf(`%s."keys_%d"`, mirrorSchema, s.p.txSeq.Add(1))
	if err := createMirrorTable(ctx, s.conn, tbl, scratch); err != nil {
		return engineError(err)
	}
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+scratch)
	ids := make([]uint64, len(recs))
	if err := appendBatches(ctx, s.conn, tbl, &mirrorTable{name: scratch}, recs, ids); err != nil {
		return engineError(err)
	}
	b, err := s.bind(ctx, []string{tbl.Name}, keyRangeStatement(tbl, recs))
	if err != nil {
		return err
	}
	defer b.done()
	newRows := fmt.Sprintf("(SELECT %s FROM %s)", selectList(tbl, len(tbl.Columns)), scratch)
	old := "temp.main." + schema.QuoteIdent(tbl.Name)
	for _, k := range tbl.Keys {
		cols := make([]string, len(k.Columns))
		texts := make([]string, len(k.Columns))
		notNull := make([]string, len(k.Columns))
		equal := make([]string, len(k.Columns))
		for i, c := range k.Columns {
			q := schema.QuoteIdent(c)
			cols[i] = "n." + q
			texts[i] = fmt.Sprintf("CAST(n.%s AS VARCHAR)", q)
			notNull[i] = fmt.Sprintf("n.%s IS NOT NULL", q)
			equal[i] = fmt.Sprintf("t.%s = n.%s", q, q)
		}
		text := strings.Join(texts, " || ', ' || ")
		queries := []string{
			// Two new rows with one key.
			fmt.Sprintf("SELECT %s FROM %s AS n WHERE %s GROUP BY %s HAVING count(*) > 1 LIMIT 1",
				text, newRows, strings.Join(notNull, " AND "), strings.Join(cols, ", ")),
			// A new row with the key of one the table has.
			fmt.Sprintf("SELECT %s FROM %s AS n WHERE %s AND EXISTS (SELECT 1 FROM %s AS t WHERE %s) LIMIT 1",
				text, newRows, strings.Join(notNull, " AND "), old, strings.Join(equal, " AND ")),
		}
		for _, q := range queries {
			dup, found, err := s.firstText(ctx, q)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			return &sqlerr.Error{Code: sqlerr.UniqueViolation,
				Message: fmt.Sprintf("duplicate key value violates unique constraint %q", k.Name),
				Detail:  fmt.Sprintf("Key (%s)=(%s) already exists.", strings.Join(k.Columns, ", "), dup)}
		}
	}
	return nil
}

// firstText runs q, which returns one text column, on the session's
// connection: its first row's value, if it has a row.
func (s *Session) firstText(ctx context.Context, q string) (string, bool, error) {
	rows, err := s.engineQuerier().QueryContext(ctx, q)
	if err != nil {
		return "", false, engineError(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", false, engineError(err)
		}
		return "", false, nil
	}
	var v sql.NullString
	if err := rows.Scan(&v); err != nil {
		return "", false, engineError(err)
	}
	return v.String, true, nil
}

// keyRangeStatement is a statement whose time range is that of recs,
// for bind to prune the table to, when every key of tbl includes its
// time column (a row outside that range cannot repeat a key); nil (the
// whole table) otherwise.
func keyRangeStatement(tbl schema.Table, recs []arrow.RecordBatch) proto.Message {
	timeName := tbl.Columns[tbl.TimeIndex].Name
	for _, k := range tbl.Keys {
		has := false
		for _, c := range k.Columns {
			has = has || c == timeName
		}
		if !has {
			return nil
		}
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range recs {
		if int(r.NumCols()) <= tbl.TimeIndex {
			return nil
		}
		ts, ok := r.Column(tbl.TimeIndex).(*array.Timestamp)
		if !ok {
			return nil
		}
		for i := range ts.Len() {
			if ts.IsValid(i) {
				v := int64(ts.Value(i))
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	// Infinities (the engine's are the extreme values) and values past
	// what a literal can write read the whole table.
	const limit = 9_000_000_000_000_000
	if lo > hi || lo < -limit || hi > limit {
		return nil
	}
	zone := "" // a timestamp's wall clock, held as if UTC
	if tbl.Columns[tbl.TimeIndex].Type == schema.Timestamptz {
		zone = "+00"
	}
	lit := func(v int64) string {
		return "'" + time.UnixMicro(v).UTC().Format("2006-01-02 15:04:05.999999") + zone + "'"
	}
	q := fmt.Sprintf("SELECT 1 FROM %s WHERE %s BETWEEN %s AND %s", schema.QuoteIdent(tbl.Name), schema.QuoteIdent(timeName), lit(lo), lit(hi))
	tree, err := pg_query.Parse(q)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	return tree.Stmts[0].Stmt
}
