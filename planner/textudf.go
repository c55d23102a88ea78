package planner

import (
	"crypto/sha256"
	"crypto/sha512"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
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

// Config declares the function strict as PostgreSQL's are (NULL in, NULL
// out), but by its own hand: with the engine's NULL handling, an argument
// the engine types as NULL (the error() that raises a dialect error) was
// folded to a NULL result instead of raising.
func (g goScalar) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: udfTypes(g.args...), ResultTypeInfo: udfTypes(g.result)[0], SpecialNullHandling: true}
}

// goListScalar is a goScalar whose result is a list of texts, or of
// lists of texts (depth 2).
type goListScalar struct {
	goScalar
	depth int
}

func (g goListScalar) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: udfTypes(g.args...), ResultTypeInfo: textList(g.depth), SpecialNullHandling: true}
}

// textList is the engine's type of a list of texts (depth 1) or of lists
// of texts (depth 2).
func textList(depth int) duckdb.TypeInfo {
	info := udfTypes(duckdb.TYPE_VARCHAR)[0]
	for range depth {
		list, err := duckdb.NewListInfo(info)
		if err != nil {
			panic(err) // a fixed, valid type
		}
		info = list
	}
	return info
}

func (g goScalar) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		defer recoverUDF(g.name, &err)
		for _, v := range values {
			if v == nil {
				return nil, nil
			}
		}
		out, err = g.fn(values)
		if err != nil {
			// Raised as the dialect raises errors in SQL, so that the
			// client gets the SQLSTATE (dialect.EngineError).
			return nil, fmt.Errorf("[tsdb %s] %s", sqlerr.Code(err), err.Error())
		}
		return out, nil
	}}
}

// listFunctions are the Go functions of PostgreSQL's regular expression
// functions that return a list: regexp_matches with 'g' (each match a
// row, unnested) and regexp_split_to_array and _to_table, with the
// matches PostgreSQL finds (dialect.RegexpCache.RegexpMatches).
func listFunctions(re *dialect.RegexpCache) []goListScalar {
	str := func(v driver.Value) string { s, _ := v.(string); return s }
	text := []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR}
	return []goListScalar{
		{goScalar{"_tsdb_regexp_matches", text, duckdb.TYPE_LIST, func(v []driver.Value) (any, error) {
			return re.RegexpMatches(str(v[0]), str(v[1]), str(v[2]))
		}}, 2},
		{goScalar{"_tsdb_regexp_split", text, duckdb.TYPE_LIST, func(v []driver.Value) (any, error) {
			return re.RegexpSplit("regexp_split_to_array", str(v[0]), str(v[1]), str(v[2]))
		}}, 1},
	}
}

// textFunctions are the Go functions of this file; the regular
// expression functions share re's compiled patterns with listFunctions.
func textFunctions(re *dialect.RegexpCache) []goScalar {
	str := func(v driver.Value) string { s, _ := v.(string); return s }
	num := func(v driver.Value) int64 { n, _ := v.(int64); return n }
	bytesOf := func(v driver.Value) []byte { b, _ := v.([]byte); return b }
	const (
		text   = duckdb.TYPE_VARCHAR
		bigint = duckdb.TYPE_BIGINT
		bytea  = duckdb.TYPE_BLOB
	)
	return []goScalar{
		// Text a cast reads as a number, by PostgreSQL's input rules
		// (the _tsdb_input macro): true, or the input function's error.
		{"_tsdb_text_ok", []duckdb.Type{text, text}, duckdb.TYPE_BOOLEAN, func(v []driver.Value) (any, error) {
			if err := dialect.CheckTextInput(str(v[0]), str(v[1])); err != nil {
				return nil, err
			}
			return true, nil
		}},
		{"_tsdb_regexp_replace", []duckdb.Type{text, text, text, bigint, bigint, duckdb.TYPE_BOOLEAN, text}, text, func(v []driver.Value) (any, error) {
			given, _ := v[5].(bool)
			return re.RegexpReplace(str(v[0]), str(v[1]), str(v[2]), num(v[3]), num(v[4]), given, str(v[6]))
		}},
		{"_tsdb_regexp_instr", []duckdb.Type{text, text, bigint, bigint, bigint, text, bigint}, bigint, func(v []driver.Value) (any, error) {
			return re.RegexpInstr(str(v[0]), str(v[1]), num(v[2]), num(v[3]), num(v[4]), str(v[5]), num(v[6]))
		}},
		{"_tsdb_substring_similar", []duckdb.Type{text, text, text}, text, func(v []driver.Value) (any, error) {
			s, ok, err := re.SubstringSimilar(str(v[0]), str(v[1]), str(v[2]))
			if err != nil || !ok {
				return nil, err
			}
			return s, nil
		}},
		// width_bucket and div (dialect/buckets.go), by the macros of
		// the same names that hand the values over as text.
		{"_tsdb_width_bucket_go", []duckdb.Type{text, text, text, bigint, duckdb.TYPE_BOOLEAN}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			exact, _ := v[4].(bool)
			n, err := dialect.WidthBucket(str(v[0]), str(v[1]), str(v[2]), num(v[3]), exact)
			return int32(n), err
		}},
		{"_tsdb_div_go", []duckdb.Type{text, text}, text, func(v []driver.Value) (any, error) {
			return dialect.Div(str(v[0]), str(v[1]))
		}},
		// PostgreSQL's hash functions, its values (dialect/hashfn.go).
		{"_tsdb_hashint4", []duckdb.Type{duckdb.TYPE_INTEGER}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			n, _ := v[0].(int32)
			return dialect.HashInt4(n), nil
		}},
		{"_tsdb_hashint8", []duckdb.Type{bigint}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			return dialect.HashInt8(num(v[0])), nil
		}},
		{"_tsdb_interval_hash", []duckdb.Type{duckdb.TYPE_INTERVAL}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			iv, ok := v[0].(duckdb.Interval)
			if !ok {
				return nil, fmt.Errorf("interval_hash of %T", v[0])
			}
			return dialect.IntervalHash(iv.Months, iv.Days, iv.Micros), nil
		}},
		{"_tsdb_unistr", []duckdb.Type{text}, text, func(v []driver.Value) (any, error) {
			return dialect.Unistr(str(v[0]))
		}},
		{"_tsdb_get_byte", []duckdb.Type{bytea, bigint}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			n, err := dialect.GetByte(bytesOf(v[0]), num(v[1]))
			return int32(n), err
		}},
		{"_tsdb_set_byte", []duckdb.Type{bytea, bigint, bigint}, bytea, func(v []driver.Value) (any, error) {
			return dialect.SetByte(bytesOf(v[0]), num(v[1]), num(v[2]))
		}},
		// A text cast to bit(n) or bit varying(n) (n 0: any length), by
		// PostgreSQL's input, then fitted as an explicit cast fits.
		{"_tsdb_bit_text", []duckdb.Type{text, bigint, duckdb.TYPE_BOOLEAN}, text, func(v []driver.Value) (any, error) {
			varying, _ := v[2].(bool)
			return dialect.BitText(str(v[0]), int(num(v[1])), varying)
		}},
		{"_tsdb_get_bit_bytea", []duckdb.Type{bytea, bigint}, duckdb.TYPE_INTEGER, func(v []driver.Value) (any, error) {
			n, err := dialect.GetBit(bytesOf(v[0]), num(v[1]))
			return int32(n), err
		}},
		{"_tsdb_set_bit_bytea", []duckdb.Type{bytea, bigint, bigint}, bytea, func(v []driver.Value) (any, error) {
			return dialect.SetBit(bytesOf(v[0]), num(v[1]), num(v[2]))
		}},
		{"_tsdb_bit_count_bytea", []duckdb.Type{bytea}, bigint, func(v []driver.Value) (any, error) {
			return dialect.BitCount(bytesOf(v[0])), nil
		}},
		{"_tsdb_bytea_substr", []duckdb.Type{bytea, bigint, bigint, duckdb.TYPE_BOOLEAN}, bytea, func(v []driver.Value) (any, error) {
			has, _ := v[3].(bool)
			return dialect.ByteaSubstring(bytesOf(v[0]), num(v[1]), num(v[2]), has)
		}},
		{"_tsdb_bytea_overlay", []duckdb.Type{bytea, bytea, bigint, bigint, duckdb.TYPE_BOOLEAN}, bytea, func(v []driver.Value) (any, error) {
			has, _ := v[4].(bool)
			return dialect.ByteaOverlay(bytesOf(v[0]), bytesOf(v[1]), num(v[2]), num(v[3]), has)
		}},
		{"_tsdb_bytea_btrim", []duckdb.Type{bytea, bytea}, bytea, func(v []driver.Value) (any, error) {
			return dialect.ByteaTrim(bytesOf(v[0]), bytesOf(v[1]), true, true), nil
		}},
		{"_tsdb_bytea_ltrim", []duckdb.Type{bytea, bytea}, bytea, func(v []driver.Value) (any, error) {
			return dialect.ByteaTrim(bytesOf(v[0]), bytesOf(v[1]), true, false), nil
		}},
		{"_tsdb_bytea_rtrim", []duckdb.Type{bytea, bytea}, bytea, func(v []driver.Value) (any, error) {
			return dialect.ByteaTrim(bytesOf(v[0]), bytesOf(v[1]), false, true), nil
		}},
		{"_tsdb_bytea_like", []duckdb.Type{bytea, bytea, bytea}, duckdb.TYPE_BOOLEAN, func(v []driver.Value) (any, error) {
			return dialect.ByteaLike(bytesOf(v[0]), bytesOf(v[1]), bytesOf(v[2]))
		}},
		{"_tsdb_encode_escape", []duckdb.Type{bytea}, text, func(v []driver.Value) (any, error) {
			return dialect.EncodeEscape(bytesOf(v[0])), nil
		}},
		{"_tsdb_decode_escape", []duckdb.Type{text}, bytea, func(v []driver.Value) (any, error) {
			return dialect.DecodeEscape(str(v[0]))
		}},
		{"_tsdb_interval_scale", []duckdb.Type{duckdb.TYPE_INTERVAL, duckdb.TYPE_DOUBLE, duckdb.TYPE_BOOLEAN}, duckdb.TYPE_INTERVAL, func(v []driver.Value) (any, error) {
			iv, _ := v[0].(duckdb.Interval)
			factor, _ := v[1].(float64)
			div, _ := v[2].(bool)
			if div && factor == 0 {
				return nil, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
			}
			out, err := pgdatetime.Interval{Months: iv.Months, Days: iv.Days, Micros: iv.Micros}.Scale(factor, div)
			if err != nil {
				return nil, sqlerr.New(sqlerr.DatetimeOverflow, "interval out of range")
			}
			return duckdb.Interval{Months: out.Months, Days: out.Days, Micros: out.Micros}, nil
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
		// make_timestamptz with a zone that is not a constant (the dialect
		// reads a constant one itself): every form PostgreSQL reads.
		{"_tsdb_make_timestamptz", []duckdb.Type{bigint, bigint, bigint, bigint, bigint, duckdb.TYPE_DOUBLE, text}, duckdb.TYPE_TIMESTAMP_TZ,
			func(v []driver.Value) (any, error) {
				f, _ := v[5].(float64)
				t, err := pgdatetime.MakeTimestamptz(num(v[0]), num(v[1]), num(v[2]), num(v[3]), num(v[4]), f, str(v[6]))
				var ze *pgdatetime.ZoneError
				switch {
				case errors.As(err, &ze):
					return nil, sqlerr.New(sqlerr.InvalidParameterValue, "%s", err.Error())
				case err != nil:
					return nil, sqlerr.New(sqlerr.DatetimeOverflow, "%s", err.Error())
				}
				return t, nil
			}},
		// float8send and float4send: the value's IEEE 754 bits, big-endian,
		// as PostgreSQL's binary format sends them.
		{"_tsdb_float8send", []duckdb.Type{duckdb.TYPE_DOUBLE}, bytea, func(v []driver.Value) (any, error) {
			f, ok := v[0].(float64)
			if !ok {
				return nil, nil
			}
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
		}},
		{"_tsdb_float4send", []duckdb.Type{duckdb.TYPE_FLOAT}, bytea, func(v []driver.Value) (any, error) {
			f, ok := v[0].(float32)
			if !ok {
				return nil, nil
			}
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)), nil
		}},
	}
}
