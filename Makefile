# tsdb — build, run and test. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash

# duckdb_arrow: the Arrow bindings of DuckDB (bulk Arrow → DuckDB conversion).
export GOFLAGS := -buildvcs=false -tags=duckdb_arrow
export CGO_ENABLED := 1

GO      ?= go
BIN     := bin/tsdb
# bin/tsdb-faults is the test build with fault injection (internal/fault):
# the crash tests kill it at chosen points of a flush. The shipped bin/tsdb
# has none.
BIN_FAULTS := bin/tsdb-faults
SOURCES := $(shell find . -name '*.go' -not -path './bin/*') go.mod go.sum

.PHONY: build run test test-unit test-e2e fuzz bench bench-scale lint fmt deps clean regress-report

# FUZZTIME is how much `make test` fuzzes each target: a count of inputs
# (about 15 s each on 2 cores), not a duration. With a duration, Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when the time runs out mid-input although nothing was found
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 50000x
# FUZZTIME_SERVER is the count for fuzz targets that go through the real
# server (a few hundred inputs a second).
FUZZTIME_SERVER ?= 2000x

build: $(BIN)

$(BIN): $(SOURCES)
	@mkdir -p bin
	$(GO) build -o $(BIN) ./cmd/tsdb

$(BIN_FAULTS): $(SOURCES)
	@mkdir -p bin
	$(GO) build -tags=duckdb_arrow,faults -o $(BIN_FAULTS) ./cmd/tsdb

## run: build and start the server with embedded defaults (data in ./data,
## PostgreSQL protocol on 127.0.0.1:5432, HTTP on 127.0.0.1:8086).
run: $(BIN)
	./$(BIN) serve

## deps: what the tests need on a fresh Debian machine: psql, and the
## client libraries the end-to-end tests drive tsdb with (psycopg2,
## psycopg 3, SQLAlchemy, pgJDBC, node-postgres), PostgreSQL's server (the
## referee of the regression comparison and of the bench), chDB (npm), the independent Delta reader the tests
## check tsdb's tables with, and versitygw, the S3-compatible server of the
## object-storage tests. Installed only when missing.
deps:
	@missing=""; \
	command -v psql >/dev/null 2>&1 || missing="$$missing postgresql-client"; \
	/usr/bin/python3 -c 'import psycopg2' >/dev/null 2>&1 || missing="$$missing python3 python3-psycopg2"; \
	/usr/bin/python3 -c 'import psycopg' >/dev/null 2>&1 || missing="$$missing python3-psycopg"; \
	/usr/bin/python3 -c 'import sqlalchemy' >/dev/null 2>&1 || missing="$$missing python3-sqlalchemy"; \
	/usr/bin/python3 -c 'import influxdb' >/dev/null 2>&1 || missing="$$missing python3-influxdb"; \
	[ -f /usr/share/java/postgresql.jar ] || missing="$$missing libpostgresql-jdbc-java"; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages for the tests:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@[ -d tests/clients/node/node_modules/pg ] || (cd tests/clients/node && npm ci --no-audit --no-fund --loglevel=error)
	@# chdb's lock file cannot list its other platforms' optional libraries
	@# (npm drops them), so npm ci refuses it: install the pinned version
	@# without a lock instead.
	@[ -d tests/clients/chdb/node_modules/chdb ] || (cd tests/clients/chdb && npm install --no-package-lock --no-audit --no-fund --loglevel=error)
	@# versitygw: the S3-compatible server the object-storage tests run
	@# against (Apache-2.0), built once into .cache/bin (about two minutes).
	@[ -x .cache/bin/versitygw ] || (echo "building versitygw for the S3 tests" && GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0)
	$(GO) mod download

## test: vet and format check, unit tests of every package, then end-to-end
## tests against the built binary with psql and pgx.
test: deps lint build $(BIN_FAULTS)
	$(GO) test -tags=duckdb_arrow,faults -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory fuzz

## fuzz: each fuzz target for FUZZTIME: FuzzWire (startup and regular
## messages), FuzzParams (Bind parameters of every type, both formats), FuzzSQL (INSERT/COPY value parsers and
## the statement router) and FuzzParse (line protocol); and for
## FUZZTIME_SERVER FuzzBinaryTimes (binary timestamps, dates and
## intervals through the server, as parameters and COPY). Nothing may panic or hang. Seeds are in the
## targets; new crashers land in testdata/fuzz/ and are kept.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzWire$$' -fuzztime $(FUZZTIME) ./pgwire/
	$(GO) test -run '^$$' -fuzz '^FuzzParams$$' -fuzztime $(FUZZTIME) ./session/
	$(GO) test -run '^$$' -fuzz '^FuzzSQL$$' -fuzztime $(FUZZTIME) ./planner/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./lineproto/
	$(GO) test -run '^$$' -fuzz '^FuzzToCharNumber$$' -fuzztime $(FUZZTIME) ./dialect/
	$(GO) test -run '^$$' -fuzz '^FuzzBinaryTimes$$' -fuzztime $(FUZZTIME_SERVER) ./tests/

## regress-report: run PostgreSQL 15's regression statements on
## PostgreSQL and tsdb side by side and record the result: the ratchet
## tests/testdata/pgregress/baseline.tsv, the summary in
## docs/postgres-compatibility.md and every difference in docs/pg-regress.md.
regress-report: deps build
	TSDB_REGRESS_UPDATE=1 $(GO) test -tags=duckdb_arrow,faults -count=1 -run '^TestPostgresRegression$$' -v ./tests/ | grep -v '^        time='

test-unit:
	$(GO) test -tags=duckdb_arrow,faults -count=1 $$($(GO) list ./... | grep -v /tests)

test-e2e: deps build $(BIN_FAULTS)
	$(GO) test -tags=duckdb_arrow,faults -count=1 -v ./tests/

## bench: speed and memory goals (not part of `make test`). tsdb-bench
## loads the Time Series Benchmark Suite's DevOps cpu-only data set into
## tsdb and into PostgreSQL (Debian's server, installed when missing, run in
## a temporary directory) by COPY, by psql's \copy of the CSV file, by
## `tsdb import` of it (tsdb only) and by 1,000-row INSERTs (each three
## times into a fresh table, the median and tsdb's peak memory reported),
## runs the suite's queries on tsdb, PostgreSQL and DuckDB over tsdb's
## Parquet files (hosts and time windows drawn anew for every run, as TSBS
## does, the same draws for every engine), checks they agree, measures the WAL's replay after a SIGKILL and its disk use
## over a simulated day of ingest and flushes (at the data set's rate and
## ten times it), and writes bench-results/bench.{json,png}. BENCH_FLAGS passes
## flags (e.g. --hosts 100 --duration 24h --runs 5 --load-runs 1 --profile
## DIR). Then the
## Go benchmarks: group commit, INSERT latency alone and beside 16
## sessions of UPDATE/DELETE, a 10M-row result streamed (rows/s and the
## server's peak memory rise), a simulated week of 10-minute flushes under
## the background compactor (files per day, query time against a freshly
## compacted copy), WAL replay, the WAL's append and COPY-part rates on
## badger, the peak memory of a compaction merge, and the data files'
## write, merge and read rates (parquet-go beside arrow-go's pqarrow).
BENCH_FLAGS ?=
bench: deps build bin/tsdb-bench
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
		echo "installing Debian's PostgreSQL server for the comparison"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; }
	./bin/tsdb-bench --tsdb $(BIN) --out bench-results $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench GroupCommit -benchtime 5000x ./tests/
	$(GO) test -run '^$$' -bench InsertBesideDML -benchtime 1x ./tests/
	$(GO) test -run '^$$' -bench LargeResult -benchtime 1x ./tests/
	$(GO) test -run '^$$' -bench SimulatedWeek -benchtime 1x ./tests/
	$(GO) test -run '^$$' -bench . -benchtime 5x ./ingest/
	$(GO) test -run '^$$' -bench Append190KB -benchtime 500x ./wal/
	$(GO) test -run '^$$' -bench Stage1MBParts -benchtime 5x ./wal/
	$(GO) test -run '^$$' -bench CompactionMemory -benchtime 3x ./delta/
	$(GO) test -run '^$$' -bench DataFiles -benchtime 20x ./delta/

## bench-scale: the same comparison at ten times the hosts (1,000 hosts ×
## one day, 8.64M rows, about 1 GB of CSV): one load of each path but the
## multi-row INSERTs (PostgreSQL takes many minutes for them), five runs of
## each query, no simulated WAL day; bench-results-scale/. Not part of
## `make test` or `make bench`; about half an hour on 2 cores.
BENCH_SCALE_FLAGS ?= --hosts 1000 --load-runs 1 --runs 5 --inserts=false --wal-day=false
bench-scale: deps build bin/tsdb-bench
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
		echo "installing Debian's PostgreSQL server for the comparison"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; }
	./bin/tsdb-bench --tsdb $(BIN) --out bench-results-scale $(BENCH_SCALE_FLAGS)

bin/tsdb-bench: $(SOURCES)
	@mkdir -p bin
	$(GO) build -o bin/tsdb-bench ./cmd/tsdb-bench

lint:
	$(GO) vet ./...
	$(GO) vet -tags=duckdb_arrow,faults ./...
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*')); \
		if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(find . -name '*.go' -not -path './bin/*')

clean:
	rm -rf bin
