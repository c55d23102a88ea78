package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// runner runs one query and returns its rows.
type runner interface {
	query(ctx context.Context, q string) ([][]any, error)
}

type pgxRunner struct{ c *pgx.Conn }

func (r pgxRunner) query(ctx context.Context, q string) ([][]any, error) {
	rows, err := r.c.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanAll reads every row of rows and closes them.
func scanAll(rows *sql.Rows) ([][]any, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		v := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range v {
			ptrs[i] = &v[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// runQueries runs each query's warm-up statement and then runs timed
// statements (benchQuery.timed), and records the median latency and the
// warm-up's rows, which every engine answers.
func runQueries(ctx context.Context, logger *slog.Logger, r runner, engine string, qs []benchQuery, runs int, rep *report, results map[string]map[string][][]any) error {
	if results[engine] == nil {
		results[engine] = map[string][][]any{}
	}
	for _, q := range qs {
		rows, err := r.query(ctx, q.SQL[0])
		if err != nil {
			return fmt.Errorf("%s: %s: %w\n%s", engine, q.Name, err, q.SQL[0])
		}
		times := make([]time.Duration, 0, runs)
		for i := range runs {
			stmt := q.timed(i)
			d, err := timed(func() error {
				_, err := r.query(ctx, stmt)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s: %s: %w\n%s", engine, q.Name, err, stmt)
			}
			times = append(times, d)
		}
		med := median(times)
		rep.addQuery(q.Name, engine, med)
		results[engine][q.Name] = rows
		logger.Info("query", "engine", engine, "query", q.Name, "median_ms", float64(med.Microseconds())/1000, "rows", len(rows))
	}
	return nil
}

// runPrepared is runQueries for DuckDB in this process: each query is
// prepared once (benchQuery.prepared) and executed with each run's
// parameters, so that its times hold no parsing or planning of the text.
func runPrepared(ctx context.Context, logger *slog.Logger, db *sql.DB, engine string, qs []benchQuery, runs int, rep *report, results map[string]map[string][][]any) error {
	if results[engine] == nil {
		results[engine] = map[string][][]any{}
	}
	for _, q := range qs {
		tmpl, args := q.prepared()
		stmt, err := db.PrepareContext(ctx, tmpl)
		if err != nil {
			return fmt.Errorf("%s: %s: prepare: %w\n%s", engine, q.Name, err, tmpl)
		}
		run := func(a []any) ([][]any, error) {
			rows, err := stmt.QueryContext(ctx, a...)
			if err != nil {
				return nil, err
			}
			return scanAll(rows)
		}
		rows, err := run(args[0])
		if err != nil {
			stmt.Close()
			return fmt.Errorf("%s: %s: %w\n%s %v", engine, q.Name, err, tmpl, args[0])
		}
		times := make([]time.Duration, 0, runs)
		for i := range runs {
			a := args[0]
			if len(args) > 1 {
				a = args[1+i%(len(args)-1)]
			}
			d, err := timed(func() error {
				_, err := run(a)
				return err
			})
			if err != nil {
				stmt.Close()
				return fmt.Errorf("%s: %s: %w\n%s %v", engine, q.Name, err, tmpl, a)
			}
			times = append(times, d)
		}
		stmt.Close()
		med := median(times)
		rep.addQuery(q.Name, engine, med)
		results[engine][q.Name] = rows
		logger.Info("query", "engine", engine, "query", q.Name, "median_ms", float64(med.Microseconds())/1000, "rows", len(rows), "prepared", true)
	}
	return nil
}

// median is the middle of the durations (the upper middle of an even
// count); ds is left unchanged.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
