package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A syntax error names its place in the query string, as PostgreSQL's
// does (psql draws its caret from it), counted in characters from 1 over
// the whole string; errors from the engine do not quote tsdb's rewrite of
// the statement.
func TestErrorPosition(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	for _, tc := range []struct {
		query    string
		code     string
		position int32
	}{
		{"selec 1", "42601", 1},
		{"SELECT 1 frm x", "42601", 14},
		{"select 1; selec 2", "42601", 11},
		{"select 'é'; selec 2", "42601", 13},
		{"select 'abc'::int", "22P02", 0},
	} {
		_, err := c.Exec(ctx, tc.query, pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want an error", tc.query, err)
			continue
		}
		if pe.Code != tc.code || pe.Position != tc.position {
			t.Errorf("%q: %s at %d (%s), want %s at %d", tc.query, pe.Code, pe.Position, pe.Message, tc.code, tc.position)
		}
		if pe.Detail != "" {
			t.Errorf("%q: detail %q quotes the engine's SQL", tc.query, pe.Detail)
		}
	}
}
