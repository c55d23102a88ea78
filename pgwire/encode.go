package pgwire

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// PostgreSQL type OIDs that need their own text format.
const (
	oidBytea       = 17
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

// encodeText renders a value in PostgreSQL's text format for the column's
// type. timestamptz values are shown in the session's time zone, as
// PostgreSQL does. nil is SQL NULL.
func encodeText(v any, oid uint32, loc *time.Location) []byte {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			return []byte("t")
		}
		return []byte("f")
	case int8:
		return strconv.AppendInt(nil, int64(x), 10)
	case int16:
		return strconv.AppendInt(nil, int64(x), 10)
	case int32:
		return strconv.AppendInt(nil, int64(x), 10)
	case int64:
		return strconv.AppendInt(nil, x, 10)
	case uint8:
		return strconv.AppendUint(nil, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(nil, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(nil, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(nil, x, 10)
	case float32:
		return formatFloat(float64(x), 32)
	case float64:
		return formatFloat(x, 64)
	case string:
		return []byte(x)
	case []byte:
		if oid == oidBytea {
			return []byte(`\x` + hex.EncodeToString(x))
		}
		return x
	case time.Time:
		return formatTime(x, oid, loc)
	case *big.Int:
		return []byte(x.String())
	case duckdb.Decimal:
		return []byte(formatDecimal(x))
	case duckdb.Interval:
		return []byte(formatInterval(x))
	case duckdb.UUID:
		return []byte(formatUUID(x[:]))
	case []any:
		return []byte(formatArray(x, loc))
	case map[string]any, duckdb.Map:
		b, err := json.Marshal(x)
		if err != nil {
			return []byte(fmt.Sprint(x))
		}
		return b
	}
	return []byte(fmt.Sprint(v))
}

// formatFloat follows PostgreSQL 12+ (extra_float_digits = 1): the shortest
// text that reads back to the same value, NaN, Infinity, -Infinity.
func formatFloat(f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return []byte("NaN")
	case math.IsInf(f, 1):
		return []byte("Infinity")
	case math.IsInf(f, -1):
		return []byte("-Infinity")
	}
	return strconv.AppendFloat(nil, f, 'g', -1, bits)
}

func formatTime(t time.Time, oid uint32, loc *time.Location) []byte {
	switch oid {
	case oidDate:
		return []byte(t.UTC().Format("2006-01-02"))
	case oidTime:
		return []byte(t.UTC().Format("15:04:05.999999"))
	case oidTimestamp:
		return []byte(t.UTC().Format("2006-01-02 15:04:05.999999"))
	}
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	b := []byte(t.Format("2006-01-02 15:04:05.999999"))
	_, off := t.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b = append(b, sign)
	b = append(b, fmt.Sprintf("%02d", off/3600)...)
	if m := off % 3600 / 60; m != 0 || off%60 != 0 {
		b = append(b, fmt.Sprintf(":%02d", m)...)
		if s := off % 60; s != 0 {
			b = append(b, fmt.Sprintf(":%02d", s)...)
		}
	}
	return b
}

// formatInterval follows IntervalStyle postgres: "1 year 2 mons 3 days 04:05:06.5".
func formatInterval(iv duckdb.Interval) string {
	var parts []string
	plural := func(n int64, unit string) string {
		if n == 1 || n == -1 {
			return fmt.Sprintf("%d %s", n, unit)
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	years, months := int64(iv.Months)/12, int64(iv.Months)%12
	if years != 0 {
		parts = append(parts, plural(years, "year"))
	}
	if months != 0 {
		parts = append(parts, plural(months, "mon"))
	}
	if iv.Days != 0 {
		parts = append(parts, plural(int64(iv.Days), "day"))
	}
	if iv.Micros != 0 || len(parts) == 0 {
		us := iv.Micros
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		}
		h, m, s, frac := us/3_600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000
		clock := fmt.Sprintf("%s%02d:%02d:%02d", sign, h, m, s)
		if frac != 0 {
			clock += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
		parts = append(parts, clock)
	}
	return strings.Join(parts, " ")
}

func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// formatArray renders a list as a PostgreSQL array literal.
func formatArray(xs []any, loc *time.Location) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			sb.WriteByte(',')
		}
		if x == nil {
			sb.WriteString("NULL")
			continue
		}
		var oid uint32
		if _, ok := x.(time.Time); ok {
			oid = oidTimestamptz
		}
		s := string(encodeText(x, oid, loc))
		if s == "" || strings.ContainsAny(s, `{},"\ `) || strings.EqualFold(s, "null") {
			s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		sb.WriteString(s)
	}
	sb.WriteByte('}')
	return sb.String()
}

// formatDecimal prints a decimal with all its scale digits, as PostgreSQL
// prints numeric (1.50, not 1.5).
func formatDecimal(d duckdb.Decimal) string {
	if d.Value == nil {
		return "0"
	}
	s := new(big.Int).Abs(d.Value).String()
	sign := ""
	if d.Value.Sign() < 0 {
		sign = "-"
	}
	scale := int(d.Scale)
	if scale == 0 {
		return sign + s
	}
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	return sign + s[:len(s)-scale] + "." + s[len(s)-scale:]
}
