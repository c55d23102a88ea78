package planner

import (
	"errors"

	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/sqlerr"
)

// storeCodes is the SQLSTATE a client gets for each kind of storage
// error: chosen here, at the SQL boundary, since storage knows no SQL.
var storeCodes = map[ingest.Kind]string{
	ingest.KindNoSuchTable:    sqlerr.UndefinedTable,
	ingest.KindTableExists:    sqlerr.DuplicateTable,
	ingest.KindNoSuchColumn:   sqlerr.UndefinedColumn,
	ingest.KindColumnExists:   sqlerr.DuplicateColumn,
	ingest.KindInvalidName:    sqlerr.InvalidName,
	ingest.KindReservedName:   "42939", // reserved_name
	ingest.KindTooManyColumns: "54011", // too_many_columns
	ingest.KindTypeMismatch:   sqlerr.DatatypeMismatch,
	ingest.KindNotNull:        sqlerr.NotNullViolation,
	ingest.KindBadText:        sqlerr.CharacterNotInRepertoire,
	ingest.KindUnsupported:    sqlerr.FeatureNotSupported,
	ingest.KindConflict:       sqlerr.SerializationFailure,
	ingest.KindDeadlock:       "40P01", // deadlock_detected
	ingest.KindCanceled:       sqlerr.QueryCanceled,
	ingest.KindTooLarge:       sqlerr.ProgramLimitExceeded,
	ingest.KindOutOfMemory:    sqlerr.OutOfMemory,
	ingest.KindDiskFull:       sqlerr.DiskFull,
	ingest.KindIO:             sqlerr.IOError,
}

// storeError gives a storage error its SQLSTATE. An error that already
// carries one (a statement's own error that storage passed on) keeps it;
// anything else is returned as it is.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return err
	}
	var ie *ingest.Error
	if !errors.As(err, &ie) {
		return err
	}
	code, ok := storeCodes[ie.Kind]
	if !ok {
		code = sqlerr.InternalError
	}
	return &sqlerr.Error{Code: code, Message: ie.Error(), Detail: ie.Detail, Hint: ie.Hint, Err: err}
}

// engineError is dialect.EngineError for errors that may also come from
// storage: a storage error gets its SQLSTATE here, before an engine
// error's mapping would report it as internal.
func engineError(err error) error {
	return dialect.EngineError(storeError(err))
}
