package viewdef

// Window clauses: their analysis and how an inline one merges with a
// named one.

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/sqltree"
)

// window analyses a window definition.
func (a *analyzer) window(wd *pg_query.WindowDef) (*window, error) {
	w := &window{ref: wd.Refname, frame: wd.FrameOptions}
	var base *window
	if wd.Refname != "" {
		for _, nw := range a.q.windows {
			if nw.name == wd.Refname {
				base = nw
			}
		}
		if base == nil {
			return nil, refuse("window %q", wd.Refname)
		}
		if len(wd.PartitionClause) > 0 || base.frame&frameNonDefault != 0 || len(wd.OrderClause) > 0 && len(base.order) > 0 {
			return nil, refuse("this window")
		}
	}
	for _, p := range wd.PartitionClause {
		e, err := a.expr(p, nil)
		if err != nil {
			return nil, err
		}
		if _, ok := e.(*konst); ok {
			return nil, refuse("a constant in PARTITION BY")
		}
		w.partition = append(w.partition, sortKey{e: e})
	}
	for _, o := range wd.OrderClause {
		sb := o.GetSortBy()
		e, err := a.expr(sb.Node, nil)
		if err != nil {
			return nil, err
		}
		if _, ok := e.(*konst); ok {
			return nil, refuse("a constant in a window's ORDER BY")
		}
		k := sortKey{e: e}
		if err := orderOf(&k, sb); err != nil {
			return nil, err
		}
		w.order = append(w.order, k)
	}
	if base != nil && len(w.order) == 0 && len(base.order) > 0 {
		w.order, w.copiedOrder = base.order, true
	}
	var orderType Type
	if len(w.order) == 1 {
		orderType = w.order[0].e.typ()
	}
	var err error
	if wd.StartOffset != nil {
		if w.start, err = a.frameOffset(wd.StartOffset, w.frame, orderType); err != nil {
			return nil, err
		}
	}
	if wd.EndOffset != nil {
		if w.end, err = a.frameOffset(wd.EndOffset, w.frame, orderType); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// frameOffset is a frame's offset: an integer for ROWS and GROUPS (its
// coercion to bigint does not show), for RANGE of the type in_range
// takes for the ordering column's (an interval for dates and times).
func (a *analyzer) frameOffset(n *pg_query.Node, frame int32, orderType Type) (expr, error) {
	e, err := a.expr(n, nil)
	if err != nil {
		return nil, err
	}
	if frame&frameRange == 0 {
		if e.typ() != tInt4 {
			return nil, refuse("this frame offset")
		}
		return e, nil
	}
	switch {
	case orderType == tTimestamptz || orderType == tTimestamp || orderType == tDate:
		if e.typ().OID == oidUnknown {
			return coerceUnknown(e, tInterval, a.env)
		}
		if e.typ() == tInterval {
			return e, nil
		}
	case isInt(orderType) && e.typ() == tInt4:
		return e, nil
	}
	return nil, refuse("this RANGE offset")
}

// The bits of a window's frame options (PostgreSQL's FRAMEOPTION_*).
const (
	frameNonDefault              = 0x00001
	frameRange                   = 0x00002
	frameRows                    = 0x00004
	frameGroups                  = 0x00008
	frameBetween                 = 0x00010
	frameStartUnboundedPreceding = 0x00020
	frameEndUnboundedPreceding   = 0x00040
	frameStartUnboundedFollowing = 0x00080
	frameEndUnboundedFollowing   = 0x00100
	frameStartCurrentRow         = 0x00200
	frameEndCurrentRow           = 0x00400
	frameStartOffsetPreceding    = 0x00800
	frameEndOffsetPreceding      = 0x01000
	frameStartOffsetFollowing    = 0x02000
	frameEndOffsetFollowing      = 0x04000
	frameExcludeCurrentRow       = 0x08000
	frameExcludeGroup            = 0x10000
	frameExcludeTies             = 0x20000
)

// orderOf sets a sort key's direction from sb.
func orderOf(k *sortKey, sb *pg_query.SortBy) error {
	switch sb.SortbyDir {
	case pg_query.SortByDir_SORTBY_USING:
		return refuse("ORDER BY … USING")
	case pg_query.SortByDir_SORTBY_DESC:
		k.desc = true
	}
	switch sb.SortbyNulls {
	case pg_query.SortByNulls_SORTBY_NULLS_FIRST:
		k.nullsFirst = true
	case pg_query.SortByNulls_SORTBY_NULLS_LAST:
		k.nullsFirst = false
	default:
		k.nullsFirst = k.desc
	}
	return nil
}

// windowFor finds the window a call's OVER names or writes: an inline
// definition equal to a named window is that window.
func (a *analyzer) windowFor(wd *pg_query.WindowDef) (*window, error) {
	if wd.Name != "" && wd.Refname == "" && len(wd.PartitionClause) == 0 && len(wd.OrderClause) == 0 && wd.FrameOptions&frameNonDefault == 0 {
		// OVER w
		for _, w := range a.q.windows {
			if w.name == wd.Name {
				return w, nil
			}
		}
		return nil, refuse("window %q", wd.Name)
	}
	if wd.Refname == "" {
		for i, w := range a.q.windows {
			if sameWindow(a.defs[i], wd) {
				return w, nil
			}
		}
	}
	return a.window(wd)
}

// sameWindow compares two window definitions as PostgreSQL's equal()
// does: partitioning, ordering, frame and offsets, not where they were
// written.
func sameWindow(x, y *pg_query.WindowDef) bool {
	if x.Refname != "" || x.FrameOptions != y.FrameOptions {
		return false
	}
	strip := func(ns []*pg_query.Node) []*pg_query.Node {
		out := make([]*pg_query.Node, len(ns))
		for i, n := range ns {
			out[i] = sqltree.WithoutLocations(n)
		}
		return out
	}
	eq := func(a, b []*pg_query.Node) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !proto.Equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	one := func(n *pg_query.Node) []*pg_query.Node {
		if n == nil {
			return nil
		}
		return []*pg_query.Node{n}
	}
	return eq(strip(x.PartitionClause), strip(y.PartitionClause)) && eq(strip(x.OrderClause), strip(y.OrderClause)) &&
		eq(strip(one(x.StartOffset)), strip(one(y.StartOffset))) && eq(strip(one(x.EndOffset)), strip(one(y.EndOffset)))
}
