package lineproto

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in, precision, want string
	}{
		{"cpu,host=a,region=eu usage=0.5,n=3i,ok=t,msg=\"hi \\\"x\\\"\" 1767225600000000000", "", `cpu map[host:a region:eu] [usage f 0.5 n i 3 ok b true msg s hi "x"] 1767225600000000`},
		{"cpu usage=1", "", `cpu map[] [usage f 1] 1767225600000000`},
		{"my\\ cpu,host=a\\,b value=2u 1767225600", "s", `my cpu map[host:a,b] [value i 2] 1767225600000000`},
		{"old v=1 -1", "ms", `old map[] [v f 1] -1000`},
		{"old v=1 -1", "ns", `old map[] [v f 1] -1`},
	}
	for _, tt := range tests {
		pts, bad, err := Parse([]byte(tt.in), tt.precision, now)
		if err != nil || len(bad) > 0 || len(pts) != 1 {
			t.Fatalf("%q: %v %v %v", tt.in, pts, bad, err)
		}
		p := pts[0]
		var fs []any
		for _, f := range p.Fields {
			fs = append(fs, f.Key, string(f.Kind))
			switch f.Kind {
			case 'f':
				fs = append(fs, f.F)
			case 'i':
				fs = append(fs, f.I)
			case 'b':
				fs = append(fs, f.B)
			case 's':
				fs = append(fs, f.S)
			}
		}
		if got := fmt.Sprintf("%s %v %v %d", p.Measurement, tagMap(p), fs, p.Micros); got != tt.want {
			t.Errorf("%q:\n got  %s\n want %s", tt.in, got, tt.want)
		}
	}
	// A bad line is reported with its number and text; the lines around
	// it are read.
	for _, bad := range []string{"cpu", "cpu v=", "cpu v=abc", "cpu v=\"open", "cpu,host v=1", "cpu v=1 notanumber", "cpu v=NaN"} {
		pts, errs, err := Parse([]byte("ok v=1\n"+bad+"\nok v=2"), "", now)
		if err != nil || len(pts) != 2 || len(errs) != 1 || errs[0].Line != 2 || errs[0].Text != bad {
			t.Errorf("%q: %d points, %v, %v; want the two good lines and an error on line 2", bad, len(pts), errs, err)
		}
	}
	if _, _, err := Parse([]byte("ok v=1"), "d", now); !errors.Is(err, ErrPrecision) {
		t.Errorf("precision d: %v", err)
	}
	for prec, micros := range map[string]int64{"m": 60_000_000, "h": 3_600_000_000, "second": 1_000_000} {
		pts, _, err := Parse([]byte("ok v=1 2"), prec, now)
		if err != nil || len(pts) != 1 || pts[0].Micros != 2*micros {
			t.Errorf("precision %s: %v %v", prec, pts, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=0.5,n=3i,s=\"x\" 1767225600000000000\nmem free=1u"))
	f.Add([]byte("log,host=a\"b msg=\"one\ntwo \\\"q\\\"\" 1\nlog msg=\"open\nok v=1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, bad, err := Parse(data, "", time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		samePlainReading(t, data)
		// Every point and every bad line names a line of the body, in
		// increasing order.
		lines := bytes.Count(data, []byte("\n")) + 1
		last := 0
		for _, p := range pts {
			if p.Line < 1 || p.Line > lines || p.Line <= last {
				t.Fatalf("point on line %d of %d (after %d)", p.Line, lines, last)
			}
			last = p.Line
		}
		for _, b := range bad {
			if b.Line < 1 || b.Line > lines {
				t.Fatalf("bad line %d of %d", b.Line, lines)
			}
		}
	})
}

// Newlines inside string field values belong to them; quotes in the
// measurement and tags are plain characters; a stray quote spoils its own
// line only.
func TestLogicalLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	body := "log,host=a msg=\"first\nsecond \\\"q\\\"\" 1\n" + // lines 1-2
		"cpu,host=a\"b,dc=x\\ y v=1 2\n" + // line 3
		"\n# a comment with \"a quote\n" + // lines 4-5
		"log,host=c msg=\"a\nb\nc\",n=1i 4\n" + // lines 6-8
		"log msg=\"open\n" + // line 9: never closed
		"ok v=1 3" // line 10
	pts, bad, err := Parse([]byte(body), "ns", now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, fmt.Sprintf("%d:%s:%v:%q", p.Line, p.Measurement, tagMap(p), p.Fields[0].S))
	}
	want := []string{
		`1:log:map[host:a]:"first\nsecond \"q\""`,
		`3:cpu:map[dc:x y host:a"b]:""`,
		`6:log:map[host:c]:"a\nb\nc"`,
		`10:ok:map[]:""`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("points:\n got  %q\n want %q", got, want)
	}
	if len(bad) != 1 || bad[0].Line != 9 {
		t.Errorf("bad lines %v, want line 9", bad)
	}
}

// In a string field value only \" and \\ are escapes, as InfluxDB reads
// them: \n, \t and \r stay as written (clients that escape a newline as
// \n read back what InfluxDB would give them).
func TestStringEscapes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		`m s="a\nb"`:           `a\nb`,
		`m s="tab\there\r"`:    `tab\there\r`,
		`m s="q\"q \\ w\\n"`:   `q"q \ w\n`,
		"m s=\"raw\nnewline\"": "raw\nnewline",
		`m s="open\n`:          "",
	} {
		pts, bad, err := Parse([]byte(in), "", now)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if len(bad) != 1 {
				t.Errorf("%q: %v %v, want an unterminated string", in, pts, bad)
			}
			continue
		}
		if len(bad) > 0 || len(pts) != 1 || pts[0].Fields[0].S != want {
			t.Errorf("%q: %v %v, want %q", in, pts, bad, want)
		}
	}
}

// BenchmarkParse reads Telegraf's cpu input as it sends it: 5,000 lines
// of 5 tags and 10 float fields with nanosecond timestamps, by a new
// parser each time and by one parser body after body (as the handler's).
func BenchmarkParse(b *testing.B) {
	var body bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&body, "cpu,cpu=cpu%d,host=host_%d,region=eu-west-1,datacenter=eu-west-1a,rack=%d usage_user=%d.25,usage_system=1.5,usage_idle=90.125,usage_nice=0,usage_iowait=0.5,usage_irq=0,usage_softirq=0.25,usage_steal=0,usage_guest=0,usage_guest_nice=0 %d\n",
			i%8, i%100, i%40, i%97, 1767225600000000000+int64(i)*10_000_000_000)
	}
	now := time.Now()
	for _, reused := range []bool{false, true} {
		b.Run(map[bool]string{false: "new", true: "reused"}[reused], func(b *testing.B) {
			b.SetBytes(int64(body.Len()))
			b.ReportAllocs()
			ps := newParser()
			for b.Loop() {
				if !reused {
					ps = newParser()
				}
				pts, bad, err := ps.parse(body.Bytes(), 1, now)
				if err != nil || len(bad) > 0 || len(pts) != 5000 {
					b.Fatal(len(pts), bad, err)
				}
			}
		})
	}
}

// tagMap is a point's tags as a map, which prints sorted.
func tagMap(p Point) map[string]string {
	m := map[string]string{}
	for _, t := range p.Tags {
		m[t.Key] = t.Value
	}
	return m
}

// samePlainReading checks that a plain body (plainBody) read by one
// decoder gives what reading it line by line gives: the same points, on
// the same lines, and the same bad lines with the same messages.
func samePlainReading(t *testing.T, data []byte) {
	t.Helper()
	if !plainBody(data) {
		return
	}
	now := time.Unix(0, 0)
	one, byLine := newParser(), newParser()
	one.unit, one.now, byLine.unit, byLine.now = 1, now, 1, now
	pts, bad := one.body(data)
	wantPts, wantBad := byLine.lines(data)
	if len(pts) == 0 && len(wantPts) == 0 {
		pts, wantPts = nil, nil
	}
	if !reflect.DeepEqual(pts, wantPts) {
		t.Fatalf("%q: one decoder read\n%+v\nline by line\n%+v", data, pts, wantPts)
	}
	if len(bad) != len(wantBad) {
		t.Fatalf("%q: one decoder refused %d lines, line by line %d: %v / %v", data, len(bad), len(wantBad), bad, wantBad)
	}
	for i := range bad {
		b, w := *bad[i], *wantBad[i]
		// The words may differ at the end of a line, where one decoder
		// finds a newline and a decoder of the line alone the end of
		// its text ("found '\n'" against "found end of input"); the
		// column they name may not.
		if i := strings.LastIndex(w.Msg, "(column"); i >= 0 && strings.HasSuffix(b.Msg, w.Msg[i:]) {
			b.Msg = w.Msg
		}
		if b != w {
			t.Fatalf("%q: one decoder: %v\nline by line: %v", data, bad[i], wantBad[i])
		}
	}
}

// TestPlainBody reads plain bodies both ways: good and bad lines mixed,
// blank lines, comments, leading and trailing spaces, lines without a
// timestamp and the InfluxData corpus' plain cases (in TestInfluxDataCorpus).
func TestPlainBody(t *testing.T) {
	bodies := []string{
		"cpu,host=a usage=0.5,n=3i 1767225600000000000\nmem free=1u\n",
		"\n\ncpu v=1 1\n   \n# comment\n  cpu v=2 2  \n\tcpu v=3 3\ncpu v=4\n",
		",bad v=1 1\ncpu v=1 2\ncpu,host=a,host=b v=1 3\ncpu v= 4\ncpu v=1 nottime\ncpu v=2 5\n",
		"cpu v=18446744073709551615u 1\ncpu v=1 99999999999999999999\ncpu,t=x v=1i,w=true,x=F 7",
		"cpu\ncpu \ncpu,t v=1\ncpu,=x v=1\n,\n=\n cpu v=1 1 extra\ncpu v=1 1\n",
		"a,b=c d=1 1\na,b=d d=2 2\na,c=d d=3 3\na d=4,e=5 4\nb d=5 5\n",
		"cpu v=1 1\n# no newline at the end",
		// Values the decoder refuses, among good ones: its words and columns.
		"cpu a=1.5,v=1.2.3 1\ncpu v=-- 2\n  cpu v=1e999 3\ncpu v=12abc 4\ncpu v=99999999999999999999i 5\ncpu v=-1u 6\ncpu v=tru 7\ncpu v=1,w=2.5e3,x=-.5,y=5. 8\n",
		"cpu v=37.954254324644715,w=9007199254740993,x=0.00000000000000000000001,y=18446744073709551615 1\n",
	}
	for _, b := range bodies {
		samePlainReading(t, []byte(b))
	}
	// Many bad lines: each named once, on its own line.
	var many bytes.Buffer
	for i := range 2000 {
		if i%2 == 0 {
			fmt.Fprintf(&many, ",bad%d v=1\n", i)
		} else {
			fmt.Fprintf(&many, "cpu v=%d %d\n", i, i)
		}
	}
	samePlainReading(t, many.Bytes())
	pts, bad, _ := Parse(many.Bytes(), "", time.Unix(0, 0))
	if len(pts) != 1000 || len(bad) != 1000 || bad[999].Line != 1999 || bad[999].Text != ",bad1998 v=1" || pts[999].Line != 2000 {
		t.Fatalf("%d points, %d bad, last bad %v", len(pts), len(bad), bad[len(bad)-1])
	}
}

// A parser reading body after body (as the handler's do) reads each as a
// new parser would: nothing of the body before shows through its reused
// chunks, points and names.
func TestParserReuse(t *testing.T) {
	now := time.Unix(0, 0)
	var big bytes.Buffer
	for i := range 7000 {
		fmt.Fprintf(&big, "cpu,host=h%d,dc=d%d a=%d,b=%di,c=true %d\n", i%50, i%3, i, i, i)
	}
	bodies := []string{
		big.String(),
		"mem,host=x free=1i 1\ncpu,host=h1 a=2 2\n",
		"log,host=a msg=\"one\ntwo\" 1\ncpu,host=\\ h a=1 2\n,bad v=1\n",
		big.String()[:len(big.String())/3],
		"cpu a=1 1\ncpu,host=h1,dc=d1 a=1,b=2i,c=false 2\n",
	}
	ps := newParser()
	for round := range 2 {
		for i, b := range bodies {
			if round == 1 {
				ps.release() // as the handler does between requests
			}
			got, gotBad, err := ps.parse([]byte(b), 1, now)
			if err != nil {
				t.Fatal(err)
			}
			want, wantBad, _ := Parse([]byte(b), "ns", now)
			for j := range want {
				want[j].keys, got[j].keys = nil, nil
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotBad, wantBad) {
				t.Fatalf("round %d body %d: a reused parser read %d points (%d bad), a new one %d (%d bad)", round, i, len(got), len(gotBad), len(want), len(wantBad))
			}
		}
	}
}

// A released parser holds nothing of the body it read: no points, no
// strings in its chunk, no slice of points grown past the hint.
func TestParserRelease(t *testing.T) {
	var body bytes.Buffer
	for i := range maxPointsHint + 10 {
		fmt.Fprintf(&body, "log,host=h%d msg=\"line %d\" %d\n", i, i, i)
	}
	ps := newParser()
	pts, bad, err := ps.parse(body.Bytes(), 1, time.Unix(0, 0))
	if err != nil || len(bad) > 0 || len(pts) != maxPointsHint+10 {
		t.Fatal(len(pts), bad, err)
	}
	kept := ps.fieldChunk[:1]
	ps.release()
	if ps.points != nil || len(ps.tagChunk) != 0 || len(ps.fieldChunk) != 0 || kept[0].S != "" || ps.prev.Tags != nil {
		t.Fatalf("released parser still holds %d points, %d tags, %d fields, %q", cap(ps.points), len(ps.tagChunk), len(ps.fieldChunk), kept[0].S)
	}
	// A body of blank lines reserves points only as they come.
	if got := ps.pointsFor(1 << 30); cap(got) > maxPointsHint {
		t.Fatalf("%d points reserved", cap(got))
	}
}
