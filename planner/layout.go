package planner

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"

	"tsdb/delta"
	"tsdb/internal/schema"
)

// Which columns a data file holds, and in which physical types, comes from
// the file itself. tsdb's own files hold a prefix of the table's columns
// in the table's types (ALTER TABLE only appends), which their statistics
// show; other writers' files may hold the columns in any order, lack one
// in the middle (ADD COLUMNS … AFTER), carry statistics for only the first
// 32 columns (Spark's and delta-rs' default), and store timestamps as
// INT96 or nanoseconds and strings without the UTF8 annotation. Reading
// such a file by prefix would return NULLs or shifted columns without an
// error; it is read by name instead, with its columns converted to the
// table's types.

// fileColumn is a column of a data file as the engine reads it.
type fileColumn struct{ name, typ string }

// fileLayout is a data file's columns, read from its Parquet footer.
type fileLayout struct {
	cols []fileColumn
	key  string // the columns and types: files with equal keys read alike
}

// layoutCache keeps the layouts of files read by name: data files never
// change, so each is described once.
type layoutCache struct {
	mu sync.Mutex
	m  map[string]*fileLayout
}

// maxCachedLayouts bounds the cache; beyond it the cache starts over.
const maxCachedLayouts = 100_000

// needsLayout reports whether f is read by name: any file but one of
// tsdb's own holding every column of the table in its order.
func needsLayout(f delta.File, t schema.Table) bool {
	return !delta.OwnLayout(f) || f.Columns < len(t.Columns)
}

// layout returns the layout of the data file at path, described by the
// engine over conn.
func (c *layoutCache) layout(ctx context.Context, conn *sql.Conn, path string) (*fileLayout, error) {
	c.mu.Lock()
	l, ok := c.m[path]
	c.mu.Unlock()
	if ok {
		return l, nil
	}
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("DESCRIBE SELECT * FROM read_parquet(%s)", schema.QuoteString(path)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	l = &fileLayout{}
	var key strings.Builder
	for rows.Next() {
		vals, err := scanValues(rows, len(cols))
		if err != nil {
			return nil, err
		}
		fc := fileColumn{name: fmt.Sprint(vals[0]), typ: fmt.Sprint(vals[1])}
		l.cols = append(l.cols, fc)
		fmt.Fprintf(&key, "%q %s,", fc.name, fc.typ)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	l.key = key.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedLayouts {
		c.m = map[string]*fileLayout{}
	}
	c.m[path] = l
	return l, nil
}

// resolveLayouts describes the files of p that are read by name.
func (c *layoutCache) resolveLayouts(ctx context.Context, conn *sql.Conn, p *pruned) error {
	p.fileLayouts = make([]*fileLayout, len(p.files))
	for i, path := range p.files {
		if !p.byName(i) {
			continue
		}
		l, err := c.layout(ctx, conn, path)
		if err != nil {
			return fmt.Errorf("planner: read the columns of %s: %w", path, err)
		}
		p.fileLayouts[i] = l
	}
	return nil
}

// layoutSelectList is the select list that reads a file of layout l as
// table t: columns by name, converted to the table's types, NULL for the
// columns the file lacks. Names are matched as PostgreSQL folds nothing:
// exactly, and else ignoring case (Spark's are case-insensitive).
func layoutSelectList(t schema.Table, l *fileLayout) string {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		q := schema.QuoteIdent(c.Name)
		fc, ok := l.find(c.FileName())
		if !ok {
			cols[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.DuckDBType(), q)
			continue
		}
		cols[i] = convertColumn(schema.QuoteIdent(fc.name), fc.typ, c) + " AS " + q
	}
	return strings.Join(cols, ", ")
}

func (l *fileLayout) find(name string) (fileColumn, bool) {
	for _, fc := range l.cols {
		if fc.name == name {
			return fc, true
		}
	}
	for _, fc := range l.cols {
		if strings.EqualFold(fc.name, name) {
			return fc, true
		}
	}
	return fileColumn{}, false
}

// convertColumn is the expression that reads column q, which the engine
// reads as typ, as a value of ty. Timestamps without zone in a file are
// UTC instants for a timestamptz column (Spark's INT96) and wall clocks
// for a timestamp column; with a zone they are instants, which a
// timestamp column shows as the UTC wall clock (tsdb's own files).
func convertColumn(q, typ string, c schema.Column) string {
	ty := c.Type
	withZone := strings.HasSuffix(typ, "WITH TIME ZONE") || strings.HasPrefix(typ, "TIMESTAMPTZ") // TIMESTAMPTZ_NS too
	isTime := strings.HasPrefix(typ, "TIMESTAMP")
	switch {
	case ty == schema.Timestamptz && isTime && !withZone:
		return fmt.Sprintf("timezone('UTC', CAST(%s AS TIMESTAMP))", q)
	case ty == schema.Timestamptz && withZone:
		return fmt.Sprintf("CAST(%s AS TIMESTAMPTZ)", q)
	case ty == schema.Timestamp && withZone:
		return fmt.Sprintf("timezone('UTC', CAST(%s AS TIMESTAMPTZ))", q)
	case ty == schema.Timestamp && isTime:
		return fmt.Sprintf("CAST(%s AS TIMESTAMP)", q)
	case typ == c.DuckDBType():
		return q
	case ty == schema.Text && typ == "BLOB":
		// A string written without the UTF8 annotation: its bytes are
		// the text (invalid UTF-8 fails, as the store refuses it).
		return fmt.Sprintf("decode(%s)", q)
	}
	return fmt.Sprintf("CAST(%s AS %s)", q, c.DuckDBType())
}

// layoutGroups groups the files of p read by name (without deletes) by
// layout, in a stable order, as SQL strings.
func (p *pruned) layoutGroups() (keys []string, files map[string][]string, layouts map[string]*fileLayout) {
	files, layouts = map[string][]string{}, map[string]*fileLayout{}
	for i, f := range p.files {
		l := p.layoutOf(i)
		if l == nil || p.deletesIn(i).Len() > 0 {
			continue
		}
		if _, ok := files[l.key]; !ok {
			keys = append(keys, l.key)
			layouts[l.key] = l
		}
		files[l.key] = append(files[l.key], schema.QuoteString(f))
	}
	sort.Strings(keys)
	return keys, files, layouts
}

// layoutOf returns the layout of the i-th file of p, nil when it is read
// by prefix.
func (p *pruned) layoutOf(i int) *fileLayout {
	if i < len(p.fileLayouts) {
		return p.fileLayouts[i]
	}
	return nil
}

// fileSelectList is the select list of the i-th file of p: by name or by
// prefix.
func (p *pruned) fileSelectList(i int) string {
	if l := p.layoutOf(i); l != nil {
		return layoutSelectList(p.snap.Table, l)
	}
	return fileColumnList(p.snap.Table, min(p.fileCols[i], len(p.snap.Table.Columns)))
}

// byName reports whether the i-th file of p is read by name.
func (p *pruned) byName(i int) bool { return i < len(p.fileByName) && p.fileByName[i] }

// scanValues scans the current row of rows, of n columns, as the driver
// gives the values.
func scanValues(rows *sql.Rows, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, nil
}
