package planner

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/pgtext"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// insert evaluates INSERT … VALUES / INSERT … SELECT with DuckDB — every
// value cast to its column's type, so casts behave exactly as in queries —
// builds one Arrow record with the table's schema and hands it to ingest.
// Nothing lands unless every row converts.
func (s *Session) insert(ctx context.Context, st *pg_query.InsertStmt) (*Result, error) {
	if _, ok := isTempRelation(st.Relation); ok && st.OnConflictClause != nil {
		// The engine's own INSERT … ON CONFLICT, for the engine's table.
		return s.tempDML(ctx, &pg_query.Node{Node: &pg_query.Node_InsertStmt{InsertStmt: st}}, "INSERT")
	}
	if st.WithClause != nil {
		// WITH … INSERT … SELECT is INSERT … WITH … SELECT.
		inner := st.SelectStmt.GetSelectStmt()
		if inner == nil || inner.WithClause != nil || len(inner.ValuesLists) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH … INSERT is supported with a SELECT source only; put the WITH inside the SELECT")
		}
		inner.WithClause, st.WithClause = st.WithClause, nil
	}
	tempName, temp := isTempRelation(st.Relation)
	var tbl schema.Table
	var alias string
	var err error
	if temp {
		// The values read as for a table of the store, then handed to
		// the engine's table (insertTemp).
		if tbl, err = s.tempInsertTarget(tempName, st.ReturningList); err != nil {
			return nil, err
		}
	} else {
		if tbl, alias, err = s.targetTable(st.Relation, st.ReturningList); err != nil {
			return nil, err
		}
		if err := s.writableTx("INSERT"); err != nil {
			return nil, err
		}
	}
	var skip *schema.Key
	if st.OnConflictClause != nil && len(tbl.Dedup) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT … ON CONFLICT into table %q, which has dedup_keys, is not supported: a row with the time and keys of one the table has replaces it", tbl.Name)
	}
	if st.OnConflictClause != nil {
		if skip, err = conflictKey(tbl, st.OnConflictClause, st.ReturningList); err != nil {
			return nil, err
		}
	}
	write := func(rec arrow.RecordBatch, targets []int) (*Result, error) {
		if temp {
			return s.insertTemp(ctx, tbl, targets, rec)
		}
		if st.OnConflictClause.GetAction() == pg_query.OnConflictAction_ONCONFLICT_UPDATE {
			n, err := s.upsert(ctx, tbl, *skip, st, []arrow.RecordBatch{rec})
			if err != nil {
				return nil, err
			}
			return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
		}
		return s.insertRecord(ctx, tbl, alias, st.ReturningList, rec, skip)
	}
	// targets[i] is the table column that the i-th inserted value goes to.
	var names []string
	for _, c := range st.Cols {
		rt := c.GetResTarget()
		if rt == nil || len(rt.Indirection) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT into sub-fields is not supported")
		}
		names = append(names, rt.Name)
	}
	targets, err := targetColumns(tbl, names)
	if err != nil {
		return nil, err
	}
	if st.SelectStmt == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INSERT … DEFAULT VALUES is not supported")
	}
	sel := st.SelectStmt.GetSelectStmt()
	if sel == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "unsupported INSERT source")
	}
	var tables []string
	// Without a column list, fewer values (or SELECT columns) than the
	// table has fill the first columns, as in PostgreSQL (and as a
	// statement prepared before ALTER TABLE ADD COLUMN expects).
	if n := selectWidth(sel); len(st.Cols) == 0 && n > 0 && n < len(targets) {
		targets = targets[:n]
	}
	if len(sel.ValuesLists) > 0 {
		for _, row := range sel.ValuesLists {
			if n := len(row.GetList().GetItems()); n != len(targets) {
				if n > len(targets) {
					return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more expressions than target columns")
				}
				return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more target columns than expressions")
			}
			for j, item := range row.GetList().GetItems() {
				if item.GetSetToDefault() != nil {
					row.GetList().Items[j] = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}
				}
			}
		}
		if rec, ok := literalValues(tbl, targets, sel.ValuesLists, s.textInput()); ok {
			return write(rec, targets)
		}
		for _, row := range sel.ValuesLists {
			items := row.GetList().GetItems()
			// A row with an expression (not only constants) is walked by
			// the dialect as a SELECT is: decode(), to_char() and the
			// like mean PostgreSQL's functions there too.
			if slices.ContainsFunc(items, func(n *pg_query.Node) bool {
				return n.GetAConst() == nil && n.GetTypeCast().GetArg().GetAConst() == nil
			}) {
				dialect.RewriteTree(row.GetList().ProtoReflect(), s.settings.Input(s.statementTime()))
			}
			for j, item := range items {
				col := tbl.Columns[targets[j]]
				if col.Type.IsDateTime() && item.GetAConst().GetSval() != nil {
					// A time written as PostgreSQL reads it ('Mon Feb 10
					// 17:32:01 1997 PST'), as in a SELECT.
					cell := &pg_query.TypeCast{Arg: item, TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(col.Type.UDTName())}}}
					if !dialect.IsISOLiteral(cell) {
						r, ok, err := dialect.DateTimeLiteral(cell, s.settings.Input(s.statementTime()))
						if err != nil {
							return nil, err
						}
						if ok {
							items[j] = s.fixTransactionTime(r)
							continue
						}
					}
				}
				if sv := item.GetAConst().GetSval(); sv != nil && col.Type == schema.Bytea {
					// bytea text by PostgreSQL's input rules, here, where
					// the literal is known (the engine's cast reads \x00ff
					// as one byte and three letters).
					raw, err := dialect.ParseBytea(sv.Sval)
					if err != nil {
						return nil, &sqlerr.Error{Code: sqlerr.InvalidTextRep, Message: err.Error()}
					}
					items[j] = pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("unhex")},
						[]*pg_query.Node{pg_query.MakeAConstStrNode(hex.EncodeToString(raw), -1)}, -1)
					continue
				}
				item = normalizeLiteral(col.Type, item)
				if isTransactionTime(item) {
					// 'now' in a block: the block's time (fixTransactionTime)
					item = s.fixTransactionTime(item)
				}
				// Cast every cell on its own: DuckDB cannot unify a VALUES
				// column of text and timestamptz, PostgreSQL casts per cell.
				typ := &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(col.Type.UDTName())}}
				if col.Type == schema.Bit || col.Type == schema.VarBit {
					// PostgreSQL's assignment of a bit string; the
					// column's length is checked as written (applyTypmod).
					items[j] = dialect.BitAssign(item, col.Name, col.Type == schema.VarBit)
					continue
				}
				if col.Type == schema.Decimal {
					// numeric(p, s) itself: a cast to numeric first would
					// round twice.
					typ.Typmods = []*pg_query.Node{pg_query.MakeAConstIntNode(int64(col.Digits), -1), pg_query.MakeAConstIntNode(int64(col.Scale), -1)}
				}
				items[j] = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: item, TypeName: typ}}}
				// Text read by PostgreSQL's number input (the engine reads
				// '1.5' as the integer 2, '1e500' as Infinity).
				if items[j], err = dialect.NumberInput(items[j]); err != nil {
					return nil, err
				}
				if err := s.rewriteDateTimes(items[j]); err != nil {
					return nil, err
				}
			}
		}
	}
	r, err := collectRefs(sel, s)
	if err != nil {
		return nil, err
	}
	tables = r.tables
	if len(sel.ValuesLists) == 0 {
		// A SELECT source means what it means in a SELECT. (Rows of
		// VALUES are not walked: a 1,000-row statement's tree is large.)
		if f := dialect.FeaturesOf(st.SelectStmt); f.Err != nil {
			return nil, f.Err
		}
		if err := s.rewriteDateTimes(st.SelectStmt); err != nil {
			return nil, err
		}
		s.padCharacterRefs(st.SelectStmt, false)
		dialect.RewriteTree(st.SelectStmt.ProtoReflect(), s.settings.Input(s.statementTime()))
	}
	src, err := deparse(s.p.pgVersion, st.SelectStmt)
	if err != nil {
		return nil, err
	}
	b, err := s.bind(ctx, tables, sel)
	if err != nil {
		return nil, err
	}
	rec, err := s.insertSelect(ctx, tbl, targets, len(st.Cols) > 0, sel, src)
	b.done()
	if err != nil {
		return nil, err
	}
	return write(rec, targets)
}

// insertRecord writes an INSERT's rows and, for RETURNING, evaluates its
// list over them first: an error there fails the statement with nothing
// written.
//
// skip (ON CONFLICT DO NOTHING) names the key whose repeats are left out
// rather than refused.
func (s *Session) insertRecord(ctx context.Context, tbl schema.Table, alias string, returning []*pg_query.Node, rec arrow.RecordBatch, skip *schema.Key) (*Result, error) {
	res := &Result{}
	if len(returning) > 0 {
		scratch := fmt.Sprintf(`%s."ret_%d"`, mirrorSchema, s.p.txSeq.Add(1))
		if err := createMirrorTable(ctx, s.conn, tbl, scratch); err != nil {
			return nil, engineError(err)
		}
		defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+scratch)
		if err := appendBatches(ctx, s.conn, tbl, &mirrorTable{name: scratch}, []arrow.RecordBatch{rec}, []uint64{0}); err != nil {
			return nil, engineError(err)
		}
		var err error
		res.Columns, res.Rows, err = s.returning(ctx, tbl.Name, alias, returning, fmt.Sprintf("SELECT %s FROM %s", selectList(tbl, len(tbl.Columns)), scratch))
		if err != nil {
			return nil, err
		}
	}
	n, err := s.writeRowsSkipping(ctx, tbl.Name, []arrow.RecordBatch{rec}, skip)
	if err != nil {
		return nil, err
	}
	res.Tag = fmt.Sprintf("INSERT 0 %d", n)
	return res, nil
}

// insertSelect evaluates the rows of INSERT … SELECT src into tbl's
// columns targets (named in the statement if named); the source's views
// are bound. As in PostgreSQL, the source must not have more columns than
// there are targets, nor fewer than named targets; without names it fills
// the first columns.
func (s *Session) insertSelect(ctx context.Context, tbl schema.Table, targets []int, named bool, sel *pg_query.SelectStmt, src string) (arrow.RecordBatch, error) {
	width := selectWidth(sel)
	if width < 0 {
		// SELECT *: DuckDB knows the width once the views are bound.
		n, err := s.describeWidth(ctx, src)
		if err != nil {
			return nil, err
		}
		width = n
	}
	switch {
	case width > len(targets):
		return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more expressions than target columns")
	case width < len(targets) && named:
		return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more target columns than expressions")
	case width < len(targets):
		targets = targets[:width]
	}
	aliases := make([]string, len(targets))
	pos := map[int]int{}
	for i, t := range targets {
		aliases[i] = fmt.Sprintf("c%d", i)
		pos[t] = i
	}
	exprs := make([]string, len(tbl.Columns))
	for i, c := range tbl.Columns {
		if j, ok := pos[i]; ok {
			v := fmt.Sprintf("v.c%d", j)
			switch c.Type {
			case schema.Int16, schema.Int32, schema.Int64, schema.Float32, schema.Float64, schema.Decimal:
				// Text read by PostgreSQL's number input ('7.5' is
				// refused for an integer, '1_000' and '1e500' for a
				// float; the engine's cast takes them).
				v = fmt.Sprintf("_tsdb_input(%s, '%s')", v, c.Type)
			}
			exprs[i] = fmt.Sprintf("CAST(%s AS %s)", typmodSQL(schema.Column{Name: c.Name, Type: c.Type}, v), c.DuckDBType())
		} else {
			exprs[i] = fmt.Sprintf("CAST(NULL AS %s)", c.DuckDBType())
		}
	}
	q := fmt.Sprintf("SELECT %s FROM (%s) AS v(%s)", strings.Join(exprs, ", "), src, strings.Join(aliases, ", "))
	return s.evaluate(ctx, tbl, q)
}

// describeWidth is the number of columns query returns.
func (s *Session) describeWidth(ctx context.Context, query string) (int, error) {
	rows, err := s.engineQuerier().QueryContext(ctx, "DESCRIBE "+query)
	if err != nil {
		return 0, engineError(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, engineError(rows.Err())
}

// evaluate runs q, whose columns are exactly tbl's, and collects the rows
// into an Arrow record with the table's schema.
func (s *Session) evaluate(ctx context.Context, tbl schema.Table, q string) (arrow.RecordBatch, error) {
	return scanRecord(ctx, s.engineQuerier(), tbl, q)
}

// scanRecord runs q, whose columns are exactly tbl's, and collects the rows
// into an Arrow record with the table's schema.
func scanRecord(ctx context.Context, conn querier, tbl schema.Table, q string) (arrow.RecordBatch, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, engineError(err)
	}
	defer rows.Close()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	vals := make([]any, len(tbl.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, engineError(err)
		}
		for i, v := range vals {
			if err := appendColumn(bld.Field(i), tbl.Columns[i].Type, v); err != nil {
				return nil, columnValueError(tbl.Columns[i].Name, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, engineError(err)
	}
	return bld.NewRecordBatch(), nil
}

// appendColumn is appendGo for a column of type ty: a time of day, which
// the engine hands over as a Go time, is held as text (schema.TimeText).
func appendColumn(b array.Builder, ty schema.Type, v any) error {
	if t, ok := v.(time.Time); ok && (ty == schema.Time || ty == schema.TimeTZ) {
		us := pgtext.ClockMicros(t)
		if ty == schema.Time && us == pgdatetime.MicrosPerDay {
			return fmt.Errorf("time 24:00:00 is not supported")
		}
		_, east := t.Zone()
		b.(*array.StringBuilder).Append(schema.TimeText(us, east, ty == schema.TimeTZ))
		return nil
	}
	return appendGo(b, v)
}

// appendGo appends a value scanned from DuckDB to an Arrow builder. The
// query cast every column to its table type, so the Go type is known.
func appendGo(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.TimestampBuilder:
		t, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("got %T, want time", v)
		}
		bb.Append(arrow.Timestamp(t.UnixMicro()))
		return nil
	case *array.Int64Builder:
		return appendAs[int64](bb, v)
	case *array.Int32Builder:
		return appendAs[int32](bb, v)
	case *array.Int16Builder:
		return appendAs[int16](bb, v)
	case *array.Float64Builder:
		return appendAs[float64](bb, v)
	case *array.Float32Builder:
		return appendAs[float32](bb, v)
	case *array.BooleanBuilder:
		return appendAs[bool](bb, v)
	case *array.StringBuilder:
		return appendAs[string](bb, v)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return fmt.Errorf("got %T, want bytes", v)
		}
		bb.Append(x)
		return nil
	case *array.Decimal128Builder:
		d, ok := v.(duckdb.Decimal)
		if !ok || d.Value == nil {
			return fmt.Errorf("got %T, want a decimal", v)
		}
		dt := bb.Type().(*arrow.Decimal128Type)
		if int32(d.Scale) != dt.Scale {
			return fmt.Errorf("a decimal of scale %d, want %d", d.Scale, dt.Scale)
		}
		bb.Append(decimal128.FromBigInt(d.Value))
		return nil
	case *array.MonthDayNanoIntervalBuilder:
		iv, ok := v.(duckdb.Interval)
		if !ok {
			return fmt.Errorf("got %T, want an interval", v)
		}
		x, err := schema.IntervalValue(iv.Months, iv.Days, iv.Micros)
		if err != nil {
			return err
		}
		bb.Append(x)
		return nil
	case *array.Date32Builder:
		t, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("got %T, want time", v)
		}
		days := t.Unix() / 86400
		if t.Unix()%86400 < 0 {
			days-- // before 1970: floor, not truncation
		}
		bb.Append(arrow.Date32(days))
		return nil
	}
	return fmt.Errorf("unsupported column type %s", b.Type())
}

func appendAs[T any](b interface{ Append(T) }, v any) error {
	x, ok := v.(T)
	if !ok {
		return fmt.Errorf("got %T, want %T", v, x)
	}
	b.Append(x)
	return nil
}

// targetColumns resolves the column list of INSERT or COPY (empty: every
// column in table order) to column positions.
func targetColumns(tbl schema.Table, names []string) ([]int, error) {
	if len(names) == 0 {
		all := make([]int, len(tbl.Columns))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := map[int]bool{}
	out := make([]int, 0, len(names))
	for _, n := range names {
		i := tbl.ColumnIndex(n)
		if i < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", n, tbl.Name)
		}
		if seen[i] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", n)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// positions inverts targets: for each table column the index of its value
// in a row, or -1 if the row has none.
func positions(ncols int, targets []int) []int {
	pos := make([]int, ncols)
	for i := range pos {
		pos[i] = -1
	}
	for j, t := range targets {
		pos[t] = j
	}
	return pos
}

// pgOffsetWithSpace matches a timestamp whose numeric UTC offset is
// separated by a space ('… 20:16:22.646325 +0000'): PostgreSQL accepts it,
// DuckDB reads the offset as an unknown time zone name.
var pgOffsetWithSpace = regexp.MustCompile(`^(.*\d)\s+([+-]\d{2}(?::?\d{2})?)$`)

// normalizeLiteral rewrites string literals that PostgreSQL accepts for a
// column type and DuckDB does not.
func normalizeLiteral(ty schema.Type, n *pg_query.Node) *pg_query.Node {
	switch {
	case ty.IsTimestamp():
		return normalizeTimestampLiteral(n)
	case ty == schema.Bool:
		// PostgreSQL's boolin ('on', 'of', ' yes '); what it refuses is
		// left to the engine's error.
		if c := n.GetAConst(); c != nil && c.GetSval() != nil {
			if v, ok := dialect.BoolInput(c.GetSval().Sval); ok {
				return pg_query.MakeAConstStrNode(strconv.FormatBool(v), c.Location)
			}
		}
	}
	return n
}

// normalizeTimestampLiteral rewrites the string literals PostgreSQL accepts
// for timestamps and DuckDB does not: a spaced numeric offset, and the
// special value 'now'.
func normalizeTimestampLiteral(n *pg_query.Node) *pg_query.Node {
	c := n.GetAConst()
	if c == nil || c.GetSval() == nil {
		return n
	}
	v := strings.TrimSpace(c.GetSval().Sval)
	if strings.EqualFold(v, "now") {
		return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("now")}, nil, c.Location)
	}
	if m := pgOffsetWithSpace.FindStringSubmatch(v); m != nil {
		return pg_query.MakeAConstStrNode(m[1]+m[2], c.Location)
	}
	return n
}

// targetTable is the table an INSERT, UPDATE or DELETE writes, the name
// its statement calls it by, checked with the statement's RETURNING list.
func (s *Session) targetTable(rel *pg_query.RangeVar, returning []*pg_query.Node) (schema.Table, string, error) {
	name, err := relationName(rel)
	if err != nil {
		return schema.Table{}, "", err
	}
	tbl, ok := s.p.store.Table(name)
	if !ok {
		return schema.Table{}, "", s.missing(name)
	}
	alias := name
	if rel.Alias != nil && rel.Alias.Aliasname != "" {
		alias = rel.Alias.Aliasname
	}
	if err := checkReturning(returning, alias, name); err != nil {
		return schema.Table{}, "", err
	}
	return tbl, alias, nil
}

// relationName returns the table a RangeVar names; only the default schema
// (public) holds tsdb tables.
func relationName(rv *pg_query.RangeVar) (string, error) {
	if rv == nil {
		return "", sqlerr.New(sqlerr.SyntaxError, "missing table name")
	}
	switch strings.ToLower(rv.Schemaname) {
	case "", "public":
	default:
		return "", sqlerr.New(sqlerr.InvalidName, "schema %q does not exist; tsdb tables live in schema public", rv.Schemaname)
	}
	if rv.Catalogname != "" {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "cross-database references are not implemented")
	}
	return rv.Relname, nil
}

// selectWidth is the number of columns a SELECT returns when its target
// list (or its first VALUES row) says so without looking at tables (no *),
// else -1.
func selectWidth(sel *pg_query.SelectStmt) int {
	for sel.Larg != nil { // UNION & co.: the left branch decides
		sel = sel.Larg
	}
	if len(sel.ValuesLists) > 0 {
		return len(sel.ValuesLists[0].GetList().GetItems())
	}
	if len(sel.TargetList) == 0 {
		return -1
	}
	for _, t := range sel.TargetList {
		if cr := t.GetResTarget().GetVal().GetColumnRef(); cr != nil {
			for _, f := range cr.Fields {
				if f.GetAStar() != nil {
					return -1
				}
			}
		}
	}
	return len(sel.TargetList)
}

// columnValueError is the error of a value the engine computed that a
// column cannot hold: an interval too long (22008), else a type mismatch.
func columnValueError(col string, err error) error {
	code := sqlerr.DatatypeMismatch
	if errors.Is(err, schema.ErrIntervalRange) {
		code = sqlerr.DatetimeOverflow
	}
	return &sqlerr.Error{Code: code, Message: fmt.Sprintf("column %q: %v", col, err), Err: err}
}
