package pgwire

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// copyIn runs the COPY FROM STDIN sub-protocol: CopyInResponse, then
// CopyData until CopyDone (load) or CopyFail (abort).
func (c *conn) copyIn(ctx context.Context, ci *planner.CopyIn) (string, error) {
	// However the COPY ends, its decoder goroutines stop and its rows are
	// freed.
	defer ci.Close()
	format := int16(0)
	if ci.Format == planner.CopyBinary {
		format = 1
	}
	codes := make([]uint16, ci.Columns)
	for i := range codes {
		codes[i] = uint16(format)
	}
	c.be.Send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	if err := c.be.Flush(); err != nil {
		return "", err
	}
	var failed error
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return "", err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if failed == nil {
				failed = ci.Write(m.Data)
			}
			// After a failure the rest of the data is read and dropped:
			// the client sends until CopyDone.
		case *pgproto3.CopyDone:
			if failed != nil {
				return "", failed
			}
			n, err := ci.Finish(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("COPY %d", n), nil
		case *pgproto3.CopyFail:
			return "", sqlerr.New(sqlerr.QueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// PostgreSQL ignores these during COPY IN.
		default:
			return "", sqlerr.New(sqlerr.ProtocolViolation, "unexpected message type %T during COPY from stdin", msg)
		}
	}
}

// copyOut sends a result as COPY TO STDOUT data in text or CSV format.
func (c *conn) copyOut(co *planner.CopyOut, loc *time.Location) (string, error) {
	res := co.Result
	codes := make([]uint16, len(res.Columns))
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: codes})
	if res.Rows == nil {
		c.be.Send(&pgproto3.CopyDone{})
		return "COPY 0", nil
	}
	defer res.Rows.Close()
	csvMode := co.Format == planner.CopyCSV
	field := func(s string, null bool) string {
		if null {
			return co.Null
		}
		if csvMode {
			if s == "" || s == co.Null || strings.ContainsAny(s, string(co.Delim)+"\"\r\n") {
				return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
			}
			return s
		}
		return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, string(co.Delim), `\`+string(co.Delim)).Replace(s)
	}
	if co.Header && csvMode {
		names := make([]string, len(res.Columns))
		for i, col := range res.Columns {
			names[i] = field(col.Name, false)
		}
		c.be.Send(&pgproto3.CopyData{Data: []byte(strings.Join(names, string(co.Delim)) + "\n")})
	}
	n := 0
	for res.Rows.Next() {
		vals := res.Rows.Values()
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = field(string(encodeText(v, res.Columns[i].OID, loc)), v == nil)
		}
		c.be.Send(&pgproto3.CopyData{Data: []byte(strings.Join(parts, string(co.Delim)) + "\n")})
		n++
		if n%flushEvery == 0 {
			if err := c.be.Flush(); err != nil {
				return "", err
			}
		}
	}
	if err := res.Rows.Err(); err != nil {
		return "", err
	}
	c.be.Send(&pgproto3.CopyDone{})
	return fmt.Sprintf("COPY %d", n), nil
}
