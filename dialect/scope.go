package dialect

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// What the rewrites of a statement share: the scope one rewrites, and
// the one walk that finds what the whole-tree rewrites look for.

// substituteScope applies rewrite to root and, unless rewrite keeps root
// as it is (a subquery, its own scope), to the nodes under it, without
// walking into what it puts in place (sqltree.SubstituteNodes).
func substituteScope(root *pg_query.Node, rewrite func(*pg_query.Node) *pg_query.Node) {
	if r := rewrite(root); r == root {
		return
	} else if r != nil {
		root.Node = r.Node
		return
	}
	sqltree.SubstituteNodes(root.ProtoReflect(), rewrite)
}

// Features are what a statement holds that the whole-tree rewrites look
// for, found in one walk: a statement of 20,000 terms must not be walked
// once per rewrite.
type Features struct {
	SetOps   bool // a set operation or a VALUES list
	Bytea    bool // a bytea cast or a bytea function
	Interval bool // an interval cast or function
	Minus    bool // a binary -
	Windows  bool // a window function or a WINDOW clause
	JSON     bool // a function that writes values as JSON (JSONValueTypes)
	// Err is an error PostgreSQL's analysis finds in the statement as
	// written (an aggregate with DISTINCT ordered by what it does not
	// aggregate, 42P10).
	Err error
}

// constantDivisionByZero reports a number literal divided (or taken
// modulo) by the literal zero.
func constantDivisionByZero(e *pg_query.A_Expr) bool {
	if op := sqltree.LastName(e.Name); op != "/" && op != "%" || e.Lexpr == nil || e.Rexpr == nil {
		return false
	}
	number := func(n *pg_query.Node) (float64, bool) {
		c := n.GetAConst()
		switch {
		case c == nil:
			return 0, false
		case c.GetIval() != nil:
			return float64(c.GetIval().Ival), true
		case c.GetFval() != nil:
			v, err := strconv.ParseFloat(c.GetFval().Fval, 64)
			return v, err == nil
		}
		return 0, false
	}
	_, lok := number(e.Lexpr)
	r, rok := number(e.Rexpr)
	return lok && rok && r == 0
}

// frameOffsetVariables is PostgreSQL's 42P10 for a window frame offset
// that names a column: it must be a constant for the window.
func frameOffsetVariables(wd *pg_query.WindowDef) error {
	mode := "RANGE"
	switch {
	case wd.FrameOptions&0x4 != 0:
		mode = "ROWS"
	case wd.FrameOptions&frameGroups != 0:
		mode = "GROUPS"
	}
	for _, off := range []*pg_query.Node{wd.StartOffset, wd.EndOffset} {
		if off == nil {
			continue
		}
		found := false
		_ = sqltree.Walk(off.ProtoReflect(), func(m proto.Message) error {
			switch m.(type) {
			case *pg_query.SubLink:
				return sqltree.SkipChildren // its columns are its own query's
			case *pg_query.ColumnRef:
				found = true
			}
			return nil
		})
		if found {
			return sqlerr.New("42P10", "argument of %s must not contain variables", mode)
		}
	}
	return nil
}

// ReturningChecks refuses what PostgreSQL refuses in an INSERT, UPDATE or
// DELETE's RETURNING list: window functions (42P20) and aggregates
// (42803), which the engine would compute over the changed rows.
func ReturningChecks(n *pg_query.Node) error {
	var list []*pg_query.Node
	switch {
	case n.GetInsertStmt() != nil:
		list = n.GetInsertStmt().ReturningList
	case n.GetUpdateStmt() != nil:
		list = n.GetUpdateStmt().ReturningList
	case n.GetDeleteStmt() != nil:
		list = n.GetDeleteStmt().ReturningList
	}
	var err error
	for _, t := range list {
		_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			if _, ok := m.(*pg_query.SubLink); ok {
				return sqltree.SkipChildren
			}
			fc, ok := m.(*pg_query.FuncCall)
			switch {
			case !ok || err != nil:
			case fc.Over != nil:
				err = sqlerr.New("42P20", "window functions are not allowed in RETURNING")
			case aggregateNames[sqltree.LastName(fc.Funcname)] || fc.AggStar:
				err = sqlerr.New("42803", "aggregate functions are not allowed in RETURNING")
			}
			return nil
		})
	}
	return err
}

// orderedAggregates are PostgreSQL's aggregates whose result an ORDER BY
// changes: an unknown name is 42883 before anything else in PostgreSQL.
var orderedAggregates = map[string]bool{"string_agg": true, "array_agg": true, "json_agg": true, "jsonb_agg": true,
	"json_object_agg": true, "jsonb_object_agg": true, "xmlagg": true}

// FeaturesOf walks n once.
func FeaturesOf(n *pg_query.Node) Features {
	var f Features
	zeroDivision := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.SelectStmt:
			f.SetOps = f.SetOps || IsSetOp(x) || len(x.ValuesLists) > 0
			f.Windows = f.Windows || len(x.WindowClause) > 0
		case *pg_query.TypeName:
			switch sqltree.LastName(x.Names) {
			case "bytea":
				f.Bytea = true
			case "interval":
				f.Interval = true
			}
		case *pg_query.FuncCall:
			name := sqltree.LastName(x.Funcname)
			f.Bytea = f.Bytea || byteaResults[name]
			f.Interval = f.Interval || strings.HasPrefix(name, "justify_") || name == "make_interval"
			f.Windows = f.Windows || x.Over != nil
			f.JSON = f.JSON || jsonFunctions[name]
			if f.Err == nil && name == "json_object" {
				f.Err = errJSONObject()
			}
			if f.Err == nil && x.AggDistinct && len(x.AggOrder) > 0 && !x.AggWithinGroup && orderedAggregates[name] && !distinctOrderInArgs(x) {
				f.Err = sqlerr.New("42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
			}
		case *pg_query.A_Expr:
			f.Minus = f.Minus || x.Kind == pg_query.A_Expr_Kind_AEXPR_OP && x.Lexpr != nil && sqltree.LastName(x.Name) == "-"
			zeroDivision = zeroDivision || x.Kind == pg_query.A_Expr_Kind_AEXPR_OP && constantDivisionByZero(x)
		case *pg_query.WindowDef:
			if f.Err == nil {
				f.Err = frameOffsetVariables(x)
			}
		case *pg_query.RangeTableSample:
			// The engine reads SYSTEM (10) as ten rows, PostgreSQL as
			// ten percent of the table.
			if f.Err == nil {
				f.Err = sqlerr.New(sqlerr.FeatureNotSupported, "TABLESAMPLE is not supported")
			}
		}
		return nil
	})
	if f.Err == nil && zeroDivision && foldsToZeroDivision(n) {
		// PostgreSQL folds constants when it plans: 1/0 fails even where
		// it would never be evaluated (a CASE branch a row does not
		// take), which the engine answers.
		f.Err = sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	}
	return f
}

// foldsToZeroDivision reports whether PostgreSQL's constant folding meets
// a number divided by the literal zero under n: everywhere but in the
// CASE branches it drops first, those after a WHEN whose condition is
// constantly true and those whose condition is constantly false.
func foldsToZeroDivision(n *pg_query.Node) bool {
	found := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		switch x := m.(type) {
		case *pg_query.A_Expr:
			found = found || x.Kind == pg_query.A_Expr_Kind_AEXPR_OP && constantDivisionByZero(x)
		case *pg_query.CaseExpr:
			if !found {
				found = caseFoldsToZeroDivision(x)
			}
			return sqltree.SkipChildren
		}
		return nil
	})
	return found
}

func caseFoldsToZeroDivision(c *pg_query.CaseExpr) bool {
	if c.Arg != nil && foldsToZeroDivision(c.Arg) {
		return true
	}
	for _, w := range c.Args {
		cw := w.GetCaseWhen()
		if cw == nil {
			continue
		}
		if foldsToZeroDivision(cw.Expr) {
			return true
		}
		taken, known := constantCondition(c.Arg, cw.Expr)
		if known && !taken {
			continue
		}
		if foldsToZeroDivision(cw.Result) {
			return true
		}
		if known && taken {
			return false // the rest is dropped
		}
	}
	return c.Defresult != nil && foldsToZeroDivision(c.Defresult)
}

// constantCondition evaluates a WHEN of number literals and booleans: cond
// itself, or arg = cond for CASE arg WHEN cond.
func constantCondition(arg, cond *pg_query.Node) (value, known bool) {
	literal := func(n *pg_query.Node) (string, bool) {
		c := n.GetAConst()
		switch {
		case c == nil || c.Isnull:
			return "", false
		case c.GetIval() != nil:
			return strconv.FormatInt(int64(c.GetIval().Ival), 10), true
		case c.GetBoolval() != nil:
			return strconv.FormatBool(c.GetBoolval().Boolval), true
		}
		return "", false
	}
	if arg != nil {
		a, aok := literal(arg)
		b, bok := literal(cond)
		return a == b, aok && bok
	}
	if v, ok := literal(cond); ok {
		return v == "true", v == "true" || v == "false"
	}
	e := cond.GetAExpr()
	if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil {
		return false, false
	}
	l, lok := literal(e.Lexpr)
	r, rok := literal(e.Rexpr)
	if !lok || !rok {
		return false, false
	}
	li, lerr := strconv.ParseInt(l, 10, 64)
	ri, rerr := strconv.ParseInt(r, 10, 64)
	if lerr != nil || rerr != nil {
		return false, false
	}
	switch sqltree.LastName(e.Name) {
	case "=":
		return li == ri, true
	case "<>", "!=":
		return li != ri, true
	case "<":
		return li < ri, true
	case "<=":
		return li <= ri, true
	case ">":
		return li > ri, true
	case ">=":
		return li >= ri, true
	}
	return false, false
}
