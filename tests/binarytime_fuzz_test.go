package tests

import (
	"bytes"
	"context"
	be "encoding/binary"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"tsdb/internal/schema"
)

// FuzzBinaryTimes sends raw binary timestamps, dates and intervals through
// the server, as Bind parameters and in a binary COPY, and reads them back
// in binary. Every value PostgreSQL can hold comes back byte for byte, or
// is refused with 22008 (timestamps between the engine's latest,
// 294247-01-10, and PostgreSQL's, 294276-12-31); anything outside
// PostgreSQL's range is refused with 22008. Never a different value.
func FuzzBinaryTimes(f *testing.F) {
	for _, us := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, schema.PGMinMicros, schema.PGMinMicros - 1,
		schema.PGEndMicros - 1, schema.PGEndMicros, math.MaxInt64 - schema.PGEpochUnixMicros - 1,
		math.MaxInt64 - schema.PGEpochUnixMicros, 9_467_107_200_000_000 /* 2300 */, -9_223_372_036_854_775_807} {
		f.Add(us, int32(us), us, int32(us>>32), int32(us))
	}
	for _, d := range []int32{math.MaxInt32, math.MinInt32, schema.PGMinDays, schema.PGMinDays - 1, schema.PGEndDays - 1, schema.PGEndDays} {
		f.Add(int64(0), d, int64(d), d, -d)
	}
	s, died := launch(f, f.TempDir(), nil)
	if died != nil {
		f.Fatalf("tsdb exited during start-up: %v\n%s", died, s.logs.String())
	}
	ctx := context.Background()
	pc, err := pgconn.Connect(ctx, "postgres://tsdb@"+s.pgAddr+"/tsdb?sslmode=disable")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { pc.Close(context.Background()) })
	if _, err := pc.Exec(ctx, "CREATE TABLE fz (time TIMESTAMPTZ NOT NULL, k BIGINT, tz TIMESTAMPTZ)").ReadAll(); err != nil {
		f.Fatal(err)
	}
	var nextKey atomic.Int64

	f.Fuzz(func(t *testing.T, us int64, days int32, ivMicros int64, ivDays, ivMonths int32) {
		_, _, tsErr := schema.FromPGMicros(us)
		_, _, dateErr := schema.FromPGDays(days)
		be64 := func(v int64) []byte { return be.BigEndian.AppendUint64(nil, uint64(v)) }
		be32 := func(v int32) []byte { return be.BigEndian.AppendUint32(nil, uint32(v)) }
		iv := append(append(be64(ivMicros), be32(ivDays)...), be32(ivMonths)...)

		// Each value as a binary parameter, read back in binary.
		for _, p := range []struct {
			sql    string
			oid    uint32
			raw    []byte
			refuse bool
		}{
			{"SELECT $1::timestamptz", 1184, be64(us), tsErr != nil},
			{"SELECT $1::timestamp", 1114, be64(us), tsErr != nil},
			{"SELECT $1::date", 1082, be32(days), dateErr != nil},
			// The most negative part of an interval is refused (see
			// pgwire.decodeParam).
			{"SELECT $1::interval", 1186, iv, ivMicros == math.MinInt64 || ivDays == math.MinInt32 || ivMonths == math.MinInt32},
		} {
			res := pc.ExecParams(ctx, p.sql, [][]byte{p.raw}, []uint32{p.oid}, []int16{1}, []int16{1}).Read()
			checkRoundTrip(t, p.sql, p.raw, res.Rows, res.Err, p.refuse)
		}

		// The timestamp in a binary COPY, as the time column and another.
		k := nextKey.Add(1)
		var copyData bytes.Buffer
		copyData.WriteString("PGCOPY\n\xff\r\n\x00")
		copyData.Write(make([]byte, 8)) // flags, header extension length
		copyData.Write(be.BigEndian.AppendUint16(nil, 3))
		for _, field := range [][]byte{be64(us), be64(k), be64(us)} {
			copyData.Write(be32(int32(len(field))))
			copyData.Write(field)
		}
		copyData.Write([]byte{0xff, 0xff})
		_, err := pc.CopyFrom(ctx, &copyData, "COPY fz FROM STDIN (FORMAT binary)")
		if tsErr != nil {
			checkRoundTrip(t, "binary COPY", be64(us), nil, err, true)
			return
		}
		if err != nil {
			t.Fatalf("binary COPY of %d: %v", us, err)
		}
		res := pc.ExecParams(ctx, "SELECT time, tz FROM fz WHERE k = $1", [][]byte{be64(k)}, []uint32{20}, []int16{1}, []int16{1}).Read()
		if res.Err != nil || len(res.Rows) != 1 {
			t.Fatalf("reading back COPY row %d (%d): %v, %d rows", k, us, res.Err, len(res.Rows))
		}
		for _, v := range res.Rows[0] {
			if !bytes.Equal(v, be64(us)) {
				t.Fatalf("binary COPY of %d read back as %x", us, v)
			}
		}
	})
}

// checkRoundTrip holds one binary round trip to PostgreSQL's rule: the
// same bytes back, or 22008 where the value must be refused
// (schema.FromPGMicros and FromPGDays say which).
func checkRoundTrip(t *testing.T, what string, sent []byte, rows [][][]byte, err error, mustRefuse bool) {
	t.Helper()
	if err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22008" || !mustRefuse {
			t.Fatalf("%s with %x: %v, want the value back", what, sent, err)
		}
		return
	}
	if mustRefuse {
		t.Fatalf("%s with %x: accepted a value PostgreSQL refuses", what, sent)
	}
	if len(rows) != 1 || len(rows[0]) != 1 || !bytes.Equal(rows[0][0], sent) {
		t.Fatalf("%s with %x: read back %x", what, sent, rows)
	}
}
