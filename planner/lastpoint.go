package planner

// The newest row of each series (TSBS's lastpoint, Grafana's "last value
// per host") and the series of a table (SELECT DISTINCT host, a dashboard
// variable) depend on few rows: each value of the column has a newest
// row, and no row older than the oldest of those newest times can change
// the answer. For such a statement bind reads only the snapshot's files
// and buffered batches from that time on, which it computes from the
// snapshot itself: per data file and per batch, each value's newest time
// (files and batches never change, so each is summarized once and kept).
// The statement runs as written; only what it reads is cut, and only to
// where each value's newest row still is.

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// lastKey names a statement's table and the text column whose values'
// newest rows are all the statement needs.
type lastKey struct {
	table  string
	column string
	// upper: the WHERE bounds the time column from above, which the
	// statement's time range must then hold (lastKeyBound checks the
	// values' newest rows against it); where the range leaves it out
	// (a bound the planner does not compute), nothing is cut.
	upper bool
}

// lastPerKey recognizes a statement that needs only the newest row of
// each value of one text column c of a table of tsdb's t, and reads
// nothing else:
//
//	SELECT DISTINCT ON (c) <columns or *> FROM t ORDER BY c, time DESC …
//	SELECT DISTINCT c FROM t …  /  SELECT c FROM t GROUP BY c …
//
// with no aggregate, window or other expression (any of which may read
// the older rows), no WHERE but bounds on the time column
// (timeBoundsOnly), LIMIT and OFFSET allowed.
func (s *Session) lastPerKey(sel *pg_query.SelectStmt) (lastKey, bool) {
	if sel == nil || sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.FromClause) != 1 ||
		sel.HavingClause != nil || len(sel.WindowClause) > 0 || sel.WithClause != nil || len(sel.ValuesLists) > 0 || sel.IntoClause != nil ||
		len(sel.LockingClause) > 0 {
		return lastKey{}, false
	}
	rv := sel.FromClause[0].GetRangeVar()
	if rv == nil || rv.Catalogname != "" || (rv.Schemaname != "" && rv.Schemaname != "public") {
		return lastKey{}, false
	}
	if _, temp := isTempRelation(rv); temp || s.isTemp(rv.Relname) {
		return lastKey{}, false
	}
	tbl, ok := s.p.store.Table(rv.Relname)
	if !ok || tbl.ViewQuery != "" {
		return lastKey{}, false
	}
	if s.tx != nil && s.tx.tables[tbl.Name] != nil {
		return lastKey{}, false // its own writes are not in the files and batches
	}
	alias := rv.Relname
	if rv.Alias != nil {
		if len(rv.Alias.Colnames) > 0 {
			return lastKey{}, false // FROM t AS x(a, b) renames the columns
		}
		alias = rv.Alias.Aliasname
	}
	if sel.WhereClause != nil && !timeBoundsOnly(sel.WhereClause, alias, tbl.Columns[tbl.TimeIndex].Name) {
		return lastKey{}, false
	}
	// LIMIT and OFFSET of a subquery would read the cut table too.
	for _, n := range []*pg_query.Node{sel.LimitCount, sel.LimitOffset} {
		if n != nil && !statementConstant(n) {
			return lastKey{}, false
		}
	}
	// An output column named like a column of the table: ORDER BY and
	// DISTINCT ON would name the output column (v AS time), not the
	// table's.
	for _, t := range sel.TargetList {
		if name := t.GetResTarget().GetName(); name != "" && tbl.ColumnIndex(name) >= 0 {
			return lastKey{}, false
		}
	}
	column := func(n *pg_query.Node) string { return tableColumnRef(n, alias, tbl) }
	star := func(n *pg_query.Node) bool {
		cr := n.GetColumnRef()
		return cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetAStar() != nil
	}
	key := ""
	switch {
	case len(sel.DistinctClause) == 1 && sel.DistinctClause[0].GetNode() != nil && len(sel.GroupClause) == 0:
		// DISTINCT ON (c) … ORDER BY c, time DESC: each c's newest row.
		key = column(sel.DistinctClause[0])
		timeName := tbl.Columns[tbl.TimeIndex].Name
		if len(sel.SortClause) < 2 {
			return lastKey{}, false
		}
		first, second := sel.SortClause[0].GetSortBy(), sel.SortClause[1].GetSortBy()
		if first == nil || second == nil || column(first.Node) != key || column(second.Node) != timeName ||
			second.SortbyDir != pg_query.SortByDir_SORTBY_DESC || len(first.UseOp) > 0 || len(second.UseOp) > 0 {
			return lastKey{}, false
		}
		for _, t := range sel.TargetList {
			if v := t.GetResTarget().GetVal(); !star(v) && column(v) == "" {
				return lastKey{}, false
			}
		}
	case len(sel.DistinctClause) == 1 && sel.DistinctClause[0].GetNode() == nil && len(sel.GroupClause) == 0,
		len(sel.DistinctClause) == 0 && len(sel.GroupClause) == 1 && column(sel.GroupClause[0]) != "":
		// The values of c: each has a newest row.
		if len(sel.TargetList) != 1 {
			return lastKey{}, false
		}
		key = column(sel.TargetList[0].GetResTarget().GetVal())
		if len(sel.GroupClause) == 1 && column(sel.GroupClause[0]) != key {
			return lastKey{}, false
		}
		for _, sb := range sel.SortClause {
			if column(sb.GetSortBy().GetNode()) != key && !isOutputRef(sb.GetSortBy().GetNode(), sel) {
				return lastKey{}, false
			}
		}
	default:
		return lastKey{}, false
	}
	if key == "" || tbl.Columns[tbl.ColumnIndex(key)].Type != schema.Text {
		return lastKey{}, false
	}
	upper := sel.WhereClause != nil && hasUpperBound(sel.WhereClause, alias, tbl.Columns[tbl.TimeIndex].Name)
	return lastKey{table: tbl.Name, column: key, upper: upper}, true
}

// tableColumnRef is the column of t that n names by a bare reference
// (c, or alias.c where alias names t in the FROM list), or "".
func tableColumnRef(n *pg_query.Node, alias string, t schema.Table) string {
	cr := n.GetColumnRef()
	if cr == nil {
		return ""
	}
	var parts []string
	for _, f := range cr.Fields {
		if f.GetString_() == nil {
			return ""
		}
		parts = append(parts, f.GetString_().Sval)
	}
	switch {
	case len(parts) == 2 && parts[0] == alias:
		parts = parts[1:]
	case len(parts) != 1:
		return ""
	}
	if t.ColumnIndex(parts[0]) < 0 {
		return ""
	}
	return parts[0]
}

// timeBoundsOnly reports whether where is one or more bounds on the time
// column, joined by AND (time > now() - interval '1 hour', time >=
// '2026-01-01', time BETWEEN $from AND $to as Grafana's $__timeFilter
// writes it), each of one value for the statement. A lower bound keeps,
// of each value, every row from some time on; an upper bound every row
// up to some time, which lastKeyBound checks against the values' newest
// rows. Another column, a subquery, OR, or a bound that may differ row
// by row is anything else.
func timeBoundsOnly(where *pg_query.Node, alias, timeName string) bool {
	if be := where.GetBoolExpr(); be != nil {
		if be.Boolop != pg_query.BoolExprType_AND_EXPR {
			return false
		}
		for _, a := range be.Args {
			if !timeBoundsOnly(a, alias, timeName) {
				return false
			}
		}
		return true
	}
	ae := where.GetAExpr()
	if ae == nil || len(ae.Name) != 1 || ae.Lexpr == nil || ae.Rexpr == nil {
		return false
	}
	isTime := func(n *pg_query.Node) bool {
		cr := n.GetColumnRef()
		if cr == nil {
			return false
		}
		var parts []string
		for _, f := range cr.Fields {
			parts = append(parts, f.GetString_().GetSval())
		}
		return len(parts) == 1 && parts[0] == timeName || len(parts) == 2 && parts[0] == alias && parts[1] == timeName
	}
	if ae.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN {
		bounds := ae.Rexpr.GetList().GetItems()
		return isTime(ae.Lexpr) && len(bounds) == 2 && statementConstant(bounds[0]) && statementConstant(bounds[1])
	}
	if ae.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
		return false
	}
	switch ae.Name[0].GetString_().GetSval() {
	case ">", ">=", "<", "<=":
		return isTime(ae.Lexpr) && statementConstant(ae.Rexpr) || isTime(ae.Rexpr) && statementConstant(ae.Lexpr)
	}
	return false
}

// hasUpperBound reports whether where, of the form timeBoundsOnly takes,
// bounds the time column from above (time < x, x >= time, BETWEEN).
func hasUpperBound(where *pg_query.Node, alias, timeName string) bool {
	if be := where.GetBoolExpr(); be != nil {
		for _, a := range be.Args {
			if hasUpperBound(a, alias, timeName) {
				return true
			}
		}
		return false
	}
	ae := where.GetAExpr()
	if ae == nil || len(ae.Name) != 1 {
		return false
	}
	if ae.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN {
		return true
	}
	isTime := func(n *pg_query.Node) bool {
		cr := n.GetColumnRef()
		if cr == nil {
			return false
		}
		last := cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
		return last == timeName && (len(cr.Fields) == 1 || len(cr.Fields) == 2 && cr.Fields[0].GetString_().GetSval() == alias)
	}
	switch ae.Name[0].GetString_().GetSval() {
	case "<", "<=":
		return isTime(ae.Lexpr)
	case ">", ">=":
		return isTime(ae.Rexpr)
	}
	return false
}

// statementConstant reports whether n has one value for the whole
// statement: literals, casts of them, now() and CURRENT_TIMESTAMP and
// the like, and + and - of such (now() - interval '1 hour'). A column,
// a subquery or a function that may change row by row (random(),
// clock_timestamp()) is not.
func statementConstant(n *pg_query.Node) bool {
	switch {
	case n.GetAConst() != nil, n.GetSqlvalueFunction() != nil:
		return true
	case n.GetTypeCast() != nil:
		return statementConstant(n.GetTypeCast().Arg)
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		switch sqltree.LastName(fc.Funcname) {
		case "now", "transaction_timestamp", "statement_timestamp":
			return len(fc.Args) == 0
		}
		return false
	case n.GetAExpr() != nil:
		ae := n.GetAExpr()
		op := ""
		if len(ae.Name) == 1 {
			op = ae.Name[0].GetString_().GetSval()
		}
		return ae.Kind == pg_query.A_Expr_Kind_AEXPR_OP && (op == "+" || op == "-") &&
			(ae.Lexpr == nil || statementConstant(ae.Lexpr)) && statementConstant(ae.Rexpr)
	}
	return false
}

// isOutputRef reports whether n is ORDER BY's reference to the first
// output column (ORDER BY 1).
func isOutputRef(n *pg_query.Node, sel *pg_query.SelectStmt) bool {
	iv := n.GetAConst().GetIval()
	return iv != nil && iv.Ival == 1 && len(sel.TargetList) == 1
}

// keyTimes remembers, per data file, per table version's files and per
// buffered batch, the newest time of each value of a column: what
// lastKeyBound needs of them. All are immutable, so an entry is never
// stale, only unused; the whole is cleared when it grows past maxKeyTimes
// values.
type keyTimes struct {
	mu sync.Mutex
	// files: "path\x00column" and "table ID\x00Delta version\x00column".
	files   map[string]map[string]int64
	batches map[string]map[string]newestAt // "ID\x00column"
	values  int
	// merged is the last merge over a table's batches, by "table
	// ID\x00column" (batchesNewest).
	merged map[string]*mergedBatches
}

// newestAt is a value's newest time in one buffered batch, and the row
// of the batch that holds it (the first such row).
type newestAt struct {
	t   int64
	row int32
}

// newestIn is a value's newest time over buffered batches, and the batch
// and row that hold it: where the direct newest-row path
// (newestanswer.go) reads the row.
type newestIn struct {
	t     int64
	batch uint64
	row   int32
}

// mergedBatches is each value's newest time over the batches ids.
type mergedBatches struct {
	ids    map[uint64]bool
	newest map[string]newestIn
}

func (k *keyTimes) getMerged(key string) *mergedBatches {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.merged[key]
}

func (k *keyTimes) putMerged(key string, m *mergedBatches) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.merged == nil || len(k.merged) >= maxNewestTables {
		k.merged = map[string]*mergedBatches{}
	}
	k.merged[key] = m
}

// maxKeyTimes bounds what keyTimes holds (values summed over entries).
const maxKeyTimes = 2_000_000

// nullKey stands for NULL among a column's values (text never holds NUL).
const nullKey = "\x00"

func (k *keyTimes) getFile(key string) (map[string]int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.files[key]
	return v, ok
}

func (k *keyTimes) getBatch(key string) (map[string]newestAt, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.batches[key]
	return v, ok
}

func (k *keyTimes) putFile(key string, v map[string]int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.make(len(v))
	k.files[key] = v
}

func (k *keyTimes) putBatch(key string, v map[string]newestAt) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.make(len(v))
	k.batches[key] = v
}

// make readies the maps for n more values, clearing them when they
// would pass maxKeyTimes; k.mu is held.
func (k *keyTimes) make(n int) {
	if k.files == nil || k.values+n > maxKeyTimes {
		k.files, k.batches, k.values = map[string]map[string]int64{}, map[string]map[string]newestAt{}, 0
	}
	k.values += n
}

// lastKeyBound is the oldest of the newest times of the values of column
// key.column in snap: no row before it is the newest of its value. false
// when it cannot tell (rows deleted by another writer's deletion vector,
// files of other writers, whose columns are found by name) or the table
// is empty.
//
// r is the statement's time range (its WHERE's bounds, or all time): a
// value whose newest row is older than r.lo has no row the statement
// reads, and does not lower the bound; a value whose newest row is at or
// past r.hi may have its newest row the statement reads anywhere before,
// which no summary tells, so the bound gives up (a dashboard's upper
// bound is now, past every row).
func (s *Session) lastKeyBound(ctx context.Context, snap *ingest.Snapshot, column string, r interval) (int64, bool, error) {
	col := snap.Table.ColumnIndex(column)
	if col < 0 || len(snap.Deleted) > 0 || len(snap.Damaged) > 0 {
		// Damaged files must stay out of what a statement reads unless its
		// range needs them: the bound, which reads every file, gives up.
		return 0, false, nil
	}
	files, ok, err := s.filesNewest(ctx, snap, col)
	if err != nil || !ok {
		return 0, false, err
	}
	newest := make(map[string]int64, len(files))
	for v, t := range files {
		newest[v] = t
	}
	batches, ok := s.batchesNewest(snap, col)
	if !ok {
		return 0, false, nil
	}
	for v, in := range batches {
		if old, ok := newest[v]; !ok || in.t > old {
			newest[v] = in.t
		}
	}
	bound := int64(math.MaxInt64)
	for v, t := range newest {
		upper := t
		if v == nullKey {
			// maybe from files' statistics (filesNewest); +infinity
			// stays itself
			upper = min(t, math.MaxInt64-999) + 999
		}
		switch {
		case upper >= r.hi && r.hi != math.MaxInt64:
			return 0, false, nil
		case t >= r.lo:
			bound = min(bound, t)
		}
	}
	if bound == math.MaxInt64 {
		return 0, false, nil // no value has a row the statement reads
	}
	return bound, true, nil
}

// newestFiles is the engine table of each value's newest rows among
// snap's files (newestrows.go), for a statement lastKeyBound bounded; ""
// to read the files themselves.
func (s *Session) newestFiles(ctx context.Context, snap *ingest.Snapshot, column string) (string, error) {
	col := snap.Table.ColumnIndex(column)
	files, ok, err := s.filesNewest(ctx, snap, col)
	if err != nil || !ok || len(files) == 0 {
		return "", err
	}
	from := int64(math.MaxInt64)
	for _, t := range files {
		from = min(from, t)
	}
	return s.p.newest.table(ctx, s.p, s.conn, snap, col, from, len(files)), nil
}

// batchesNewest is each value's newest time over the buffered batches of
// snap (column col), and where its row is. A COPY buffers a batch per part, hundreds of them for
// millions of rows, and merging each one's summary on every statement
// cost more than the statement (1,000 hosts, 2.16M rows buffered by
// psql's \copy: lastpoint 30 ms, 77 % of it in the merge; 8 ms now): the
// merge over a set of batches is kept per table and column and extended
// by the batches added since (batches never change; a flush removes some,
// and the merge starts over). The map is shared: read it only.
func (s *Session) batchesNewest(snap *ingest.Snapshot, col int) (map[string]newestIn, bool) {
	column := snap.Table.Columns[col].Name
	key := snap.Table.ID + "\x00" + column
	ids := make(map[uint64]bool, len(snap.Batches))
	for _, b := range snap.Batches {
		ids[b.ID] = true
	}
	prev := s.p.keyTimes.getMerged(key)
	usable := prev != nil
	if usable {
		for id := range prev.ids {
			if !ids[id] {
				usable = false // a batch flushed or replaced since
				break
			}
		}
	}
	if usable && len(prev.ids) == len(ids) {
		return prev.newest, true
	}
	newest := map[string]newestIn{}
	if usable {
		newest = maps.Clone(prev.newest)
	}
	for _, b := range snap.Batches {
		if usable && prev.ids[b.ID] {
			continue
		}
		k := fmt.Sprintf("%d\x00%s", b.ID, column)
		m, ok := s.p.keyTimes.getBatch(k)
		if !ok {
			if m, ok = batchKeyTimes(b.Rec, col, snap.Table.TimeIndex); !ok {
				return nil, false
			}
			s.p.keyTimes.putBatch(k, m)
		}
		for v, at := range m {
			if old, ok := newest[v]; !ok || at.t > old.t {
				newest[v] = newestIn{t: at.t, batch: b.ID, row: at.row}
			}
		}
	}
	s.p.keyTimes.putMerged(key, &mergedBatches{ids: ids, newest: newest})
	return newest, true
}

// mergeNewest keeps in into each value's newer time of into and m.
func mergeNewest(into, m map[string]int64) {
	for v, t := range m {
		if old, ok := into[v]; !ok || t > old {
			into[v] = t
		}
	}
}

// filesNewest is each value's newest time over the data files of snap
// (column col), kept per Delta version of the table: the files of a
// version never change. The map is shared: read it only.
func (s *Session) filesNewest(ctx context.Context, snap *ingest.Snapshot, col int) (map[string]int64, bool, error) {
	column := snap.Table.Columns[col].Name
	version := fmt.Sprintf("%s\x00%d\x00%s", snap.Table.ID, snap.DeltaVersion, column)
	if m, ok := s.p.keyTimes.getFile(version); ok {
		return m, true, nil
	}
	newest := map[string]int64{}
	var missing []string
	for i, f := range snap.Files {
		switch {
		case !delta.OwnLayout(f):
			return nil, false, nil // its columns are found by name (layout.go)
		case col >= f.Columns && (f.MaxTime == math.MaxInt64 || f.MinTime > f.MaxTime):
			return nil, false, nil // no statistics to stand for its rows
		case col >= f.Columns:
			// Written before the column was added: NULL in every row, the
			// newest at the file's newest time, which its statistics give
			// to the millisecond (MaxTime is the millisecond's last
			// microsecond): its start is at or before the row, so that
			// reads from it find the row (lastKeyBound allows for the
			// millisecond where it checks an upper bound).
			mergeNewest(newest, map[string]int64{nullKey: f.MaxTime - 999})
		default:
			if m, ok := s.p.keyTimes.getFile(snap.FilePaths[i] + "\x00" + column); ok {
				mergeNewest(newest, m)
			} else {
				missing = append(missing, snap.FilePaths[i])
			}
		}
	}
	if len(missing) > 0 {
		got, err := s.fileKeyTimes(ctx, snap.Table, col, missing)
		if err != nil {
			return nil, false, err
		}
		for _, p := range missing {
			m := got[p]
			if m == nil {
				m = map[string]int64{}
			}
			s.p.keyTimes.putFile(p+"\x00"+column, m)
			mergeNewest(newest, m)
		}
	}
	s.p.keyTimes.putFile(version, newest)
	return newest, true, nil
}

// batchKeyTimes is each value's newest time in a buffered batch (a batch
// written before the column existed holds NULL there), and its first row
// of that time; false for columns of another Arrow type than the table's,
// which it cannot read.
func batchKeyTimes(rec arrow.RecordBatch, col, timeCol int) (map[string]newestAt, bool) {
	m := map[string]newestAt{}
	ts, ok := rec.Column(timeCol).(*array.Timestamp)
	if !ok {
		return nil, false
	}
	var strs *array.String
	if col < int(rec.NumCols()) {
		if strs, ok = rec.Column(col).(*array.String); !ok {
			return nil, false
		}
	}
	for i := range ts.Len() {
		v := nullKey
		if strs != nil && strs.IsValid(i) {
			v = strs.Value(i)
		}
		t := int64(ts.Value(i))
		if old, ok := m[v]; !ok || t > old.t {
			m[v] = newestAt{t: t, row: int32(i)}
		}
	}
	return m, true
}

// fileKeyTimes reads each value's newest time in data files, in one
// query over their two columns (a file written before the column existed
// holds NULL there).
func (s *Session) fileKeyTimes(ctx context.Context, t schema.Table, col int, paths []string) (map[string]map[string]int64, error) {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = schema.QuoteString(p)
	}
	// epoch_us of ±infinity is NULL: those are the engine's
	// microseconds of them, as batches hold them.
	tq := schema.QuoteIdent(t.Columns[t.TimeIndex].FileName())
	q := fmt.Sprintf("SELECT filename, %s, coalesce(epoch_us(max(%s)), CASE WHEN max(%s) > '1970-01-01' THEN %d ELSE %d END) FROM read_parquet([%s], filename = true, union_by_name = true) GROUP BY ALL",
		schema.QuoteIdent(t.Columns[col].FileName()), tq, tq, int64(math.MaxInt64), int64(-math.MaxInt64), strings.Join(quoted, ", "))
	rows, err := s.engineQuerier().QueryContext(ctx, q)
	if err != nil {
		return nil, engineError(err)
	}
	defer rows.Close()
	out := map[string]map[string]int64{}
	for rows.Next() {
		var file string
		var v sql.NullString
		var newest int64
		if err := rows.Scan(&file, &v, &newest); err != nil {
			return nil, engineError(err)
		}
		key := nullKey
		if v.Valid {
			key = v.String
		}
		if out[file] == nil {
			out[file] = map[string]int64{}
		}
		out[file][key] = newest
	}
	if err := rows.Err(); err != nil {
		return nil, engineError(err)
	}
	return out, nil
}

// timeFrom is the condition on the time column of data files (file) or
// of the buffered rows' mirror that keeps their rows from micros on: a
// literal of the column's type as files hold it, which the engine checks
// against row groups' statistics. (A bound a literal cannot write keeps
// every row.)
func timeFrom(t schema.Table, micros int64, file bool) string {
	c := t.Columns[t.TimeIndex]
	tm := time.UnixMicro(micros).UTC()
	if tm.Year() < 1 || tm.Year() > 9999 {
		return "true"
	}
	name := c.Name
	if file {
		name = c.FileName() // a data file's name for it (column mapping)
	}
	text := tm.Format("2006-01-02 15:04:05.999999")
	if c.StoredAsInstant() {
		return fmt.Sprintf("%s >= TIMESTAMPTZ '%s+00'", schema.QuoteIdent(name), text)
	}
	return fmt.Sprintf("%s >= TIMESTAMP '%s'", schema.QuoteIdent(name), text)
}
