package dialect

// format(fmt, args…) is PostgreSQL's printf for SQL text: %s, %I and %L
// with optional positions (%2$s) and widths (%-10s). DuckDB's format
// takes {} placeholders instead and printed PostgreSQL's %s unchanged, so
// a constant format is translated here into the expression it means.

import (
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// FormatCall is format(args[0], args[1:]…) in the engine's terms.
func FormatCall(args []*pg_query.Node) (*pg_query.Node, error) {
	c := args[0].GetAConst()
	if c != nil && c.Isnull {
		return sqltree.Template("CAST(NULL AS VARCHAR)")
	}
	if c == nil || c.GetSval() == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "format() needs a constant format string")
	}
	expr, err := formatExpr(c.GetSval().Sval, len(args)-1)
	if err != nil {
		return nil, err
	}
	return sqltree.Template(expr, args[1:]...)
}

// formatExpr is the expression of format string f over n arguments, named
// _tsdb_arg1 … _tsdb_argN.
func formatExpr(f string, n int) (string, error) {
	var parts []string
	var lit strings.Builder
	next := 1 // the argument a specifier without a position takes
	invalid := func(why string) error {
		return sqlerr.New(sqlerr.InvalidParameterValue, "%s", why)
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit.WriteByte(f[i])
			continue
		}
		i++
		if i == len(f) {
			return "", invalid("unterminated format() type specifier")
		}
		if f[i] == '%' {
			lit.WriteByte('%')
			continue
		}
		// [position$][-][width]type
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		arg := next
		if j < len(f) && f[j] == '$' && j > i {
			p, err := strconv.Atoi(f[i:j])
			if err != nil || p < 1 {
				return "", invalid("format specifies argument 0, but arguments are numbered from 1")
			}
			arg, i = p, j+1
		}
		left := false
		if i < len(f) && f[i] == '-' {
			left, i = true, i+1
		}
		j = i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		width := f[i:j]
		i = j
		if i == len(f) {
			return "", invalid("unterminated format() type specifier")
		}
		if f[i] == '*' {
			return "", sqlerr.New(sqlerr.FeatureNotSupported, "format() widths taken from arguments (*) are not supported")
		}
		if arg > n {
			return "", invalid("too few arguments for format()")
		}
		next = arg + 1
		x := fmt.Sprintf("CAST(_tsdb_arg%d AS VARCHAR)", arg)
		var piece string
		switch f[i] {
		case 's':
			piece = "coalesce(" + x + ", '')"
		case 'I':
			piece = "quote_ident(" + x + ")"
		case 'L':
			piece = "coalesce('''' || replace(" + x + ", '''', '''''') || '''', 'NULL')"
		default:
			return "", invalid(fmt.Sprintf("unrecognized format() type specifier %q", f[i]))
		}
		if width != "" {
			flags := ""
			if left {
				flags = "-"
			}
			piece = fmt.Sprintf("printf('%%%s%ss', %s)", flags, width, piece)
		}
		if lit.Len() > 0 {
			parts = append(parts, schema.QuoteString(lit.String()))
			lit.Reset()
		}
		parts = append(parts, piece)
	}
	if lit.Len() > 0 || len(parts) == 0 {
		parts = append(parts, schema.QuoteString(lit.String()))
	}
	return strings.Join(parts, " || "), nil
}
