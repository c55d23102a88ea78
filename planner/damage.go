package planner

// What clients are told when a statement fails is decided here, at the
// boundary between the engine and the client: a damaged table is
// PostgreSQL's data_corrupted (XX001) naming the table and its file; a
// file the engine could not read is checked (ingest.Store.CheckFile), so
// that a damaged one is recorded and named; and no message carries an
// absolute path of the server or the SQL tsdb wrote for the engine (the
// views it binds tables with).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/delta"
	"tsdb/ingest"
	"tsdb/internal/auth"
	"tsdb/internal/backend"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// DataCorrupted is PostgreSQL's SQLSTATE for data it finds damaged.
const DataCorrupted = "XX001"

// unavailableError is the SQL error of a table that cannot be read, or err
// as it is when it is not about one.
func unavailableError(err error) error {
	var ue *ingest.UnavailableError
	if !errors.As(err, &ue) {
		return err
	}
	var td *ingest.TextDMLError
	if errors.As(ue, &td) {
		// object_not_in_prerequisite_state: nothing is damaged; the table
		// waits for the release that can redo the statement.
		return &sqlerr.Error{Code: "55000", Message: ue.Error(),
			Hint: "Stop this release cleanly, start the tsdb release that wrote the entry on this data directory once and stop it cleanly (its shutdown flushes the statement into the table), then start this one; or give the table up with DROP TABLE. Other tables are not affected.", Err: err}
	}
	var fe *delta.ForeignFileError
	if errors.As(ue, &fe) {
		return &sqlerr.Error{Code: "55000", Message: ue.Error(),
			Hint: "Rewrite or remove that file with the writer that wrote it and restart tsdb (the table's WAL entries are kept), or give the table up with DROP TABLE. Other tables are not affected.", Err: err}
	}
	if ue.Unsupported() {
		return &sqlerr.Error{Code: sqlerr.FeatureNotSupported, Message: ue.Error(), Hint: "Another Delta writer gave the table this; read it with that writer. Other tables are not affected.", Err: err}
	}
	hint := fmt.Sprintf("Restore the file from a backup, or remove the damaged files from the table with SELECT tsdb_repair_table(%s) (their rows are lost; copies stay in the quarantine directory). Other tables are not affected.", schema.QuoteString(schema.QuoteIdent(ue.Table)))
	if ue.Whole {
		hint = "Restore or fix the file and restart tsdb (the table's WAL entries are kept), or give the table up with DROP TABLE. Other tables are not affected."
	}
	return &sqlerr.Error{Code: DataCorrupted, Message: ue.Error(), Hint: hint, Err: err}
}

// reDataFile finds a data file's path in an engine message.
var reDataFile = regexp.MustCompile(`(/[^\s'"]*?\.parquet)`)

// clientError is the error a client gets for err: damage recognised and
// named, the rest mapped as the engine's errors are, absolute paths and
// internal SQL removed.
func (s *Session) clientError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if e := unavailableError(err); e != err {
		return e
	}
	// A storage error gets its SQLSTATE (engineError) and then the same
	// scrubbing as the engine's: no server path reaches the client.
	err = engineError(err)
	var se *sqlerr.Error
	if !errors.As(err, &se) {
		return err
	}
	tables := s.p.engine.opts.TablesDir
	if tables == "" {
		return err
	}
	if m := reDataFile.FindStringSubmatch(se.Message + " " + se.Detail); m != nil && strings.HasPrefix(m[1], tables+"/") {
		// The engine could not read a file: damaged, or not (a cast
		// failing on its values names no file).
		rel := strings.TrimPrefix(m[1], tables+"/")
		dir, _, ok := strings.Cut(rel, "/")
		if table, named := delta.TableName(dir); ok && named {
			if ue := s.p.store.CheckFile(context.WithoutCancel(ctx), table, m[1]); ue != nil {
				return unavailableError(ue)
			}
		}
	}
	out := *se
	if out.Code == sqlerr.OutOfMemory && strings.Contains(out.Detail, "Possible solutions") {
		// DuckDB's advice names settings clients cannot change.
		out.Detail = ""
		out.Hint = "The statement needs more memory than the engine may give it and cannot spill: raise --engine-memory-limit (ordered-set aggregates such as percentile_cont and median hold each group's values in memory)."
	}
	out.Message = scrubPaths(out.Message, tables)
	out.Detail = scrubPaths(out.Detail, tables)
	if internalSQL(out.Detail) {
		out.Detail = ""
	}
	if internalSQL(out.Message) {
		out.Message = "the engine failed on tsdb's view of a table: " + scrubInternal(out.Message)
	}
	return &out
}

// scrubPaths writes paths under the tables directory relative to it, and
// other absolute paths of the server by their last element.
func scrubPaths(s, tables string) string {
	if s == "" {
		return s
	}
	s = strings.ReplaceAll(s, tables+"/", "")
	return reDataFile.ReplaceAllStringFunc(s, filepath.Base)
}

// internalSQL reports text showing SQL tsdb wrote for the engine.
func internalSQL(s string) bool {
	return strings.Contains(s, "TEMP VIEW") || strings.Contains(s, "read_parquet(") || strings.Contains(s, mirrorSchema+".")
}

var reReadParquet = regexp.MustCompile(`read_parquet\(\[[^\]]*\]\)`)

// scrubInternal shortens the view definitions in a message.
func scrubInternal(s string) string {
	s = reReadParquet.ReplaceAllString(s, "read_parquet(…)")
	if i := strings.Index(s, "CREATE OR REPLACE TEMP VIEW"); i >= 0 {
		s = s[:i] + "(tsdb's view)"
	}
	return s
}

// repairFunction is the operator's way out of damaged data files:
// SELECT tsdb_repair_table('t') (ingest.Store.RepairTable).
const repairFunction = "tsdb_repair_table"

// repairCall finds SELECT tsdb_repair_table('t') in a statement: the
// table's name and true. The function runs only as that whole statement
// (it commits to the table): used anywhere else it is an error.
func repairCall(n *pg_query.Node) (string, bool, error) {
	if n == nil {
		return "", false, nil
	}
	found := 0
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok && sqltree.LastName(fc.Funcname) == repairFunction {
			found++
		}
		return nil
	})
	if found == 0 {
		return "", false, nil
	}
	misuse := sqlerr.New(sqlerr.FeatureNotSupported, "%s() runs as a statement of its own: SELECT %s('table')", repairFunction, repairFunction)
	sel := n.GetSelectStmt()
	if found != 1 || sel == nil || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 || sel.WhereClause != nil || sel.WithClause != nil ||
		len(sel.ValuesLists) > 0 || sel.Op != pg_query.SetOperation_SETOP_NONE {
		return "", true, misuse
	}
	fc := sel.TargetList[0].GetResTarget().GetVal().GetFuncCall()
	if fc == nil || len(fc.Args) != 1 || fc.AggFilter != nil || fc.Over != nil {
		return "", true, misuse
	}
	c := fc.Args[0].GetAConst()
	if c == nil || c.GetSval() == nil {
		return "", true, sqlerr.New(sqlerr.FeatureNotSupported, "%s() takes the table's name as a constant: SELECT %s('table')", repairFunction, repairFunction)
	}
	// A name as regclass reads one: folded unless quoted, public. optional.
	names, err := parseQualifiedName(c.GetSval().GetSval())
	if err != nil {
		return "", true, err
	}
	if len(names) == 2 && names[0] != "public" {
		return "", true, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", c.GetSval().GetSval())
	}
	return names[len(names)-1], true, nil
}

// repairColumns describe the result of SELECT tsdb_repair_table('t').
var repairColumns = []Column{{Name: repairFunction, OID: oidText, Size: -1}}

// repair runs SELECT tsdb_repair_table('t').
func (s *Session) repair(ctx context.Context, table string) (*Result, error) {
	rep, err := s.p.store.RepairTable(ctx, table)
	if err != nil {
		return nil, unavailableError(err)
	}
	var msg string
	switch {
	case len(rep.Restored) == 0 && len(rep.Removed) == 0:
		msg = "nothing to repair: no damaged data files"
	default:
		parts := []string{}
		if len(rep.Restored) > 0 {
			parts = append(parts, fmt.Sprintf("%d damaged files are whole again: %s", len(rep.Restored), strings.Join(rep.Restored, ", ")))
		}
		if len(rep.Removed) > 0 {
			rows := fmt.Sprint(rep.RowsRemoved)
			if rep.RowsRemoved < 0 {
				rows = "an unknown number of"
			}
			parts = append(parts, fmt.Sprintf("removed %d damaged files and the %s rows they held: %s", len(rep.Removed), rows, strings.Join(rep.Removed, ", ")))
		}
		msg = strings.Join(parts, "; ")
	}
	return &Result{Tag: "SELECT", Columns: repairColumns, Rows: NewStaticRows([][]any{{msg}})}, nil
}

// signalCall finds SELECT pg_cancel_backend(pid) or
// pg_terminate_backend(pid): the process ID, which of the two, and true.
// As tsdb_repair_table, they run as a whole statement with a constant.
func signalCall(n *pg_query.Node) (pid int64, terminate, found bool, err error) {
	sel := n.GetSelectStmt()
	if sel == nil {
		return 0, false, false, nil
	}
	count := 0
	_ = sqltree.Walk(n.ProtoReflect(), func(m proto.Message) error {
		if fc, ok := m.(*pg_query.FuncCall); ok {
			if name := sqltree.LastName(fc.Funcname); name == "pg_cancel_backend" || name == "pg_terminate_backend" {
				count++
			}
		}
		return nil
	})
	if count == 0 {
		return 0, false, false, nil
	}
	misuse := sqlerr.New(sqlerr.FeatureNotSupported, "pg_cancel_backend() and pg_terminate_backend() run as a statement of their own with a constant: SELECT pg_cancel_backend(12345)")
	if count != 1 || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 || sel.WhereClause != nil || sel.Op != pg_query.SetOperation_SETOP_NONE {
		return 0, false, true, misuse
	}
	fc := sel.TargetList[0].GetResTarget().GetVal().GetFuncCall()
	if fc == nil || len(fc.Args) < 1 || len(fc.Args) > 2 {
		return 0, false, true, misuse
	}
	c := fc.Args[0].GetAConst()
	if c == nil || c.GetIval() == nil {
		return 0, false, true, misuse
	}
	return int64(c.GetIval().Ival), sqltree.LastName(fc.Funcname) == "pg_terminate_backend", true, nil
}

// signal runs pg_cancel_backend(pid) or pg_terminate_backend(pid): true
// when the session exists and was signalled; false, with PostgreSQL's
// warning, when there is none.
func (s *Session) signal(pid int64, terminate bool) (*Result, error) {
	name := "pg_cancel_backend"
	if terminate {
		name = "pg_terminate_backend"
	}
	res := &Result{Tag: "SELECT", Columns: []Column{{Name: name, OID: oidBool, Size: 1}}}
	reg := s.p.engine.opts.Backends
	if reg == nil || pid <= 0 || pid > math.MaxUint32 {
		res.Rows = NewStaticRows([][]any{{false}})
		res.Warning = &sqlerr.Error{Code: sqlerr.Warning, Message: fmt.Sprintf("PID %d is not a PostgreSQL backend process", pid)}
		return res, nil
	}
	admin := s.p.roles == nil || s.p.roles.Allowed(s.user, auth.Manage)
	found, err := reg.Signal(uint32(pid), terminate, s.user, admin)
	if errors.Is(err, backend.ErrNotPermitted) {
		what := "cancel queries of"
		if terminate {
			what = "terminate"
		}
		return nil, sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to %s the session %d: only its own role or the admin may", what, pid)
	}
	if !found {
		res.Rows = NewStaticRows([][]any{{false}})
		res.Warning = &sqlerr.Error{Code: sqlerr.Warning, Message: fmt.Sprintf("PID %d is not a PostgreSQL backend process", pid)}
		return res, nil
	}
	res.Rows = NewStaticRows([][]any{{true}})
	return res, nil
}
