package planner

import (
	"crypto/sha256"
	"crypto/sha512"
	"database/sql/driver"
	"fmt"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
)

// The engine functions of PostgreSQL's text and regular expression
// functions that tsdb answers in Go (dialect's RegexpCache, Unistr):
// the dialect rewrites the PostgreSQL call to the _tsdb_ name.

// udfTypes builds the type infos of a Go function's signature.
func udfTypes(types ...duckdb.Type) []duckdb.TypeInfo {
	out := make([]duckdb.TypeInfo, len(types))
	for i, t := range types {
		info, err := duckdb.NewTypeInfo(t)
		if err != nil {
			panic(err) // fixed, valid types
		}
		out[i] = info
	}
	return out
}

// goScalar is an engine function of fixed argument and result types
// whose rows fn answers; an error of fn is the statement's, with its
// SQLSTATE.
type goScalar struct {
	name   string
	args   []duckdb.Type
	result duckdb.Type
	fn     func(values []driver.Value) (any, error)
}

func (g goScalar) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: udfTypes(g.args...), ResultTypeInfo: udfTypes(g.result)[0]}
}

func (g goScalar) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF(g.name, &err)
		out, err = g.fn(values)
		if err != nil {
			// Raised as the dialect raises errors in SQL, so that the
			// client gets the SQLSTATE (dialect.EngineError).
			return nil, fmt.Errorf("[tsdb %s] %s", sqlerr.Code(err), err.Error())
		}
		return out, nil
	}}
}

// textFunctions are the Go functions of this file, sharing one cache of
// compiled patterns.
func textFunctions() []goScalar {
	re := &dialect.RegexpCache{}
	str := func(v driver.Value) string { s, _ := v.(string); return s }
	num := func(v driver.Value) int64 { n, _ := v.(int64); return n }
	bytesOf := func(v driver.Value) []byte { b, _ := v.([]byte); return b }
	const (
		text  = duckdb.TYPE_VARCHAR
		int8  = duckdb.TYPE_BIGINT
		bytea = duckdb.TYPE_BLOB
	)
	return []goScalar{
		{"_tsdb_regexp_replace", []duckdb.Type{text, text, text, int8, int8, duckdb.TYPE_BOOLEAN, text}, text, func(v []driver.Value) (any, error) {
			given, _ := v[5].(bool)
			return re.RegexpReplace(str(v[0]), str(v[1]), str(v[2]), num(v[3]), num(v[4]), given, str(v[6]))
		}},
		{"_tsdb_regexp_instr", []duckdb.Type{text, text, int8, int8, int8, text, int8}, int8, func(v []driver.Value) (any, error) {
			return re.RegexpInstr(str(v[0]), str(v[1]), num(v[2]), num(v[3]), num(v[4]), str(v[5]), num(v[6]))
		}},
		{"_tsdb_substring_similar", []duckdb.Type{text, text, text}, text, func(v []driver.Value) (any, error) {
			s, ok, err := re.SubstringSimilar(str(v[0]), str(v[1]), str(v[2]))
			if err != nil || !ok {
				return nil, err
			}
			return s, nil
		}},
		{"_tsdb_unistr", []duckdb.Type{text}, text, func(v []driver.Value) (any, error) {
			return dialect.Unistr(str(v[0]))
		}},
		{"_tsdb_sha224", []duckdb.Type{bytea}, bytea, func(v []driver.Value) (any, error) {
			sum := sha256.Sum224(bytesOf(v[0]))
			return sum[:], nil
		}},
		{"_tsdb_sha384", []duckdb.Type{bytea}, bytea, func(v []driver.Value) (any, error) {
			sum := sha512.Sum384(bytesOf(v[0]))
			return sum[:], nil
		}},
		{"_tsdb_sha512", []duckdb.Type{bytea}, bytea, func(v []driver.Value) (any, error) {
			sum := sha512.Sum512(bytesOf(v[0]))
			return sum[:], nil
		}},
	}
}
