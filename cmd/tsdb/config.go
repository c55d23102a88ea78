package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"tsdb/delta"
	"tsdb/internal/fault"
)

// config is everything `tsdb serve` can be told.
type config struct {
	DataDir         string
	PGAddr          string
	HTTPAddr        string
	BucketDuration  time.Duration
	IdleFlush       time.Duration
	FlushInterval   time.Duration
	MemoryLimit     int64
	SoftMemoryLimit int64
	MaxBucketBytes  int64
	SmallFileBytes  int64
	LateMergeDelay  time.Duration
	TargetFileSize  int64
	CompactInterval time.Duration
	FileRetention   time.Duration
	LogRetention    time.Duration
	MaxWALLag       int64
	WriteTimeout    time.Duration
	ReaperTimeout   time.Duration
	EngineMemory    int64
	StatementMemory int64
	EngineThreads   int
	MaxConnections  int
	MaxStartup      int
	// MaxStatementSize, MaxStatementTokens and MaxPrepared bound what one
	// statement and one session may hold (planner.Limits).
	MaxStatementSize   int64
	MaxStatementTokens int
	MaxPrepared        int
	StartupTimeout     time.Duration
	IdleTimeout        time.Duration
	TLSCert            string
	TLSKey             string
	TLSRequired        bool
	AdminPassword      string
	Faults             string
	LogLevel           string
	LogFormat          string
	ShutdownTimeout    time.Duration
	// Storage is where the Delta tables live: "" for DataDir/tables, or
	// s3://bucket/prefix.
	Storage           string
	S3                delta.S3Config
	RefreshInterval   time.Duration
	RetentionInterval time.Duration
	OrphanFileAge     time.Duration
	ScrubInterval     time.Duration
}

// envName is the environment variable that sets a flag: --pg-addr → TSDB_PG_ADDR.
func envName(flagName string) string {
	return "TSDB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig reads flags; every flag's default comes from its TSDB_*
// environment variable when set, so flags win over the environment.
func parseConfig(args []string, getenv func(string) string, usage func(fs *flag.FlagSet)) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("tsdb serve", flag.ContinueOnError)
	fs.Usage = func() { usage(fs) }
	str := func(p *string, name, def, help string) {
		fs.StringVar(p, name, def, help+" (env "+envName(name)+")")
	}
	str(&c.DataDir, "data-dir", "./data", "directory for the WAL (wal/) and the Delta tables (tables/)")
	str(&c.PGAddr, "pg-addr", "127.0.0.1:5432", "PostgreSQL protocol listen address")
	str(&c.HTTPAddr, "http-addr", "127.0.0.1:8086", "HTTP listen address for /health and /metrics (empty: off)")
	fs.DurationVar(&c.BucketDuration, "bucket-duration", 10*time.Minute, "width of an in-memory time bucket; a bucket becomes one Parquet file (env TSDB_BUCKET_DURATION)")
	fs.DurationVar(&c.IdleFlush, "idle-flush", time.Minute, "flush a bucket whose time window has passed after this long without writes (env TSDB_IDLE_FLUSH)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", 0, "how often the flusher checks buckets; 0: a quarter of --idle-flush, at most 5s (env TSDB_FLUSH_INTERVAL)")
	memDefault := defaultMemoryLimit()
	var mem, soft, maxBucket, small, walLag, engineMem, stmtMem, targetFile string
	str(&mem, "memory-limit", formatBytes(memDefault), "hard limit of buffered rows in memory (e.g. 512MiB, 4GiB); writers wait there, then get SQLSTATE 53200")
	str(&soft, "memory-soft-limit", "", "buffered bytes above which the largest buckets are flushed early (default: 3/4 of --memory-limit)")
	str(&maxBucket, "max-bucket-bytes", "128MiB", "a bucket this large is cut into a file, also while it still receives rows")
	str(&small, "small-file-bytes", "1MiB", "idle buckets smaller than this are held back and merged into one file")
	str(&targetFile, "target-file-size", "64MiB", "compaction merges small files into files of about this size (files overlapping in time are merged in memory, several times their size)")
	fs.DurationVar(&c.FileRetention, "deleted-file-retention", 7*24*time.Hour, "VACUUM deletes files removed from a table (by compaction, DELETE, UPDATE) this long ago; queries may read them until then (env TSDB_DELETED_FILE_RETENTION)")
	fs.DurationVar(&c.LogRetention, "log-retention", 30*24*time.Hour, "VACUUM deletes Delta log history (commits, checkpoints) older than the newest checkpoint this old (env TSDB_LOG_RETENTION)")
	fs.DurationVar(&c.CompactInterval, "compact-interval", 10*time.Minute, "how often small files are compacted in the background; negative: only by VACUUM (env TSDB_COMPACT_INTERVAL)")
	fs.DurationVar(&c.OrphanFileAge, "orphan-file-age", 24*time.Hour, "VACUUM deletes data files no commit refers to (left by a crash between writing and committing them) once they are this old (env TSDB_ORPHAN_FILE_AGE)")
	fs.DurationVar(&c.RetentionInterval, "retention-interval", time.Minute, "how often rows past their table's retention (ALTER TABLE t SET (retention = '30 days')) are dropped (env TSDB_RETENTION_INTERVAL)")
	fs.DurationVar(&c.ScrubInterval, "scrub-interval", time.Minute, "how often data files are read back in the background (256MiB a round, each file once after it appears and weekly) to check them against their checksums; negative: never (env TSDB_SCRUB_INTERVAL)")
	fs.DurationVar(&c.LateMergeDelay, "late-merge-delay", 10*time.Minute, "longest time a small idle bucket is held back for merging (env TSDB_LATE_MERGE_DELAY)")
	str(&walLag, "max-wal-lag", "", "WAL bytes not yet flushed to Delta above which writers wait (default: 2x --memory-limit)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", 30*time.Second, "how long a write waits for memory before SQLSTATE 53200 (env TSDB_WRITE_TIMEOUT)")
	fs.DurationVar(&c.ReaperTimeout, "reaper-timeout", 5*time.Minute, "free the per-table state of tables without buffered rows after this long idle (env TSDB_REAPER_TIMEOUT)")
	str(&engineMem, "engine-memory-limit", "", "memory limit of the query engine, beyond which statements' sorts, aggregations and joins spill to disk (default: --memory-limit for the engine's copy of buffered rows plus a budget of statements' own, --memory-limit but at least 512MiB)")
	str(&stmtMem, "statement-memory-limit", "", "memory one statement's sorts, hash tables and joins may hold before spilling to disk, like PostgreSQL's work_mem (default: 1/4 of --engine-memory-limit)")
	fs.IntVar(&c.EngineThreads, "engine-threads", 0, "query engine threads; 0: one per core (env TSDB_ENGINE_THREADS)")
	fs.IntVar(&c.MaxConnections, "max-connections", 100, "sessions (authenticated connections) at most; more get SQLSTATE 53300 (env TSDB_MAX_CONNECTIONS)")
	fs.IntVar(&c.MaxStartup, "max-startup-connections", 64, "connections in startup or authentication at most, apart from sessions; when all are taken a new connection closes the one starting the longest (env TSDB_MAX_STARTUP_CONNECTIONS)")
	var stmtSize string
	str(&stmtSize, "max-statement-size", "16MiB", "largest query string a client may send; larger get SQLSTATE 54000 (bulk data goes through COPY)")
	fs.IntVar(&c.MaxStatementTokens, "max-statement-tokens", 100_000, "most tokens of a statement the engine parses and plans (INSERT … VALUES read by tsdb itself and COPY data do not count); more get SQLSTATE 54000 (env TSDB_MAX_STATEMENT_TOKENS)")
	fs.IntVar(&c.MaxPrepared, "max-prepared-statements", 10_000, "named prepared statements one connection may hold; more get SQLSTATE 54000 (env TSDB_MAX_PREPARED_STATEMENTS)")
	fs.DurationVar(&c.StartupTimeout, "startup-timeout", 10*time.Second, "time a new connection has to complete its startup (env TSDB_STARTUP_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 0, "close connections idle this long between statements; 0: never (env TSDB_IDLE_TIMEOUT)")
	str(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	str(&c.LogFormat, "log-format", "text", "text or json")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 2*time.Minute, "how long shutdown may take to flush buffered rows (env TSDB_SHUTDOWN_TIMEOUT)")
	if fault.Enabled {
		str(&c.Faults, "faults", "", "fault injection (test builds only), e.g. flush.after-commit=crash")
	} else if getenv(envName("faults")) != "" {
		return nil, fmt.Errorf("%s is set, but fault injection exists in test builds only (make test builds bin/tsdb-faults)", envName("faults"))
	}
	str(&c.TLSCert, "tls-cert", "", "PEM certificate: enables TLS on the PostgreSQL and HTTP listeners")
	str(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.BoolVar(&c.TLSRequired, "tls-required", false, "refuse PostgreSQL clients that do not use TLS (env TSDB_TLS_REQUIRED)")
	str(&c.Storage, "storage", "", "where the Delta tables live: empty for <data-dir>/tables, or s3://bucket/prefix on an S3-compatible store (the WAL stays in --data-dir)")
	str(&c.S3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:7070 (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS in --s3-region)")
	str(&c.S3.Region, "s3-region", "", "S3 region (default: $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)")
	fs.BoolVar(&c.S3.PathStyle, "s3-path-style", true, "address buckets as endpoint/bucket, as most S3-compatible servers expect; false: virtual-hosted style (env TSDB_S3_PATH_STYLE)")
	fs.DurationVar(&c.RefreshInterval, "refresh-interval", 0, "how often to read commits and tables of other writers on shared storage; 0: 2s; negative: never (env TSDB_REFRESH_INTERVAL)")
	var pwFile string
	str(&pwFile, "admin-password-file", "", "file holding the password of the admin user tsdb (or set TSDB_ADMIN_PASSWORD); with a password every client authenticates with SCRAM-SHA-256")

	// Environment first, so that explicit flags override it.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	sizes := []struct {
		name string
		in   string
		out  *int64
	}{
		{"memory-limit", mem, &c.MemoryLimit}, {"memory-soft-limit", soft, &c.SoftMemoryLimit},
		{"max-bucket-bytes", maxBucket, &c.MaxBucketBytes}, {"small-file-bytes", small, &c.SmallFileBytes},
		{"target-file-size", targetFile, &c.TargetFileSize},
		{"max-wal-lag", walLag, &c.MaxWALLag}, {"engine-memory-limit", engineMem, &c.EngineMemory},
		{"statement-memory-limit", stmtMem, &c.StatementMemory},
		{"max-statement-size", stmtSize, &c.MaxStatementSize},
	}
	for _, sz := range sizes {
		if sz.in == "" {
			continue
		}
		v, err := parseBytes(sz.in)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", sz.name, err)
		}
		*sz.out = v
	}
	if c.MemoryLimit <= 0 {
		return nil, fmt.Errorf("--memory-limit must be positive")
	}
	if c.MaxStatementSize <= 0 || c.MaxStatementSize > 1<<30 {
		return nil, fmt.Errorf("--max-statement-size must be between 1 byte and 1GiB")
	}
	if c.MaxStatementTokens <= 0 || c.MaxPrepared <= 0 {
		return nil, fmt.Errorf("--max-statement-tokens and --max-prepared-statements must be positive")
	}
	c.AdminPassword = getenv("TSDB_ADMIN_PASSWORD")
	if pwFile != "" {
		b, err := os.ReadFile(pwFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-password-file: %w", err)
		}
		c.AdminPassword = strings.TrimRight(string(b), "\r\n")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if c.TLSRequired && c.TLSCert == "" {
		return nil, fmt.Errorf("--tls-required needs --tls-cert and --tls-key")
	}
	if c.EngineMemory == 0 {
		// The engine holds a copy of the buffered rows (up to
		// --memory-limit): statements get a budget of their own on top,
		// so that buffered rows never take what a query needs.
		c.EngineMemory = c.MemoryLimit + max(c.MemoryLimit, 512<<20)
	}
	if c.StatementMemory == 0 {
		c.StatementMemory = c.EngineMemory / 4
	}
	if c.StatementMemory < 0 || c.StatementMemory > c.EngineMemory {
		return nil, fmt.Errorf("--statement-memory-limit must be between 1 byte and --engine-memory-limit")
	}
	if c.BucketDuration < time.Second {
		return nil, fmt.Errorf("--bucket-duration must be at least 1s, got %v", c.BucketDuration)
	}
	if c.IdleFlush < 0 {
		return nil, fmt.Errorf("--idle-flush must not be negative")
	}
	if c.Storage != "" {
		if !strings.HasPrefix(c.Storage, "s3://") {
			return nil, fmt.Errorf("--storage must be empty or s3://bucket/prefix, got %q", c.Storage)
		}
		firstSet := func(vals ...string) string {
			for _, v := range vals {
				if v != "" {
					return v
				}
			}
			return ""
		}
		c.S3.Region = firstSet(c.S3.Region, getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), "us-east-1")
		c.S3.Endpoint = firstSet(c.S3.Endpoint, getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"), "https://s3."+c.S3.Region+".amazonaws.com")
		c.S3.AccessKey = getenv("AWS_ACCESS_KEY_ID")
		c.S3.SecretKey = getenv("AWS_SECRET_ACCESS_KEY")
		c.S3.SessionToken = getenv("AWS_SESSION_TOKEN")
		if c.S3.AccessKey == "" || c.S3.SecretKey == "" {
			return nil, fmt.Errorf("--storage %s needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment", c.Storage)
		}
	}
	return c, nil
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// parseBytes reads sizes such as 512MiB, 2GiB, 100MB or 1048576.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, u := range byteUnits {
		if strings.HasSuffix(strings.ToUpper(s), strings.ToUpper(u.suffix)) {
			num := strings.TrimSpace(s[:len(s)-len(u.suffix)])
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f < 0 {
				return 0, fmt.Errorf("invalid size %q", s)
			}
			return int64(f * float64(u.mult)), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (use e.g. 512MiB or 2GiB)", s)
	}
	return n, nil
}

func formatBytes(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return strconv.FormatInt(n, 10)
}

// defaultMemoryLimit is a quarter of the machine's memory, in whole MiB,
// or 1GiB when it cannot be read.
// goMemoryLimit is the Go runtime's soft memory limit for a server whose
// MemBuffer holds up to memoryLimit: those rows, and room for what is in
// flight beside them (statements' rows on their way in, flush and
// compaction buffers, the WAL's memtables), half as much again and at
// least 512 MiB. The engine's memory is its own (--engine-memory-limit).
func goMemoryLimit(memoryLimit int64) int64 {
	return memoryLimit + max(memoryLimit/2, 512<<20)
}

func defaultMemoryLimit() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return kb * 1024 / 4 / (1 << 20) * (1 << 20)
				}
			}
		}
	}
	return 1 << 30
}
