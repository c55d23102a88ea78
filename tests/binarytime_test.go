package tests

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// binary is the mode that sends parameters in binary: pgx describes the
// statement, then binds each parameter in its type's binary format.
const binaryMode = pgx.QueryExecModeDescribeExec

// TestBinaryTimestampsKeepTheirValue sends timestamps across PostgreSQL's
// whole range as binary parameters and binary COPY, and reads them back in
// binary and text. Each value comes back unchanged, or is refused with
// 22008 where the engine cannot hold it; never another time. Before, the
// microseconds went through a time.Duration and wrapped around outside
// 1707–2292: 2300-06-01 was stored as 1715-11-11.
func TestBinaryTimestampsKeepTheirValue(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	execAll(t, c, "CREATE TABLE bt (time TIMESTAMPTZ NOT NULL, k BIGINT, tz TIMESTAMPTZ, ntz TIMESTAMP)")

	utc := func(y int, mo time.Month, d, h, mi, sec, us int) time.Time {
		return time.Date(y, mo, d, h, mi, sec, us*1000, time.UTC)
	}
	cases := []struct {
		t    time.Time
		text string // PostgreSQL's text of the timestamptz in UTC; "" means refused
	}{
		{utc(-4713, 11, 24, 0, 0, 0, 0), "4714-11-24 00:00:00+00 BC"}, // PostgreSQL's earliest
		{utc(0, 12, 31, 23, 59, 59, 999999), "0001-12-31 23:59:59.999999+00 BC"},
		{utc(1, 1, 1, 0, 0, 0, 0), "0001-01-01 00:00:00+00"},
		{utc(1500, 6, 1, 12, 0, 0, 0), "1500-06-01 12:00:00+00"},
		{utc(1706, 12, 31, 23, 59, 59, 0), "1706-12-31 23:59:59+00"},
		{utc(2026, 3, 4, 5, 6, 7, 890123), "2026-03-04 05:06:07.890123+00"},
		{utc(2292, 1, 1, 0, 0, 0, 0), "2292-01-01 00:00:00+00"},
		{utc(2300, 6, 1, 0, 0, 0, 0), "2300-06-01 00:00:00+00"},
		{utc(3000, 1, 1, 0, 0, 0, 0), "3000-01-01 00:00:00+00"},
		{utc(9999, 12, 31, 23, 59, 59, 999999), "9999-12-31 23:59:59.999999+00"},
		{utc(10000, 1, 1, 0, 0, 0, 0), "10000-01-01 00:00:00+00"},
		{utc(294247, 1, 10, 4, 0, 54, 775806), "294247-01-10 04:00:54.775806+00"}, // the engine's latest
		{utc(294247, 1, 10, 4, 0, 54, 775807), ""},                                // PostgreSQL's, not the engine's
		{utc(294276, 12, 31, 23, 59, 59, 999999), ""},
		{utc(-4713, 11, 23, 23, 59, 59, 999999), ""}, // before PostgreSQL's earliest
	}
	for i, tc := range cases {
		_, err := c.Exec(ctx, "INSERT INTO bt VALUES ($1, $2, $3, $4)", binaryMode,
			utc(2026, 1, 1, 0, 0, 0, 0), int64(i), tc.t, pgtype.Timestamp{Time: tc.t, Valid: true})
		if tc.text == "" {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22008" {
				t.Errorf("%v: %v, want SQLSTATE 22008", tc.t, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("insert %v: %v", tc.t, err)
		}
	}
	// ±infinity in binary are PostgreSQL's own int64 extremes.
	for i, inf := range []pgtype.InfinityModifier{pgtype.Infinity, pgtype.NegativeInfinity} {
		if _, err := c.Exec(ctx, "INSERT INTO bt VALUES ($1, $2, $3, $4)", binaryMode, utc(2026, 1, 1, 0, 0, 0, 0), int64(100+i),
			pgtype.Timestamptz{InfinityModifier: inf, Valid: true}, pgtype.Timestamp{InfinityModifier: inf, Valid: true}); err != nil {
			t.Fatalf("insert %v: %v", inf, err)
		}
	}

	check := func(stage string) {
		t.Helper()
		for i, tc := range cases {
			if tc.text == "" {
				continue
			}
			var tz, ntz time.Time
			if err := c.QueryRow(ctx, "SELECT tz, ntz FROM bt WHERE k = $1", binaryMode, int64(i)).Scan(&tz, &ntz); err != nil {
				t.Fatalf("%s: read %v: %v", stage, tc.t, err)
			}
			if !tz.Equal(tc.t) || !ntz.Equal(tc.t) {
				t.Errorf("%s: %v read back in binary as %v / %v", stage, tc.t, tz, ntz)
			}
			// The text format, through the simple protocol as psql reads it.
			var simple string
			if err := c.QueryRow(ctx, "SELECT tz FROM bt WHERE k = "+itoa(i), pgx.QueryExecModeSimpleProtocol).Scan(&simple); err != nil {
				t.Fatal(err)
			}
			if simple != tc.text {
				t.Errorf("%s: %v in text is %q, PostgreSQL writes %q", stage, tc.t, simple, tc.text)
			}
		}
		var pos, neg pgtype.Timestamptz
		if err := c.QueryRow(ctx, "SELECT (SELECT tz FROM bt WHERE k = 100), (SELECT tz FROM bt WHERE k = 101)", binaryMode).Scan(&pos, &neg); err != nil {
			t.Fatal(err)
		}
		if pos.InfinityModifier != pgtype.Infinity || neg.InfinityModifier != pgtype.NegativeInfinity {
			t.Errorf("%s: infinities read back as %v / %v", stage, pos, neg)
		}
	}
	check("buffered")
	execAll(t, c, "CHECKPOINT")
	check("flushed")

	// A value the engine computes before PostgreSQL's first timestamp or
	// date is 22008 in text and binary alike, as PostgreSQL refuses to
	// compute it, and the connection goes on.
	for _, q := range []string{
		"SELECT timestamptz '4714-11-24 00:00:00+00 BC' - interval '1 day'",
		"SELECT date '4713-01-01 BC' - 1000",
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, binaryMode} {
			var v any
			var pe *pgconn.PgError
			if err := c.QueryRow(ctx, q, mode).Scan(&v); !errors.As(err, &pe) || pe.Code != "22008" {
				t.Errorf("%s (%v): %v, %v, want SQLSTATE 22008", q, mode, v, err)
			}
		}
	}
	if n := queryInt(t, c, "SELECT 1"); n != 1 {
		t.Fatalf("after the refusals: %d", n)
	}

	// A bound far in the future deletes nothing: it used to wrap into the
	// past and delete every row.
	tag, err := c.Exec(ctx, "DELETE FROM bt WHERE time > $1", binaryMode, utc(3000, 1, 1, 0, 0, 0, 0))
	if err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("DELETE WHERE time > 3000-01-01: %v %v, want DELETE 0", tag, err)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM bt"); n != int64(len(cases)-3+2) {
		t.Fatalf("%d rows after the DELETE, want %d", n, len(cases)-3+2)
	}

	// Binary COPY (pgx's CopyFrom) keeps the same values and infinities.
	execAll(t, c, "CREATE TABLE bc (time TIMESTAMPTZ NOT NULL, k BIGINT, tz TIMESTAMPTZ)")
	var rows [][]any
	for i, tc := range cases {
		if tc.text != "" {
			rows = append(rows, []any{utc(2026, 1, 1, 0, 0, 0, 0), int64(i), tc.t})
		}
	}
	rows = append(rows, []any{utc(2026, 1, 1, 0, 0, 0, 0), int64(100), pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}},
		[]any{utc(2026, 1, 1, 0, 0, 0, 0), int64(101), pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}})
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"bc"}, []string{"time", "k", "tz"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, line := range lines(s.psql("SELECT k, tz FROM bc ORDER BY k;\n", "-tA")) {
		k, v, _ := strings.Cut(line, "|")
		got[int64(atoi(t, k))] = v
	}
	for i, tc := range cases {
		if tc.text != "" && got[int64(i)] != tc.text {
			t.Errorf("binary COPY of %v reads %q, want %q", tc.t, got[int64(i)], tc.text)
		}
	}
	if got[100] != "infinity" || got[101] != "-infinity" {
		t.Errorf("binary COPY of ±infinity reads %q / %q", got[100], got[101])
	}
	// A value the engine cannot hold fails the COPY with 22008; nothing lands.
	_, err = c.CopyFrom(ctx, pgx.Identifier{"bc"}, []string{"time", "k", "tz"}, pgx.CopyFromRows([][]any{
		{utc(2026, 1, 1, 0, 0, 0, 0), int64(200), utc(2026, 1, 1, 0, 0, 0, 0)},
		{utc(2026, 1, 1, 0, 0, 0, 0), int64(201), utc(294270, 1, 1, 0, 0, 0, 0)},
	}))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22008" {
		t.Errorf("binary COPY of 294270 AD: %v, want SQLSTATE 22008", err)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM bc WHERE k >= 200"); n != 0 {
		t.Errorf("a failed COPY left %d rows", n)
	}
}

// TestBinaryDatesAndIntervals sends dates and intervals as binary
// parameters at their extremes.
func TestBinaryDatesAndIntervals(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	ctx := context.Background()
	c := s.connect(ctx)
	for _, tc := range []struct {
		d    time.Time
		text string
	}{
		{time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC), "4714-11-24 BC"},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01 BC"},
		{time.Date(1700, 2, 28, 0, 0, 0, 0, time.UTC), "1700-02-28"},
		{time.Date(2500, 6, 30, 0, 0, 0, 0, time.UTC), "2500-06-30"},
		{time.Date(5874897, 12, 31, 0, 0, 0, 0, time.UTC), "5874897-12-31"},
	} {
		var back time.Time
		var text string
		if err := c.QueryRow(ctx, "SELECT $1::date", binaryMode, tc.d).Scan(&back); err != nil {
			t.Fatalf("%v: %v", tc.d, err)
		}
		// The text format, as psql reads it (of PostgreSQL's input form:
		// '0000-01-01' is out of range there, the year before 1 is 1 BC).
		if err := c.QueryRow(ctx, "SELECT '"+tc.text+"'::date", pgx.QueryExecModeSimpleProtocol).Scan(&text); err != nil {
			t.Fatalf("%v: %v", tc.d, err)
		}
		if !back.Equal(tc.d) || text != tc.text {
			t.Errorf("date %v came back as %v, %q; want %q", tc.d, back, text, tc.text)
		}
	}
	var inf pgtype.Date
	if err := c.QueryRow(ctx, "SELECT $1::date", binaryMode, pgtype.Date{InfinityModifier: pgtype.NegativeInfinity, Valid: true}).Scan(&inf); err != nil || inf.InfinityModifier != pgtype.NegativeInfinity {
		t.Errorf("-infinity date: %v %v", inf, err)
	}
	for _, iv := range []pgtype.Interval{
		{Microseconds: math.MaxInt64, Days: math.MaxInt32, Months: math.MaxInt32, Valid: true},
		{Microseconds: math.MinInt64 + 1, Days: math.MinInt32 + 1, Months: math.MinInt32 + 1, Valid: true},
		{Microseconds: -1, Days: 1, Months: -1, Valid: true},
	} {
		var back pgtype.Interval
		if err := c.QueryRow(ctx, "SELECT $1::interval", binaryMode, iv).Scan(&back); err != nil {
			t.Fatalf("%v: %v", iv, err)
		}
		if back != iv {
			t.Errorf("interval %+v came back as %+v", iv, back)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}
