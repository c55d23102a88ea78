package pgnumeric

import (
	"math/big"
	"strings"
	"testing"
)

// parse reads decimal text as a Value with the scale it is written with.
func parse(t *testing.T, s string) Value {
	t.Helper()
	scale := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		scale = len(s) - i - 1
		s = s[:i] + s[i+1:]
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad decimal %q", s)
	}
	return Value{V: v, Scale: scale}
}

// sums gives n, Σx, Σx² and the largest scale of inputs written as text.
func sums(t *testing.T, xs []string) (int64, Value, Value, int) {
	sum, sq, scale := Value{V: new(big.Int)}, Value{V: new(big.Int)}, 0
	for _, x := range xs {
		v := parse(t, x)
		scale = max(scale, v.Scale)
		s := max(sum.Scale, v.Scale)
		sum = Value{V: new(big.Int).Add(sum.Rescale(s).V, v.Rescale(s).V), Scale: s}
		p := Value{V: new(big.Int).Mul(v.V, v.V), Scale: 2 * v.Scale}
		s = max(sq.Scale, p.Scale)
		sq = Value{V: new(big.Int).Add(sq.Rescale(s).V, p.Rescale(s).V), Scale: s}
	}
	return int64(len(xs)), sum, sq, scale
}

// The expected answers are PostgreSQL 15's, from psql:
// SELECT avg(x), var_pop(x), var_samp(x), stddev_pop(x), stddev_samp(x)
// FROM (VALUES …) t(x).
func TestAggregatesAsPostgreSQL(t *testing.T) {
	for _, tc := range []struct {
		in                                       []string
		avg, varPop, varSamp, stddevPop, stddevS string
	}{
		{[]string{"1", "2", "4"}, "2.3333333333333333", "1.5555555555555556", "2.3333333333333333", "1.2472191289246471", "1.5275252316519467"},
		{[]string{"1.25", "2.5", "400000.125"}, "133334.625000000000", "35555244445.38541667", "53332866668.07812500", "188560.98335919", "230939.09731372"},
		{[]string{"0.00012", "0.00013"}, "0.000125000000000000000000", "0.0000000000250000000000000000", "0.0000000000500000000000000000", "0.0000050000000000000000000000", "0.0000070710678118654752440084"},
		{[]string{"-7", "-8"}, "-7.5000000000000000", "0.25000000000000000000", "0.50000000000000000000", "0.50000000000000000000", "0.70710678118654752440"},
		{[]string{"5"}, "5.0000000000000000", "0", "", "0", ""},
		{[]string{"0.5", "0.5"}, "0.50000000000000000000", "0", "0", "0", "0"},
	} {
		n, sum, sq, scale := sums(t, tc.in)
		if got := Avg(sum, n).String(); got != tc.avg {
			t.Errorf("avg%v = %s, PostgreSQL %s", tc.in, got, tc.avg)
		}
		for _, k := range []struct {
			kind Kind
			want string
		}{{VarPop, tc.varPop}, {VarSamp, tc.varSamp}, {StddevPop, tc.stddevPop}, {StddevSamp, tc.stddevS}} {
			got, ok := Variance(k.kind, n, sum, sq, scale)
			switch {
			case !ok && k.want != "":
				t.Errorf("kind %d of %v is NULL, PostgreSQL %s", k.kind, tc.in, k.want)
			case ok && got.String() != k.want:
				t.Errorf("kind %d of %v = %s, PostgreSQL %s", k.kind, tc.in, got, k.want)
			}
		}
	}
}

func TestAvgLargeAndRounding(t *testing.T) {
	for _, tc := range []struct {
		sum  string
		n    int64
		want string
	}{
		{"123456789012347", 2, "61728394506173.5000"},
		{"1500", 1000, "1.5000000000000000"},
		{"2", 3, "0.66666666666666666667"},
		{"-2", 3, "-0.66666666666666666667"},
		{"0", 4, "0.00000000000000000000"},
	} {
		if got := Avg(parse(t, tc.sum), tc.n).String(); got != tc.want {
			t.Errorf("%s / %d = %s, want %s", tc.sum, tc.n, got, tc.want)
		}
	}
}
