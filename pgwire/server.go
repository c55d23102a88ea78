// Package pgwire speaks the PostgreSQL v3 protocol as a codec: startup
// (TLS, SCRAM authentication, connection and startup slots), the simple
// and extended query protocols, COPY, CancelRequest and errors. It decodes
// each message, hands it to the connection's session executor and writes
// what the executor answers (session.Sink). It holds no SQL state and
// knows no engine types.
package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdg-go/scram"

	"tsdb/internal/auth"
	"tsdb/internal/backend"
	"tsdb/session"
)

// Options configure a Server.
type Options struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// MaxMessageSize bounds a client message; larger length prefixes are
	// refused before anything is allocated. Zero means 64 MiB.
	MaxMessageSize int
	// MaxConnections bounds sessions (authenticated connections); more
	// are refused with SQLSTATE 53300. Zero means 100.
	MaxConnections int
	// MaxStartupConnections bounds connections still in their startup or
	// authentication, which have slots of their own: when they are all
	// taken, a new connection closes the one that has been starting the
	// longest, so that clients that never finish (or trickle their
	// startup packet a byte a second) cannot keep real clients out. Zero
	// means 64.
	MaxStartupConnections int
	// StartupTimeout bounds the time from accept to a completed startup.
	// Zero means 10 seconds.
	StartupTimeout time.Duration
	// IdleTimeout closes connections idle this long between statements.
	// Zero means never.
	IdleTimeout time.Duration
	// TLS, if set, is offered to clients that ask (SSLRequest).
	TLS *tls.Config
	// TLSRequired refuses clients that do not use TLS.
	TLSRequired bool
	// Auth holds the roles; once any password exists every client
	// authenticates with SCRAM-SHA-256. Nil means trust.
	Auth *auth.Store
	// Backends lists the sessions for pg_cancel_backend and
	// pg_terminate_backend; the planner must be given the same. Nil
	// means a registry of the server's own.
	Backends *backend.Registry
}

// Server accepts PostgreSQL connections.
type Server struct {
	factory  *session.Factory
	backends *backend.Registry
	opts     Options
	logger   *slog.Logger
	metrics  *metrics

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{} // every connection, until its goroutine ends
	// starting are the connections in startup or authentication, with
	// when they were accepted; sessions counts those past it.
	starting  map[*conn]time.Time
	sessions  int
	delayed   int            // failed logins waiting out their delay
	delayedBy map[string]int // of them, by client host
	byPID     map[uint32]*conn
	nextPID   uint32
	closed    bool
	wg        sync.WaitGroup

	failMu   sync.Mutex
	failures map[string]int // failed logins by client host

	cbOnce sync.Once
	cb     scram.ChannelBinding // see channelBinding
}

// maxDelayed bounds the failed logins that wait out their delay at once;
// past it a failed login is answered at once. Each holds a socket and a
// goroutine, but no slot. maxDelayedPerHost bounds them per client host:
// while a host has that many waiting, its new connections are closed at
// once, so that a guesser cannot try more passwords by opening more
// connections while its failures wait.
const (
	maxDelayed        = 256
	maxDelayedPerHost = 8
)

// authDelay returns how long a failed login from host waits: doubling from
// 500ms with each failure, at most 8s, so guessing gets slow for that host
// only.
func (s *Server) authDelay(host string, failed bool) time.Duration {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failures == nil {
		s.failures = map[string]int{}
	}
	if !failed {
		delete(s.failures, host)
		return 0
	}
	s.failures[host]++
	d := 500 * time.Millisecond << min(s.failures[host]-1, 4)
	return d
}

// New returns a server whose connections open their sessions with
// sessions.
func New(sessions *session.Factory, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = 64 << 20
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 100
	}
	if opts.MaxStartupConnections <= 0 {
		opts.MaxStartupConnections = 64
	}
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = 10 * time.Second
	}
	if opts.Backends == nil {
		opts.Backends = backend.New()
	}
	return &Server{factory: sessions, backends: opts.Backends, opts: opts, logger: opts.Logger, metrics: newMetrics(opts.Registerer),
		conns: map[*conn]struct{}{}, starting: map[*conn]time.Time{}, delayedBy: map[string]int{}, byPID: map[uint32]*conn{}}
}

// Serve accepts connections on ln until Close. It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("pgwire: server closed")
	}
	s.ln = ln
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("pgwire: accept: %w", err)
		}
		c := s.newConn(nc)
		if c == nil {
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.removeConn(c)
			c.serve()
		}()
	}
}

// newConn registers an accepted connection in a startup slot, closing the
// connection that has been starting the longest when none is free.
func (s *Server) newConn(nc net.Conn) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	// Loopback clients share one address, a guesser's and everyone
	// else's: they are not cut off.
	if host, _, _ := net.SplitHostPort(nc.RemoteAddr().String()); s.delayedBy[host] >= maxDelayedPerHost && !net.ParseIP(host).IsLoopback() {
		s.metrics.refused.Inc()
		return nil
	}
	if len(s.starting) >= s.opts.MaxStartupConnections {
		var oldest *conn
		var since time.Time
		for c, t := range s.starting {
			if oldest == nil || t.Before(since) {
				oldest, since = c, t
			}
		}
		delete(s.starting, oldest)
		oldest.nc.Close()
		s.metrics.evicted.Inc()
		s.logger.Warn("startup slots full: closed the connection starting the longest", "remote", oldest.nc.RemoteAddr().String(),
			"starting_for", time.Since(since).Round(time.Millisecond).String(), "max_startup_connections", s.opts.MaxStartupConnections)
	}
	s.nextPID++
	secret := make([]byte, 4)
	rand.Read(secret)
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{srv: s, nc: nc, pid: s.nextPID, secret: secret, ctx: ctx, stop: cancel}
	s.conns[c] = struct{}{}
	s.starting[c] = time.Now()
	s.metrics.starting.Set(float64(len(s.starting)))
	return c
}

// beginSession moves an authenticated connection from its startup slot to
// a session slot, and makes it reachable by CancelRequest. It reports
// false when every session slot is taken.
func (s *Server) beginSession(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.starting, c)
	s.metrics.starting.Set(float64(len(s.starting)))
	if s.sessions >= s.opts.MaxConnections {
		s.metrics.refused.Inc()
		return false
	}
	s.sessions++
	c.session = true
	s.byPID[c.pid] = c
	s.metrics.connections.Inc()
	return true
}

// delayFailure is how long a failed login waits before its answer, or
// zero when too many wait already; the wait holds no slot.
func (s *Server) delayFailure(c *conn, host string) time.Duration {
	d := s.authDelay(host, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.starting, c)
	s.metrics.starting.Set(float64(len(s.starting)))
	if s.delayed >= maxDelayed {
		return 0
	}
	s.delayed++
	s.delayedBy[host]++
	return d
}

func (s *Server) delayDone(host string) {
	s.mu.Lock()
	s.delayed--
	if s.delayedBy[host]--; s.delayedBy[host] <= 0 {
		delete(s.delayedBy, host)
	}
	s.mu.Unlock()
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	delete(s.starting, c)
	s.metrics.starting.Set(float64(len(s.starting)))
	if c.session {
		s.sessions--
		delete(s.byPID, c.pid)
		s.metrics.connections.Dec()
	}
}

// cancel interrupts the running statement of the connection with this key.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c != nil && subtle.ConstantTimeCompare(c.secret, secret) == 1 {
		c.cancelQuery()
	}
}

// Close stops accepting, closes every connection (interrupting running
// statements) and waits for their goroutines to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.stop()
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

type metrics struct {
	connections prometheus.Gauge
	starting    prometheus.Gauge
	evicted     prometheus.Counter
	refused     prometheus.Counter
	panics      prometheus.Counter
	statements  prometheus.Counter
	errors      *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_pgwire_connections", Help: "PostgreSQL sessions (authenticated connections)."}),
		starting:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_pgwire_startup_connections", Help: "Connections in their startup or authentication."}),
		evicted:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pgwire_startup_evicted_total", Help: "Connections closed in their startup to free a startup slot (--max-startup-connections)."}),
		refused:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pgwire_connections_refused_total", Help: "Connections refused over --max-connections."}),
		panics:      prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pgwire_panics_total", Help: "Panics recovered while serving a connection."}),
		statements:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pgwire_queries_total", Help: "Query messages received."}),
		errors:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tsdb_pgwire_errors_total", Help: "Errors sent to clients, by SQLSTATE."}, []string{"sqlstate"}),
	}
	if r != nil {
		r.MustRegister(m.connections, m.starting, m.evicted, m.refused, m.panics, m.statements, m.errors)
	}
	return m
}
