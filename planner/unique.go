package planner

// PRIMARY KEY and UNIQUE constraints of tsdb's tables (schema.Key), kept
// by every write the planner makes (keydefs.go reads them from CREATE
// TABLE; onconflict.go is INSERT … ON CONFLICT). Storage
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
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// writeKeyed writes recs to a table with keys: under the table's write
// lock (the transaction's, held until it ends, in a block), after
// checkKeys. Rows that repeat key skip (ON CONFLICT DO NOTHING) are left
// out; it returns the number written.
func (s *Session) writeKeyed(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch, skip *schema.Key) (int64, error) {
	if err := s.p.store.Validate(tbl.Name, recs); err != nil {
		return 0, err
	}
	if s.tx != nil {
		if err := s.lockKeyed(ctx, tbl.Name); err != nil {
			return 0, err
		}
		kept, err := s.checkKeys(ctx, tbl, recs, skip)
		if err != nil {
			return 0, err
		}
		return s.tx.insert(s, tbl.Name, kept)
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
	kept, err := s.checkKeys(ctx, tbl, recs, skip)
	if err != nil {
		return 0, err
	}
	return s.p.store.InsertKeyed(ctx, tbl.Name, kept)
}

// lockKeyed takes, for the session's transaction, the lock of a table
// with keys that it is about to write, and applies REPEATABLE READ's rule
// for such writes (checkUnchanged).
func (s *Session) lockKeyed(ctx context.Context, name string) error {
	if err := s.writableTx("INSERT"); err != nil {
		return err
	}
	if err := s.tx.lock(ctx, s, name); err != nil {
		return err
	}
	return s.checkUnchanged(ctx, name, true)
}

// refuseKeyUpdate refuses an UPDATE that sets a column of one of its
// table's keys: the rows it rewrites are not checked against the keys.
func (s *Session) refuseKeyUpdate(u *pg_query.UpdateStmt) error {
	name, err := relationName(u.Relation)
	if err != nil {
		return nil // the statement's own path reports it
	}
	tbl, ok := s.p.store.Table(name)
	if !ok || len(tbl.Keys) == 0 && len(tbl.Dedup) == 0 {
		return nil
	}
	for _, t := range u.TargetList {
		if c := t.GetResTarget().GetName(); tbl.DedupColumn(c) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE of column %q, which identifies the points of table %q (dedup_keys), is not supported; DELETE the row and INSERT it again", c, tbl.Name)
		}
		if c := t.GetResTarget().GetName(); tbl.KeyColumn(c) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE of column %q, which is in a PRIMARY KEY or UNIQUE constraint of table %q, is not supported; DELETE the row and INSERT it again", c, tbl.Name)
		}
	}
	return nil
}

// checkKeys refuses recs (23505) when two of them, or one of them and a
// row of the table, have equal values in every column of one of its keys
// (rows with a NULL there aside). Rows that repeat key skip are left out
// instead, as PostgreSQL's ON CONFLICT DO NOTHING inserts row after row:
// a row repeating one of the table's, or one written before it in recs.
// It returns the rows to write. The caller holds the table's lock.
func (s *Session) checkKeys(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch, skip *schema.Key) ([]arrow.RecordBatch, error) {
	if len(tbl.Keys) == 0 {
		return recs, nil
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows == 0 {
		return recs, nil
	}
	scratch, drop, err := s.stageRows(ctx, tbl, "keys", recs)
	if err != nil {
		return nil, err
	}
	defer drop()
	b, err := s.bind(ctx, []string{tbl.Name}, keyRangeStatement(tbl, recs))
	if err != nil {
		return nil, err
	}
	defer b.done()
	old := "temp.main." + schema.QuoteIdent(tbl.Name)
	if skip != nil {
		if recs, err = s.skipConflicts(ctx, tbl, *skip, recs, scratch, old); err != nil {
			return nil, err
		}
	}
	newRows := fmt.Sprintf("(SELECT %s FROM %s)", selectList(tbl, len(tbl.Columns)), scratch)
	for _, k := range tbl.Keys {
		cols := make([]string, len(k.Columns))
		texts := make([]string, len(k.Columns))
		for i, c := range k.Columns {
			cols[i] = "n." + schema.QuoteIdent(c)
			texts[i] = fmt.Sprintf("CAST(n.%s AS VARCHAR)", schema.QuoteIdent(c))
		}
		text := strings.Join(texts, " || ', ' || ")
		notNull, equal := keyPredicates(k)
		queries := []string{
			// Two new rows with one key.
			fmt.Sprintf("SELECT %s FROM %s AS n WHERE %s GROUP BY %s HAVING count(*) > 1 LIMIT 1",
				text, newRows, notNull, strings.Join(cols, ", ")),
			// A new row with the key of one the table has.
			fmt.Sprintf("SELECT %s FROM %s AS n WHERE %s AND EXISTS (SELECT 1 FROM %s AS t WHERE %s) LIMIT 1",
				text, newRows, notNull, old, equal),
		}
		for _, q := range queries {
			dup, found, err := s.firstText(ctx, q)
			if err != nil {
				return nil, err
			}
			if !found {
				continue
			}
			return nil, &sqlerr.Error{Code: sqlerr.UniqueViolation,
				Message: fmt.Sprintf("duplicate key value violates unique constraint %q", k.Name),
				Detail:  fmt.Sprintf("Key (%s)=(%s) already exists.", strings.Join(k.Columns, ", "), dup)}
		}
	}
	return recs, nil
}

// keyPredicates are SQL conditions on a new row n and a row t of the
// table: n has no NULL in key k, and t has n's key.
func keyPredicates(k schema.Key) (notNull, equal string) {
	nn := make([]string, len(k.Columns))
	eq := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		q := schema.QuoteIdent(c)
		nn[i] = fmt.Sprintf("n.%s IS NOT NULL", q)
		eq[i] = fmt.Sprintf("t.%s = n.%s", q, q)
	}
	return strings.Join(nn, " AND "), strings.Join(eq, " AND ")
}

// skipConflicts removes from scratch (the new rows, staged) and from recs
// the rows that repeat key k: one the table has, or one an earlier new row
// has.
func (s *Session) skipConflicts(ctx context.Context, tbl schema.Table, k schema.Key, recs []arrow.RecordBatch, scratch, old string) ([]arrow.RecordBatch, error) {
	cols := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		cols[i] = schema.QuoteIdent(c)
	}
	notNull, equal := keyPredicates(k)
	q := fmt.Sprintf(`DELETE FROM %[1]s WHERE rowid IN (SELECT _rid FROM (SELECT rowid AS _rid, row_number() OVER (PARTITION BY %[2]s ORDER BY %[3]s, %[4]s) AS _tsdb_n, %[5]s FROM %[1]s) AS n
		WHERE %[6]s AND (_tsdb_n > 1 OR EXISTS (SELECT 1 FROM %[7]s AS t WHERE %[8]s))) RETURNING %[3]s, %[4]s`,
		scratch, strings.Join(cols, ", "), batchColumn, rowColumn, selectList(tbl, len(tbl.Columns)), notNull, old, equal)
	rows, err := s.engineQuerier().QueryContext(ctx, q)
	if err != nil {
		return nil, engineError(err)
	}
	drop, err := scanRowRefs(rows, len(recs))
	if err != nil {
		return nil, err
	}
	out, _, err := separateRows(recs, drop)
	return out, err
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
	return timeRangeStatement(tbl, recs)
}
