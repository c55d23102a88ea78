// Package sqltree holds what every layer that reads or rewrites
// PostgreSQL parse trees (pg_query's) needs: walking a tree, replacing
// its nodes, a function's name, a cast, and expressions written as SQL
// text around placeholders. It knows no engine and no session.
package sqltree

import (
	"errors"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SkipChildren, returned by Walk's fn, leaves the message's descendants
// out of the walk.
var SkipChildren = errors.New("sqltree: skip children")

// Walk calls fn for every message in the tree, depth first.
func Walk(m protoreflect.Message, fn func(proto.Message) error) error {
	if err := fn(m.Interface()); err != nil {
		if err == SkipChildren {
			return nil
		}
		return err
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = Walk(l.Get(i).Message(), fn)
			}
		case fd.Kind() == protoreflect.MessageKind:
			err = Walk(v.Message(), fn)
		}
		return err == nil
	})
	return err
}

// LastName is the last part of a qualified name (pg_catalog.now is now),
// in lower case.
func LastName(names []*pg_query.Node) string {
	if len(names) == 0 {
		return ""
	}
	return strings.ToLower(names[len(names)-1].GetString_().GetSval())
}

// ReplaceNodes replaces, depth first, every node for which fn returns a
// replacement, and then looks inside the replacement too (fn must not
// return a node it would replace again).
//
// A rewrite that breaks that rule would recurse until the process dies
// of a stack overflow, which no recover catches: past maxReplaceDepth
// replacements within replacements, ReplaceNodes panics with ErrTooDeep
// instead, which RecoverTooDeep turns back into an error.
func ReplaceNodes(m protoreflect.Message, fn func(*pg_query.Node) *pg_query.Node) {
	walkReplace(m, fn, true, 0)
}

// maxReplaceDepth is how many replacements ReplaceNodes takes within one
// another: a rewrite nests one per level of the statement it rewrites
// (the planner takes statements nesting at most 1,000 levels), far fewer
// than this.
const maxReplaceDepth = 10_000

// ErrTooDeep is the error of a rewrite that kept replacing what it had
// put in place (a bug of the rewrite, not of the statement).
var ErrTooDeep = errors.New("sqltree: a rewrite replaced its own replacements without end")

// tooDeep is the panic value of ErrTooDeep.
type tooDeep struct{}

// RecoverTooDeep, deferred, turns ReplaceNodes' panic into ErrTooDeep in
// *err; any other panic goes on.
func RecoverTooDeep(err *error) {
	if r := recover(); r != nil {
		if _, ok := r.(tooDeep); !ok {
			panic(r)
		}
		*err = ErrTooDeep
	}
}

// SubstituteNodes is ReplaceNodes that leaves a replacement as it is: the
// nodes put in may hold what fn would replace (a user's column named as a
// template's placeholder) without being replaced again, endlessly.
func SubstituteNodes(m protoreflect.Message, fn func(*pg_query.Node) *pg_query.Node) {
	walkReplace(m, fn, false, 0)
}

// walkReplace is ReplaceNodes and SubstituteNodes; intoReplacements says
// whether a replacement is walked too.
func walkReplace(m protoreflect.Message, fn func(*pg_query.Node) *pg_query.Node, intoReplacements bool, depth int) {
	if depth > maxReplaceDepth {
		panic(tooDeep{})
	}
	ReplaceChildren(m, func(n *pg_query.Node) *pg_query.Node {
		if r := fn(n); r != nil {
			if intoReplacements {
				walkReplace(r.ProtoReflect(), fn, true, depth+1)
			}
			return r
		}
		walkReplace(n.ProtoReflect(), fn, intoReplacements, depth)
		return nil
	})
}

// ReplaceChildren calls fn for each Node directly below m (looking
// through the messages that are not Nodes) and puts what it returns,
// when not nil, in that Node's place. It goes no deeper: fn walks on
// itself, in the order it needs (a post-order rewrite replaces a node's
// children before the node).
func ReplaceChildren(m protoreflect.Message, fn func(*pg_query.Node) *pg_query.Node) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if n, ok := l.Get(i).Message().Interface().(*pg_query.Node); ok {
					if r := fn(n); r != nil {
						l.Set(i, protoreflect.ValueOfMessage(r.ProtoReflect()))
					}
					continue
				}
				ReplaceChildren(l.Get(i).Message(), fn)
			}
		case fd.Kind() == protoreflect.MessageKind:
			if n, ok := v.Message().Interface().(*pg_query.Node); ok {
				if r := fn(n); r != nil {
					m.Set(fd, protoreflect.ValueOfMessage(r.ProtoReflect()))
				}
				return true
			}
			ReplaceChildren(v.Message(), fn)
		}
		return true
	})
}

// IsStar reports whether n is * or rel.* (a column reference ending in a
// star).
func IsStar(n *pg_query.Node) bool {
	cr := n.GetColumnRef()
	return cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil
}

// WithoutLocations is a copy of n with every source position cleared, so
// that the same expression written twice compares equal (proto.Equal).
func WithoutLocations(n *pg_query.Node) *pg_query.Node {
	c := proto.Clone(n).(*pg_query.Node)
	_ = Walk(c.ProtoReflect(), func(m proto.Message) error {
		r := m.ProtoReflect()
		if fd := r.Descriptor().Fields().ByName("location"); fd != nil && fd.Kind() == protoreflect.Int32Kind {
			r.Set(fd, protoreflect.ValueOfInt32(-1))
		}
		return nil
	})
	return c
}

// Cast is arg cast to the type named typeName.
func Cast(arg *pg_query.Node, typeName string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
		Arg:      arg,
		TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(typeName)}},
	}}}
}

// Template parses expr, an expression whose _tsdb_arg1, _tsdb_arg2, …
// stand for args, and puts a copy of each arg in its place.
func Template(expr string, args ...*pg_query.Node) (*pg_query.Node, error) {
	tree, err := pg_query.Parse("SELECT " + expr)
	if err != nil {
		return nil, fmt.Errorf("planner: expression template %q: %w", expr, err)
	}
	out := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	if f := out.GetColumnRef().GetFields(); len(f) == 1 && f[0].GetString_().GetSval() == "_tsdb_arg1" && len(args) > 0 {
		return proto.Clone(args[0]).(*pg_query.Node), nil
	}
	SubstituteNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		f := n.GetColumnRef().GetFields()
		if len(f) != 1 {
			return nil
		}
		var i int
		if _, err := fmt.Sscanf(f[0].GetString_().GetSval(), "_tsdb_arg%d", &i); err != nil || i < 1 || i > len(args) {
			return nil
		}
		return proto.Clone(args[i-1]).(*pg_query.Node)
	})
	return out, nil
}

// TypeName renders a parsed type name as the ParseType input:
// pg_catalog.float8 → float8, timestamptz, varchar(20) → varchar.
func TypeName(tn *pg_query.TypeName) string {
	var parts []string
	for _, n := range tn.Names {
		if s := n.GetString_(); s != nil {
			parts = append(parts, s.Sval)
		}
	}
	if len(parts) == 2 && parts[0] == "pg_catalog" {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}
