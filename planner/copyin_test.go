package planner

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"tsdb/internal/sqlerr"
)

// copyChunks runs COPY … FROM STDIN with data cut into pieces of size n
// and returns the error of Finish, or of the first Write.
func copyChunks(t *testing.T, e *env, stmt string, data []byte, n int) error {
	t.Helper()
	ctx := context.Background()
	var ci *CopyIn
	err := e.s.Execute(ctx, stmt, func(r *Result) error {
		ci = r.CopyIn
		return nil
	})
	if err != nil || ci == nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	// Dispatch chunks about as large as the writes, so that rows cut
	// anywhere cross both payload and chunk boundaries.
	ci.feed.chunkBytes = n
	for len(data) > 0 {
		k := min(n, len(data))
		if err := ci.Write(append([]byte(nil), data[:k]...)); err != nil {
			return err
		}
		data = data[k:]
	}
	_, err = ci.Finish(ctx)
	return err
}

// TestCopyStreaming feeds the same rows in every chunk size down to one
// byte: rows cut anywhere across CopyData messages decode the same, and
// PostgreSQL's CSV rules hold (quotes anywhere, doubled quotes, newlines in
// quotes, a quoted NULL string is not NULL).
func TestCopyStreaming(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE c (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, ok BOOLEAN)")
	want := "2026-01-01 00:00:00|a|1.5|true;" +
		"2026-01-01 00:00:01|b,\"x\"\ny|NULL|false;" +
		"2026-01-01 00:00:02||2|NULL;" +
		"2026-01-01 00:00:03|NULL|-3|true;" +
		"2026-01-01 00:00:04|p\tq\\|4|false"
	texts := []struct{ stmt, data string }{
		{"COPY c FROM STDIN WITH (FORMAT csv)", "2026-01-01 00:00:00+00,a,1.5,t\r\n" +
			"2026-01-01 00:00:01+00,\"b,\"\"x\"\"\ny\",,f\n" +
			"2026-01-01 00:00:02+00,\"\",2,\n" +
			"2026-01-01 00:00:03+00,,-3,true\n" +
			"2026-01-01 00:00:04+00,p\"\t\"q\\,4,false"},
		{"COPY c FROM STDIN", "2026-01-01 00:00:00+00\ta\t1.5\tt\n" +
			"2026-01-01 00:00:01+00\tb,\"x\"\\ny\t\\N\tf\n" +
			"2026-01-01 00:00:02+00\t\t2\t\\N\n" +
			"2026-01-01 00:00:03+00\t\\N\t-3\ttrue\r\n" +
			"2026-01-01 00:00:04+00\tp\\tq\\\\\t4\tfalse\n\\.\nignored after the end marker"},
	}
	// pgx-style binary: header, rows, no trailer.
	bin := append([]byte(nil), binaryCopySignature...)
	bin = binary.BigEndian.AppendUint32(bin, 0)
	bin = binary.BigEndian.AppendUint32(bin, 0)
	type binRow struct {
		sec  int64
		host *string
		v    *float64
		ok   *bool
	}
	str := func(s string) *string { return &s }
	flt := func(f float64) *float64 { return &f }
	bl := func(b bool) *bool { return &b }
	rows := []binRow{
		{0, str("a"), flt(1.5), bl(true)},
		{1, str("b,\"x\"\ny"), nil, bl(false)},
		{2, str(""), flt(2), nil},
		{3, nil, flt(-3), bl(true)},
		{4, str("p\tq\\"), flt(4), bl(false)},
	}
	base := (int64(1767225600) - 946684800) * 1_000_000 // 2026-01-01 in PostgreSQL's epoch
	for _, r := range rows {
		bin = binary.BigEndian.AppendUint16(bin, 4)
		bin = binary.BigEndian.AppendUint32(bin, 8)
		bin = binary.BigEndian.AppendUint64(bin, uint64(base+r.sec*1_000_000))
		if r.host == nil {
			bin = binary.BigEndian.AppendUint32(bin, math.MaxUint32)
		} else {
			bin = binary.BigEndian.AppendUint32(bin, uint32(len(*r.host)))
			bin = append(bin, *r.host...)
		}
		if r.v == nil {
			bin = binary.BigEndian.AppendUint32(bin, math.MaxUint32)
		} else {
			bin = binary.BigEndian.AppendUint32(bin, 8)
			bin = binary.BigEndian.AppendUint64(bin, math.Float64bits(*r.v))
		}
		if r.ok == nil {
			bin = binary.BigEndian.AppendUint32(bin, math.MaxUint32)
		} else {
			bin = binary.BigEndian.AppendUint32(bin, 1)
			b := byte(0)
			if *r.ok {
				b = 1
			}
			bin = append(bin, b)
		}
	}
	cases := append(texts, struct{ stmt, data string }{"COPY c FROM STDIN WITH (FORMAT binary)", string(bin)})
	for _, tc := range cases {
		for _, n := range []int{1, 2, 3, 7, 13, 64, 1 << 20} {
			e.must("DELETE FROM c")
			if err := copyChunks(t, e, tc.stmt, []byte(tc.data), n); err != nil {
				t.Fatalf("%s in chunks of %d: %v", tc.stmt, n, err)
			}
			if got := e.rows("SELECT time, host, v, ok FROM c ORDER BY time"); got != want {
				t.Fatalf("%s in chunks of %d:\n got %q\nwant %q", tc.stmt, n, got, want)
			}
		}
	}

	// A bad row anywhere fails the whole COPY, whatever the chunking.
	e.must("DELETE FROM c")
	bad := strings.Repeat("2026-01-01 00:00:00+00,a,1,t\n", 100) + "2026-01-01 00:00:00+00,a,x,t\n"
	for _, n := range []int{1, 50, 1 << 20} {
		if err := copyChunks(t, e, "COPY c FROM STDIN WITH (FORMAT csv)", []byte(bad), n); err == nil || !strings.Contains(err.Error(), "line 101") {
			t.Fatalf("bad row in chunks of %d: %v", n, err)
		}
	}
	if err := copyChunks(t, e, "COPY c FROM STDIN WITH (FORMAT csv)", []byte("2026-01-01,\"open\n"), 4); err == nil {
		t.Fatal("unterminated quoted field accepted")
	}
	if got := e.rows("SELECT count(*) FROM c"); got != "0" {
		t.Fatalf("failed COPYs left %s rows", got)
	}
}

// TestCopyReusesChunkBuffers copies thousands of distinct rows in small
// chunks, so that the decoders' input buffers are handed back and refilled
// many times: every stored value must still be the one its row sent, in
// each format.
func TestCopyReusesChunkBuffers(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE c (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION)")
	const n = 3000
	var csv, text strings.Builder
	for i := range n {
		// Quoted and plain fields, and a line ending in CRLF now and then.
		if i%3 == 0 {
			fmt.Fprintf(&csv, "2026-01-01 00:%02d:%02d+00,\"host-%d\",%d.25\n", i/60%60, i%60, i, i)
		} else if i%3 == 1 {
			fmt.Fprintf(&csv, "2026-01-01 00:%02d:%02d+00,host-%d,%d.25\n", i/60%60, i%60, i, i)
		} else {
			fmt.Fprintf(&csv, "2026-01-01 00:%02d:%02d+00,host-%d,%d.25\r\n", i/60%60, i%60, i, i)
		}
		fmt.Fprintf(&text, "2026-01-02 00:%02d:%02d+00\thost-%d\t%d.25\n", i/60%60, i%60, i, i)
	}
	for _, tc := range []struct{ stmt, data string }{
		{"COPY c FROM STDIN WITH (FORMAT csv)", csv.String()},
		{"COPY c FROM STDIN", text.String()},
	} {
		for _, chunk := range []int{97, 4096} {
			e.must("DELETE FROM c")
			if err := copyChunks(t, e, tc.stmt, []byte(tc.data), chunk); err != nil {
				t.Fatalf("%s in chunks of %d: %v", tc.stmt, chunk, err)
			}
			want := fmt.Sprintf("%d|%d|0", n, n)
			got := e.rows("SELECT count(*), count(DISTINCT host), count(*) FILTER (WHERE host <> 'host-' || CAST(v - 0.25 AS BIGINT)) FROM c")
			if got != want {
				t.Fatalf("%s in chunks of %d: count, distinct hosts, hosts not matching their value = %s, want %s", tc.stmt, chunk, got, want)
			}
		}
	}
}

// TestCopyStagesWhileStreaming checks that decoded chunks reach the WAL
// (staged) while the COPY is still streaming, invisible until Finish, and
// that a bad row after them, or the table dropped meanwhile, leaves
// nothing, staged rows included.
func TestCopyStagesWhileStreaming(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"commit", "bad row", "dropped"} {
		fail := mode != "commit"
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.must("CREATE TABLE c (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)")
			var ci *CopyIn
			if err := e.s.Execute(ctx, "COPY c FROM STDIN WITH (FORMAT csv)", func(r *Result) error {
				ci = r.CopyIn
				return nil
			}); err != nil || ci == nil {
				t.Fatal(err)
			}
			ci.feed.chunkBytes = 64
			sent := 0
			row := func() []byte {
				sent++
				return fmt.Appendf(nil, "2026-01-01 00:%02d:%02d+00,%d\n", sent/60%60, sent%60, sent)
			}
			// Each Write dispatches a chunk and stages those decoded by then.
			deadline := time.Now().Add(10 * time.Second)
			for ci.feed.staged == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no chunk was staged while the COPY streamed")
				}
				if err := ci.Write(append(append(row(), row()...), row()...)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			snap, err := e.store.Snapshot(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Batches) != 0 {
				t.Fatalf("%d batches visible while the COPY streams", len(snap.Batches))
			}
			switch mode {
			case "bad row":
				if err := ci.Write([]byte("2026-01-01 01:00:00+00,x\n")); err != nil {
					t.Fatal(err)
				}
			case "dropped":
				if _, err := e.store.DropTable(ctx, "c", false); err != nil {
					t.Fatal(err)
				}
				// Rows go on arriving; staging them fails, and so does
				// every later Write and Finish.
				for i := 0; i < 1000 && ci.Write(append(row(), row()...)) == nil; i++ {
					time.Sleep(time.Millisecond)
				}
				e.must("CREATE TABLE c (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)")
			}
			n, err := ci.Finish(ctx)
			want := fmt.Sprint(sent)
			if fail {
				want = "0"
				if err == nil {
					t.Fatal("bad row accepted")
				}
			} else if err != nil || n != int64(sent) {
				t.Fatalf("finish: %d %v, want %d rows", n, err, sent)
			}
			if got := e.rows("SELECT count(*) FROM c"); got != want {
				t.Fatalf("%s rows after the COPY, want %s", got, want)
			}
		})
	}
}

func TestUnescapeCopy(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, "plain"},
		{`a\tb\nc\\d`, "a\tb\nc\\d"},
		{`e\x41\101`, "eAA"},     // hex and octal
		{`\x4`, "\x04"},          // one hex digit
		{`\x4g`, "\x04g"},        // a hex escape ends at a non-digit
		{`\xg`, "xg"},            // \x without a digit is an x
		{`\1234`, "S4"},          // at most three octal digits
		{`\0`, "\x00"},           // decoded; refused later as text
		{`\8`, "8"},              // not octal: the character itself
		{`end\`, `end\`},         // a trailing backslash stays
		{`\xff\xfe`, "\xff\xfe"}, // bytes, refused later as text
		{`\q\.\N`, "q.N"},        // other characters stand for themselves
		{`\\x41`, `\x41`},        // an escaped backslash is not an escape
	}
	for _, tt := range tests {
		if got := string(unescapeCopy(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("unescapeCopy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSplitPlainAgreesWithGeneral splits random lines with both
// splitters, CSV's and the text format's: where the word-at-a-time one
// takes a line (no quote or backslash, no '\r' before its newline) its
// fields, NULLs and line end must be the general one's, for delimiters at
// every offset in a word, lines shorter and longer than a word, a last
// line without a newline, other delimiters and NULL strings.
func TestSplitPlainAgreesWithGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	alphabet := []byte("ab,;|\t\"\r\n\\xyz0123456789.-")
	for _, tc := range []struct {
		o       copyOptions
		special byte
	}{
		{copyOptions{delim: ',', quote: '"', null: ""}, '"'},
		{copyOptions{delim: ';', quote: '\'', null: "NA"}, '\''},
		{copyOptions{delim: '|', quote: '"', null: "\\N"}, '"'},
		{copyOptions{delim: '\t', null: "\\N"}, '\\'},
		{copyOptions{delim: ',', null: ""}, '\\'},
		{copyOptions{delim: '|', null: "NA"}, '\\'},
	} {
		o := tc.o
		general := func(d *chunkDecoder, line []byte) (int, error) {
			if tc.special == '\\' {
				return d.splitEscapedText(line)
			}
			return d.splitQuotedCSV(line)
		}
		plain, gen := &chunkDecoder{c: &CopyIn{opts: o}}, &chunkDecoder{c: &CopyIn{opts: o}}
		taken := 0
		for range 200_000 {
			n := rng.IntN(40)
			if rng.IntN(8) == 0 {
				n = rng.IntN(300)
			}
			line := make([]byte, n)
			for i := range line {
				// Mostly plain text and delimiters; now and then a quote,
				// backslash, '\r' or newline anywhere.
				switch r := rng.IntN(40); {
				case r == 0:
					line[i] = alphabet[rng.IntN(len(alphabet))]
				case r < 8:
					line[i] = o.delim
				default:
					line[i] = "hostabc0123456789.-NA"[rng.IntN(21)]
				}
			}
			if rng.IntN(4) != 0 {
				line = append(line, '\n')
			}
			line = append(line, "next,line\n"[:rng.IntN(11)]...)
			end, ok := plain.splitPlain(line, tc.special)
			if !ok {
				continue
			}
			taken++
			wantEnd, err := general(gen, line)
			if err != nil {
				t.Fatalf("%q: general splitter failed: %v", line, err)
			}
			if end != wantEnd || len(plain.fields) != len(gen.fields) {
				t.Fatalf("%q (%c): plain split ends at %d with %d fields, general at %d with %d", line, o.delim, end, len(plain.fields), wantEnd, len(gen.fields))
			}
			for i, f := range plain.fields {
				g := gen.fields[i]
				// A NULL's bytes are never read.
				if (!f.null && string(f.b) != string(g.b)) || f.null != g.null || f.escaped != g.escaped {
					t.Fatalf("%q (%c): field %d is %q null %v, general %q null %v", line, o.delim, i, f.b, f.null, g.b, g.null)
				}
			}
		}
		if taken < 100_000 {
			t.Fatalf("the plain splitter took only %d of 200,000 lines", taken)
		}
	}
}

// TestCopyOptionsRefused checks that COPY refuses, with 22023 as
// PostgreSQL does, the options that would make rows ambiguous, and takes
// their neighbours.
func TestCopyOptionsRefused(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE o (time TIMESTAMPTZ NOT NULL, v DOUBLE PRECISION)")
	for _, tc := range []struct {
		opts string
		ok   bool
	}{
		{"(FORMAT csv, DELIMITER E'\\n')", false},
		{"(FORMAT csv, DELIMITER E'\\r')", false},
		{"(DELIMITER E'\\n')", false},
		{"(FORMAT csv, NULL E'a\\nb')", false},
		{"(DELIMITER '\\')", false},
		{"(DELIMITER 'x')", false},
		{"(DELIMITER '.')", false},
		{"(FORMAT csv, DELIMITER 'x')", true},
		{"(FORMAT csv, DELIMITER '\"')", false},
		{"(FORMAT csv, QUOTE ';', DELIMITER ';')", false},
		{"(FORMAT csv, NULL 'a,b')", false},
		{"(NULL 'a|b', DELIMITER '|')", false},
		{"(FORMAT csv, DELIMITER ';', QUOTE '''')", true},
		{"(DELIMITER '|')", true},
	} {
		var ci *CopyIn
		err := e.s.Execute(context.Background(), "COPY o FROM STDIN "+tc.opts, func(r *Result) error {
			ci = r.CopyIn
			return nil
		})
		if ci != nil {
			if _, ferr := ci.Finish(context.Background()); ferr != nil {
				t.Fatalf("COPY … %s without rows: %v", tc.opts, ferr)
			}
		}
		if tc.ok && err != nil {
			t.Errorf("COPY … %s refused: %v", tc.opts, err)
		}
		if !tc.ok && sqlerr.Code(err) != sqlerr.InvalidParameterValue {
			t.Errorf("COPY … %s: %v, want SQLSTATE 22023", tc.opts, err)
		}
	}
}
