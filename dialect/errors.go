package dialect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

var (
	reMissingTable  = regexp.MustCompile(`Table with name ([^ ]+) does not exist`)
	reMissingColumn = regexp.MustCompile(`Referenced column (?:"(.+?)"|([^" ]+)) not found`)
	reErrPrefix     = regexp.MustCompile(`^[A-Za-z ]+ Error: `)
	reBadText       = regexp.MustCompile(`^Could not convert string '(.*)' to ([A-Z0-9 ]+)$`)
	reNoColumnNamed = regexp.MustCompile(`"([^"]+)" does not have a column named "([^"]+)"`)
	reIntegerText   = regexp.MustCompile(`^\s*[+-]?[0-9]+\s*$`)
	reRaised        = regexp.MustCompile(`^\[tsdb ([0-9A-Z]{5})\] (.*)$`)
	// reCheckRaised is a CHECK constraint whose expression raised (a
	// temporary table's bit(n) column, _tsdb_bit_check).
	reCheckRaised = regexp.MustCompile(`^CHECK constraint failed .*\(Error: \[tsdb ([0-9A-Z]{5})\] (.*)\)$`)
	// reDecimalOverflow is a value too wide for a DECIMAL(p,s) cast.
	reDecimalOverflow = regexp.MustCompile(`to type DECIMAL\((\d+),(\d+)\) failed: value is out of range`)
	// reDecimalText is text the engine could not make a DECIMAL(p,s) of:
	// a number too wide, or not a number.
	reDecimalText   = regexp.MustCompile(`^Could not convert string ["'](.*)["'] to DECIMAL\((\d+),(\d+)\)$`)
	reNumberText    = regexp.MustCompile(`^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$`)
	reIntOverflow   = regexp.MustCompile(`Overflow in \w+ of (INT16|INT32|INT64)\b`)
	reWindowDefined = regexp.MustCompile(`^window "[^"]*" is already defined$`)
	reSubqueryWidth = regexp.MustCompile(`^Subquery returns (\d+) columns - expected (\d+)`)
	reUngrouped     = regexp.MustCompile(`^column "(.*)" must appear in the GROUP BY clause or must be part of an aggregate function\.?$`)
	reOutOfRange    = regexp.MustCompile(`^Type [A-Z0-9]+ with value (\S+) can't be cast because the value is out of range for the destination type ([A-Z0-9]+)$`)
)

// EngineError turns a DuckDB error into a SQL error with PostgreSQL's
// SQLSTATE and, where PostgreSQL words it differently, its wording.
func EngineError(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Message: "canceling statement due to user request", Err: err}
	}
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return &sqlerr.Error{Code: sqlerr.InternalError, Message: err.Error(), Err: err}
	}
	msg := reErrPrefix.ReplaceAllString(de.Msg, "")
	detail := ""
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg, detail = strings.TrimSpace(msg[:i]), strings.TrimSpace(msg[i+1:])
	}
	if i := strings.Index("\n"+detail, "\nLINE "); i >= 0 {
		// DuckDB quotes the SQL it ran, tsdb's rewrite of the statement,
		// with a caret into it (after its own detail, if any): neither is
		// the client's text.
		detail = strings.TrimSpace(detail[:i])
	}
	e := &sqlerr.Error{Message: msg, Detail: detail, Err: err}
	// An error of a Go function the planner registers (its raise, as
	// Raise's) comes wrapped by the driver's words.
	if m := reRaised.FindStringSubmatch(strings.TrimPrefix(msg, "database/sql/driver: API error: ")); m != nil {
		// raised by Raise: the SQLSTATE travels in the message.
		e.Code, e.Message, e.Detail = m[1], m[2], ""
		return e
	}
	if m := reCheckRaised.FindStringSubmatch(msg); m != nil {
		e.Code, e.Message, e.Detail = m[1], m[2], ""
		return e
	}
	if strings.Contains(msg, "_tsdb_sq_") {
		// A temporary sequence by the engine's name (the planner's
		// sequences.go): the client knows it by its own.
		msg = reEngineSequence.ReplaceAllString(msg, `"$1"`)
		e.Message = msg
		if strings.HasPrefix(msg, "nextval: reached") {
			e.Code, e.Detail = "2200H", ""
			return e
		}
	}
	lower := strings.ToLower(msg)
	if strings.Contains(lower, "currval: sequence is not yet defined") {
		e.Code, e.Message, e.Detail = "55000", "currval of sequence is not yet defined in this session", ""
		return e
	}
	if strings.Contains(lower, "division by zero") {
		e.Code, e.Message, e.Detail = sqlerr.DivisionByZero, "division by zero", ""
		return e
	}
	if strings.Contains(lower, "max expression depth limit") {
		// DuckDB's own guard of its recursion, PostgreSQL's 54001.
		e.Code, e.Message, e.Detail = sqlerr.StackDepthExceeded, "stack depth limit exceeded", ""
		return e
	}
	if strings.Contains(lower, "more than one row returned by a subquery") {
		e.Code, e.Message, e.Detail = sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression", ""
		return e
	}
	if m := reSubqueryWidth.FindStringSubmatch(msg); m != nil {
		got, _ := strconv.Atoi(m[1])
		want, _ := strconv.Atoi(m[2])
		e.Code, e.Message, e.Detail = sqlerr.SyntaxError, "subquery has too many columns", ""
		if got < want {
			e.Message = "subquery has too few columns"
		}
		return e
	}
	if reWindowDefined.MatchString(msg) {
		e.Code, e.Detail = "42P20", ""
		return e
	}
	if engineMessageError(e, msg) {
		return e
	}
	for _, m := range engineMessages {
		if strings.Contains(lower, m.contains) {
			e.Code, e.Detail = m.code, ""
			if m.message != "" {
				e.Message = m.message
			}
			return e
		}
	}
	switch de.Type {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		e.Code = sqlerr.SyntaxError
	case duckdb.ErrorTypeCatalog:
		switch m := reMissingObject.FindStringSubmatch(msg); {
		case reMissingTable.MatchString(msg):
			e.Code = sqlerr.UndefinedTable
			e.Message = `relation "` + strings.Trim(reMissingTable.FindStringSubmatch(msg)[1], `"!`) + `" does not exist`
		case m != nil:
			// PostgreSQL's words for what the engine's catalog lacks; its
			// "Did you mean" suggestions name the engine's own functions.
			name := strings.Trim(m[2], `"`)
			switch m[1] {
			case "Scalar Function", "Aggregate Function", "Table Function":
				e.Code, e.Message, e.Detail = sqlerr.UndefinedFunction, "function "+name+" does not exist", ""
				e.Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
			case "Type":
				e.Code, e.Message, e.Detail = sqlerr.UndefinedObject, `type "`+name+`" does not exist`, ""
				if postgresOnlyTypes[strings.ToLower(name)] {
					// PostgreSQL has it: "does not exist" would mislead.
					e.Code, e.Message = sqlerr.FeatureNotSupported, `type "`+name+`" is not supported`
				}
			case "Sequence":
				e.Code, e.Message, e.Detail = sqlerr.UndefinedTable, `relation "`+name+`" does not exist`, ""
			}
		case strings.Contains(lower, "function"):
			e.Code = sqlerr.UndefinedFunction
		default:
			e.Code = sqlerr.UndefinedObject
		}
	case duckdb.ErrorTypeBinder:
		switch {
		case reMissingColumn.MatchString(msg):
			e.Code = sqlerr.UndefinedColumn
			m := reMissingColumn.FindStringSubmatch(msg)
			e.Message = `column "` + m[1] + m[2] + `" does not exist`
		case reNoColumnNamed.MatchString(msg):
			m := reNoColumnNamed.FindStringSubmatch(msg)
			e.Code, e.Message = sqlerr.UndefinedColumn, fmt.Sprintf("column %s.%s does not exist", m[1], m[2])
		case strings.Contains(lower, "limit/offset cannot be negative"):
			// DuckDB names both; PostgreSQL's message names the one.
			e.Code, e.Message, e.Detail = sqlerr.InvalidLimitValue, "LIMIT and OFFSET must not be negative", ""
		case strings.Contains(lower, "no function matches"):
			e.Code = sqlerr.UndefinedFunction
		case strings.Contains(lower, "group by"):
			e.Code = "42803"
			if m := reUngrouped.FindStringSubmatch(msg); m != nil {
				// PostgreSQL's words; DuckDB's detail suggests its own
				// ANY_VALUE.
				e.Message, e.Detail = fmt.Sprintf("column %q must appear in the GROUP BY clause or be used in an aggregate function", m[1]), ""
			}
		case strings.Contains(lower, "columns available but") || strings.Contains(lower, "columns specified"):
			e.Code = sqlerr.SyntaxError
		default:
			e.Code = "42000"
		}
	case duckdb.ErrorTypeConversion, duckdb.ErrorTypeInvalidInput:
		e.Code = conversionCode(lower)
		// PostgreSQL's wording for the two errors bad values give most.
		// The DETAIL (a position in the SQL DuckDB ran, often the
		// planner's rewrite of the statement) goes with DuckDB's wording.
		if m := reDecimalOverflow.FindStringSubmatch(msg); m != nil {
			numericOverflow(e, m[1], m[2])
		} else if m := reDecimalText.FindStringSubmatch(msg); m != nil {
			if reNumberText.MatchString(m[1]) {
				numericOverflow(e, m[2], m[3])
			} else {
				e.Code, e.Message, e.Detail = sqlerr.InvalidTextRep, fmt.Sprintf("invalid input syntax for type numeric: %q", m[1]), ""
			}
		} else if m := reBadText.FindStringSubmatch(msg); m != nil {
			pgType := PGTypeOfDuckDB(m[2])
			e.Message, e.Detail = fmt.Sprintf("invalid input syntax for type %s: %q", pgType, m[1]), ""
			if reIntegerText.MatchString(m[1]) && (pgType == "smallint" || pgType == "integer" || pgType == "bigint") {
				// Digits that do not fit: PostgreSQL calls it a range error.
				e.Code, e.Message = sqlerr.NumericOutOfRange, fmt.Sprintf("value %q is out of range for type %s", m[1], pgType)
			}
		} else if m := reOutOfRange.FindStringSubmatch(msg); m != nil {
			e.Code, e.Message, e.Detail = sqlerr.NumericOutOfRange, fmt.Sprintf("value %q is out of range for type %s", m[1], PGTypeOfDuckDB(m[2])), ""
		}
	case duckdb.ErrorTypeOutOfRange:
		e.Code = sqlerr.NumericOutOfRange
		if m := reIntOverflow.FindStringSubmatch(msg); m != nil {
			// "Overflow in addition of INT64 (…)!": PostgreSQL names the
			// type only.
			e.Message, e.Detail = PGTypeOfDuckDB(m[1])+" out of range", ""
		}
		if strings.Contains(lower, "date") || strings.Contains(lower, "timestamp") {
			e.Code = sqlerr.DatetimeOverflow
		}
	case duckdb.ErrorTypeDivideByZero:
		e.Code = sqlerr.DivisionByZero
		e.Message = "division by zero"
	case duckdb.ErrorTypeInterrupt:
		e.Code = sqlerr.QueryCanceled
		e.Message = "canceling statement due to user request"
	case duckdb.ErrorTypePermission:
		e.Code = sqlerr.InsufficientPrivilege
	case duckdb.ErrorTypeOutOfMemory:
		e.Code = sqlerr.OutOfMemory
	case duckdb.ErrorTypeNotImplemented:
		e.Code = sqlerr.FeatureNotSupported
	case duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType:
		e.Code = sqlerr.DatatypeMismatch
	case duckdb.ErrorTypeConstraint:
		e.Code = "23000"
		switch {
		case strings.Contains(lower, "not null"):
			e.Code = sqlerr.NotNullViolation
		case strings.Contains(lower, "duplicate key"):
			e.Code = "23505"
		case strings.Contains(lower, "check constraint"):
			e.Code = "23514"
		}
	case duckdb.ErrorTypeIO:
		e.Code = sqlerr.IOError
	default:
		e.Code = sqlerr.InternalError
	}
	return e
}

// engineMessages are DuckDB errors whose PostgreSQL counterpart is known
// from its message: the SQLSTATE PostgreSQL gives, and its wording where
// DuckDB's would mislead (it names rewritten SQL, or another clause).
var engineMessages = []struct{ contains, code, message string }{
	{"table must have at least one column", sqlerr.FeatureNotSupported, "tables without columns are not supported"},
	{"set operations can only apply to expressions with the same number of result columns", sqlerr.SyntaxError, ""},
	{"aggregate function calls cannot be nested", "42803", ""},
	{"in a distinct aggregate, order by expressions must appear in the argument list", "42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"},
	{"aggregate functions are not allowed in filter", "42803", ""},
	{"where clause cannot contain window functions", "42P20", "window functions are not allowed in WHERE"},
	{"range frames must have only one order by expression", "42P20", "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"},
	{"invalid range preceding value", "22013", "invalid preceding or following size in window function"},
	{"invalid range following value", "22013", "invalid preceding or following size in window function"},
	{"interval cannot be 0", "22023", "step size cannot equal zero"},
	{"time out of range", sqlerr.DatetimeOverflow, ""},
	{"window functions are not allowed in", "42P20", ""},
	{"group by clause cannot contain window functions", "42P20", "window functions are not allowed in GROUP BY"},
	{"negative substring length not allowed", "22011", ""},
	{"can't bucket using zero", sqlerr.DatetimeOverflow, "stride must be greater than zero"},
	// Bit strings: PostgreSQL's wording, and its codes.
	{"cannot and bit strings of different sizes", "22026", "cannot AND bit strings of different sizes"},
	{"cannot or bit strings of different sizes", "22026", "cannot OR bit strings of different sizes"},
	{"cannot xor bit strings of different sizes", "22026", "cannot XOR bit strings of different sizes"},
	{"out of valid range (0..", "2202E", ""},
	{"bitstring doesn't fit inside of int32", sqlerr.NumericOutOfRange, "integer out of range"},
	{"bitstring doesn't fit inside of int64", sqlerr.NumericOutOfRange, "bigint out of range"},
	{"the new bit must be 1 or 0", sqlerr.InvalidParameterValue, "new bit must be 0 or 1"},
	{"period must be greater than 0", sqlerr.DatetimeOverflow, "stride must be greater than zero"},
	{"is not an ordered-set aggregate", "42809", ""},
	{"in in/any/all clause - an explicit cast is required", "42883", ""},
	{"argument for ntile must be greater than zero", "22014", "argument of ntile must be greater than zero"},
	{"is not an aggregate function", "42809", ""},
	{"overflow in multiplication of interval", sqlerr.DatetimeOverflow, "interval out of range"},
	{"overflow in addition of interval", sqlerr.DatetimeOverflow, "interval out of range"},
	{"overflow in subtraction of interval", sqlerr.DatetimeOverflow, "interval out of range"},
}

// postgresOnlyTypes are PostgreSQL's built-in types the engine does not
// have.
var postgresOnlyTypes = map[string]bool{
	"money": true, "point": true, "line": true, "lseg": true, "box": true, "path": true, "polygon": true, "circle": true,
	"inet": true, "cidr": true, "macaddr": true, "macaddr8": true, "tsvector": true, "tsquery": true,
	"xml": true, "int4range": true, "int8range": true, "numrange": true, "tsrange": true, "tstzrange": true, "daterange": true,
	"int4multirange": true, "int8multirange": true, "nummultirange": true, "tsmultirange": true, "tstzmultirange": true,
	"datemultirange": true, "pg_lsn": true, "txid_snapshot": true, "pg_snapshot": true, "regproc": true, "regprocedure": true,
	"regoper": true, "regoperator": true, "regrole": true, "regnamespace": true, "regconfig": true, "regdictionary": true,
	"tid": true, "xid": true, "xid8": true, "cid": true, "aclitem": true, "jsonpath": true, "timetz": true,
}

// reExtractUnit is DuckDB's error for an extract() field it does not know.
var reExtractUnit = regexp.MustCompile(`^extract specifier "([^"]*)" not recognized`)

// re2Errors begin the messages of the engine's regular expression library
// (RE2) for a pattern it cannot compile: PostgreSQL's 2201B.
var re2Errors = []string{"missing )", "missing ]", "unexpected )", "invalid repetition size", "bad repetition operator",
	"invalid escape sequence", "invalid character class", "invalid named capture group", "trailing \\",
	"invalid perl operator", "no argument for repetition operator", "invalid UTF-8", "bad named capture group"}

// reOrderedAggregate is DuckDB's error for WITHIN GROUP of a function
// that is no ordered-set aggregate, reMissingObject its catalog's error
// for a function, type or sequence it does not have.
var (
	reOrderedAggregate = regexp.MustCompile(`^Unknown ordered aggregate "([^"]*)"`)
	reMissingObject    = regexp.MustCompile(`^(Scalar Function|Aggregate Function|Table Function|Type|Sequence) with name (\S+) does not exist!`)
)

// plainAggregates are PostgreSQL's aggregates that take no WITHIN GROUP;
// orderedSetAggregates those that need it.
var (
	plainAggregates = map[string]bool{"sum": true, "avg": true, "count": true, "min": true, "max": true, "string_agg": true,
		"array_agg": true, "bool_and": true, "bool_or": true, "every": true, "stddev": true, "variance": true}
	orderedSetAggregates = map[string]bool{"percentile_cont": true, "percentile_disc": true, "mode": true}
)

// engineMessageError gives e PostgreSQL's SQLSTATE and words for DuckDB
// messages known by their form rather than a fixed text.
func engineMessageError(e *sqlerr.Error, msg string) bool {
	if m := reOrderedAggregate.FindStringSubmatch(msg); m != nil {
		if plainAggregates[m[1]] {
			e.Code, e.Message = "42809", m[1]+" is not an ordered-set aggregate, so it cannot have WITHIN GROUP"
		} else {
			e.Code, e.Message = sqlerr.UndefinedFunction, "function "+m[1]+" does not exist"
		}
		e.Detail = ""
		return true
	}
	if m := reMissingObject.FindStringSubmatch(msg); m != nil && m[1] == "Scalar Function" && orderedSetAggregates[m[2]] {
		e.Code, e.Message, e.Detail = "42809", "WITHIN GROUP is required for ordered-set aggregate "+m[1], ""
		return true
	}
	if m := reExtractUnit.FindStringSubmatch(msg); m != nil {
		unit := strings.ToLower(m[1])
		if strings.HasPrefix(unit, "timezone") {
			// A unit of time zones, of a value that has none.
			e.Code, e.Message, e.Detail = sqlerr.FeatureNotSupported, fmt.Sprintf("unit %q not supported for this type", unit), ""
		} else {
			e.Code, e.Message, e.Detail = sqlerr.InvalidParameterValue, fmt.Sprintf("unit %q not recognized", unit), ""
		}
		return true
	}
	for _, p := range re2Errors {
		if strings.HasPrefix(msg, p) {
			e.Code, e.Message, e.Detail = sqlerr.InvalidRegularExpression, "invalid regular expression: "+msg, ""
			return true
		}
	}
	return false
}

// PGTypeOfDuckDB names a DuckDB type as PostgreSQL does, in messages.
func PGTypeOfDuckDB(t string) string {
	if ty, ok := schema.FromDuckDB(t); ok {
		return ty.String()
	}
	switch t {
	case "DATE":
		return "date"
	case "DECIMAL":
		return "numeric"
	}
	return strings.ToLower(t)
}

// ErrorTypeOf reads the type of a DuckDB error from its message ("Catalog
// Error: …"), for the C API calls that give only the message: the types
// EngineError tells apart.
func ErrorTypeOf(msg string) duckdb.ErrorType {
	prefix, _, ok := strings.Cut(msg, " Error: ")
	if !ok {
		return duckdb.ErrorTypeInvalid
	}
	switch prefix {
	case "Parser":
		return duckdb.ErrorTypeParser
	case "Syntax":
		return duckdb.ErrorTypeSyntax
	case "Catalog":
		return duckdb.ErrorTypeCatalog
	case "Binder":
		return duckdb.ErrorTypeBinder
	case "Conversion":
		return duckdb.ErrorTypeConversion
	case "Invalid Input":
		return duckdb.ErrorTypeInvalidInput
	case "Out of Range":
		return duckdb.ErrorTypeOutOfRange
	case "Divide by Zero":
		return duckdb.ErrorTypeDivideByZero
	case "INTERRUPT":
		return duckdb.ErrorTypeInterrupt
	case "Permission":
		return duckdb.ErrorTypePermission
	case "Out of Memory":
		return duckdb.ErrorTypeOutOfMemory
	case "Not implemented":
		return duckdb.ErrorTypeNotImplemented
	case "Mismatch Type":
		return duckdb.ErrorTypeMismatchType
	case "Invalid type":
		return duckdb.ErrorTypeInvalidType
	case "Constraint":
		return duckdb.ErrorTypeConstraint
	case "IO":
		return duckdb.ErrorTypeIO
	}
	return duckdb.ErrorTypeInvalid
}

// conversionCode picks the SQLSTATE of a failed cast the way PostgreSQL
// does: bad date/time text 22007, date/time out of range 22008, number out of
// range 22003, any other unreadable value 22P02.
func conversionCode(lower string) string {
	isTime := strings.Contains(lower, "timestamp") || strings.Contains(lower, "date") || strings.Contains(lower, "time zone") || strings.Contains(lower, "timezone") || strings.Contains(lower, "interval")
	outOfRange := strings.Contains(lower, "out of range") || strings.Contains(lower, "overflow")
	switch {
	case isTime && outOfRange:
		return sqlerr.DatetimeOverflow
	case isTime:
		return sqlerr.InvalidDatetimeFormat
	case outOfRange:
		return sqlerr.NumericOutOfRange
	}
	return sqlerr.InvalidTextRep
}

// Raise is an expression that fails the statement with code and msg
// when the engine evaluates it: a rewrite that finds input PostgreSQL
// refuses, where it cannot return an error itself.
func Raise(code, msg string) *pg_query.Node {
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("error")},
		[]*pg_query.Node{pg_query.MakeAConstStrNode("[tsdb "+code+"] "+msg, -1)}, -1)
}

// isRaise reports whether n is an expression Raise made.
func isRaise(n *pg_query.Node) bool {
	fc := n.GetFuncCall()
	if fc == nil || len(fc.Args) != 1 || sqltree.LastName(fc.Funcname) != "error" {
		return false
	}
	sv := fc.Args[0].GetAConst().GetSval()
	return sv != nil && strings.HasPrefix(sv.Sval, "[tsdb ")
}

// reEngineSequence is a temporary sequence's engine name in a message.
var reEngineSequence = regexp.MustCompile(`"*(?:temp\.main\.)?"*_tsdb_sq_([A-Za-z0-9_$]+)"*`)

// reRaiseCall finds a Raise in statement text.
var reRaiseCall = regexp.MustCompile(`error\('\[tsdb ([0-9A-Z]{5})\] ((?:[^']|'')*)'\)`)

// RaisedIn is the error of the first Raise in the text of a statement
// the engine could not bind: a Raise that TypedRaises typed as text may
// meet an operator that takes no text (1 + error(…)::text), and then the
// engine's complaint about types stands where PostgreSQL raises the
// error the Raise holds.
func RaisedIn(err error, text string) error {
	switch sqlerr.Code(err) {
	case sqlerr.UndefinedFunction, sqlerr.DatatypeMismatch, "42000":
	default:
		return err
	}
	var e *sqlerr.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "VARCHAR") {
		return err // not the text a Raise was given
	}
	m := reRaiseCall.FindStringSubmatch(text)
	if m == nil {
		return err
	}
	return &sqlerr.Error{Code: m[1], Message: strings.ReplaceAll(m[2], "''", "'"), Err: err}
}

// TypedRaises gives every Raise under m that is an argument or operand a
// type (text): the engine types error() as NULL, and a function or
// operator of its own (length, ||, +) folds a NULL-typed argument into a
// NULL result without evaluating it, so the error was lost and the
// statement answered NULL. A Raise that is a column of the result, the
// argument of a cast, a result of CASE or a sort key is left as it is. (An operator that takes no text
// then fails to bind: an error still, in the engine's words.)
func TypedRaises(m protoreflect.Message) bool {
	changed := false
	bare := map[*pg_query.Node]bool{}
	sqltree.ReplaceNodes(m, func(n *pg_query.Node) *pg_query.Node {
		if rt := n.GetResTarget(); rt != nil && rt.Val != nil {
			bare[rt.Val] = true
		}
		if tc := n.GetTypeCast(); tc != nil && tc.Arg != nil {
			bare[tc.Arg] = true
		}
		// A result of CASE (typed by its other results), a sort key.
		if cw := n.GetCaseWhen(); cw != nil && cw.Result != nil {
			bare[cw.Result] = true
		}
		if ce := n.GetCaseExpr(); ce != nil && ce.Defresult != nil {
			bare[ce.Defresult] = true
		}
		if sb := n.GetSortBy(); sb != nil && sb.Node != nil {
			bare[sb.Node] = true
		}
		return nil
	})
	sqltree.SubstituteNodes(m, func(n *pg_query.Node) *pg_query.Node {
		if !bare[n] && isRaise(n) {
			changed = true
			return sqltree.Cast(n, "text")
		}
		return nil
	})
	return changed
}

// numericOverflow gives e PostgreSQL's words for a value too wide for
// numeric(p, s).
func numericOverflow(e *sqlerr.Error, precision, scale string) {
	p, _ := strconv.Atoi(precision)
	s, _ := strconv.Atoi(scale)
	e.Code, e.Message = sqlerr.NumericOutOfRange, "numeric field overflow"
	e.Detail = fmt.Sprintf("A field with precision %d, scale %d must round to an absolute value less than 10^%d.", p, s, p-s)
}

// raiseError is Raise of an error the dialect made: its SQLSTATE and
// message, raised where the statement runs.
func raiseError(err error) *pg_query.Node {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return Raise(e.Code, e.Message)
	}
	return Raise(sqlerr.Code(err), err.Error())
}

// HasRaise reports whether n is or holds an expression Raise made.
func HasRaise(n *pg_query.Node) bool {
	found := false
	if isRaise(n) {
		return true
	}
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok && sqltree.LastName(fc.Funcname) == "error" {
			found = true
		}
		return nil
	})
	return found
}
