package planner

// The values of a prepared statement's parameters put in its tree as
// literals of their types.

import (
	"math"
	"strconv"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"tsdb/dialect"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// substituteParams returns a copy of node with every $n replaced by a
// literal of its type (NULL for nil).
func substituteParams(node *pg_query.Node, oids []uint32, params []any) (*pg_query.Node, error) {
	out := proto.Clone(node).(*pg_query.Node)
	var ferr error
	sqltree.ReplaceNodes(out.ProtoReflect(), func(n *pg_query.Node) *pg_query.Node {
		pr := n.GetParamRef()
		if pr == nil {
			return nil
		}
		i := int(pr.Number) - 1
		if i < 0 || i >= len(params) {
			ferr = sqlerr.New(sqlerr.UndefinedObject, "there is no parameter $%d", pr.Number)
			return nil
		}
		lit, err := literalNode(params[i], oids[i])
		if err != nil {
			ferr = err
			return nil
		}
		return lit
	})
	if ferr != nil {
		return nil, ferr
	}
	return out, nil
}

// typeNames maps parameter OIDs to the type a literal is cast to.
var typeNames = map[uint32]string{
	oidBool: "bool", oidInt2: "int2", oidInt4: "int4", oidInt8: "int8", oidFloat4: "float4", oidFloat8: "float8",
	oidTimestamp: "timestamp", oidTimestamptz: "timestamptz", oidDate: "date", oidNumeric: "numeric",
	oidInterval: "interval", 1560: "bit", 1562: "varbit", // bit strings of any length
}

// literalNode renders one parameter value as a literal. Text parameters
// stay untyped string literals, which the engine casts by context as
// PostgreSQL does with unknown-typed literals; others are cast to their type
// so that result types do not depend on the values.
func literalNode(v any, oid uint32) (*pg_query.Node, error) {
	var text string
	switch x := v.(type) {
	case nil:
		if name, ok := typeNames[oid]; ok {
			return sqltree.Cast(&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, name), nil
		}
		return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, nil
	case string:
		text = x
	case []byte:
		text = string(x)
	case bool:
		text = strconv.FormatBool(x)
	case int64:
		text = strconv.FormatInt(x, 10)
	case float64:
		switch {
		case math.IsNaN(x):
			text = "NaN"
		case math.IsInf(x, 1):
			text = "Infinity"
		case math.IsInf(x, -1):
			text = "-Infinity"
		default:
			text = strconv.FormatFloat(x, 'g', -1, 64)
		}
	case time.Time:
		if oid == oidDate {
			text = x.UTC().Format("2006-01-02")
		} else {
			text = x.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
			if oid == oidTimestamp {
				text = x.UTC().Format("2006-01-02 15:04:05.999999")
			}
		}
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameter of Go type %T", v)
	}
	str := pg_query.MakeAConstStrNode(text, -1)
	elemOID := dialect.ArrayElement(oid)
	elem, ok := typeNames[elemOID]
	if elemOID == oidText {
		elem, ok = "text", true
	}
	if ok {
		// An array in PostgreSQL's text: the cast reads it (rewritePG).
		return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: str,
			TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(elem)}, ArrayBounds: []*pg_query.Node{pg_query.MakeAConstIntNode(-1, -1)}}}}}, nil
	}
	name, typed := typeNames[oid]
	if !typed {
		return str, nil
	}
	return sqltree.Cast(str, name), nil
}
