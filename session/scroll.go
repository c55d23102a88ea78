package session

import (
	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// A declared cursor has a position, as in PostgreSQL: before its first
// row (0), on row k, or past its last row. FETCH and MOVE go forward from
// the rows DuckDB streams, and back (BACKWARD, PRIOR, ABSOLUTE, RELATIVE,
// FETCH 0) over the rows already read, which the cursor keeps, already
// encoded, for that:
//
//   - a SCROLL cursor keeps every row it read, within the connection's
//     holdLimit; past it the FETCH fails (54000) rather than answer
//     differently;
//   - a cursor declared without SCROLL keeps up to noScrollKeep bytes
//     and, past them, drops them and reads forward only (PostgreSQL too
//     lets such a cursor go back only when its plan can);
//   - a NO SCROLL cursor (psql's FETCH_COUNT) keeps none.

// noScrollKeep bounds the rows a cursor declared without SCROLL keeps to
// go back to: clients that stream a large result through one read it
// forward, and must not make the server hold it.
const noScrollKeep = 16 << 20

// scrollState is a declared cursor's position and the rows it keeps.
type scrollState struct {
	rows        [][]byte // DataRow messages of rows 1..len(rows), while kept
	size        int      // their bytes, counted in the connection's used
	pos         int64    // 0: before the first row; read+1: past the last
	read        int64    // rows read from the cursor's result
	ended       bool     // the result was read to its end: read is its count
	forwardOnly bool     // no rows kept: only FORWARD from the last row read
	scroll      bool     // declared SCROLL: keeping is not optional
}

// newScrollState is the position of a cursor declared as d.
func newScrollState(d *planner.CursorDecl) scrollState {
	return scrollState{scroll: d.Scroll, forwardOnly: d.NoScroll}
}

// errForwardOnly is PostgreSQL's error for going back with a cursor
// that cannot.
func errForwardOnly() error {
	return &sqlerr.Error{Code: "55000", Message: "cursor can only scan forward",
		Hint: "Declare it with SCROLL option to enable backward scan."}
}

// fetch carries out one FETCH or MOVE: it moves the cursor and hands each
// row it fetches to emit (nil for MOVE), returning their count.
func (d *declared) fetch(f *planner.CursorFetch, emit func([]byte) error) (int64, error) {
	s := &d.scroll
	one := func(msg []byte, ok bool, err error) (int64, error) {
		if err != nil || !ok {
			return 0, err
		}
		if emit != nil {
			if err := emit(msg); err != nil {
				return 0, err
			}
		}
		return 1, nil
	}
	switch f.Direction {
	case planner.FetchForward, planner.FetchBackward:
		if f.Count == 0 {
			return one(d.current())
		}
		var n int64
		for n < f.Count {
			var msg []byte
			var ok bool
			var err error
			if f.Direction == planner.FetchForward {
				msg, ok, err = d.next()
			} else {
				msg, ok, err = d.prior()
			}
			if err != nil || !ok {
				return n, err
			}
			if emit != nil {
				if err := emit(msg); err != nil {
					return n, err
				}
			}
			n++
		}
		return n, nil
	case planner.FetchRelative:
		if f.Count == 0 {
			return one(d.current())
		}
		target := s.pos + f.Count
		if f.Count > 0 && target < s.pos { // overflow: past any end
			target = s.read + 2
		}
		return one(d.goTo(target))
	default: // FetchAbsolute
		target := f.Count
		if target < 0 {
			if s.forwardOnly {
				return 0, errForwardOnly()
			}
			if err := d.readToEnd(); err != nil {
				return 0, err
			}
			target = s.read + 1 + target
		}
		return one(d.goTo(target))
	}
}

// streams reports whether f reads on from the last row the result gave,
// with nothing kept: FORWARD on a cursor that reads forward only.
func (d *declared) streams(f *planner.CursorFetch) bool {
	s := &d.scroll
	return s.forwardOnly && f.Direction == planner.FetchForward && f.Count > 0 && s.pos == s.read
}

// streamed moves the position past done rows read straight from the
// result (see streams), of limit asked for, and returns their count.
func (d *declared) streamed(done, limit int, err error) int64 {
	s := &d.scroll
	s.read += int64(done)
	s.pos = s.read
	if err == nil && done < limit {
		s.ended, s.pos = true, s.read+1
	}
	return int64(done)
}

// goTo moves to row target (0 or less: before the first row) and returns
// it, if there is one.
func (d *declared) goTo(target int64) ([]byte, bool, error) {
	s := &d.scroll
	if s.ended && target > s.read {
		s.pos = s.read + 1
		return nil, false, nil
	}
	if target <= s.pos {
		if s.forwardOnly && !(target <= 0 && s.pos == 0) {
			return nil, false, errForwardOnly()
		}
		if target <= 0 {
			s.pos = 0
			return nil, false, nil
		}
		s.pos = target
		return s.rows[target-1], true, nil
	}
	for {
		msg, ok, err := d.next()
		if err != nil || !ok || s.pos == target {
			return msg, ok, err
		}
	}
}

// current returns the row the cursor is on, if it is on one.
func (d *declared) current() ([]byte, bool, error) {
	s := &d.scroll
	if s.pos < 1 || s.pos > s.read {
		return nil, false, nil
	}
	if s.forwardOnly {
		return nil, false, errForwardOnly()
	}
	return s.rows[s.pos-1], true, nil
}

// next moves one row forward and returns that row; ok is false past the
// last row, where the cursor stays.
func (d *declared) next() ([]byte, bool, error) {
	s := &d.scroll
	if s.pos < s.read {
		s.pos++
		return s.rows[s.pos-1], true, nil
	}
	if s.ended {
		s.pos = s.read + 1
		return nil, false, nil
	}
	msg, ok, err := d.cur.appendRow(nil)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		s.ended = true
		s.pos = s.read + 1
		return nil, false, nil
	}
	s.read++
	s.pos = s.read
	if err := d.keep(msg); err != nil {
		return nil, false, err
	}
	return msg, true, nil
}

// prior moves one row back and returns that row; ok is false before the
// first row, where the cursor stays.
func (d *declared) prior() ([]byte, bool, error) {
	s := &d.scroll
	if s.forwardOnly && s.pos > 0 {
		return nil, false, errForwardOnly()
	}
	if s.pos <= 1 {
		s.pos = 0
		return nil, false, nil
	}
	s.pos--
	return s.rows[s.pos-1], true, nil
}

// readToEnd reads and keeps the rest of the result, leaving the position
// where it was.
func (d *declared) readToEnd() error {
	s := &d.scroll
	pos := s.pos
	for !s.ended {
		s.pos = s.read
		if _, _, err := d.next(); err != nil {
			return err
		}
	}
	if s.forwardOnly {
		// The rows outgrew what a cursor without SCROLL keeps: they are
		// gone, and the cursor is past its last row.
		s.pos = s.read + 1
		return errForwardOnly()
	}
	s.pos = min(pos, s.read+1)
	return nil
}

// keep adds a row just read to the rows kept, or gives up keeping them
// (see noScrollKeep).
func (d *declared) keep(msg []byte) error {
	s := &d.scroll
	if s.forwardOnly {
		return nil
	}
	used := d.cur.used
	over := *used+len(msg) > holdLimit || (!s.scroll && s.size+len(msg) > noScrollKeep)
	if !over {
		s.rows = append(s.rows, msg)
		s.size += len(msg)
		*used += len(msg)
		return nil
	}
	if s.scroll {
		return sqlerr.New(sqlerr.ProgramLimitExceeded,
			"a SCROLL cursor keeps the rows it read in memory, and the connection's kept rows would exceed %d MiB; declare the cursor without SCROLL to read a larger result forward", holdLimit>>20)
	}
	d.forgetRows()
	s.forwardOnly = true
	return nil
}

// forgetRows drops the rows kept, giving their bytes back to the
// connection's budget.
func (d *declared) forgetRows() {
	s := &d.scroll
	*d.cur.used -= s.size
	s.rows, s.size = nil, 0
}
