package planner

import (
	"database/sql/driver"
	"fmt"
	"math"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/internal/sqlerr"
)

// floatVariance is the engine function _tsdb_float_var(values, kind) that
// the variances of double precision values are rewritten to
// (dialect.FloatVariances): float.c's float8_accum over the values in
// their order, then var_pop (kind 0), var_samp (1), stddev_pop (2) or
// stddev_samp (3).
type floatVariance struct{}

func (floatVariance) Config() duckdb.ScalarFuncConfig {
	f8, err := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	if err != nil {
		panic(err) // a fixed, valid type
	}
	list, err := duckdb.NewListInfo(f8)
	if err != nil {
		panic(err)
	}
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{list, udfTypes(duckdb.TYPE_INTEGER)[0]}, ResultTypeInfo: f8}
}

func (floatVariance) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF("_tsdb_float_var", &err)
		list, _ := values[0].([]any)
		kind, _ := values[1].(int32)
		v, ok, err := youngsCramer(list, kind)
		if err != nil {
			return nil, fmt.Errorf("[tsdb %s] %s", sqlerr.Code(err), err.Error())
		}
		if !ok {
			return nil, nil
		}
		return v, nil
	}}
}

// youngsCramer is float.c's float8_accum and its final functions: N, the
// sum Sx and Sxx, the sum of squared differences from the running mean,
// updated value by value (NULLs skipped); ok is false where PostgreSQL
// answers NULL (no values, or one for a sample).
func youngsCramer(list []any, kind int32) (float64, bool, error) {
	var n, sx, sxx float64
	for _, e := range list {
		x, isFloat := e.(float64)
		if !isFloat {
			continue // NULL
		}
		old, oldSx := n, sx
		n++
		sx += x
		if old > 0 {
			tmp := float64(x*n) - sx
			sxx += float64(tmp*tmp) / float64(n*old)
			if math.IsInf(sx, 0) || math.IsInf(sxx, 0) {
				if !math.IsInf(oldSx, 0) && !math.IsInf(x, 0) {
					return 0, false, sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: overflow")
				}
				sxx = math.NaN()
			}
		} else if math.IsNaN(x) || math.IsInf(x, 0) {
			sxx = math.NaN()
		}
	}
	switch kind {
	case 0, 2: // population
		if n == 0 {
			return 0, false, nil
		}
		if kind == 2 {
			return math.Sqrt(sxx / n), true, nil
		}
		return sxx / n, true, nil
	default: // sample
		if n <= 1 {
			return 0, false, nil
		}
		if kind == 3 {
			return math.Sqrt(sxx / (n - 1)), true, nil
		}
		return sxx / (n - 1), true, nil
	}
}
