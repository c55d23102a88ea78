package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"
)

// lib/pq through database/sql: unnamed prepared statements with text
// parameters, NULLs, DML with parameters, an error and recovery.
func TestLibPQ(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	db, err := sql.Open("postgres", fmt.Sprintf("postgres://tsdb@%s/tsdb?sslmode=disable", s.pgAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE m (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT, ok BOOLEAN)"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		res, err := db.ExecContext(ctx, "INSERT INTO m (time, host, v, n, ok) VALUES ($1, $2, $3, $4, $5)", t0.Add(time.Duration(i)*time.Second), fmt.Sprintf("h%d", i%3), float64(i)/4, int64(i)*1000, i%2 == 0)
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("rows affected %d", n)
		}
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO m VALUES ($1, $2, $3, $4, $5)", t0.Add(time.Hour), nil, nil, nil, nil); err != nil {
		t.Fatalf("NULL insert: %v", err)
	}
	var cnt int64
	var sum float64
	if err := db.QueryRowContext(ctx, "SELECT count(*), sum(v) FROM m WHERE time >= $1 AND time < $2 AND host = $3", t0, t0.Add(time.Minute), "h1").Scan(&cnt, &sum); err != nil {
		t.Fatal(err)
	}
	if cnt != 3 || sum != (1.0+4+7)/4 {
		t.Fatalf("count %d sum %v", cnt, sum)
	}
	var host sql.NullString
	var tm time.Time
	if err := db.QueryRowContext(ctx, "SELECT host, time FROM m WHERE n IS NULL").Scan(&host, &tm); err != nil || host.Valid || !tm.Equal(t0.Add(time.Hour)) {
		t.Fatalf("NULL row: %v %v %v", host, tm, err)
	}
	res, err := db.ExecContext(ctx, "UPDATE m SET v = $1 WHERE ok = $2", 99.0, true)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 5 {
		t.Fatalf("update affected %d", n)
	}
	res, err = db.ExecContext(ctx, "DELETE FROM m WHERE n >= $1", int64(5000))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 5 {
		t.Fatalf("delete affected %d", n)
	}
	_, err = db.ExecContext(ctx, "INSERT INTO m (time, nope) VALUES ($1, $2)", t0, 1)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "42703" {
		t.Fatalf("error: %v", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM m").Scan(&cnt); err != nil || cnt != 6 {
		t.Fatalf("after error: %d %v", cnt, err)
	}
}
