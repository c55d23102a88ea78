package viewdef

// Constants: how PostgreSQL types a literal and writes it back.

import (
	"math"
	"strconv"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqltree"
)

// constant types a literal as PostgreSQL's make_const does: an integer
// that fits int4 is integer, a longer one bigint, then numeric; a number
// with a point or exponent numeric; a string unknown.
func (a *analyzer) constant(c *pg_query.A_Const) (expr, error) {
	switch {
	case c.Isnull:
		return &konst{t: tUnknown, null: true}, nil
	case c.GetIval() != nil:
		return &konst{t: tInt4, text: strconv.FormatInt(int64(c.GetIval().Ival), 10)}, nil
	case c.GetFval() != nil:
		s := c.GetFval().Fval
		if !strings.ContainsAny(s, ".eE") {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				if v >= math.MinInt32 && v <= math.MaxInt32 {
					return &konst{t: tInt4, text: strconv.FormatInt(v, 10)}, nil
				}
				return &konst{t: tInt8, text: strconv.FormatInt(v, 10)}, nil
			}
		}
		neg := strings.HasPrefix(s, "-")
		text, ok := numericText(strings.TrimPrefix(s, "-"))
		if neg {
			text = "-" + text
		}
		if !ok {
			return nil, refuse("the number %s", s)
		}
		return &konst{t: tNumeric, text: text}, nil
	case c.GetSval() != nil:
		return &konst{t: tUnknown, text: c.GetSval().Sval}, nil
	case c.GetBoolval() != nil:
		if c.GetBoolval().Boolval {
			return &konst{t: tBool, text: "t"}, nil
		}
		return &konst{t: tBool, text: "f"}, nil
	}
	return nil, refuse("this constant")
}

// numericText writes a numeric literal as numeric_out does: plain digits
// with the literal's scale (1.50 stays 1.50, 1e3 is 1000).
func numericText(s string) (string, bool) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 100 || e < -100 {
			return "", false
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if strings.Trim(intPart+frac, "0123456789") != "" || intPart+frac == "" {
		return "", false
	}
	digits := intPart + frac
	point := len(intPart) + exp // digits before the point
	scale := len(frac) - exp
	if scale < 0 {
		scale = 0
	}
	for point > len(digits) {
		digits += "0"
	}
	for point < 0 {
		digits = "0" + digits
		point++
	}
	for len(digits)-point < scale {
		digits += "0"
	}
	whole := strings.TrimLeft(digits[:point], "0")
	if whole == "" {
		whole = "0"
	}
	if scale == 0 {
		return whole, true
	}
	return whole + "." + digits[point:point+scale], true
}

// coerceUnknown gives an unknown literal the type t, as its input function
// reads it; the constant prints in t's output form.
func coerceUnknown(e expr, t Type, env Env) (expr, error) {
	k, ok := e.(*konst)
	if !ok || k.t.OID != oidUnknown {
		return nil, refuse("this coercion")
	}
	if k.null {
		return &konst{t: t, null: true}, nil
	}
	s := k.text
	var text string
	switch t.OID {
	case OIDText:
		text = s
	case OIDInt2, OIDInt4, OIDInt8:
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		bits := map[uint32]int{OIDInt2: 16, OIDInt4: 32, OIDInt8: 64}[t.OID]
		if err != nil || bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1)) {
			return nil, refuse("the literal %q as %s", s, t)
		}
		text = strconv.FormatInt(v, 10)
	case OIDBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			text = "t"
		case "f", "false", "n", "no", "off", "0":
			text = "f"
		default:
			return nil, refuse("the literal %q as boolean", s)
		}
	case OIDFloat8:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, refuse("the literal %q as double precision", s)
		}
		text = string(dialect.AppendFloat(nil, f, 64, env.FloatDigits))
	case OIDNumeric:
		if t.Mod != -1 {
			return nil, refuse("a literal as numeric(p,s)")
		}
		var ok bool
		if text, ok = numericText(strings.TrimSpace(s)); !ok {
			return nil, refuse("the literal %q as numeric", s)
		}
	case OIDInterval:
		iv, err := pgdatetime.ParseIntervalStyle(s, env.Intervals)
		if err != nil {
			return nil, refuse("the literal %q as interval", s)
		}
		text = iv.Format(env.Intervals)
	case OIDDate, OIDTimestamp, OIDTimestamptz:
		kind := map[uint32]string{OIDDate: "date", OIDTimestamp: "timestamp without time zone", OIDTimestamptz: "timestamp with time zone"}[t.OID]
		v, err := pgdatetime.Parse(s, kind, env.Order)
		if err != nil || v.Special != pgdatetime.Finite {
			// 'now', 'today' and the like are the time the view was
			// made, which tsdb does not keep.
			return nil, refuse("the literal %q as %s", s, t)
		}
		var tm time.Time
		var tk pgdatetime.TimeKind
		switch t.OID {
		case OIDDate:
			tm, err = time.Parse("2006-01-02", v.Date())
			tk = pgdatetime.KindDate
		case OIDTimestamp:
			tm, err = time.Parse("2006-01-02 15:04:05.999999", v.Timestamp())
			tk = pgdatetime.KindTimestamp
		default:
			tm, err = time.Parse("2006-01-02 15:04:05.999999-07", v.Timestamptz(env.Loc))
			tk = pgdatetime.KindTimestamptz
		}
		if err != nil || tm.Year() < 1 {
			return nil, refuse("the literal %q as %s", s, t)
		}
		text = string(pgdatetime.AppendDateTime(nil, tm, tk, env.Loc, env.Dates, env.Order))
	default:
		return nil, refuse("a literal as %s", t)
	}
	return &konst{t: t, text: text}, nil
}

// typeOf resolves a type name the analysis knows.
func typeOf(tn *pg_query.TypeName) (Type, bool) {
	if len(tn.ArrayBounds) > 0 || tn.Setof || tn.PctType {
		return Type{}, false
	}
	name := sqltree.LastName(tn.Names)
	if len(tn.Typmods) > 0 {
		if name != "numeric" || len(tn.Typmods) > 2 {
			return Type{}, false
		}
		var mods []int32
		for _, m := range tn.Typmods {
			iv := m.GetAConst().GetIval()
			if iv == nil {
				return Type{}, false
			}
			mods = append(mods, iv.Ival)
		}
		if len(mods) == 1 {
			mods = append(mods, 0)
		}
		if mods[0] < 1 || mods[0] > 1000 || mods[1] < 0 || mods[1] > mods[0] {
			return Type{}, false
		}
		return Type{OID: OIDNumeric, Mod: mods[0]<<16 | mods[1] + 4}, true
	}
	switch name {
	case "bool", "boolean":
		return tBool, true
	case "int2", "smallint":
		return tInt2, true
	case "int4", "int", "integer":
		return tInt4, true
	case "int8", "bigint":
		return tInt8, true
	case "text":
		return tText, true
	case "float4", "real":
		return tFloat4, true
	case "float8":
		return tFloat8, true
	case "numeric", "decimal":
		return tNumeric, true
	case "date":
		return tDate, true
	case "timestamp":
		return tTimestamp, true
	case "timestamptz":
		return tTimestamptz, true
	case "interval":
		return tInterval, true
	}
	return Type{}, false
}
