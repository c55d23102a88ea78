package planner

// Tables with an identity for their points (WITH (dedup_keys = 'host,cpu'),
// and every table line protocol creates, by its tag set): a row with the
// time and key values of a row the table has replaces it, as a second
// write of a point does in InfluxDB and QuestDB's DEDUP UPSERT KEYS.
//
// The replacement happens when the row is written, so that no layer ever
// holds two rows of one point: buffered rows, data files (which any Delta
// reader opens, so a merge on read would show them the duplicates) and
// the rows of a transaction. Every write to such a table goes through
// writeDedup, under the table's write lock: the new rows are folded into
// one per point, the rows of the table with the points of new ones are
// found (in the new rows' time range only: time is part of every
// identity), and those are updated in place through the transaction's
// DML path while the other new rows are inserted; both land in one
// commit, which replays as it ran.
//
// SQL writes replace the whole row. Line protocol merges (writeMerged):
// a field the new point lacks keeps the value the table has, as
// InfluxDB keeps the fields of a point written in two parts.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/ingest"
	"tsdb/internal/arrowutil"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

// WriteMerged writes a line-protocol record to a table with dedup_keys as
// user, in a session of its own: each point replaces the row of the
// table with its time and tags, keeping the fields the point lacks. It
// returns the number of points written.
func (p *Planner) WriteMerged(ctx context.Context, user, table string, rec arrow.RecordBatch) (int64, error) {
	s, err := p.NewSession(ctx, user)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	tbl, ok := p.store.Table(table)
	if !ok {
		return 0, s.missing(table)
	}
	// A SQL-made table's limits (timestamp(p), char(n)), which the rows
	// SQL wrote have, so that a point matches its row.
	recs, err := applyTypmods(tbl, []arrow.RecordBatch{rec})
	if err != nil {
		return 0, err
	}
	return s.writeDedup(ctx, tbl, recs, true)
}

// writeDedup writes recs to tbl, which has dedup_keys: one row per point
// among them (the last, or with merge the newest non-NULL value of each
// column), each replacing the row of the table with its point, if there
// is one. It returns the number of rows written, as the statement's tag
// counts them: every row of recs (a row that a later one replaced was
// written too, as in a sequence of INSERTs).
func (s *Session) writeDedup(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch, merge bool) (int64, error) {
	if err := s.p.store.Validate(tbl.Name, recs); err != nil {
		return 0, err
	}
	var given, bytes int64
	for _, r := range recs {
		given += r.NumRows()
		bytes += membuffer.RecordBytes(r)
	}
	if limit := s.p.store.MaxStatementBytes(); s.tx == nil && bytes > limit {
		// One statement that can never fit, as a plain insert says it
		// (not the 53200 of a transaction that outgrew the limit).
		return 0, sqlerr.New(sqlerr.ProgramLimitExceeded, "this statement needs %d MiB in memory, more than --memory-limit %d MiB: split it into smaller statements", bytes>>20, limit>>20)
	}
	return s.inTx(ctx, func() (int64, error) {
		if err := s.lockKeyed(ctx, tbl.Name); err != nil {
			return 0, err
		}
		// The table as it is under the lock: a column added meanwhile.
		tbl := tbl
		if cur, ok := s.p.store.Table(tbl.Name); ok {
			tbl = cur
		}
		if len(tbl.Dedup) == 0 {
			// RESET (dedup_keys) meanwhile.
			return s.tx.insert(s, tbl.Name, recs)
		}
		if err := s.writePoints(ctx, tbl, recs, merge); err != nil {
			return 0, err
		}
		return given, nil
	})
}

// inTx runs fn in the session's transaction block or, outside one, in a
// transaction of its own that commits when fn succeeds and is rolled
// back when it fails. It returns fn's count (0 when the commit fails).
func (s *Session) inTx(ctx context.Context, fn func() (int64, error)) (n int64, err error) {
	if s.tx != nil {
		return fn()
	}
	s.tx = s.newTx(true)
	defer func() {
		if err != nil {
			s.rollbackTx(ctx)
			return
		}
		if err = s.commitTx(ctx); err != nil {
			n = 0
		}
	}()
	return fn()
}

// writePoints is writeDedup's work in the transaction, under the table's
// lock.
func (s *Session) writePoints(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch, merge bool) error {
	recs, err := foldPoints(tbl, recs, merge)
	if err != nil {
		return err
	}
	var matched [][]int64
	if s.mayHoldPoints(ctx, tbl, recs) {
		if matched, err = s.pointsPresent(ctx, tbl, recs); err != nil {
			return err
		}
	}
	news, refs, err := separateRows(recs, matched)
	if err != nil {
		return err
	}
	if len(refs) > 0 {
		old, err := arrowutil.Take(recs[0].Schema(), recs, refs)
		if err != nil {
			return err
		}
		if err := s.replacePoints(ctx, tbl, old, merge); err != nil {
			return err
		}
	}
	_, err = s.tx.insert(s, tbl.Name, news)
	return err
}

// mayHoldPoints reports whether the table may have a row with a point of
// recs: a data file whose times reach into their time range, rows of the
// session's transaction, or a buffered batch in that range whose points'
// hashes include one of recs' (pointindex.go). When it has none (new
// points, the common case) the engine need not look.
func (s *Session) mayHoldPoints(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch) bool {
	lo, hi, ok := timeBounds(tbl, recs)
	if !ok {
		return true
	}
	if tt := s.tx.tables[tbl.Name]; tt != nil && (len(tt.recs) > 0 || len(tt.dels) > 0) {
		return true
	}
	snaps, err := s.p.store.Snapshots(ctx, []string{tbl.Name})
	snap := snaps[tbl.Name]
	if err != nil || snap == nil {
		return true
	}
	for _, f := range snap.Files {
		if f.MinTime <= hi && f.MaxTime >= lo {
			return true // late points: the engine reads the files
		}
	}
	var overlapping []membuffer.Batch
	for _, b := range snap.Batches {
		if b.MinTime <= hi && b.MaxTime >= lo {
			overlapping = append(overlapping, b)
		}
	}
	return len(overlapping) > 0 && s.p.points.mayContain(tbl, snap.Batches, overlapping, recs)
}

// stageRows copies recs into a scratch table of the engine in the
// mirror's layout (the record index as batch ID, the row number), for a
// statement to compare with the table; drop removes it.
func (s *Session) stageRows(ctx context.Context, tbl schema.Table, prefix string, recs []arrow.RecordBatch) (name string, drop func(), err error) {
	name = fmt.Sprintf(`%s."%s_%d"`, mirrorSchema, prefix, s.p.txSeq.Add(1))
	if err := createMirrorTable(ctx, s.conn, tbl, name); err != nil {
		return "", nil, engineError(err)
	}
	drop = func() { s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+name) }
	ids := make([]uint64, len(recs))
	for i := range ids {
		ids[i] = uint64(i)
	}
	if err := appendBatches(ctx, s.conn, tbl, &mirrorTable{name: name}, recs, ids); err != nil {
		drop()
		return "", nil, engineError(err)
	}
	return name, drop, nil
}

// pointsPresent finds the rows of recs whose point the table has (as the
// session reads it: its transaction's rows too): each record's row
// numbers.
func (s *Session) pointsPresent(ctx context.Context, tbl schema.Table, recs []arrow.RecordBatch) ([][]int64, error) {
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil, nil
	}
	scratch, drop, err := s.stageRows(ctx, tbl, "points", recs)
	if err != nil {
		return nil, err
	}
	defer drop()
	b, err := s.bind(ctx, []string{tbl.Name}, timeRangeStatement(tbl, recs))
	if err != nil {
		return nil, err
	}
	defer b.done()
	q := fmt.Sprintf("SELECT %[1]s, %[2]s FROM (SELECT %[1]s, %[2]s, %[3]s FROM %[4]s) AS n WHERE EXISTS (SELECT 1 FROM %[5]s AS t WHERE %[6]s)",
		batchColumn, rowColumn, selectList(tbl, len(tbl.Columns)), scratch, "temp.main."+schema.QuoteIdent(tbl.Name), samePoint(tbl, "t", "n"))
	res, err := s.engineQuerier().QueryContext(ctx, q)
	if err != nil {
		return nil, engineError(err)
	}
	return scanRowRefs(res, len(recs))
}

// samePoint is the SQL condition that rows a and b (aliases) are one
// point of tbl: equal time, and each key equal or both NULL.
func samePoint(tbl schema.Table, a, b string) string {
	conds := make([]string, len(tbl.Dedup))
	for i, c := range tbl.Dedup {
		q := schema.QuoteIdent(c)
		op := "IS NOT DISTINCT FROM"
		if i == 0 {
			op = "=" // the time column is never NULL
		}
		conds[i] = fmt.Sprintf("%s.%s %s %s.%s", a, q, op, b, q)
	}
	return strings.Join(conds, " AND ")
}

// replacePoints updates the rows of the table that have the points of
// rec (one row per point, each of them there) to rec's values: every
// column, or with merge those rec has a value in. The update is the
// transaction's, like any UPDATE in a block, bounded to rec's time range
// so that only the files and batches of that range are read and
// rewritten. Fewer rows updated than rec has would mean that a point
// pointsPresent found was not replaced, and its row lost: that fails.
func (s *Session) replacePoints(ctx context.Context, tbl schema.Table, rec arrow.RecordBatch, merge bool) error {
	var sets []string
	for _, c := range tbl.Columns {
		if tbl.DedupColumn(c.Name) {
			continue
		}
		q := schema.QuoteIdent(c.Name)
		if merge {
			sets = append(sets, fmt.Sprintf("%s = COALESCE(excluded.%s, tsdb_old.%s)", q, q, q))
		} else {
			sets = append(sets, fmt.Sprintf("%s = excluded.%s", q, q))
		}
	}
	if len(sets) == 0 {
		return nil // every column identifies the point: it is there already
	}
	recs := []arrow.RecordBatch{rec}
	excluded := fmt.Sprintf("_excluded_%d", s.p.txSeq.Add(1))
	if err := s.stageExcluded(ctx, tbl, excluded, recs); err != nil {
		return err
	}
	defer s.dropExcluded(ctx, excluded)
	where := samePoint(tbl, "tsdb_old", "excluded")
	if lo, hi, ok := timeBounds(tbl, recs); ok {
		where += fmt.Sprintf(" AND tsdb_old.%s BETWEEN %s AND %s", schema.QuoteIdent(tbl.TimeColumn().Name), timeLiteral(tbl, lo), timeLiteral(tbl, hi))
	}
	q := fmt.Sprintf("UPDATE %s AS tsdb_old SET %s FROM temp.main.%s AS excluded WHERE %s",
		schema.QuoteIdent(tbl.Name), strings.Join(sets, ", "), schema.QuoteIdent(tempPrefix+excluded), where)
	tree, err := pg_query.Parse(q)
	if err != nil {
		return fmt.Errorf("planner: dedup update of %s: %w", tbl.Name, err)
	}
	res, err := s.dmlInTx(ctx, tree.Stmts[0].Stmt)
	if err != nil {
		return err
	}
	var updated int64
	fmt.Sscanf(res.Tag, "UPDATE %d", &updated)
	if updated < rec.NumRows() {
		return sqlerr.New(sqlerr.InternalError, "table %q: %d of %d points found there were replaced; nothing was written", tbl.Name, updated, rec.NumRows())
	}
	return nil
}

// timeRangeStatement is a statement whose time range is that of recs,
// for bind to prune tbl to; nil (the whole table) when recs have no time
// a literal can write.
func timeRangeStatement(tbl schema.Table, recs []arrow.RecordBatch) proto.Message {
	lo, hi, ok := timeBounds(tbl, recs)
	if !ok {
		return nil
	}
	timeName := tbl.TimeColumn().Name
	q := fmt.Sprintf("SELECT 1 FROM %s WHERE %s BETWEEN %s AND %s", schema.QuoteIdent(tbl.Name), schema.QuoteIdent(timeName), timeLiteral(tbl, lo), timeLiteral(tbl, hi))
	tree, err := pg_query.Parse(q)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	return tree.Stmts[0].Stmt
}

// timeBounds is the range of recs' time column (UTC micros, or the wall
// clock as if UTC for a timestamp column); ok is false without rows or
// with a time outside years 1 to 9999 (the engine's infinities too).
func timeBounds(tbl schema.Table, recs []arrow.RecordBatch) (lo, hi int64, ok bool) {
	lo, hi = int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range recs {
		if int(r.NumCols()) <= tbl.TimeIndex {
			return 0, 0, false
		}
		ts, ok := r.Column(tbl.TimeIndex).(*array.Timestamp)
		if !ok {
			return 0, 0, false
		}
		for i := range ts.Len() {
			if ts.IsValid(i) {
				v := int64(ts.Value(i))
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	// Years 1 to 9999 only: the literals timeLiteral writes (no BC, no
	// five-digit years); outside, the whole table is read.
	const first, last = -62135596800_000000, 253402300799_999999
	if lo > hi || lo < first || hi > last {
		return 0, 0, false
	}
	return lo, hi, true
}

// timeLiteral writes a time of tbl's time column as a SQL literal.
func timeLiteral(tbl schema.Table, v int64) string {
	zone := "" // a timestamp's wall clock, held as if UTC
	if tbl.TimeColumn().Type == schema.Timestamptz {
		zone = "+00"
	}
	return "'" + time.UnixMicro(v).UTC().Format("2006-01-02 15:04:05.999999") + zone + "'"
}

// foldPoints leaves one row per point in recs (tbl.Dedup's columns): the
// last row of each point, or with merge the last row's keys and, per
// other column, the last non-NULL value the point's rows have. Points keep
// the order of their first row. recs are returned as they are when no
// point repeats.
func foldPoints(tbl schema.Table, recs []arrow.RecordBatch, merge bool) ([]arrow.RecordBatch, error) {
	seed := maphash.MakeSeed()
	return foldPointsHashed(tbl, recs, merge, func(key []byte) uint64 { return maphash.Bytes(seed, key) })
}

// foldPointsHashed is foldPoints with the hash of the keys given (a test
// gives one under which every key collides).
func foldPointsHashed(tbl schema.Table, recs []arrow.RecordBatch, merge bool, hash func([]byte) uint64) ([]arrow.RecordBatch, error) {
	keyCols := dedupColumns(tbl)
	// The points by the hash of their key: a map of strings would copy
	// every row's key. A hash met again is checked against the key of
	// the point's first row; a different key under the same hash (64
	// bits: next to never) goes to the map of whole keys.
	type point struct {
		first arrowutil.RowRef
		more  []arrowutil.RowRef // the later rows of the point, if any
	}
	index := map[uint64]int{}
	var collided map[string]int
	var points []point
	var key, other []byte
	total := 0
	for ri, rec := range recs {
		for r := range int(rec.NumRows()) {
			total++
			key = pointKey(key[:0], keyCols, rec, r)
			ref := arrowutil.RowRef{Rec: ri, Row: r}
			h := hash(key)
			p, ok := index[h]
			if ok {
				f := points[p].first
				if other = pointKey(other[:0], keyCols, recs[f.Rec], f.Row); !bytes.Equal(key, other) {
					if collided == nil {
						collided = map[string]int{}
					}
					if p, ok = collided[string(key)]; !ok {
						collided[string(key)] = len(points)
					}
				}
			}
			if ok {
				points[p].more = append(points[p].more, ref)
				continue
			}
			if _, taken := index[h]; !taken {
				index[h] = len(points)
			}
			points = append(points, point{first: ref})
		}
	}
	if len(points) == total {
		return recs, nil
	}
	sch := tbl.ArrowSchema()
	padded := make([]arrow.RecordBatch, len(recs))
	for i, rec := range recs {
		padded[i] = arrowutil.Pad(sch, rec)
		defer padded[i].Release()
	}
	rec, err := arrowutil.TakeEach(sch, padded, len(points), func(col, i int) arrowutil.RowRef {
		p := points[i]
		if len(p.more) == 0 {
			return p.first
		}
		if merge {
			for j := len(p.more) - 1; j >= 0; j-- {
				if r := p.more[j]; padded[r.Rec].Column(col).IsValid(r.Row) {
					return r
				}
			}
			if padded[p.first.Rec].Column(col).IsValid(p.first.Row) {
				return p.first
			}
		}
		return p.more[len(p.more)-1]
	})
	if err != nil {
		return nil, err
	}
	return []arrow.RecordBatch{rec}, nil
}

// appendPointKey appends row r of a key column to key, so that two rows
// have equal keys exactly when their values are equal or both NULL.
func appendPointKey(key []byte, a arrow.Array, r int) []byte {
	if a.IsNull(r) {
		return append(key, 0)
	}
	key = append(key, 1)
	switch a := a.(type) {
	case *array.String:
		v := a.Value(r)
		key = binary.AppendUvarint(key, uint64(len(v)))
		return append(key, v...)
	case *array.Binary:
		v := a.Value(r)
		key = binary.AppendUvarint(key, uint64(len(v)))
		return append(key, v...)
	case *array.Timestamp:
		return binary.LittleEndian.AppendUint64(key, uint64(a.Value(r)))
	case *array.Int64:
		return binary.LittleEndian.AppendUint64(key, uint64(a.Value(r)))
	case *array.Int32:
		return binary.LittleEndian.AppendUint32(key, uint32(a.Value(r)))
	case *array.Int16:
		return binary.LittleEndian.AppendUint16(key, uint16(a.Value(r)))
	case *array.Date32:
		return binary.LittleEndian.AppendUint32(key, uint32(a.Value(r)))
	case *array.Boolean:
		if a.Value(r) {
			return append(key, 1)
		}
		return append(key, 0)
	case *array.Decimal128:
		v := a.Value(r)
		key = binary.LittleEndian.AppendUint64(key, uint64(v.HighBits()))
		return binary.LittleEndian.AppendUint64(key, v.LowBits())
	}
	v := a.ValueStr(r)
	key = binary.AppendUvarint(key, uint64(len(v)))
	return append(key, v...)
}

// parseDedupKeys reads the value of dedup_keys ('host, cpu'): column
// names separated by commas, each as written (no case folding: the
// columns line protocol makes keep InfluxDB's names). The time column
// comes first whether or not the list names it; an empty list turns
// deduplication off.
func parseDedupKeys(tbl schema.Table, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{}, nil
	}
	timeName := tbl.TimeColumn().Name
	cols := []string{timeName}
	for _, part := range strings.Split(v, ",") {
		c := strings.TrimSpace(part)
		if c == "" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid dedup_keys %q: write column names separated by commas", v)
		}
		if c == timeName {
			continue
		}
		cols = append(cols, c)
	}
	for _, c := range cols {
		if tbl.ColumnIndex(c) < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "dedup key column %q of relation %q does not exist", c, tbl.Name)
		}
	}
	if err := schema.CheckDedup(tbl, cols); err != nil {
		code := sqlerr.InvalidParameterValue
		if len(tbl.Keys) > 0 {
			code = sqlerr.FeatureNotSupported
		}
		return nil, sqlerr.New(code, "%v", err)
	}
	return cols, nil
}

// setDedup gives a table the point identity dedup_keys names (v; empty
// turns it off), after checking its rows: with the plain writes in
// flight landed and new ones held back (BlockPlainWrites), and under the
// table's write lock, which the writers that keep points and transaction
// commits take, so that the rows checked are every row the table will
// have when the keys are set. A transaction that wrote rows without the
// keys fails its COMMIT afterwards (40001, ingest.DedupCovered).
func (s *Session) setDedup(ctx context.Context, name, v string) error {
	release, err := s.p.store.BlockPlainWrites(ctx, name)
	if err != nil {
		return wrapStoreErr(err)
	}
	defer release()
	tx := ingest.TxID(s.p.txSeq.Add(1))
	held, unlock, err := s.p.store.LockTable(ctx, tx, name)
	if err != nil {
		return wrapStoreErr(err)
	}
	if !held {
		defer unlock()
	}
	tbl, ok := s.p.store.Table(name)
	if !ok {
		return s.missing(name)
	}
	cols, err := parseDedupKeys(tbl, v)
	if err != nil {
		return err
	}
	if err := s.checkNoDuplicatePoints(ctx, tbl, cols); err != nil {
		return err
	}
	if err := s.p.store.SetOptionsAs(ctx, tx, name, ingest.TableOptions{Dedup: &cols}); err != nil {
		return wrapStoreErr(err)
	}
	return nil
}

// checkNoDuplicatePoints refuses (23505) to give tbl the identity cols
// while two of its rows have one point, as PostgreSQL refuses a unique
// index over rows that repeat its key.
func (s *Session) checkNoDuplicatePoints(ctx context.Context, tbl schema.Table, cols []string) error {
	if len(cols) == 0 {
		return nil
	}
	b, err := s.bind(ctx, []string{tbl.Name}, nil)
	if err != nil {
		return err
	}
	defer b.done()
	quoted := make([]string, len(cols))
	texts := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = schema.QuoteIdent(c)
		texts[i] = fmt.Sprintf("COALESCE(CAST(%s AS VARCHAR), 'NULL')", quoted[i])
	}
	q := fmt.Sprintf("SELECT %s FROM temp.main.%s GROUP BY %s HAVING count(*) > 1 LIMIT 1",
		strings.Join(texts, " || ', ' || "), schema.QuoteIdent(tbl.Name), strings.Join(quoted, ", "))
	dup, found, err := s.firstText(ctx, q)
	if err != nil || !found {
		return err
	}
	return &sqlerr.Error{Code: sqlerr.UniqueViolation,
		Message: fmt.Sprintf("could not set dedup_keys of table %q", tbl.Name),
		Detail:  fmt.Sprintf("Key (%s)=(%s) is duplicated.", strings.Join(cols, ", "), dup),
		Hint:    "DELETE the extra rows of each point first."}
}
