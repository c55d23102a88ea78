// Package sqlerr carries SQLSTATE codes from where an error is understood
// (planner, dialect, session) to where it is reported (pgwire), without
// either side knowing the other. Storage (ingest) knows no SQLSTATEs: its
// errors have a kind, and the planner gives them their code.
package sqlerr

import (
	"errors"
	"fmt"
)

// SQLSTATE codes tsdb reports.
const (
	SyntaxError                = "42601"
	UndefinedTable             = "42P01"
	UndefinedColumn            = "42703"
	AmbiguousColumn            = "42702"
	UndefinedFunction          = "42883"
	DuplicateTable             = "42P07"
	DuplicateColumn            = "42701"
	WrongObjectType            = "42809"
	InvalidFunctionDefinition  = "42P13"
	InvalidTableDefinition     = "42P16"
	DependentObjectsStillExist = "2BP01"
	InvalidName                = "42602"
	DatatypeMismatch           = "42804"
	InsufficientPrivilege      = "42501"
	FeatureNotSupported        = "0A000"
	InvalidTextRep             = "22P02"
	// CharacterNotInRepertoire is PostgreSQL's code for bytes that are
	// not text in the database's encoding.
	CharacterNotInRepertoire = "22021"
	InvalidDatetimeFormat    = "22007"
	DatetimeOverflow         = "22008"
	NumericOutOfRange        = "22003"
	DivisionByZero           = "22012"
	NotNullViolation         = "23502"
	InvalidParameterValue    = "22023"
	// InvalidRegularExpression is a pattern the regular expression
	// engine cannot compile.
	InvalidRegularExpression = "2201B"
	// InvalidEscapeSequence is an escape string of more than one
	// character (LIKE, SIMILAR TO).
	InvalidEscapeSequence = "22025"
	// InvalidUseOfEscapeCharacter is a SQL regular expression with more
	// than two escape-double-quote separators.
	InvalidUseOfEscapeCharacter = "2200C"
	UndefinedObject             = "42704"
	QueryCanceled               = "57014"
	OutOfMemory                 = "53200"
	DiskFull                    = "53100"
	ProgramLimitExceeded        = "54000"
	// StackDepthExceeded is PostgreSQL's answer to a statement nested
	// deeper than max_stack_depth allows.
	StackDepthExceeded   = "54001"
	InternalError        = "XX000"
	IOError              = "58030"
	ProtocolViolation    = "08P01"
	ActiveSQLTransaction = "25001"
	// InFailedTransaction refuses statements after an error in a
	// transaction block, until it ends.
	InFailedTransaction    = "25P02"
	NoActiveSQLTransaction = "25P01"
	SerializationFailure   = "40001"
	UniqueViolation        = "23505"
	// Warning is the class of WARNING notices without a narrower code.
	Warning              = "01000"
	CardinalityViolation = "21000"
	InvalidLimitValue    = "2201W"
	// StringDataRightTruncation is a value longer than its column's type
	// takes (varchar(n), bit varying(n)); StringDataLengthMismatch a bit
	// string of another length than bit(n)'s.
	StringDataRightTruncation = "22001"
	StringDataLengthMismatch  = "22026"
)

// Error is an error with a SQLSTATE code and PostgreSQL-style fields.
type Error struct {
	Code    string
	Message string
	Detail  string
	Hint    string
	// Position is where in the query string the error is, in characters
	// from 1 (PostgreSQL's P field, psql's caret); 0 when unknown.
	Position int
	// Offset is where in the statement's text the error is, in bytes
	// from 1 (a parse tree's location plus one); 0 when unknown. The
	// planner, which has the text, turns it into Position.
	Offset int
	Err    error // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with the given code and formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with the given code whose message is err's.
func Wrap(code string, err error) *Error {
	return &Error{Code: code, Message: err.Error(), Err: err}
}

// Code returns the SQLSTATE of err, or XX000 if it carries none.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}
