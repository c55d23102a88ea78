package ingest

import (
	"errors"
	"fmt"
)

// Kind classifies a storage error for the layer that reports it: the SQL
// boundary (planner) chooses its SQLSTATE, the HTTP one (lineproto) its
// status. Storage itself knows neither.
type Kind int

// Kinds of storage errors.
const (
	KindNone           Kind = iota
	KindNoSuchTable         // the table does not exist (or was dropped meanwhile)
	KindTableExists         // a table of that name exists
	KindNoSuchColumn        // a column does not exist
	KindColumnExists        // a column of that name exists
	KindInvalidName         // a name storage cannot take
	KindReservedName        // a name storage keeps for itself
	KindTooManyColumns      // more columns than a table may have
	KindTypeMismatch        // a value or column of the wrong type
	KindNotNull             // a NULL where the column refuses it
	KindBadText             // bytes that are not UTF-8 text
	KindUnsupported         // a feature storage does not offer (for this table)
	KindConflict            // another writer's change conflicts; retrying may succeed
	KindDeadlock            // waiting for a lock would never end
	KindCanceled            // the caller gave up
	KindTooLarge            // one statement larger than storage takes
	KindOutOfMemory         // no memory came free in time
	KindDiskFull            // no space left on the device
	KindIO                  // reading or writing failed
)

// Error is a storage error of a known Kind. Its message is meant for the
// user as it stands; Detail and Hint add to it.
type Error struct {
	Kind   Kind
	Msg    string
	Detail string
	Hint   string
	Err    error // the cause, if any
}

func (e *Error) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same Kind, so that
// errors.Is(err, &ingest.Error{Kind: ingest.KindNoSuchTable}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Msg == "" && t.Kind == e.Kind
}

// KindOf returns the Kind of the first *Error in err's chain, or
// KindNone.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindNone
}

// errorf returns an Error of kind k with a formatted message.
func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// wrapKind returns an Error of kind k whose message is err's.
func wrapKind(k Kind, err error) *Error {
	return &Error{Kind: k, Msg: err.Error(), Err: err}
}

func noSuchTable(name string) *Error {
	return errorf(KindNoSuchTable, "relation %q does not exist", name)
}
