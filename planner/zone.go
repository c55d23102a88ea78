package planner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// pooledZone is the TimeZone of every engine connection in the pool: the
// planner's own statements (logged DML replayed, the reaper, the mirror)
// compute in UTC, and a session puts its connection back in it.
const pooledZone = "UTC"

// syncZone sets the session's TimeZone on its engine connection when the
// two differ, so that DuckDB (whose ICU functions read the connection's
// zone) computes date_trunc, extract, casts between date, timestamp and
// timestamptz, and timestamptz ± interval in the session's zone, as
// PostgreSQL computes them in its TimeZone. Prepared plans bound the old
// zone and are made anew.
func (s *Session) syncZone(ctx context.Context) error {
	zone := s.settings.EngineZone()
	if zone == s.engineZone {
		return nil
	}
	if err := setEngineZone(ctx, s, zone); err != nil {
		return err
	}
	s.dropPlans()
	s.engineZone = zone
	return nil
}

// setEngineZone sets the zone of the session's connection.
func setEngineZone(ctx context.Context, s *Session, zone string) error {
	if _, err := s.conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION TimeZone = "+schema.QuoteString(zone)); err != nil {
		if strings.Contains(err.Error(), "Unknown TimeZone") {
			return &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Message: fmt.Sprintf("invalid value for parameter \"TimeZone\": %q", zone), Err: err}
		}
		return fmt.Errorf("planner: set the engine's time zone: %w", err)
	}
	return nil
}

// setZone is SET TimeZone: the engine connection follows at once, so that
// a zone the engine does not know is refused by the SET that names it.
func (s *Session) setZone(ctx context.Context, old string) error {
	if err := s.syncZone(ctx); err != nil {
		_ = s.settings.Set("timezone", old)
		return err
	}
	return nil
}

// poolZone puts a connection the session is done with back in the pool's
// zone. It reports false when that failed and the connection must not be
// reused.
func (s *Session) poolZone(ctx context.Context) bool {
	if s.engineZone == pooledZone {
		return true
	}
	if err := setEngineZone(ctx, s, pooledZone); err != nil {
		s.p.logger.Warn("engine connection left in a session's time zone", "zone", s.engineZone, "err", err)
		return false
	}
	s.engineZone = pooledZone
	return true
}

// discardConn closes a pooled connection for good instead of returning it
// to the pool: database/sql drops a connection whose Raw call reports
// driver.ErrBadConn, and opens a fresh one (in the pool's zone) when needed.
func discardConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
