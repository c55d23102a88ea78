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

type sqlRunner struct{ db *sql.DB }

func (r sqlRunner) query(ctx context.Context, q string) ([][]any, error) {
	rows, err := r.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
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

// median is the middle of the durations (the upper middle of an even
// count); ds is left unchanged.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
