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
		// An input error of a constant points at the constant, as
		// PostgreSQL's parse analysis does.
		{"select 'abc'::int", "22P02", 8},
		{"select 'é', '12x'::bigint", "22P02", 13},
		{"select 1; select date '2026-02-30'", "22008", 23},
		{"select cast('q' as integer) + 1", "22P02", 13},
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
	// Over the extended protocol the position counts in the statement,
	// from its Parse.
	_, err := c.Exec(ctx, "select 1 + '7x'::int", pgx.QueryExecModeDescribeExec)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22P02" || pe.Position != 12 {
		t.Errorf("extended protocol: %v, want 22P02 at 12", err)
	}
}
