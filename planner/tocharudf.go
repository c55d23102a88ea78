package planner

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
)

// toCharNumber is the engine function _tsdb_to_char_num(value, type,
// format) that to_char of a number is rewritten to (dialect.ToCharNumber):
// the value as text, its engine type's name, and the template.
type toCharNumber struct{}

func (toCharNumber) Config() duckdb.ScalarFuncConfig {
	text, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		panic(err) // a fixed, valid type
	}
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{text, text, text}, ResultTypeInfo: text}
}

func (toCharNumber) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		value, _ := values[0].(string)
		typeName, _ := values[1].(string)
		format, _ := values[2].(string)
		out, err := dialect.ToCharNumber(value, typeName, format)
		if err != nil {
			// Raised as the dialect raises errors in SQL, so that the
			// client gets the SQLSTATE (dialect.EngineError).
			return nil, fmt.Errorf("[tsdb %s] %s", sqlerr.Code(err), err.Error())
		}
		return out, nil
	}}
}

// registerFunctions adds tsdb's Go functions to the engine's catalog,
// where every connection finds them.
func registerFunctions(ctx context.Context, db *sql.DB) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return duckdb.RegisterScalarUDF(c, "_tsdb_to_char_num", toCharNumber{})
}
