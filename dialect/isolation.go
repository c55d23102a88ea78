package dialect

import (
	"strings"

	"tsdb/internal/sqlerr"
)

// Isolation is a transaction's isolation level.
type Isolation uint8

// The levels tsdb runs; SERIALIZABLE runs as REPEATABLE READ (snapshot
// isolation) but keeps its name.
const (
	ReadCommitted Isolation = iota
	RepeatableRead
	Serializable
)

func (i Isolation) String() string {
	switch i {
	case RepeatableRead:
		return "repeatable read"
	case Serializable:
		return "serializable"
	}
	return "read committed"
}

// ParseIsolation reads an isolation level as SET and BEGIN name it.
func ParseIsolation(v string) (Isolation, error) {
	switch strings.Join(strings.Fields(strings.ToLower(v)), " ") {
	case "read uncommitted", "read committed":
		return ReadCommitted, nil // as in PostgreSQL, read uncommitted is read committed
	case "repeatable read":
		return RepeatableRead, nil
	case "serializable":
		return Serializable, nil
	}
	return 0, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter \"transaction_isolation\": %q", v)
}
