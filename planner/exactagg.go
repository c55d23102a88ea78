package planner

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/pgnumeric"
	"tsdb/internal/sqlerr"
)

// Exact aggregates: dialect.ExactAggregates turns avg and the variance and
// standard deviation aggregates of the result into a struct of the
// engine's answer, the count, the sum and the sum of squares. Here the
// struct becomes what PostgreSQL answers: numeric computed exactly from
// the sums (pgnumeric), or, where the sums are floating point, the
// engine's double.

// exactKind says how a result column made by ExactAggregates is answered.
type exactKind uint8

const (
	exactNone exactKind = iota
	// exactFloat: the argument was floating point; the engine's answer.
	exactFloat
	exactAvg
	exactVarPop
	exactVarSamp
	exactStddevPop
	exactStddevSamp
	// exactScaled: a number literal and the scale it is printed with
	// (dialect.NumericLiteralScales).
	exactScaled
	// exactIntervalSum and exactIntervalAvg: sum and avg of intervals.
	exactIntervalSum
	exactIntervalAvg
	// exactDiv: the operands of a numeric division
	// (dialect.NumericDivision).
	exactDiv
)

var exactKinds = map[string]exactKind{
	"_tsdb_avg": exactAvg, "_tsdb_var_pop": exactVarPop, "_tsdb_var_samp": exactVarSamp,
	"_tsdb_stddev_pop": exactStddevPop, "_tsdb_stddev_samp": exactStddevSamp,
}

// exactColumn describes a result column of DuckDB type duckType (a
// STRUCT) made by ExactAggregates; false for any other struct.
func exactColumn(name, duckType string) (Column, bool) {
	fields := structFields(duckType)
	if len(fields) == 2 && fields[0][0] == dialect.ScaledNumberField {
		return Column{Name: name, OID: oidNumeric, Size: -1, exact: exactScaled}, true
	}
	if len(fields) == 3 && fields[0][0] == dialect.NumericDivisionField {
		return Column{Name: name, OID: oidNumeric, Size: -1, exact: exactDiv}, true
	}
	if len(fields) == 4 && dialect.ExactIntervalField(fields[0][0]) {
		k := exactIntervalSum
		if fields[0][0] == "_tsdb_ivavg" {
			k = exactIntervalAvg
		}
		return Column{Name: name, OID: oidInterval, Size: 16, exact: k}, true
	}
	if len(fields) < 3 || !dialect.ExactAggregateField(fields[0][0]) {
		return Column{}, false
	}
	sumType := ""
	for _, f := range fields {
		if f[0] == "s" {
			sumType = strings.ToUpper(f[1])
		}
	}
	if sumType == "DOUBLE" || sumType == "FLOAT" || sumType == "REAL" {
		c := columnFor(name, fields[0][1])
		c.exact = exactFloat
		return c, true
	}
	return Column{Name: name, OID: oidNumeric, Size: -1, exact: exactKinds[fields[0][0]]}, true
}

// structFields splits STRUCT(a T, "b" U, …) into its field names and
// types.
func structFields(t string) [][2]string {
	inner, ok := strings.CutPrefix(t, "STRUCT(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return nil
	}
	inner = inner[:len(inner)-1]
	var out [][2]string
	depth, quoted, start := 0, false, 0
	field := func(s string) {
		s = strings.TrimSpace(s)
		name, typ := s, ""
		if strings.HasPrefix(s, `"`) {
			if end := strings.Index(s[1:], `"`); end >= 0 {
				name, typ = s[1:end+1], strings.TrimSpace(s[end+2:])
			}
		} else if i := strings.IndexByte(s, ' '); i >= 0 {
			name, typ = s[:i], strings.TrimSpace(s[i+1:])
		}
		out = append(out, [2]string{name, typ})
	}
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			field(inner[start:i])
			start = i + 1
		}
	}
	field(inner[start:])
	return out
}

// exactValue is the value of one exact-aggregate struct.
func exactValue(k exactKind, v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("planner: exact aggregate holds %T", v)
	}
	if k == exactScaled {
		return scaledNumber(m)
	}
	if k == exactDiv {
		return numericQuotient(m)
	}
	if k == exactIntervalSum || k == exactIntervalAvg {
		return intervalAggregateValue(k, m)
	}
	if k == exactFloat {
		for f, x := range m {
			if dialect.ExactAggregateField(f) {
				return x, nil
			}
		}
		return nil, nil
	}
	n, ok := m["n"].(int64)
	if !ok || n == 0 || m["s"] == nil {
		return nil, nil
	}
	sum, err := numericOf(m["s"])
	if err != nil {
		return nil, err
	}
	if k == exactAvg {
		return pgnumeric.Avg(sum.Value, n).String(), nil
	}
	sq, err := numericOf(m["q"])
	if err != nil {
		return nil, err
	}
	// The inputs' scale: the sum's, or, for numeric without a typmod
	// whose declared scale says nothing, the digits the sum and the sum
	// of squares need (0.5 + 0.5 is 1, but its square needs two places;
	// Variance raises the scale to that).
	scale := sum.Scale
	if sum.unknownScale {
		scale = 0
	}
	kind := map[exactKind]pgnumeric.Kind{exactVarPop: pgnumeric.VarPop, exactVarSamp: pgnumeric.VarSamp,
		exactStddevPop: pgnumeric.StddevPop, exactStddevSamp: pgnumeric.StddevSamp}[k]
	res, ok := pgnumeric.Variance(kind, n, sum.Value, sq.Value, scale)
	if !ok {
		return nil, nil
	}
	return res.String(), nil
}

// exactNumber is a sum as a pgnumeric value, and whether its scale is
// the engine's stand-in for numeric without a typmod (DECIMAL(38,10)),
// which keeps no scale of its inputs.
type exactNumber struct {
	pgnumeric.Value
	unknownScale bool
}

func numericOf(v any) (exactNumber, error) {
	switch x := v.(type) {
	case *big.Int:
		return exactNumber{Value: pgnumeric.Value{V: x}}, nil
	case int64:
		return exactNumber{Value: pgnumeric.Value{V: big.NewInt(x)}}, nil
	case int32:
		return exactNumber{Value: pgnumeric.Value{V: big.NewInt(int64(x))}}, nil
	case int16:
		return exactNumber{Value: pgnumeric.Value{V: big.NewInt(int64(x))}}, nil
	case int8:
		return exactNumber{Value: pgnumeric.Value{V: big.NewInt(int64(x))}}, nil
	case duckdb.Decimal:
		d := exactNumber{Value: pgnumeric.Value{V: x.Value, Scale: int(x.Scale)}}
		if x.Value == nil {
			d.V = new(big.Int)
		}
		if x.Width == 38 && x.Scale == 10 {
			d.unknownScale = true
			d.Value = d.Value.Trimmed()
		}
		return d, nil
	}
	return exactNumber{}, fmt.Errorf("planner: exact aggregate sum of %T", v)
}

// scaledNumber prints the value of a _tsdb_num struct with its scale.
// numericQuotient divides the operands of a numeric division as
// PostgreSQL's numeric_div does (the scale of select_div_scale, rounded
// half away from zero). An operand of the engine's stand-in for numeric
// without a typmod counts with the digits it has.
func numericQuotient(m map[string]any) (any, error) {
	if m["a"] == nil || m["b"] == nil {
		return nil, nil
	}
	a, err := numericOf(m["a"])
	if err != nil {
		return nil, err
	}
	b, err := numericOf(m["b"])
	if err != nil {
		return nil, err
	}
	if b.V.Sign() == 0 {
		return nil, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	}
	return pgnumeric.Div(a.Value, b.Value, pgnumeric.DivScale(a.Value, b.Value)).String(), nil
}

func scaledNumber(m map[string]any) (any, error) {
	d, ok := m[dialect.ScaledNumberField].(duckdb.Decimal)
	if !ok || d.Value == nil {
		return nil, nil
	}
	s, _ := m["s"].(int32)
	v := pgnumeric.Value{V: d.Value, Scale: int(d.Scale)}
	if t := v.Trimmed(); t.Scale <= int(s) {
		v = t.Rescale(int(s))
	}
	return v.String(), nil
}

// retryInexact reports whether a query failed for a type the exact
// aggregates' sums cannot take (avg of an interval has no sum in the
// engine): it then runs without them.
func retryInexact(err error, text string) bool {
	if !strings.Contains(text, "_tsdb_exact_") && !strings.Contains(text, "_tsdb_num(") && !strings.Contains(text, "_tsdb_numdiv(") {
		return false
	}
	switch sqlerr.Code(engineError(err)) {
	case sqlerr.UndefinedFunction, sqlerr.DatatypeMismatch:
		return true
	}
	return false
}

// intervalAggregateValue is sum or avg of intervals from the count and
// the sums of their parts: sum as PostgreSQL's interval_pl adds them
// (each part on its own, out of range 22008), avg as its interval_div
// divides the sum by the count, in double precision, fractions of months
// cascading into days and of days into microseconds, rounded as it rounds.
func intervalAggregateValue(k exactKind, m map[string]any) (any, error) {
	n, _ := m[dialect.ExactIntervalFieldName(k == exactIntervalAvg)].(int64)
	if n == 0 {
		return nil, nil
	}
	part := func(key string, bits int) (int64, error) {
		v, err := numericOf(m[key])
		if err != nil || v.Scale != 0 || !v.V.IsInt64() {
			return 0, &sqlerr.Error{Code: sqlerr.DatetimeOverflow, Message: "interval out of range"}
		}
		x := v.V.Int64()
		if bits == 32 && (x > math.MaxInt32 || x < math.MinInt32) {
			return 0, &sqlerr.Error{Code: sqlerr.DatetimeOverflow, Message: "interval out of range"}
		}
		return x, nil
	}
	months, err := part("m", 32)
	if err != nil {
		return nil, err
	}
	days, err := part("d", 32)
	if err != nil {
		return nil, err
	}
	micros, err := part("u", 64)
	if err != nil {
		return nil, err
	}
	if k == exactIntervalSum {
		return duckdb.Interval{Months: int32(months), Days: int32(days), Micros: micros}, nil
	}
	iv, err := pgdatetime.Interval{Months: int32(months), Days: int32(days), Micros: micros}.Scale(float64(n), true)
	if err != nil {
		return nil, err
	}
	return duckdb.Interval{Months: iv.Months, Days: iv.Days, Micros: iv.Micros}, nil
}
