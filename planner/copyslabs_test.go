package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A COPY whose columns come from slabs gives what one with the Go
// allocator's buffers gives, NULLs (whose values builders leave unwritten)
// included, in every format.
func TestCopyIntoSlabs(t *testing.T) {
	e := newEnv(t)
	var csv strings.Builder
	for i := range 20_000 {
		host, v, n := fmt.Sprintf("host_%d", i%37), fmt.Sprint(float64(i)/8), fmt.Sprint(i)
		switch i % 5 {
		case 1:
			host = ""
		case 2:
			v = ""
		case 3:
			n = ""
		}
		fmt.Fprintf(&csv, "2026-01-01 %02d:%02d:%02d+00,%s,%s,%s\n", i/3600%24, i/60%60, i%60, host, v, n)
	}
	data := []byte(csv.String())
	for _, tc := range []struct {
		table string
		after int64
	}{{"plain", 1 << 40}, {"slabs", 1}} {
		e.must(fmt.Sprintf("CREATE TABLE %s (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT)", tc.table))
		ctx := context.Background()
		var ci *CopyIn
		if err := e.s.Execute(ctx, "COPY "+tc.table+" FROM STDIN WITH (FORMAT csv)", func(r *Result) error {
			ci = r.CopyIn
			return nil
		}); err != nil || ci == nil {
			t.Fatal(err)
		}
		ci.feed.chunkBytes, ci.feed.slabsAfter = 64<<10, tc.after
		for rest := data; len(rest) > 0; {
			k := min(32<<10, len(rest))
			if err := ci.Write(append([]byte(nil), rest[:k]...)); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if n, err := ci.Finish(ctx); err != nil || n != 20_000 {
			t.Fatalf("%s: COPY %d rows, %v", tc.table, n, err)
		}
		if tc.after == 1 && ci.feed.slabs.Slabs() == 0 {
			t.Fatal("the COPY did not use slabs")
		}
	}
	q := "SELECT count(*), count(host), count(v), count(n), sum(v), sum(n), string_agg(DISTINCT host, ',' ORDER BY host) FROM %s"
	plain, slabs := e.rows(fmt.Sprintf(q, "plain")), e.rows(fmt.Sprintf(q, "slabs"))
	if plain != slabs || !strings.HasPrefix(plain, "20000|16000|16000|16000|") {
		t.Fatalf("plain %q, slabs %q", plain, slabs)
	}
	diff := e.rows("SELECT count(*) FROM ((SELECT * FROM plain EXCEPT ALL SELECT * FROM slabs) UNION ALL (SELECT * FROM slabs EXCEPT ALL SELECT * FROM plain)) d")
	if diff != "0" {
		t.Fatalf("%s rows differ", diff)
	}
}
