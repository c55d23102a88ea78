package dialect

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// WindowOutputOrder gives a query with window functions and no ORDER BY
// the row order PostgreSQL gives it: PostgreSQL evaluates the windows
// over input sorted by their PARTITION BY and ORDER BY keys and returns
// the rows in that order, and clients (and PostgreSQL's own regression
// suites) read lag/lead and running sums top to bottom as if the order
// were promised. The engine returns a window's rows in any order, so the
// keys are added as the query's ORDER BY.
//
// Only the cases whose PostgreSQL order is plain are rewritten: every
// window of the select list sorts by the same keys, or by a prefix of
// the longest one's (PostgreSQL then sorts once, by the longest). Two
// windows sorted differently (ORDER BY a and ORDER BY a DESC) are left
// alone: which one PostgreSQL sorts last depends on its operators' OIDs.
// Rows that tie on every key may still come in another order. It
// reports whether sel changed.
func WindowOutputOrder(sel *pg_query.SelectStmt) bool {
	if sel == nil || sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.SortClause) > 0 ||
		len(sel.DistinctClause) > 0 || sel.LockingClause != nil {
		return false
	}
	named := map[string]*pg_query.WindowDef{}
	for _, w := range sel.WindowClause {
		if wd := w.GetWindowDef(); wd != nil {
			named[wd.Name] = wd
		}
	}
	var specs [][]*pg_query.Node
	ok := true
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil {
			continue
		}
		_ = sqltree.Walk(rt.Val.ProtoReflect(), func(m proto.Message) error {
			switch x := m.(type) {
			case *pg_query.SubLink:
				return sqltree.SkipChildren // a subquery's windows sort its own rows
			case *pg_query.FuncCall:
				if x.Over == nil {
					return nil
				}
				keys, good := windowKeys(x.Over, named)
				if !good {
					ok = false
				}
				specs = append(specs, keys)
			}
			return nil
		})
	}
	if !ok || len(specs) == 0 {
		return false
	}
	longest := specs[0]
	for _, s := range specs[1:] {
		if len(s) > len(longest) {
			longest = s
		}
	}
	if len(longest) == 0 {
		return false
	}
	for _, s := range specs {
		for i := range s {
			if !proto.Equal(s[i], longest[i]) {
				return false
			}
		}
	}
	aliases := map[string]bool{}
	for _, t := range sel.TargetList {
		if rt := t.GetResTarget(); rt != nil && rt.Name != "" {
			aliases[rt.Name] = true
		}
	}
	for _, k := range longest {
		sb := k.GetSortBy()
		if sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return false
		}
		switch {
		case sb.Node.GetAConst() != nil:
			// A constant key sorts nothing; at the top it would name a
			// select-list position.
			return false
		case refersToAlias(sb.Node, aliases):
			// A query's ORDER BY takes a bare name for the select
			// list's column of that name, the window for the input's.
			return false
		}
	}
	sel.SortClause = longest
	return true
}

// windowKeys are the sort keys of a window: its PARTITION BY expressions
// ascending, then its ORDER BY, following a reference to a named window.
func windowKeys(w *pg_query.WindowDef, named map[string]*pg_query.WindowDef) ([]*pg_query.Node, bool) {
	if w.Name != "" { // OVER w
		base, ok := named[w.Name]
		if !ok {
			return nil, false
		}
		w = base
	}
	part, order := w.PartitionClause, w.OrderClause
	for depth := 0; w.Refname != ""; depth++ { // OVER (w ORDER BY …)
		base, ok := named[w.Refname]
		if !ok || depth > len(named) {
			return nil, false
		}
		if len(part) == 0 {
			part = base.PartitionClause
		}
		if len(order) == 0 {
			order = base.OrderClause
		}
		w = base
	}
	var keys []*pg_query.Node
	for _, p := range part {
		keys = append(keys, &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: &pg_query.SortBy{
			Node: sqltree.WithoutLocations(p), SortbyDir: pg_query.SortByDir_SORTBY_DEFAULT,
			SortbyNulls: pg_query.SortByNulls_SORTBY_NULLS_DEFAULT, Location: -1,
		}}})
	}
	for _, o := range order {
		if o.GetSortBy() == nil {
			return nil, false
		}
		keys = append(keys, sqltree.WithoutLocations(o))
	}
	return keys, true
}

// refersToAlias reports whether expression n holds a bare column name that
// the select list also gives one of its columns.
func refersToAlias(n *pg_query.Node, aliases map[string]bool) bool {
	found := false
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if cr, ok := m.(*pg_query.ColumnRef); ok && len(cr.Fields) == 1 {
			if aliases[cr.Fields[0].GetString_().GetSval()] {
				found = true
			}
		}
		return nil
	})
	return found
}

// frameGroups is PostgreSQL's FRAMEOPTION_GROUPS bit of a window's frame
// options.
const frameGroups = 0x8

// WindowChecks checks and completes the windows of every SELECT under
// root as PostgreSQL does:
//   - a GROUPS frame needs an ORDER BY, its own or its base window's
//     (42P20; the engine answered as if every row were a peer);
//   - a window function in ORDER BY may name a window of the WINDOW
//     clause (ORDER BY rank() OVER w), which the engine does not look up
//     there: the definition is put in the name's place.
//
// It reports whether root changed.
func WindowChecks(root *pg_query.Node) (bool, error) {
	changed, failed := false, false
	_ = sqltree.Walk(root.ProtoReflect(), func(m proto.Message) error {
		sel, ok := m.(*pg_query.SelectStmt)
		if !ok || failed {
			return nil
		}
		named := map[string]*pg_query.WindowDef{}
		for _, w := range sel.WindowClause {
			if wd := w.GetWindowDef(); wd != nil {
				named[wd.Name] = wd
			}
		}
		ordered := func(wd *pg_query.WindowDef) bool {
			for wd != nil {
				if len(wd.OrderClause) > 0 {
					return true
				}
				if wd.Refname == "" {
					return false
				}
				wd = named[wd.Refname]
			}
			return false
		}
		check := func(wd *pg_query.WindowDef) {
			failed = failed || wd.FrameOptions&frameGroups != 0 && !ordered(wd)
			if wd.FrameOptions&frameRange != 0 {
				// A quoted RANGE offset that is no number is an interval
				// ('1 day' PRECEDING), as PostgreSQL resolves it for a
				// timestamp key; the engine subtracted the string.
				for _, off := range []**pg_query.Node{&wd.StartOffset, &wd.EndOffset} {
					if sv := (*off).GetAConst().GetSval(); sv != nil {
						if _, err := strconv.ParseFloat(strings.TrimSpace(sv.Sval), 64); err != nil {
							*off = sqltree.Cast(*off, "interval")
							changed = true
						}
					}
				}
			}
		}
		for _, w := range sel.WindowClause {
			if wd := w.GetWindowDef(); wd != nil {
				check(wd)
			}
		}
		_ = sqltree.Walk(sel.ProtoReflect(), func(m proto.Message) error {
			if fc, ok := m.(*pg_query.FuncCall); ok && fc.Over != nil {
				check(fc.Over)
			}
			return nil
		})
		for _, s := range sel.SortClause {
			_ = sqltree.Walk(s.ProtoReflect(), func(m proto.Message) error {
				fc, ok := m.(*pg_query.FuncCall)
				if !ok || fc.Over == nil || fc.Over.Name == "" || fc.Over.Refname != "" || len(fc.Over.PartitionClause) > 0 || len(fc.Over.OrderClause) > 0 {
					return nil
				}
				if base, ok := named[fc.Over.Name]; ok {
					def := proto.Clone(base).(*pg_query.WindowDef)
					def.Name = ""
					fc.Over = def
					changed = true
				}
				return nil
			})
		}
		return nil
	})
	if failed {
		return changed, sqlerr.New("42P20", "GROUPS mode requires an ORDER BY clause")
	}
	return changed, nil
}

// frameRange is PostgreSQL's FRAMEOPTION_RANGE bit.
const frameRange = 0x2

// RangeOffsetTypes refuses, in sel's windows, a RANGE frame offset
// PostgreSQL has no in_range support for (0A000): a key of a type without
// one (text, boolean), or an offset of another kind than the key's (an
// integer offset of a date, an interval of an integer). The engine
// computed date + 1 as the next day, and failed with 42883 on the others.
// Keys are known by typeOf (a column) or a cast; offsets when they are
// number literals or interval casts.
func RangeOffsetTypes(sel *pg_query.SelectStmt, typeOf func(*pg_query.Node) schema.Type) error {
	var failed error
	rangeFrames(sel, func(wd *pg_query.WindowDef, key *pg_query.SortBy) {
		if failed != nil {
			return
		}
		kt := rangeKeyType(key.Node, typeOf)
		for _, off := range []*pg_query.Node{wd.StartOffset, wd.EndOffset} {
			if off == nil {
				continue
			}
			ot := rangeOffsetKind(off)
			switch kt {
			case schema.Int16, schema.Int32, schema.Int64, schema.Float32, schema.Float64, schema.Decimal:
				if ot == "interval" {
					failed = sqlerr.New(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", kt, ot)
				}
			case schema.Date, schema.Timestamp, schema.Timestamptz, schema.Interval, schema.Time, schema.TimeTZ:
				if ot == "integer" || ot == "numeric" {
					failed = sqlerr.New(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", kt, ot)
				}
			case schema.Text, schema.Bool, schema.Bytea, schema.Bit, schema.VarBit:
				failed = sqlerr.New(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", kt)
			}
			if failed != nil {
				return
			}
		}
	})
	return failed
}

// WidenRangeKeys widens, in sel's windows, an integer RANGE key with
// integer offsets to the engine's 128-bit integer: PostgreSQL's in_range
// treats a bound past the type's range as reaching its end
// (x::smallint RANGE BETWEEN CURRENT ROW AND 2147450884 FOLLOWING), where
// the engine computed x + offset in the key's type and failed with
// integer out of range. The planner widens after WindowOutputOrder has
// compared the windows' keys as written. It reports whether sel changed.
func WidenRangeKeys(sel *pg_query.SelectStmt, typeOf func(*pg_query.Node) schema.Type) bool {
	changed := false
	rangeFrames(sel, func(wd *pg_query.WindowDef, key *pg_query.SortBy) {
		if intWidth(key.Node, typeOf) == 0 {
			return // a widened key is no longer one (the cast is to hugeint)
		}
		for _, off := range []*pg_query.Node{wd.StartOffset, wd.EndOffset} {
			if off != nil && rangeOffsetKind(off) != "integer" {
				return
			}
		}
		key.Node = sqltree.Cast(key.Node, "hugeint")
		changed = true
	})
	return changed
}

// rangeFrames calls fn for every window of sel (named, or in the select
// list outside subqueries) with a RANGE frame with an offset and one
// ordering key, which may be its base window's.
func rangeFrames(sel *pg_query.SelectStmt, fn func(wd *pg_query.WindowDef, key *pg_query.SortBy)) {
	if sel == nil {
		return
	}
	named := map[string]*pg_query.WindowDef{}
	for _, w := range sel.WindowClause {
		if wd := w.GetWindowDef(); wd != nil {
			named[wd.Name] = wd
		}
	}
	visit := func(wd *pg_query.WindowDef) {
		if wd.FrameOptions&frameRange == 0 || wd.StartOffset == nil && wd.EndOffset == nil {
			return
		}
		order := wd.OrderClause
		for ref := wd.Refname; len(order) == 0 && ref != ""; {
			base, ok := named[ref]
			if !ok {
				break
			}
			order, ref = base.OrderClause, base.Refname
		}
		if len(order) == 1 {
			fn(wd, order[0].GetSortBy())
		}
	}
	for _, w := range sel.WindowClause {
		if wd := w.GetWindowDef(); wd != nil {
			visit(wd)
		}
	}
	for _, t := range sel.TargetList {
		_ = sqltree.Walk(t.ProtoReflect(), func(m proto.Message) error {
			switch x := m.(type) {
			case *pg_query.SubLink:
				return sqltree.SkipChildren // another query's columns
			case *pg_query.FuncCall:
				if x.Over != nil {
					visit(x.Over)
				}
			}
			return nil
		})
	}
}

// rangeKeyType is a RANGE key's type, known by its cast or typeOf.
func rangeKeyType(n *pg_query.Node, typeOf func(*pg_query.Node) schema.Type) schema.Type {
	if tc := n.GetTypeCast(); tc != nil && len(tc.TypeName.GetArrayBounds()) == 0 {
		t, _ := schema.TypeFromUDTName(sqltree.LastName(tc.TypeName.GetNames()))
		return t
	}
	if typeOf != nil {
		return typeOf(n)
	}
	return schema.Invalid
}

// rangeOffsetKind is the kind of a RANGE offset written as a literal or
// a cast of one: integer, numeric or interval ("" when unknown).
func rangeOffsetKind(n *pg_query.Node) string {
	switch c := n.GetAConst(); {
	case c != nil && c.GetIval() != nil:
		return "integer"
	case c != nil && c.GetFval() != nil:
		return "numeric"
	case n.GetTypeCast().GetArg().GetAConst().GetIval() != nil && intWidth(n, nil) != 0:
		return "integer"
	case n.GetTypeCast() != nil && sqltree.LastName(n.GetTypeCast().TypeName.GetNames()) == "interval":
		return "interval"
	}
	return ""
}
