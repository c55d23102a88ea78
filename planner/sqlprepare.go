package planner

// SQL-level prepared statements: PREPARE, EXECUTE, DEALLOCATE and DISCARD.
// They share the namespace of the extended protocol's statements (psycopg
// sends DEALLOCATE ALL for statements it prepared with Parse), which the
// session executor owns: the planner prepares and binds, and hands the
// executor what to keep or drop through the Result.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// PrepareRequest is set on the Result of PREPARE: the executor keeps Stmt
// under Name.
type PrepareRequest struct {
	Name string
	Stmt *Prepared
}

// ExecuteRequest is set on the Result of EXECUTE: the executor runs its
// statement Name with ExecuteArgs.
type ExecuteRequest struct {
	Name string
	args []*pg_query.Node
}

// DeallocateRequest is set on the Result of DEALLOCATE: the executor
// forgets statement Name, or every statement.
type DeallocateRequest struct {
	Name string
	All  bool
}

// prepareSQL runs PREPARE name [(types)] AS statement.
func (s *Session) prepareSQL(ctx context.Context, st *pg_query.PrepareStmt) (*Result, error) {
	declared := make([]uint32, len(st.Argtypes))
	for i, a := range st.Argtypes {
		tn := a.GetTypeName()
		if tn == nil {
			continue
		}
		oid, err := paramTypeOID(tn)
		if err != nil {
			return nil, err
		}
		declared[i] = oid
	}
	text, err := deparse(s.p.pgVersion, st.Query)
	if err != nil {
		return nil, err
	}
	p, err := s.prepareParsed(ctx, statement{text: text, node: st.Query}, declared, false)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "PREPARE", Prepare: &PrepareRequest{Name: st.Name, Stmt: p}}, nil
}

// paramTypeOID is the OID of a type PREPARE declares for a parameter.
func paramTypeOID(tn *pg_query.TypeName) (uint32, error) {
	name := strings.ToLower(sqltree.TypeName(tn))
	if t, err := schema.ParseType(name); err == nil {
		return t.OID(), nil
	}
	if oid, ok := castParamOIDs[name]; ok {
		return oid, nil
	}
	switch name {
	case "text", "varchar", "character varying", "char", "character", "name", "unknown":
		return oidText, nil
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "parameters of type %s are not supported", name)
}

// ExecuteArgs runs a prepared statement with the arguments of an EXECUTE:
// each is put in place of its parameter, cast to the parameter's type.
func (s *Session) ExecuteArgs(ctx context.Context, p *Prepared, req *ExecuteRequest, emit func(*Result) error) (err error) {
	defer s.rewriteBug(&err)
	defer sqltree.RecoverTooDeep(&err)
	return s.clientError(ctx, s.executeArgs(ctx, p, req, emit))
}

func (s *Session) executeArgs(ctx context.Context, p *Prepared, req *ExecuteRequest, emit func(*Result) error) error {
	if len(req.args) != len(p.ParamOIDs) {
		return &sqlerr.Error{Code: sqlerr.SyntaxError, Message: fmt.Sprintf("wrong number of parameters for prepared statement %q", req.Name),
			Detail: "Expected " + strconv.Itoa(len(p.ParamOIDs)) + " parameters but got " + strconv.Itoa(len(req.args)) + "."}
	}
	if p.Empty {
		return emit(&Result{Empty: true})
	}
	if p.stmt.node == nil {
		return s.executePrepared(ctx, p, nil, emit)
	}
	node := proto.Clone(p.stmt.node).(*pg_query.Node)
	var ferr error
	sqltree.SubstituteNodes(node.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		pr := n.GetParamRef()
		if pr == nil {
			return nil
		}
		i := int(pr.Number) - 1
		if i < 0 || i >= len(req.args) {
			ferr = sqlerr.New(sqlerr.UndefinedObject, "there is no parameter $%d", pr.Number)
			return nil
		}
		arg := proto.Clone(req.args[i]).(*pg_query.Node)
		if name, ok := typeNames[p.ParamOIDs[i]]; ok {
			return sqltree.Cast(arg, name)
		}
		return sqltree.Cast(arg, "text")
	})
	if ferr != nil {
		return ferr
	}
	text, err := deparse(s.p.pgVersion, node)
	if err != nil {
		return err
	}
	res, err := s.execute(ctx, statement{text: text, node: node})
	if err != nil {
		return err
	}
	return emit(res)
}

// discard runs DISCARD: ALL resets the session (settings, plans, and,
// through the executor, its prepared statements, portals and cursors).
func (s *Session) discard(ctx context.Context, st *pg_query.DiscardStmt) (*Result, error) {
	switch st.Target {
	case pg_query.DiscardMode_DISCARD_ALL:
		if s.tx != nil {
			return nil, sqlerr.New(sqlerr.ActiveSQLTransaction, "DISCARD ALL cannot run inside a transaction block")
		}
		if _, err := s.set(ctx, &pg_query.VariableSetStmt{Kind: pg_query.VariableSetKind_VAR_RESET_ALL}); err != nil {
			return nil, err
		}
		s.dropPlans()
		clear(s.described)
		s.discardTemps(ctx)
		return &Result{Tag: "DISCARD ALL", Deallocate: &DeallocateRequest{All: true}, Discard: true}, nil
	case pg_query.DiscardMode_DISCARD_PLANS:
		s.dropPlans()
		clear(s.described)
		return &Result{Tag: "DISCARD PLANS"}, nil
	case pg_query.DiscardMode_DISCARD_SEQUENCES:
		return &Result{Tag: "DISCARD SEQUENCES"}, nil
	}
	if s.tx != nil && len(s.temps) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DISCARD TEMP of temporary tables inside a transaction block is not supported: its effect could not be rolled back")
	}
	s.dropPlans()
	s.discardTemps(ctx)
	return &Result{Tag: "DISCARD TEMP"}, nil
}
