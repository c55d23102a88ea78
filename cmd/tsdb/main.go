// Command tsdb is a SQL-queryable time-series store: PostgreSQL protocol in
// front, a write-ahead log and an Arrow MemBuffer for recent rows, Delta Lake
// tables of Parquet files for the rest, DuckDB to query both.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/auth"
	"tsdb/internal/backend"
	"tsdb/internal/fault"
	"tsdb/internal/views"
	"tsdb/lineproto"
	"tsdb/pgwire"
	"tsdb/planner"
	"tsdb/session"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usageText = `tsdb — a SQL-queryable time-series store

Usage:
  tsdb serve [flags]   start the server
  tsdb import --table T FILE.csv|FILE.parquet
                       load a file into a running server (tsdb import -h)
  tsdb help            show this help

Flags of serve (each also read from the environment variable shown):
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usage := func(fs *flag.FlagSet) {
		fmt.Fprint(stderr, usageText)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		_, _ = parseConfig([]string{"-h"}, func(string) string { return "" }, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "import" {
		return runImport(ctx, args[1:], getenv, stdout, stderr)
	}
	if args[0] != "serve" {
		fmt.Fprintf(stderr, "tsdb: unknown command %q (try: tsdb serve, tsdb import)\n", args[0])
		return 2
	}
	cfg, err := parseConfig(args[1:], getenv, usage)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "tsdb: %v\n", err)
		return 2
	}
	logger, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tsdb: %v\n", err)
		return 2
	}
	if getenv("GOMEMLIMIT") == "" {
		// Without a limit the collector lets the heap grow to twice what
		// is live before it runs: with the MemBuffer's rows live, the
		// process held about twice --memory-limit. The runtime's soft
		// limit makes it collect (and return memory) sooner instead.
		debug.SetMemoryLimit(goMemoryLimit(cfg.MemoryLimit))
	}
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("tsdb stopped with an error", "err", err)
		return 1
	}
	return 0
}

func newLogger(cfg *config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(cfg.LogFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", cfg.LogFormat)
}

// serve runs the server until ctx is canceled (SIGINT/SIGTERM), then shuts
// down in order: stop accepting and close client connections, flush every
// buffered row to Delta, close the engine and release the data directory.
// /health answers 503 until the WAL is replayed and while writes would wait
// for memory.
func serve(ctx context.Context, cfg *config, logger *slog.Logger) error {
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	faults, err := fault.Parse(cfg.Faults)
	if err != nil {
		return fmt.Errorf("--faults: %w", err)
	}
	if faults != nil {
		logger.Warn("fault injection is on: this server will fail on purpose", "faults", cfg.Faults)
	}
	roles, err := auth.Open(filepath.Join(dataDir, "auth", "roles.json"), cfg.AdminPassword)
	if err != nil {
		return err
	}
	// Views: their queries, kept beside the roles (local to this data
	// directory, also when the tables are on object storage).
	viewStore, err := views.Open(filepath.Join(dataDir, "catalog", "views.json"))
	if err != nil {
		return err
	}
	if !roles.PasswordsRequired() {
		// Without a password, trust is only safe when nobody else can connect.
		for _, a := range []string{cfg.PGAddr, cfg.HTTPAddr} {
			if a != "" && !pgwire.IsLoopback(a) {
				return fmt.Errorf("refusing to listen on %s without a password: set TSDB_ADMIN_PASSWORD or --admin-password-file (clients then authenticate as user tsdb with SCRAM-SHA-256), or listen on 127.0.0.1", a)
			}
		}
	}
	var tlsConfig *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer lock.release()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ready atomic.Pointer[serving]
	errc := make(chan error, 2)
	var httpSrv *http.Server
	httpAddr := ""
	if cfg.HTTPAddr != "" {
		httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("listen on --http-addr %s: %w", cfg.HTTPAddr, err)
		}
		httpAddr = httpLn.Addr().String()
		if tlsConfig != nil {
			httpLn = tls.NewListener(httpLn, tlsConfig)
		}
		httpSrv = &http.Server{Handler: httpHandler(reg, &ready, roles), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			httpSrv.Shutdown(sctx)
			cancel()
		}()
	}

	start := time.Now()
	root, engineDir, err := openRoot(ctx, cfg, dataDir)
	if err != nil {
		return err
	}
	logger.Info("tables", "storage", root.String())
	// The sessions, known to the wire layer and to the SQL layer
	// (pg_cancel_backend).
	backends := backend.New()
	store, err := ingest.Open(ctx, ingest.Options{
		DataDir: dataDir,
		// Checkpoints leave out settled bucket txns, which otherwise pile
		// up one per bucket flushed (576 after four days). On since the
		// WAL is on badger: the crash loop that found duplicates with it
		// on the segment log (about one run in four) passed 16 runs of
		// 30 crash rounds with it, and runs with it in every make test.
		ExpireTxns:           true,
		Root:                 root,
		RefreshInterval:      cfg.RefreshInterval,
		RetentionInterval:    cfg.RetentionInterval,
		ScrubInterval:        cfg.ScrubInterval,
		OrphanFileAge:        cfg.OrphanFileAge,
		BucketDuration:       cfg.BucketDuration,
		IdleFlush:            cfg.IdleFlush,
		FlushInterval:        cfg.FlushInterval,
		MaxBucketBytes:       cfg.MaxBucketBytes,
		SmallFileBytes:       cfg.SmallFileBytes,
		LateMergeDelay:       cfg.LateMergeDelay,
		TargetFileSize:       cfg.TargetFileSize,
		CompactInterval:      cfg.CompactInterval,
		DeletedFileRetention: storeRetention(cfg.FileRetention),
		LogRetention:         cfg.LogRetention,
		MemoryLimit:          cfg.MemoryLimit,
		SoftMemoryLimit:      cfg.SoftMemoryLimit,
		MaxWALLag:            cfg.MaxWALLag,
		WriteTimeout:         cfg.WriteTimeout,
		Faults:               faults,
		Logger:               logger.With("component", "ingest"),
		Registerer:           reg,
	})
	if err != nil {
		return fmt.Errorf("open data dir %s: %w", dataDir, err)
	}
	shutdownStore := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return store.Close(sctx)
	}
	// The SQL engine comes after storage: storage opens, replays its WAL
	// and reads other writers' files without it.
	engine, err := planner.NewEngine(ctx, planner.EngineOptions{
		TablesDir:     engineDir,
		Threads:       cfg.EngineThreads,
		MemoryLimit:   cfg.EngineMemory,
		ReaperTimeout: cfg.ReaperTimeout,
		// Spills stay inside the data directory, not the working directory.
		TempDir:              filepath.Join(dataDir, "engine-tmp"),
		StatementMemoryLimit: cfg.StatementMemory,
		// Each session holds one engine connection and may briefly take a
		// second (DML); the rest serve flushes, replay and the reaper.
		Connections: 2*cfg.MaxConnections + 16,
		Limits: planner.Limits{MaxStatementBytes: int(cfg.MaxStatementSize), MaxStatementTokens: cfg.MaxStatementTokens,
			MaxPreparedStatements: cfg.MaxPrepared},
		Registerer: reg,
		Backends:   backends,
	}, logger.With("component", "engine"))
	if err != nil {
		shutdownStore()
		return err
	}
	defer engine.Close()
	pl, err := planner.New(ctx, engine, store, roles, viewStore, logger.With("component", "planner"))
	if err != nil {
		shutdownStore()
		return err
	}
	pg := pgwire.New(session.NewFactory(pl, session.Options{}), pgwire.Options{Logger: logger.With("component", "pgwire"), Registerer: reg,
		MaxConnections: cfg.MaxConnections, MaxStartupConnections: cfg.MaxStartup, StartupTimeout: cfg.StartupTimeout, IdleTimeout: cfg.IdleTimeout,
		TLS: tlsConfig, TLSRequired: cfg.TLSRequired, Auth: roles, Backends: backends})
	pgLn, err := net.Listen("tcp", cfg.PGAddr)
	if err != nil {
		pl.Close()
		shutdownStore()
		return fmt.Errorf("listen on --pg-addr %s: %w", cfg.PGAddr, err)
	}
	go func() { errc <- pg.Serve(pgLn) }()
	ready.Store(&serving{store: store, write: lineproto.Handler(store, roles, cfg.MemoryLimit, pl.WriteMerged)})
	logger.Info("tsdb ready", "pg_addr", pgLn.Addr().String(), "http_addr", httpAddr, "data_dir", dataDir,
		"bucket_duration", cfg.BucketDuration.String(), "idle_flush", cfg.IdleFlush.String(),
		"memory_limit", formatBytes(cfg.MemoryLimit), "tls", tlsConfig != nil, "auth", map[bool]string{true: "scram-sha-256", false: "trust (loopback only)"}[roles.PasswordsRequired()],
		"startup", time.Since(start).Round(time.Millisecond).String())

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down: flushing buffered rows to Delta")
	case serveErr = <-errc:
		logger.Error("listener failed; shutting down", "err", serveErr)
	}
	ready.Store(nil)
	pg.Close()
	storeErr := shutdownStore()
	pl.Close()
	if storeErr != nil {
		return fmt.Errorf("close the store at shutdown: %w", storeErr)
	}
	logger.Info("tsdb stopped")
	return serveErr
}

// health is /health's status and text: 503 while the server cannot take
// writes (starting, stopping, under back-pressure), else 200, saying what
// is damaged if anything is: damage of one table degrades the server
// without stopping it.
func health(store *ingest.Store) (int, string) {
	if store == nil {
		return http.StatusServiceUnavailable, "not ready: starting (replaying the WAL) or stopping\n"
	}
	if ok, why := store.AcceptingWrites(); !ok {
		return http.StatusServiceUnavailable, "not accepting writes: " + why + "\n"
	}
	damage, loss := store.Damage(), store.WALLoss()
	if len(damage) == 0 && len(loss) == 0 {
		return http.StatusOK, "ok\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "degraded: %d tables unavailable, %d WAL losses found at start-up\n", len(damage), len(loss))
	for _, d := range damage {
		fmt.Fprintln(&b, d.Error())
	}
	for _, l := range loss {
		fmt.Fprintln(&b, l)
	}
	return http.StatusOK, b.String()
}

// serving is what the HTTP endpoints need once the server is ready: the
// store, and the line-protocol handler, made once so that its buffers
// serve request after request.
type serving struct {
	store *ingest.Store
	write http.Handler
}

// httpHandler serves /health, /metrics and InfluxDB line-protocol writes
// (/write, /api/v2/write, /api/v3/write_lp, and the /ping, /query, /ready
// InfluxDB clients call). /health is 200 only while the server accepts
// writes.
func httpHandler(reg *prometheus.Registry, ready *atomic.Pointer[serving], roles *auth.Store) http.Handler {
	mux := http.NewServeMux()
	write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv := ready.Load()
		if srv == nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "not ready: replaying the WAL", http.StatusServiceUnavailable)
			return
		}
		srv.write.ServeHTTP(w, r)
	})
	mux.Handle("/write", write)
	mux.Handle("/api/v2/write", write)
	mux.Handle("/api/v3/write_lp", write)
	mux.Handle("/ping", lineproto.PingHandler())
	mux.Handle("/query", lineproto.QueryHandler())
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		var store *ingest.Store
		if srv := ready.Load(); srv != nil {
			store = srv.store
		}
		status, text := health(store)
		// InfluxDB's clients (Health()) read InfluxDB's JSON; probes and
		// people the text.
		if lineproto.WantsJSON(r) {
			lineproto.WriteHealth(w, status, strings.TrimSpace(text))
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprint(w, text)
	})
	mux.Handle("/ready", lineproto.ReadyHandler(func() bool { return ready.Load() != nil }, time.Now()))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiles, as every Go server worth operating has them; for the admin
	// only once passwords are configured (they cost CPU and reveal code).
	admin := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if roles.PasswordsRequired() {
				user, pass, ok := r.BasicAuth()
				if !ok || user != auth.Admin || !roles.CheckPassword(user, pass) {
					w.Header().Set("WWW-Authenticate", `Basic realm="tsdb"`)
					http.Error(w, "admin only", http.StatusUnauthorized)
					return
				}
			}
			h(w, r)
		}
	}
	mux.HandleFunc("/debug/pprof/", admin(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", admin(pprof.Cmdline))
	mux.HandleFunc("/debug/pprof/profile", admin(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", admin(pprof.Symbol))
	mux.HandleFunc("/debug/pprof/trace", admin(pprof.Trace))
	return mux
}

// storeRetention maps --deleted-file-retention to the store's option, where
// zero means the default and a negative value means at once.
func storeRetention(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// openRoot opens where the tables live and returns the directory the
// engine reads Parquet from: the tables themselves, or the local mirror
// of an object store's files.
func openRoot(ctx context.Context, cfg *config, dataDir string) (delta.Root, string, error) {
	if cfg.Storage == "" {
		dir := filepath.Join(dataDir, "tables")
		root, err := delta.NewLocalRoot(dir)
		if err != nil {
			return nil, "", err
		}
		return root, root.Dir, nil
	}
	bucket, prefix, err := delta.ParseS3URL(cfg.Storage)
	if err != nil {
		return nil, "", err
	}
	cache, err := filepath.Abs(filepath.Join(dataDir, "s3-cache"))
	if err != nil {
		return nil, "", err
	}
	root, err := delta.NewS3Root(ctx, cfg.S3, bucket, prefix, cache)
	if err != nil {
		return nil, "", fmt.Errorf("--storage %s: %w", cfg.Storage, err)
	}
	return root, cache, nil
}
