package planner

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqltree"
)

// interval is an inclusive range of UTC micros.
type interval struct{ lo, hi int64 }

var fullRange = interval{math.MinInt64, math.MaxInt64}

func (a interval) intersect(b interval) interval { return interval{max(a.lo, b.lo), min(a.hi, b.hi)} }
func (a interval) hull(b interval) interval      { return interval{min(a.lo, b.lo), max(a.hi, b.hi)} }
func (a interval) overlaps(lo, hi int64) bool    { return lo <= a.hi && hi >= a.lo }

// constraint is what a WHERE clause says about one table reference's time
// column, before its constant expressions are evaluated.
type constraint interface{}

type (
	cAnd []constraint
	cOr  []constraint
	cCmp struct {
		op   string
		expr int
	} // time <op> exprs[expr]
	cIn      []int
	cBetween struct {
		lo, hi    int
		symmetric bool
	}
	cAny struct{} // says nothing usable
)

// timePlan collects the constraints of every reference to a tsdb table and
// the constant expressions they need.
type timePlan struct {
	exprs []*pg_query.Node
	refs  map[string][]constraint // table → one constraint per reference
}

// planTimeRanges walks every SELECT in the tree. For each FROM item naming a
// tsdb table it records what that SELECT's WHERE says about the table's
// time column. A table referenced anywhere without such a bound is read in
// full. The ranges only decide which files and buffered batches a query
// reads; DuckDB still evaluates the WHERE on every row, so a range that is
// too wide costs time, never correctness.
func planTimeRanges(root proto.Message, tables map[string]schema.Table) *timePlan {
	p := &timePlan{refs: map[string][]constraint{}}
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok {
			return nil
		}
		type ref struct {
			table, alias string
		}
		var direct []ref
		others := 0
		var visit func(n *pg_query.Node)
		visit = func(n *pg_query.Node) {
			switch {
			case n.GetRangeVar() != nil:
				rv := n.GetRangeVar()
				if t, ok := tables[rv.Relname]; ok && (rv.Schemaname == "" || strings.EqualFold(rv.Schemaname, "public")) {
					alias := rv.Relname
					if rv.Alias != nil && rv.Alias.Aliasname != "" {
						alias = rv.Alias.Aliasname
					}
					direct = append(direct, ref{t.Name, alias})
				} else {
					others++
				}
			case n.GetJoinExpr() != nil:
				visit(n.GetJoinExpr().Larg)
				visit(n.GetJoinExpr().Rarg)
			default:
				others++
			}
		}
		for _, f := range sel.FromClause {
			visit(f)
		}
		for _, r := range direct {
			t := tables[r.table]
			col := t.TimeColumn().Name
			// An unqualified column name is only this table's when nothing
			// else in FROM could have a column of that name.
			unqualifiedOK := others == 0
			for _, o := range direct {
				if o != r {
					if ot := tables[o.table]; ot.ColumnIndex(col) >= 0 {
						unqualifiedOK = false
					}
				}
			}
			var c constraint = cAny{}
			if sel.WhereClause != nil {
				c = p.constraintOf(sel.WhereClause, r.alias, col, unqualifiedOK)
			}
			p.refs[r.table] = append(p.refs[r.table], c)
		}
		return nil
	})
	return p
}

// isTimeColumn reports whether n names the reference's time column.
func isTimeColumn(n *pg_query.Node, alias, col string, unqualifiedOK bool) bool {
	cr := n.GetColumnRef()
	if cr == nil {
		return false
	}
	var parts []string
	for _, f := range cr.Fields {
		s := f.GetString_()
		if s == nil {
			return false
		}
		parts = append(parts, s.Sval)
	}
	switch len(parts) {
	case 1:
		return unqualifiedOK && parts[0] == col
	case 2:
		return parts[0] == alias && parts[1] == col
	}
	return false
}

// stableFunctions may appear in a bound: their value does not change within
// a statement (DuckDB's now() is the transaction's start).
var stableFunctions = map[string]bool{
	"now": true, "to_timestamp": true, "_tsdb_to_timestamp1": true, "date_trunc": true, "time_bucket": true, "make_timestamp": true,
	"make_timestamptz": true, "timezone": true, "current_timestamp": true, "epoch_ms": true,
}

// isConstant reports whether an expression can be evaluated once, before
// the query: literals, casts, interval arithmetic and stable functions of
// those.
func isConstant(n *pg_query.Node) bool {
	switch {
	case n.GetAConst() != nil:
		return true
	case n.GetTypeCast() != nil:
		return isConstant(n.GetTypeCast().Arg)
	case n.GetSqlvalueFunction() != nil:
		return true
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		if !stableFunctions[sqltree.LastName(fc.Funcname)] || fc.AggStar || fc.Over != nil {
			return false
		}
		for _, a := range fc.Args {
			if !isConstant(a) {
				return false
			}
		}
		return true
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return false
		}
		op := sqltree.LastName(e.Name)
		if op != "+" && op != "-" && op != "*" && op != "/" {
			return false
		}
		return (e.Lexpr == nil || isConstant(e.Lexpr)) && isConstant(e.Rexpr)
	}
	return false
}

var flipOp = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}

func (p *timePlan) addExpr(n *pg_query.Node) int {
	p.exprs = append(p.exprs, n)
	return len(p.exprs) - 1
}

func (p *timePlan) constraintOf(n *pg_query.Node, alias, col string, unqualifiedOK bool) constraint {
	switch {
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		var parts []constraint
		for _, a := range b.Args {
			parts = append(parts, p.constraintOf(a, alias, col, unqualifiedOK))
		}
		switch b.Boolop {
		case pg_query.BoolExprType_AND_EXPR:
			return cAnd(parts)
		case pg_query.BoolExprType_OR_EXPR:
			return cOr(parts)
		}
		return cAny{}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		op := sqltree.LastName(e.Name)
		switch e.Kind {
		case pg_query.A_Expr_Kind_AEXPR_OP:
			if _, ok := flipOp[op]; !ok {
				return cAny{}
			}
			if isTimeColumn(e.Lexpr, alias, col, unqualifiedOK) && isConstant(e.Rexpr) {
				return cCmp{op: op, expr: p.addExpr(e.Rexpr)}
			}
			if isTimeColumn(e.Rexpr, alias, col, unqualifiedOK) && e.Lexpr != nil && isConstant(e.Lexpr) {
				return cCmp{op: flipOp[op], expr: p.addExpr(e.Lexpr)}
			}
		case pg_query.A_Expr_Kind_AEXPR_IN:
			if op != "=" || !isTimeColumn(e.Lexpr, alias, col, unqualifiedOK) {
				return cAny{}
			}
			var in cIn
			for _, it := range e.Rexpr.GetList().GetItems() {
				if !isConstant(it) {
					return cAny{}
				}
				in = append(in, p.addExpr(it))
			}
			if len(in) == 0 {
				return cAny{}
			}
			return in
		case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM:
			items := e.Rexpr.GetList().GetItems()
			if !isTimeColumn(e.Lexpr, alias, col, unqualifiedOK) || len(items) != 2 || !isConstant(items[0]) || !isConstant(items[1]) {
				return cAny{}
			}
			return cBetween{lo: p.addExpr(items[0]), hi: p.addExpr(items[1]), symmetric: e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM}
		}
	}
	return cAny{}
}

// evaluate computes the constant expressions in one engine query, on the
// connection and inside the transaction the query itself runs in, so that
// now() has the same value in both.
//
// The bounds are instants. A time column of type timestamp (without time
// zone) holds wall clocks, which equal instants only in UTC: in another
// zone its table is read whole.
func (p *timePlan) evaluate(ctx context.Context, conn *sql.Conn, version int32, tables map[string]schema.Table, loc *time.Location) (map[string]interval, error) {
	out := map[string]interval{}
	if len(p.refs) == 0 {
		return out, nil
	}
	vals := make([]int64, len(p.exprs))
	if literalTimes(p.exprs, vals, loc) {
		// Every bound is a plain timestamp literal: no engine round trip.
	} else if len(p.exprs) > 0 {
		var cols []string
		for _, e := range p.exprs {
			txt, err := deparseExpr(version, e)
			if err != nil {
				return nil, err
			}
			cols = append(cols, fmt.Sprintf("epoch_us(CAST((%s) AS TIMESTAMPTZ))", txt))
		}
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &sql.NullInt64{}
		}
		if err := conn.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", ")).Scan(dest...); err != nil {
			// Bounds are an optimisation: if they cannot be computed the
			// query reads everything and reports its own errors.
			for t := range p.refs {
				out[t] = fullRange
			}
			return out, nil
		}
		for i, d := range dest {
			n := d.(*sql.NullInt64)
			if !n.Valid {
				for t := range p.refs {
					out[t] = fullRange
				}
				return out, nil
			}
			vals[i] = n.Int64
		}
	}
	for t, cs := range p.refs {
		if tbl, ok := tables[t]; loc != time.UTC && (!ok || tbl.TimeIndex < 0 || tbl.TimeColumn().Type != schema.Timestamptz) {
			out[t] = fullRange
			continue
		}
		r := interval{math.MaxInt64, math.MinInt64}
		for _, c := range cs {
			r = r.hull(rangeOf(c, vals))
		}
		out[t] = r
	}
	return out, nil
}

func rangeOf(c constraint, vals []int64) interval {
	switch c := c.(type) {
	case cAnd:
		r := fullRange
		for _, x := range c {
			r = r.intersect(rangeOf(x, vals))
		}
		return r
	case cOr:
		r := interval{math.MaxInt64, math.MinInt64}
		for _, x := range c {
			r = r.hull(rangeOf(x, vals))
		}
		return r
	case cCmp:
		v := vals[c.expr]
		switch c.op {
		case "<":
			return interval{math.MinInt64, v - 1}
		case "<=":
			return interval{math.MinInt64, v}
		case ">":
			return interval{v + 1, math.MaxInt64}
		case ">=":
			return interval{v, math.MaxInt64}
		case "=":
			return interval{v, v}
		}
	case cIn:
		r := interval{math.MaxInt64, math.MinInt64}
		for _, i := range c {
			r = r.hull(interval{vals[i], vals[i]})
		}
		return r
	case cBetween:
		lo, hi := vals[c.lo], vals[c.hi]
		if c.symmetric && lo > hi {
			lo, hi = hi, lo
		}
		return interval{lo, hi}
	}
	return fullRange
}

// deparseExpr renders one expression as SQL (by deparsing SELECT expr).
func deparseExpr(version int32, n *pg_query.Node) (string, error) {
	sel := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Val: n}}}},
	}}}
	s, err := deparse(version, sel)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(s, "SELECT "), nil
}

// pruned is a snapshot reduced to the files and batches a time range needs.
type pruned struct {
	snap     *ingest.Snapshot
	files    []string
	fileCols []int // columns each file holds (see delta.File.Columns)
	// fileDeleted are the rows of each file deleted by deletion vector
	// (see deletes.go), index-aligned with files.
	fileDeleted []delta.RowSet
	// fileByName says which files are read by name (see layout.go);
	// fileLayouts holds their layouts once resolved.
	fileByName                 []bool
	fileLayouts                []*fileLayout
	mirror                     string // the DuckDB table holding the buffered batches
	batchIDs                   []uint64
	filesPruned, batchesPruned int
	bucketsKept, bucketsPruned int
	rng                        interval
	// damage is set when a file the range needs is damaged: the
	// statement must fail rather than read around it.
	damage error
	// from, when set, is a time no row the statement needs is older
	// than (lastKeyBound), which the files' reads filter on as well, so
	// that the engine skips their older row groups.
	from *int64
	// newest, when set, is the engine table of the newest rows of the
	// snapshot's files (newestrows.go), read in place of the files.
	newest string
}

func prune(snap *ingest.Snapshot, r interval) *pruned {
	p := &pruned{snap: snap, rng: r}
	for i, f := range snap.Files {
		if r.overlaps(f.MinTime, f.MaxTime) {
			p.files = append(p.files, snap.FilePaths[i])
			p.fileCols = append(p.fileCols, f.Columns)
			p.fileDeleted = append(p.fileDeleted, snap.Deleted[f.Path])
			p.fileByName = append(p.fileByName, needsLayout(f, snap.Table))
			if err := snap.DamagedFile(f.Path); err != nil && p.damage == nil {
				p.damage = err
			}
		} else {
			p.filesPruned++
		}
	}
	buckets := map[[2]int64]bool{}
	for _, b := range snap.Batches {
		k := [2]int64{b.Key.Start, b.Key.End}
		if r.overlaps(b.MinTime, b.MaxTime) {
			p.batchIDs = append(p.batchIDs, b.ID)
			buckets[k] = true
		} else {
			p.batchesPruned++
			if _, seen := buckets[k]; !seen {
				buckets[k] = false
			}
		}
	}
	for _, kept := range buckets {
		if kept {
			p.bucketsKept++
		} else {
			p.bucketsPruned++
		}
	}
	return p
}

func formatRange(r interval) string {
	if r == fullRange {
		return "all time"
	}
	return "[" + formatMicros(r.lo) + ", " + formatMicros(r.hi) + "]"
}

// formatMicros writes a time of UTC microseconds for EXPLAIN.
func formatMicros(v int64) string {
	switch v {
	case math.MinInt64:
		return "-infinity"
	case math.MaxInt64:
		return "infinity"
	}
	return time.UnixMicro(v).UTC().Format("2006-01-02 15:04:05.999999+00")
}

// literalTimes fills vals when every expression is a timestamp string
// literal (optionally cast to timestamptz or timestamp) that parseTimestamp
// reads. Those convert exactly as the engine's CAST would: no zone means
// a wall clock in loc, the session's (and its connection's) zone. Anything
// else reports false.
func literalTimes(exprs []*pg_query.Node, vals []int64, loc *time.Location) bool {
	in := textInput{loc: loc}
	if len(exprs) == 0 {
		return false
	}
	for i, e := range exprs {
		withoutZone := false
		if tc := e.GetTypeCast(); tc != nil && tc.TypeName != nil {
			t, err := schema.ParseType(sqltree.TypeName(tc.TypeName))
			if err != nil || !t.IsTimestamp() {
				return false
			}
			withoutZone, e = t == schema.Timestamp, tc.Arg
		}
		c := e.GetAConst()
		if c == nil || c.GetSval() == nil {
			return false
		}
		us, hasZone, ok := parseTimestamp(c.GetSval().GetSval())
		// A zone on a timestamp without time zone: the engine's rules.
		if !ok || (hasZone && withoutZone) {
			return false
		}
		vals[i] = in.instant(us, hasZone)
	}
	return true
}
