package planner

import (
	"context"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
)

// SQL cursors (DECLARE, FETCH, MOVE, CLOSE) are what psql's FETCH_COUNT
// sends. The planner runs the cursor's query and says what each statement
// asks; the wire layer keeps the open results and reads them, as it does
// for portals executed with a row limit.

// CursorDecl is set on the Result of DECLARE … CURSOR, whose Rows are the
// cursor's.
type CursorDecl struct {
	Name   string
	Binary bool // DECLARE … BINARY CURSOR: rows in binary format
	Hold   bool // WITH HOLD: the cursor outlives its transaction
}

// CursorFetch is set on the Result of FETCH and MOVE (forward only).
type CursorFetch struct {
	Name  string
	Count int64 // rows to read, at least 1; math.MaxInt64 for ALL
	Move  bool  // MOVE: skip the rows instead of sending them
}

// CursorClose is set on the Result of CLOSE.
type CursorClose struct {
	Name string // "" for CLOSE ALL
}

// Option bits of DeclareCursorStmt (PostgreSQL's CURSOR_OPT_*).
const (
	cursorBinary = 0x0001
	cursorScroll = 0x0002
	cursorHold   = 0x0020
)

// declareCursor runs the query of DECLARE … CURSOR.
func (s *Session) declareCursor(ctx context.Context, d *pg_query.DeclareCursorStmt) (*Result, error) {
	if d.Query.GetSelectStmt() == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DECLARE CURSOR supports SELECT only")
	}
	if d.Options&cursorScroll != 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SCROLL cursors are not supported; cursors read forward only")
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
	res.Cursor = &CursorDecl{Name: d.Portalname, Binary: d.Options&cursorBinary != 0, Hold: hold}
	return res, nil
}

// fetchCursor reads FETCH and MOVE.
func fetchCursor(f *pg_query.FetchStmt) (*Result, error) {
	tag := "FETCH"
	if f.Ismove {
		tag = "MOVE"
	}
	// ALL is the largest count; a negative one reads backward.
	count := f.HowMany
	switch {
	case f.Direction != pg_query.FetchDirection_FETCH_FORWARD || count < 0:
		return nil, &sqlerr.Error{Code: "55000", Message: "cursor can only scan forward",
			Hint: "tsdb's cursors read forward only: FETCH [FORWARD] n, NEXT or ALL."}
	case count == 0:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s 0 (the current row again) is not supported", tag)
	}
	return &Result{Tag: tag, Fetch: &CursorFetch{Name: f.Portalname, Count: count, Move: f.Ismove}}, nil
}
