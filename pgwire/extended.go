package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// portal is a bound statement: parameters decoded, result formats chosen.
// A portal executed with a row limit keeps its remaining rows in memory
// until it is exhausted or closed.
type portal struct {
	stmt    *planner.Prepared
	params  []any
	formats []int16 // per result column
	pending [][]any // rows of a suspended execution
	tag     string
	done    bool
	started bool
}

// extended holds the prepared statements and portals of a connection.
type extended struct {
	stmts   map[string]*planner.Prepared
	portals map[string]*portal
}

func newExtended() *extended {
	return &extended{stmts: map[string]*planner.Prepared{}, portals: map[string]*portal{}}
}

func formatFor(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return 0
	case 1:
		return codes[0]
	}
	if i < len(codes) {
		return codes[i]
	}
	return 0
}

// handleExtended processes one extended-protocol message. An error is sent
// by the caller, which then discards messages until Sync.
func (c *conn) handleExtended(sess *planner.Session, x *extended, msg pgproto3.FrontendMessage) error {
	ctx := c.ctx
	switch m := msg.(type) {
	case *pgproto3.Parse:
		p, err := sess.Prepare(ctx, m.Query, m.ParameterOIDs)
		if err != nil {
			return err
		}
		if m.Name != "" {
			if _, exists := x.stmts[m.Name]; exists {
				return sqlerr.New("42P05", "prepared statement %q already exists", m.Name)
			}
		}
		x.stmts[m.Name] = p
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		p, ok := x.stmts[m.PreparedStatement]
		if !ok {
			return sqlerr.New("26000", "prepared statement %q does not exist", m.PreparedStatement)
		}
		if len(m.Parameters) != len(p.ParamOIDs) {
			return sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, len(p.ParamOIDs))
		}
		params := make([]any, len(m.Parameters))
		for i, raw := range m.Parameters {
			v, err := decodeParam(raw, formatFor(m.ParameterFormatCodes, i), p.ParamOIDs[i])
			if err != nil {
				return &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
			}
			params[i] = v
		}
		formats := make([]int16, len(p.Columns))
		for i := range formats {
			formats[i] = formatFor(m.ResultFormatCodes, i)
		}
		if m.DestinationPortal != "" {
			if _, exists := x.portals[m.DestinationPortal]; exists {
				return sqlerr.New("42P03", "portal %q already exists", m.DestinationPortal)
			}
		}
		x.portals[m.DestinationPortal] = &portal{stmt: p, params: params, formats: formats}
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			p, ok := x.stmts[m.Name]
			if !ok {
				return sqlerr.New("26000", "prepared statement %q does not exist", m.Name)
			}
			c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: p.ParamOIDs})
			c.sendRowDescription(p.Columns, nil)
			return nil
		}
		pt, ok := x.portals[m.Name]
		if !ok {
			return sqlerr.New("34000", "portal %q does not exist", m.Name)
		}
		c.sendRowDescription(pt.stmt.Columns, pt.formats)
	case *pgproto3.Execute:
		pt, ok := x.portals[m.Portal]
		if !ok {
			return sqlerr.New("34000", "portal %q does not exist", m.Portal)
		}
		return c.execute(ctx, sess, pt, int(m.MaxRows))
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(x.stmts, m.Name)
		} else {
			delete(x.portals, m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	case *pgproto3.Flush:
		return c.be.Flush()
	}
	return nil
}

func (c *conn) sendRowDescription(cols []planner.Column, formats []int16) {
	if cols == nil {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		var f int16
		if formats != nil {
			f = formats[i]
		}
		fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: col.OID, DataTypeSize: col.Size, TypeModifier: -1, Format: f}
	}
	c.be.Send(&pgproto3.RowDescription{Fields: fields})
}

// execute runs a portal, or continues a suspended one. With maxRows > 0
// the rest of the result is kept for the next Execute (PortalSuspended).
func (c *conn) execute(ctx context.Context, sess *planner.Session, pt *portal, maxRows int) error {
	if pt.done {
		// PostgreSQL answers a finished portal with its tag and no rows.
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
		return nil
	}
	qctx, done := c.statementContext(sess)
	defer done()
	cols := pt.stmt.Columns
	loc := sess.Settings().Location()
	sent := 0
	if !pt.started {
		pt.started = true
		n := 0
		err := sess.ExecutePrepared(qctx, pt.stmt, pt.params, func(r *planner.Result) error {
			if r.Empty {
				return nil
			}
			pt.tag = r.Tag
			// COPY runs its sub-protocol within Execute, as in PostgreSQL
			// (copyIn reads past the Sync and Flush a client sends).
			if r.CopyIn != nil {
				tag, err := c.copyIn(qctx, r.CopyIn)
				pt.tag = tag
				return err
			}
			if r.CopyOut != nil {
				tag, err := c.copyOut(r.CopyOut, loc)
				pt.tag = tag
				return err
			}
			if r.Rows == nil {
				return nil
			}
			defer r.Rows.Close()
			if maxRows <= 0 {
				// No row limit: stream, nothing is kept.
				k, err := c.sendRows(r.Rows, cols, pt.formats, loc)
				n, sent = k, k
				if err != nil {
					return err
				}
			} else {
				for r.Rows.Next() {
					n++
					pt.pending = append(pt.pending, append([]any(nil), r.Rows.Values()...))
				}
				if err := r.Rows.Err(); err != nil {
					return err
				}
			}
			if pt.tag == "SELECT" {
				pt.tag = fmt.Sprintf("SELECT %d", n)
			}
			return nil
		})
		// The rows sent so far go before the error or the tag.
		if ferr := c.flushRows(); err == nil {
			err = ferr
		}
		if err != nil {
			pt.done = true
			return timeoutError(qctx, err)
		}
		if pt.stmt.Empty {
			pt.done = true
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return nil
		}
	}
	for len(pt.pending) > 0 && (maxRows <= 0 || sent < maxRows) {
		row := pt.pending[0]
		pt.pending = pt.pending[1:]
		if err := c.sendValues(row, cols, pt.formats, loc); err != nil {
			c.flushRows()
			return err
		}
		sent++
	}
	if err := c.flushRows(); err != nil {
		return err
	}
	if len(pt.pending) > 0 {
		c.be.Send(&pgproto3.PortalSuspended{})
		return nil
	}
	pt.done = true
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
	return nil
}
