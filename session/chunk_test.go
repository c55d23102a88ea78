package session

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"tsdb/ingest"
	"tsdb/planner"
)

// newSession opens a real engine, store and planner in a temporary
// directory.
func newSession(t *testing.T) *planner.Session {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	engine, err := planner.NewEngine(ctx, planner.EngineOptions{TablesDir: filepath.Join(dir, "tables"), Threads: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := ingest.Open(ctx, ingest.Options{DataDir: dir, BucketDuration: 10 * time.Minute, IdleFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(ctx, engine, store, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewSession(ctx, "tsdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		p.Close()
		store.Close(ctx)
		engine.Close()
	})
	return s
}

// The writers of a chunked result produce, cell by cell, the bytes
// appendText and appendBinary produce for the same values, in both
// formats, for the columns' own OIDs and for OIDs a client was told
// otherwise (which take the value encoders' path, errors included).
func TestChunkWritersMatchValueEncoders(t *testing.T) {
	s := newSession(t)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{
		`SELECT * FROM (VALUES (true, (-128)::TINYINT, (-32768)::SMALLINT, (-2147483648)::INTEGER, (-9223372036854775808)::BIGINT),
			(false, 127::TINYINT, 32767::SMALLINT, 2147483647::INTEGER, 9223372036854775807::BIGINT),
			(NULL, NULL, NULL, NULL, NULL)) v(b, i1, i2, i4, i8)`,
		`SELECT * FROM (VALUES (1.5::REAL, 0.1::DOUBLE), ('NaN'::REAL, 'NaN'::DOUBLE), ('-Infinity'::REAL, 'Infinity'::DOUBLE),
			(-0.0::REAL, -0.0::DOUBLE), (NULL, 1e308), (3.4e38::REAL, 5e-324::DOUBLE), (1e-7::REAL, 123456789.125::DOUBLE)) v(f4, f8)`,
		`SELECT * FROM (VALUES (''), ('short'), ('twelve chars'), ('thirteen char'), ('ünïcödé ✓ longer than twelve bytes'), (NULL)) v(s)`,
		`SELECT * FROM (VALUES ('2026-01-01 00:00:00.123456'::TIMESTAMP, '2026-01-01 00:00:00+05:30'::TIMESTAMPTZ),
			('1900-02-28 23:59:59.999999'::TIMESTAMP, '1969-12-31 23:59:59.5+00'::TIMESTAMPTZ), (NULL, NULL),
			('infinity'::TIMESTAMP, '-infinity'::TIMESTAMPTZ)) v(a, b)`,
		`SELECT * FROM (VALUES (170141183460469231731687303715884105727::HUGEINT), ((-170141183460469231731687303715884105727)::HUGEINT),
			(18446744073709551616::HUGEINT), (18446744073709551615::HUGEINT), ((-9223372036854775808)::HUGEINT), ((-9223372036854775809)::HUGEINT),
			(-1::HUGEINT), (0::HUGEINT), (NULL)) v(h)`,
		`SELECT * FROM (VALUES (DATE '2026-01-02'), (DATE '1969-12-31'), (DATE '1999-12-31'), (DATE '0001-01-01'), (DATE '2500-06-30'), ('infinity'::DATE), ('-infinity'::DATE), (NULL)) v(d)`,
		`SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i::VARCHAR || repeat('x', (i % 20)::INTEGER) END AS s FROM range(3000) t(i)`,
	}
	// OIDs a client may have been told for a column instead of its own.
	otherOIDs := []uint32{16, 20, 21, 23, 25, 700, 701, 1082, 1114, 1184, 1186, 1700}
	for _, q := range queries {
		err := s.Execute(context.Background(), q, func(r *planner.Result) error {
			defer r.Rows.Close()
			cr, ok := r.Rows.(planner.ChunkRows)
			if !ok {
				t.Fatalf("%s: rows %T are not read as chunks", q, r.Rows)
			}
			for {
				ch, ok := cr.NextChunk()
				if !ok {
					return cr.Err()
				}
				for i := range ch.Columns() {
					v := ch.Column(i)
					for _, oid := range append([]uint32{r.Columns[i].OID}, otherOIDs...) {
						for _, loc := range []*time.Location{time.UTC, kolkata} {
							text := textWriter(v.Kind(), oid, textStyle{Loc: loc, ExtraDigits: 1})
							bin := binaryWriter(v.Kind(), oid)
							for row := range ch.Len() {
								if v.Null(row) {
									if val := v.Value(row); val != nil {
										t.Fatalf("row %d column %d is NULL, its value %v", row, i, val)
									}
									continue
								}
								got, _ := text(nil, v, row)
								want, _ := appendText(nil, v.Value(row), oid, textStyle{Loc: loc, ExtraDigits: 1})
								if !bytes.Equal(got, want) {
									t.Fatalf("%s\ncolumn %d row %d, oid %d, text: %q, want %q", q, i, row, oid, got, want)
								}
								gotB, gotErr := bin(nil, v, row)
								wantB, _, wantErr := appendBinary(nil, v.Value(row), oid)
								if (gotErr != nil) != (wantErr != nil) || (wantErr == nil && !bytes.Equal(gotB, wantB)) {
									t.Fatalf("%s\ncolumn %d row %d, oid %d, binary: %x (%v), want %x (%v)", q, i, row, oid, gotB, gotErr, wantB, wantErr)
								}
							}
						}
					}
				}
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
