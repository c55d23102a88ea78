package planner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"tsdb/dialect"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// Sessions' settings the engine connection follows: TimeZone and
// work_mem. Every connection in the pool is in UTC and has the server's
// statement memory limit; a session changes its own connection to match
// its settings and puts it back as it was when done with it.

// pooledZone is the TimeZone of every engine connection in the pool: the
// planner's own statements (logged DML replayed, the reaper, the mirror)
// compute in UTC, and a session puts its connection back in it.
const pooledZone = "UTC"

// syncEngine brings the session's connection to its TimeZone and
// work_mem.
func (s *Session) syncEngine(ctx context.Context) error {
	if err := s.syncZone(ctx); err != nil {
		return err
	}
	mem := s.settings.WorkMem()
	if limit := s.p.engine.opts.StatementMemoryLimit; limit > 0 && (mem == 0 || mem > limit) {
		mem = limit // the server's limit bounds every session's (setWorkMem)
	}
	if mem != s.engineWorkMem {
		if err := setEngineMemory(ctx, s.conn, mem); err != nil {
			return err
		}
		s.engineWorkMem = mem
	}
	return nil
}

// setEngineMemory sets a connection's operator_memory_limit; 0 is none.
func setEngineMemory(ctx context.Context, conn *sql.Conn, bytes int64) error {
	q := "RESET operator_memory_limit"
	if bytes > 0 {
		q = fmt.Sprintf("SET operator_memory_limit = '%dB'", bytes)
	}
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), q); err != nil {
		return fmt.Errorf("planner: set the engine's work_mem: %w", err)
	}
	return nil
}

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
	if err := setEngineZone(ctx, s.conn, zone); err != nil {
		return err
	}
	s.dropPlans()
	s.engineZone = zone
	return nil
}

// setEngineZone sets a connection's zone.
func setEngineZone(ctx context.Context, conn *sql.Conn, zone string) error {
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION TimeZone = "+schema.QuoteString(zone)); err != nil {
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

// releaseConn gives a connection a session is done with back to the pool
// as the pool has it (zone and work_mem are what the session left), or
// closes it for good when that fails.
func (p *Planner) releaseConn(ctx context.Context, conn *sql.Conn, zone string, workMem int64) error {
	if zone != pooledZone {
		if err := setEngineZone(ctx, conn, pooledZone); err != nil {
			p.logger.Warn("engine connection left in a session's time zone: discarded", "zone", zone, "err", err)
			discardConn(conn)
			return nil
		}
	}
	if pool := p.engine.opts.StatementMemoryLimit; workMem != pool {
		if err := setEngineMemory(ctx, conn, pool); err != nil {
			p.logger.Warn("engine connection left with a session's work_mem: discarded", "err", err)
			discardConn(conn)
			return nil
		}
	}
	return conn.Close()
}

// discardConn closes a pooled connection for good instead of returning it
// to the pool: database/sql drops a connection whose Raw call reports
// driver.ErrBadConn, and opens a fresh one (in the pool's zone) when needed.
func discardConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// checkWorkMem refuses a work_mem above the server's
// --statement-memory-limit, which protects the other sessions' memory.
func (s *Session) checkWorkMem(old string) error {
	limit := s.p.engine.opts.StatementMemoryLimit
	if mem := s.settings.WorkMem(); limit > 0 && mem > limit {
		_ = s.settings.Set("work_mem", old)
		return sqlerr.New(sqlerr.InvalidParameterValue, "work_mem may be at most the server's --statement-memory-limit (%s)", dialect.FormatMemory(limit))
	}
	return nil
}
