package session

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqlerr"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
)

func TestEncodeText(t *testing.T) {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		v    any
		oid  uint32
		loc  *time.Location
		want string
		null bool
	}{
		{"null", nil, 25, nil, "", true},
		{"bool true", true, 16, nil, "t", false},
		{"bool false", false, 16, nil, "f", false},
		{"int64", int64(-42), 20, nil, "-42", false},
		{"float shortest", 0.1, 701, nil, "0.1", false},
		{"float exponent", 1e20, 701, nil, "1e+20", false},
		{"float small", 1.5e-7, 701, nil, "1.5e-07", false},
		{"float whole", 3.0, 701, nil, "3", false},
		// PostgreSQL's float8 is fixed from 1e-4 up to 1e15: epoch
		// seconds print as a number, not 1.709251201e+09.
		{"float epoch", 1709251201.0, 701, nil, "1709251201", false},
		{"float million", 1234567.0, 701, nil, "1234567", false},
		{"float largest fixed", 999999999999999.9, 701, nil, "999999999999999.9", false},
		{"float 1e15", 1e15, 701, nil, "1e+15", false},
		{"float 1e-4", 1e-4, 701, nil, "0.0001", false},
		{"float below 1e-4", 9.5e-5, 701, nil, "9.5e-05", false},
		{"float negative", -1234.5, 701, nil, "-1234.5", false},
		{"float zero", 0.0, 701, nil, "0", false},
		{"float negative zero", math.Copysign(0, -1), 701, nil, "-0", false},
		{"float32 million", float32(1234567), 700, nil, "1.234567e+06", false},
		{"nan", math.NaN(), 701, nil, "NaN", false},
		{"inf", math.Inf(-1), 701, nil, "-Infinity", false},
		{"float32", float32(0.1), 700, nil, "0.1", false},
		{"timestamptz utc", ts, 1184, time.UTC, "2026-01-01 00:00:00+00", false},
		{"timestamptz micros", ts.Add(123450 * time.Microsecond), 1184, time.UTC, "2026-01-01 00:00:00.12345+00", false},
		{"timestamptz berlin", ts, 1184, berlin, "2026-01-01 01:00:00+01", false},
		{"timestamptz half hour zone", ts, 1184, kolkata, "2026-01-01 05:30:00+05:30", false},
		{"timestamp", ts.Add(time.Second), 1114, nil, "2026-01-01 00:00:01", false},
		{"date", ts, 1082, nil, "2026-01-01", false},
		// DuckDB's infinities, as the driver turns them into times.
		{"timestamptz infinity", time.UnixMicro(math.MaxInt64), 1184, berlin, "infinity", false},
		{"timestamp -infinity", time.UnixMicro(-math.MaxInt64), 1114, nil, "-infinity", false},
		{"date infinity", time.Unix(math.MaxInt32*86400, 0), 1082, nil, "infinity", false},
		{"date -infinity", time.Unix(-math.MaxInt32*86400, 0), 1082, nil, "-infinity", false},
		{"bytea", []byte{0xde, 0xad}, 17, nil, `\xdead`, false},
		{"uuid as the driver scans it", []byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, 2950, nil, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", false},
		{"decimal", duckdb.Decimal{Width: 5, Scale: 2, Value: big.NewInt(-12345)}, 1700, nil, "-123.45", false},
		{"decimal keeps its scale", duckdb.Decimal{Width: 10, Scale: 3, Value: big.NewInt(1500)}, 1700, nil, "1.500", false},
		// numeric without precision (DECIMAL(38,10)) prints the digits it has.
		{"numeric", duckdb.Decimal{Width: 38, Scale: 10, Value: big.NewInt(12345600000)}, 1700, nil, "1.23456", false},
		{"numeric whole", duckdb.Decimal{Width: 38, Scale: 10, Value: big.NewInt(-70000000000)}, 1700, nil, "-7", false},
		{"numeric small", duckdb.Decimal{Width: 38, Scale: 10, Value: big.NewInt(5)}, 1700, nil, "0.0000000005", false},
		{"interval", duckdb.Interval{Months: 14, Days: 3, Micros: 4*3600e6 + 5*60e6 + 6.5e6}, 1186, nil, "1 year 2 mons 3 days 04:05:06.5", false},
		{"interval zero", duckdb.Interval{}, 1186, nil, "00:00:00", false},
		// Signs and plurals as PostgreSQL 15 printed the same intervals.
		{"interval -1 day", duckdb.Interval{Days: -1}, 1186, nil, "-1 days", false},
		{"interval 1 day", duckdb.Interval{Days: 1}, 1186, nil, "1 day", false},
		{"interval -1 day 2 hours", duckdb.Interval{Days: -1, Micros: 2 * 3600e6}, 1186, nil, "-1 days +02:00:00", false},
		{"interval 10 mons 3 days -04:05:06", duckdb.Interval{Months: 10, Days: 3, Micros: -(4*3600e6 + 5*60e6 + 6e6)}, 1186, nil, "10 mons 3 days -04:05:06", false},
		{"interval 1 mon -1 day", duckdb.Interval{Months: 1, Days: -1}, 1186, nil, "1 mon -1 days", false},
		{"interval -00:00:01.5", duckdb.Interval{Micros: -1.5e6}, 1186, nil, "-00:00:01.5", false},
		{"interval all negative", duckdb.Interval{Months: -13, Days: -1, Micros: -3600e6}, 1186, nil, "-1 years -1 mons -1 days -01:00:00", false},
		{"array", []any{int64(1), nil, "a b"}, 25, nil, `{1,NULL,"a b"}`, false},
		// JSON arrives decoded and goes out as JSON.
		{"json string", "s", 114, nil, `"s"`, false},
		{"json array", []any{1.0, 2.5}, 114, nil, `[1,2.5]`, false},
		{"json object", map[string]any{"a": "<b>"}, 114, nil, `{"a":"<b>"}`, false},
		{"json number", 7.0, 114, nil, `7`, false},
	}
	for _, tt := range tests {
		got := encodeText(tt.v, tt.oid, textStyle{Loc: tt.loc, ExtraDigits: 1})
		if tt.null != (got == nil) || string(got) != tt.want {
			t.Errorf("%s: encodeText(%v) = %q (nil=%v), want %q", tt.name, tt.v, got, got == nil, tt.want)
		}
	}
	// DateStyle's other output styles, as PostgreSQL 15 wrote them;
	// infinities are the same in every style, times of day keep ISO.
	postgres := textStyle{Loc: berlin, ExtraDigits: 1, Dates: pgdatetime.PostgresDates, Order: pgdatetime.MDY}
	german := textStyle{Loc: berlin, ExtraDigits: 1, Dates: pgdatetime.GermanDates, Order: pgdatetime.DMY}
	for _, tt := range []struct {
		v    any
		oid  uint32
		st   textStyle
		want string
	}{
		{ts, 1184, postgres, "Thu Jan 01 01:00:00 2026 CET"},
		{ts, 1114, postgres, "Thu Jan 01 00:00:00 2026"},
		{ts, 1082, postgres, "01-01-2026"},
		{ts, 1184, german, "01.01.2026 01:00:00 CET"},
		{time.UnixMicro(math.MaxInt64), 1184, german, "infinity"},
		{time.Unix(-math.MaxInt32*86400, 0), 1082, postgres, "-infinity"},
		{[]any{ts}, 1185, postgres, `{"Thu Jan 01 01:00:00 2026 CET"}`},
	} {
		if got := string(encodeText(tt.v, tt.oid, tt.st)); got != tt.want {
			t.Errorf("%v (%d) in %v: %q, want %q", tt.v, tt.oid, tt.st.Dates, got, tt.want)
		}
	}
}

func TestNumericBinary(t *testing.T) {
	tests := []struct {
		in   string
		want []uint16 // ndigits, weight, sign, dscale, digits...
	}{
		{"0", []uint16{0, 0, 0, 0}},
		{"1", []uint16{1, 0, 0, 0, 1}},
		{"12345.678", []uint16{3, 1, 0, 3, 1, 2345, 6780}},
		{"-0.5", []uint16{1, 0xFFFF, 0x4000, 1, 5000}},
		{"10000", []uint16{1, 1, 0, 0, 1}},
		{"3298534883331", []uint16{4, 3, 0, 0, 3, 2985, 3488, 3331}},
	}
	for _, tt := range tests {
		b, err := encodeNumeric(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		var got []uint16
		for i := 0; i+1 < len(b); i += 2 {
			got = append(got, uint16(b[i])<<8|uint16(b[i+1]))
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("encodeNumeric(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeParamBinary(t *testing.T) {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 5000, time.UTC)
	raw, err := encodeBinary(ts, 1184)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeParam(raw, 1, 1184)
	if err != nil || !v.(time.Time).Equal(ts.Truncate(time.Microsecond)) {
		t.Fatalf("timestamptz round trip: %v %v", v, err)
	}
	for _, tt := range []struct {
		v   any
		oid uint32
	}{{int64(-5), 20}, {int64(7), 23}, {int64(3), 21}, {1.25, 701}, {true, 16}} {
		raw, err := encodeBinary(tt.v, tt.oid)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeParam(raw, 1, tt.oid)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.v) {
			t.Errorf("oid %d: %v -> %v (%v)", tt.oid, tt.v, got, err)
		}
	}
	if _, err := decodeParam([]byte{1, 2, 3}, 1, 20); err == nil {
		t.Error("short int8 accepted")
	}
	u := []byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	if got, err := decodeParam(u, 1, 2950); err != nil || got != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
		t.Errorf("binary uuid parameter: %v %v", got, err)
	}
}

func TestNumericBinaryRoundTrip(t *testing.T) {
	for _, in := range []string{"0", "1", "12345.678", "-0.5", "10000", "3298534883331", "0.0001", "-123456789.000123"} {
		b, err := encodeNumeric(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeNumeric(b)
		if err != nil || out != in {
			t.Errorf("numeric %s round trip gave %v (%v)", in, out, err)
		}
	}
}

// TestRowEncoder: values rendered into the shared buffer come out as
// encodeText and encodeBinary render them one by one, NULL stays apart from the empty
// string, and a row that outgrows the buffer is still whole.
func TestRowEncoder(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	rows := [][]any{
		{"", nil, int64(-7), 1.5, time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC)},
		{nil, "", long, float32(0.25), time.Date(2026, 1, 2, 3, 4, 5, 600000, time.UTC)},
		{"a", long + "y", []byte{1, 2}, math.Inf(-1), nil},
	}
	oids := []uint32{25, 25, 25, 701, 1184}
	var e rowEncoder
	for _, row := range rows {
		e.start(len(row))
		for i, v := range row {
			if i == 4 {
				if err := e.binary(v, oids[i]); err != nil {
					t.Fatal(err)
				}
				continue
			}
			e.text(v, oids[i], utcStyle())
		}
		got := e.row()
		for i, v := range row {
			want := encodeText(v, oids[i], utcStyle())
			if i == 4 {
				var err error
				if want, err = encodeBinary(v, oids[i]); err != nil {
					t.Fatal(err)
				}
			}
			if (got[i] == nil) != (want == nil) || string(got[i]) != string(want) {
				t.Fatalf("row %v value %d: %q (nil %v), want %q (nil %v)", row, i, got[i], got[i] == nil, want, want == nil)
			}
		}
	}
}

func TestCopyFields(t *testing.T) {
	tests := []struct {
		in        string
		csv, text string
	}{
		{"plain", "plain", "plain"},
		{"", `""`, ""},
		{`\N`, `"\N"`, `\\N`},
		{"a,b", `"a,b"`, `a\,b`},
		{`say "hi"`, `"say ""hi"""`, `say "hi"`},
		{"two\nlines\r", "\"two\nlines\r\"", `two\nlines\r`},
		{"tab\there", "tab\there", `tab\there`},
		{`back\slash`, `back\slash`, `back\\slash`},
	}
	for _, tt := range tests {
		if got := string(appendCSVField([]byte("x"), []byte(tt.in), ',', `\N`)); got != "x"+tt.csv {
			t.Errorf("CSV field of %q = %q, want %q", tt.in, got, "x"+tt.csv)
		}
		if got := string(appendTextField([]byte("x"), []byte(tt.in), ',')); got != "x"+tt.text {
			t.Errorf("text field of %q = %q, want %q", tt.in, got, "x"+tt.text)
		}
	}
}

// Binary dates count days from 2000-01-01, also for dates more than 292
// years away, where a time.Duration from 2000 would saturate.
func TestDateBinary(t *testing.T) {
	for _, tt := range []struct {
		d    time.Time
		want int32
	}{
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), -1},
		{time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), 9498},
		{time.Date(2500, 6, 30, 0, 0, 0, 0, time.UTC), 182802},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), -730119},
		{time.Unix(math.MaxInt32*86400, 0), math.MaxInt32},  // infinity
		{time.Unix(-math.MaxInt32*86400, 0), math.MinInt32}, // -infinity
	} {
		raw, err := encodeBinary(tt.d, 1082)
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(raw)); got != tt.want {
			t.Errorf("%s: %d days, want %d", tt.d.Format(time.DateOnly), got, tt.want)
		}
	}
	// Timestamps: PostgreSQL's infinities are the extremes of its count.
	for us, want := range map[int64]int64{math.MaxInt64: math.MaxInt64, -math.MaxInt64: math.MinInt64, 946684800000001: 1} {
		raw, err := encodeBinary(time.UnixMicro(us), 1184)
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(binary.BigEndian.Uint64(raw)); got != want {
			t.Errorf("timestamp %d µs: %d, want %d", us, got, want)
		}
	}
}

// A time of day goes as microseconds since midnight, as PostgreSQL sends
// it in binary.
func TestTimeBinary(t *testing.T) {
	for _, tt := range []struct {
		t    time.Time
		want int64
	}{
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(1970, 1, 1, 12, 0, 1, 500_000_000, time.UTC), 43_201_500_000},
		{time.Date(1970, 1, 1, 23, 59, 59, 999_999_000, time.UTC), 86_399_999_999},
	} {
		raw, err := encodeBinary(tt.t, 1083)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != 8 {
			t.Fatalf("%s: %d bytes, want 8", tt.t.Format(time.TimeOnly), len(raw))
		}
		if got := int64(binary.BigEndian.Uint64(raw)); got != tt.want {
			t.Errorf("%s: %d µs, want %d", tt.t.Format(time.TimeOnly), got, tt.want)
		}
	}
}

// An array goes in binary as PostgreSQL sends a one-dimensional array.
func TestArrayBinary(t *testing.T) {
	raw, err := encodeBinary([]any{int64(1), nil, int64(-3)}, 1016)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0, 0, 0, 1, // dimensions
		0, 0, 0, 1, // has NULLs
		0, 0, 0, 20, // int8
		0, 0, 0, 3, 0, 0, 0, 1, // length 3 from 1
		0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1,
		0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd,
	}
	if !bytes.Equal(raw, want) {
		t.Fatalf("int8[] {1,NULL,-3}: % x", raw)
	}
	raw, err = encodeBinary([]any{}, 1009)
	if err != nil || !bytes.Equal(raw, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25}) {
		t.Fatalf("empty text[]: % x, %v", raw, err)
	}
	if got := string(encodeText([]any{"a", "b c", nil}, 1009, utcStyle())); got != `{a,"b c",NULL}` {
		t.Fatalf("text[] in text: %s", got)
	}
	// A list of lists: one header with each dimension, then the
	// elements row by row.
	raw, err = encodeBinary([]any{[]any{int32(1), int32(2)}, []any{int32(3), nil}}, 1007)
	if err != nil {
		t.Fatal(err)
	}
	want = []byte{
		0, 0, 0, 2, // dimensions
		0, 0, 0, 1, // has NULLs
		0, 0, 0, 23, // int4
		0, 0, 0, 2, 0, 0, 0, 1, // 2 from 1
		0, 0, 0, 2, 0, 0, 0, 1, // 2 from 1
		0, 0, 0, 4, 0, 0, 0, 1,
		0, 0, 0, 4, 0, 0, 0, 2,
		0, 0, 0, 4, 0, 0, 0, 3,
		0xff, 0xff, 0xff, 0xff,
	}
	if !bytes.Equal(raw, want) {
		t.Fatalf("int4[] {{1,2},{3,NULL}}: % x", raw)
	}
	for _, ragged := range [][]any{
		{[]any{int32(1), int32(2)}, []any{int32(3)}},
		{[]any{int32(1)}, int32(2)},
		{int32(1), []any{int32(2)}},
	} {
		if _, err := encodeBinary(ragged, 1007); sqlerr.Code(err) != "2202E" {
			t.Fatalf("ragged %v: %v", ragged, err)
		}
	}
}

// BenchmarkAppendBinaryText is a text value in binary format, the fallback
// every collected result's text column takes: it must not search tables.
func BenchmarkAppendBinaryText(b *testing.B) {
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf, _, _ = appendBinary(buf[:0], "host_42", 25)
	}
}

// With extra_float_digits at 0 or below floats are written as
// PostgreSQL 15 wrote these (recorded side by side).
func TestAppendFloatDigits(t *testing.T) {
	for _, c := range []struct {
		f           float64
		bits, extra int
		want        string
	}{
		{1.1752011936438014, 64, 0, "1.1752011936438"},
		{1e200, 64, 0, "1e+200"},
		{0.30000000000000004, 64, 0, "0.3"},
		{123456789012345678, 64, 0, "1.23456789012346e+17"},
		{float64(float32(1.1)), 32, 0, "1.1"},
		{0.0001234, 64, 0, "0.0001234"},
		{float64(float32(3.14159265)), 32, 0, "3.14159"},
		{1.1752011936438014, 64, -3, "1.17520119364"},
		{123456789012345678, 64, -3, "1.23456789012e+17"},
		{float64(float32(3.14159265)), 32, -3, "3.14"},
		{0.30000000000000004, 64, 1, "0.30000000000000004"},
	} {
		if got := string(dialect.AppendFloat(nil, c.f, c.bits, c.extra)); got != c.want {
			t.Errorf("%v (float%d, extra_float_digits %d): got %s, want %s", c.f, c.bits, c.extra, got, c.want)
		}
	}
}
