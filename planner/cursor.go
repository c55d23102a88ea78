package planner

import (
	"context"
	"math"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
)

// SQL cursors (DECLARE, FETCH, MOVE, CLOSE) are what psql's FETCH_COUNT
// sends. The planner runs the cursor's query and says what each statement
// asks; the session layer keeps the open results, the rows already read
// (for FETCH BACKWARD, PRIOR, ABSOLUTE and RELATIVE) and the position, as
// it does for portals executed with a row limit.

// CursorDecl is set on the Result of DECLARE … CURSOR, whose Rows are the
// cursor's.
type CursorDecl struct {
	Name     string
	Binary   bool // DECLARE … BINARY CURSOR: rows in binary format
	Hold     bool // WITH HOLD: the cursor outlives its transaction
	Scroll   bool // SCROLL: it must be able to go back to any row
	NoScroll bool // NO SCROLL: it reads forward only
}

// FetchDirection is where a FETCH or MOVE goes from the cursor's
// position.
type FetchDirection int

// The directions of FETCH and MOVE; FIRST is ABSOLUTE 1, LAST ABSOLUTE
// -1, NEXT FORWARD 1 and PRIOR BACKWARD 1.
const (
	FetchForward  FetchDirection = iota // Count rows on; 0: the current row again
	FetchBackward                       // Count rows back; 0: the current row again
	FetchAbsolute                       // to row Count, counted from the end when negative
	FetchRelative                       // to the row Count rows away
)

// CursorFetch is set on the Result of FETCH and MOVE.
type CursorFetch struct {
	Name      string
	Direction FetchDirection
	// Count is the rows to read forward or backward (at least 0;
	// math.MaxInt64 for ALL), or the row to go to.
	Count int64
	Move  bool // MOVE: skip the rows instead of sending them
}

// CursorClose is set on the Result of CLOSE.
type CursorClose struct {
	Name string // "" for CLOSE ALL
}

// Option bits of DeclareCursorStmt (PostgreSQL's CURSOR_OPT_*).
const (
	cursorBinary   = 0x0001
	cursorScroll   = 0x0002
	cursorNoScroll = 0x0004
	cursorHold     = 0x0020
)

// declareCursor runs the query of DECLARE … CURSOR.
func (s *Session) declareCursor(ctx context.Context, d *pg_query.DeclareCursorStmt) (*Result, error) {
	if d.Query.GetSelectStmt() == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DECLARE CURSOR supports SELECT only")
	}
	hold := d.Options&cursorHold != 0
	if !hold && s.tx == nil {
		return nil, sqlerr.New("25P01", "DECLARE CURSOR can only be used in transaction blocks")
	}
	text, err := deparse(s.p.pgVersion, d.Query)
	if err != nil {
		return nil, err
	}
	res, err := s.execute(ctx, statement{text: text, node: d.Query})
	if err != nil {
		return nil, err
	}
	res.Tag = "DECLARE CURSOR"
	res.Cursor = &CursorDecl{Name: d.Portalname, Binary: d.Options&cursorBinary != 0, Hold: hold,
		Scroll: d.Options&cursorScroll != 0, NoScroll: d.Options&cursorNoScroll != 0}
	return res, nil
}

// fetchCursor reads FETCH and MOVE.
func fetchCursor(f *pg_query.FetchStmt) (*Result, error) {
	tag := "FETCH"
	if f.Ismove {
		tag = "MOVE"
	}
	fetch := &CursorFetch{Name: f.Portalname, Count: f.HowMany, Move: f.Ismove}
	switch f.Direction {
	case pg_query.FetchDirection_FETCH_FORWARD, pg_query.FetchDirection_FETCH_BACKWARD:
		// ALL is the largest count; a negative one goes the other way.
		back := f.Direction == pg_query.FetchDirection_FETCH_BACKWARD
		if fetch.Count < 0 {
			back, fetch.Count = !back, -max(fetch.Count, -math.MaxInt64)
		}
		fetch.Direction = FetchForward
		if back {
			fetch.Direction = FetchBackward
		}
	case pg_query.FetchDirection_FETCH_ABSOLUTE:
		fetch.Direction = FetchAbsolute
	case pg_query.FetchDirection_FETCH_RELATIVE:
		fetch.Direction = FetchRelative
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s direction %v is not supported", tag, f.Direction)
	}
	return &Result{Tag: tag, Fetch: fetch}, nil
}
