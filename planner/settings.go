package planner

// SET, RESET and SHOW: the statements that change and read a session's
// settings (dialect.Settings).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

func (s *Session) set(ctx context.Context, st *pg_query.VariableSetStmt) (*Result, error) {
	name := strings.ToLower(st.Name)
	notInBlock := func(what string) (*Result, error) {
		return &Result{Tag: "SET", Warning: &sqlerr.Error{Code: sqlerr.NoActiveSQLTransaction, Message: what + " can only be used in transaction blocks"}}, nil
	}
	switch st.Kind {
	case pg_query.VariableSetKind_VAR_RESET_ALL:
		s.settings.ResetAll()
		s.syncIsolationSetting()
		return &Result{Tag: "RESET"}, nil
	case pg_query.VariableSetKind_VAR_RESET, pg_query.VariableSetKind_VAR_SET_DEFAULT:
		def, ok := s.settings.ResetValue(name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
		}
		if err := s.setValue(ctx, name, def, st.IsLocal); err != nil {
			return nil, err
		}
		if st.Kind == pg_query.VariableSetKind_VAR_RESET {
			return &Result{Tag: "RESET"}, nil
		}
		return &Result{Tag: "SET"}, nil
	case pg_query.VariableSetKind_VAR_SET_VALUE:
	case pg_query.VariableSetKind_VAR_SET_MULTI:
		switch name {
		case "transaction":
			// SET TRANSACTION ISOLATION LEVEL …, READ ONLY …
			if s.tx == nil {
				return notInBlock("SET TRANSACTION")
			}
			if err := s.tx.setModes(st.Args); err != nil {
				return nil, err
			}
			s.syncIsolationSetting()
		case "session characteristics":
			for _, a := range st.Args {
				d := a.GetDefElem()
				if d == nil {
					continue
				}
				var err error
				switch d.Defname {
				case "transaction_isolation":
					err = s.settings.Set("default_transaction_isolation", constString(d.Arg))
				case "transaction_read_only":
					err = s.settings.Set("default_transaction_read_only", constString(d.Arg))
				}
				if err != nil {
					return nil, err
				}
			}
			s.syncIsolationSetting()
		}
		return &Result{Tag: "SET"}, nil
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "this form of SET is not supported")
	}
	var vals []string
	for _, a := range st.Args {
		v := constString(a)
		if name == "search_path" {
			// Schema names as PostgreSQL shows them: "$user" keeps its
			// quotes (Grafana's schema picker looks for them).
			v = dialect.QuoteIdent(v)
		}
		vals = append(vals, v)
	}
	value := strings.Join(vals, ", ")
	if len(st.Args) == 1 && name == "timezone" && st.Args[0].GetTypeCast() != nil && sqltree.LastName(st.Args[0].GetTypeCast().TypeName.GetNames()) == "interval" {
		tc := st.Args[0].GetTypeCast()
		v, err := timeZoneInterval(tc)
		if err != nil {
			return nil, err
		}
		value = v
	}
	switch name {
	case "transaction_isolation", "transaction_read_only":
		// SET transaction_isolation is SET TRANSACTION ISOLATION LEVEL.
		if s.tx == nil {
			return notInBlock("SET TRANSACTION")
		}
		def := &pg_query.DefElem{Defname: name, Arg: pg_query.MakeAConstStrNode(value, -1)}
		if err := s.tx.setModes([]*pg_query.Node{{Node: &pg_query.Node_DefElem{DefElem: def}}}); err != nil {
			return nil, err
		}
		s.syncIsolationSetting()
		return &Result{Tag: "SET"}, nil
	}
	if st.IsLocal && s.tx == nil {
		return notInBlock("SET LOCAL")
	}
	if err := s.setValue(ctx, name, value, st.IsLocal); err != nil {
		return nil, err
	}
	return &Result{Tag: "SET"}, nil
}

// setValue sets a parameter; a SET LOCAL one goes back to its value when
// the transaction ends.
func (s *Session) setValue(ctx context.Context, name, value string, local bool) error {
	old := s.settings.Get(name)
	if err := s.settings.Set(name, value); err != nil {
		return err
	}
	switch {
	case local && s.tx != nil:
		if s.tx.local == nil {
			s.tx.local = map[string]string{}
		}
		if _, ok := s.tx.local[name]; !ok {
			s.tx.local[name] = old
		}
	case s.tx != nil:
		// A plain SET after SET LOCAL outlives the transaction.
		delete(s.tx.local, name)
	}
	if strings.HasPrefix(name, "default_transaction_") {
		s.syncIsolationSetting()
	}
	switch name {
	case "timezone":
		return s.setZone(ctx, old)
	case "work_mem":
		return s.checkWorkMem(old)
	}
	return nil
}

// constString renders a SET argument: 'text', 42, 1.5, on.
func constString(n *pg_query.Node) string {
	if c := n.GetAConst(); c != nil {
		switch v := c.Val.(type) {
		case *pg_query.A_Const_Sval:
			return v.Sval.Sval
		case *pg_query.A_Const_Ival:
			return fmt.Sprint(v.Ival.Ival)
		case *pg_query.A_Const_Fval:
			return v.Fval.Fval
		case *pg_query.A_Const_Boolval:
			if v.Boolval.Boolval {
				return "on"
			}
			return "off"
		}
	}
	if tc := n.GetTypeCast(); tc != nil {
		return constString(tc.Arg)
	}
	if s := n.GetString_(); s != nil {
		return s.Sval
	}
	return ""
}

func (s *Session) show(name string) (*Result, error) {
	name = strings.ToLower(name)
	if name == "all" {
		var rows [][]any
		for _, k := range dialect.Names() {
			rows = append(rows, []any{dialect.DisplayName(k), s.settings.Get(k), ""})
		}
		return &Result{Tag: "SHOW", Columns: []Column{{Name: "name", OID: 25, Size: -1}, {Name: "setting", OID: 25, Size: -1}, {Name: "description", OID: 25, Size: -1}}, Rows: NewStaticRows(rows)}, nil
	}
	if !dialect.Known(name) {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	col := name
	if name == "timezone" {
		col = "TimeZone"
	} else if name == "datestyle" {
		col = "DateStyle"
	}
	return &Result{Tag: "SHOW", Columns: []Column{{Name: col, OID: 25, Size: -1}}, Rows: NewStaticRows([][]any{{s.settings.Get(name)}})}, nil
}

// timeZoneInterval reads SET TIME ZONE INTERVAL '-04:30' HOUR TO MINUTE as
// PostgreSQL does: an offset east of UTC (the SQL sign, where a POSIX
// zone's is west), without months or days, made the number of hours a
// TimeZone value takes (shown as <-04:30>+04:30). A bare number counts in
// the last field the type names, seconds without one.
func timeZoneInterval(tc *pg_query.TypeCast) (string, error) {
	text := constString(tc.Arg)
	// The fields the type names apply as to any interval constant ('5'
	// HOUR is five hours, '-04:30' HOUR is -04).
	iv, err := dialect.IntervalValue(tc.TypeName, text, pgdatetime.Postgres)
	if err != nil {
		return "", err
	}
	unit := ""
	switch {
	case iv.Months != 0:
		unit = "months"
	case iv.Days != 0:
		unit = "days"
	}
	if unit != "" {
		return "", &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Message: fmt.Sprintf(`invalid value for parameter "TimeZone": "INTERVAL '%s'"`, text),
			Detail: "Cannot specify " + unit + " in time zone interval."}
	}
	return strconv.FormatFloat(float64(iv.Micros)/3.6e9, 'f', -1, 64), nil
}
