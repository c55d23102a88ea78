package session

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/dialect"
	"tsdb/internal/pgtext"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/planner"
)

// PostgreSQL's binary timestamps count microseconds from 2000-01-01.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// infinityText is the text of an infinite timestamp or date (sign +1 or
// -1), which the planner casts to the parameter's type.
func infinityText(sign int) string {
	if sign > 0 {
		return "infinity"
	}
	return "-infinity"
}

// decodeParam turns a Bind parameter into a Go value for the planner:
// text-format values stay strings (the planner casts them by type), binary
// ones are decoded by their type OID.
func decodeParam(raw []byte, format int16, oid uint32) (any, error) {
	if raw == nil {
		return nil, nil
	}
	if format == 0 {
		if err := schema.CheckText(string(raw)); err != nil {
			return nil, err
		}
		return string(raw), nil
	}
	if elem := planner.ArrayElement(oid); elem != 0 {
		return decodeArrayParam(raw, elem)
	}
	switch oid {
	case 16:
		if len(raw) != 1 {
			return nil, fmt.Errorf("bool parameter of %d bytes", len(raw))
		}
		return raw[0] != 0, nil
	case 21:
		if len(raw) != 2 {
			return nil, fmt.Errorf("int2 parameter of %d bytes", len(raw))
		}
		return int64(int16(binary.BigEndian.Uint16(raw))), nil
	case 23:
		if len(raw) != 4 {
			return nil, fmt.Errorf("int4 parameter of %d bytes", len(raw))
		}
		return int64(int32(binary.BigEndian.Uint32(raw))), nil
	case 20:
		if len(raw) != 8 {
			return nil, fmt.Errorf("int8 parameter of %d bytes", len(raw))
		}
		return int64(binary.BigEndian.Uint64(raw)), nil
	case 700:
		if len(raw) != 4 {
			return nil, fmt.Errorf("float4 parameter of %d bytes", len(raw))
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(raw))), nil
	case 701:
		if len(raw) != 8 {
			return nil, fmt.Errorf("float8 parameter of %d bytes", len(raw))
		}
		return math.Float64frombits(binary.BigEndian.Uint64(raw)), nil
	case 1114, 1184:
		if len(raw) != 8 {
			return nil, fmt.Errorf("timestamp parameter of %d bytes", len(raw))
		}
		switch us, inf, err := schema.FromPGMicros(int64(binary.BigEndian.Uint64(raw))); {
		case err != nil:
			return nil, rangeError(err)
		case inf != 0:
			// The planner casts the text to the parameter's type.
			return infinityText(inf), nil
		default:
			return time.UnixMicro(us).UTC(), nil
		}
	case 1082:
		if len(raw) != 4 {
			return nil, fmt.Errorf("date parameter of %d bytes", len(raw))
		}
		switch days, inf, err := schema.FromPGDays(int32(binary.BigEndian.Uint32(raw))); {
		case err != nil:
			return nil, rangeError(err)
		case inf != 0:
			return infinityText(inf), nil
		default:
			return time.Unix(days*86400, 0).UTC(), nil
		}
	case 1700:
		return decodeNumeric(raw)
	case 1186:
		if len(raw) != 16 {
			return nil, fmt.Errorf("interval parameter of %d bytes", len(raw))
		}
		us := int64(binary.BigEndian.Uint64(raw))
		days := int32(binary.BigEndian.Uint32(raw[8:]))
		months := int32(binary.BigEndian.Uint32(raw[12:]))
		if us == math.MinInt64 || days == math.MinInt32 || months == math.MinInt32 {
			// The engine reads the text of each part as a positive
			// number it then negates, which overflows at the most
			// negative: refused rather than read as another value.
			return nil, &sqlerr.Error{Code: sqlerr.DatetimeOverflow, Message: "interval out of range"}
		}
		return fmt.Sprintf("%d months %d days %d microseconds", months, days, us), nil
	case oidUUID:
		if len(raw) != 16 {
			return nil, fmt.Errorf("uuid parameter of %d bytes", len(raw))
		}
		return pgtext.FormatUUID(raw), nil // cast from text by the planner
	case 25, 1043, 18, 19, 114, 0:
		if err := schema.CheckText(string(raw)); err != nil {
			return nil, err
		}
		return string(raw), nil
	case 1560, 1562:
		return schema.BitsFromPGBinary(raw) // cast from text by the planner
	case 3802: // jsonb: a version byte, then the text
		if len(raw) > 0 && raw[0] == 1 {
			return string(raw[1:]), nil
		}
	}
	return nil, fmt.Errorf("binary parameters of type %d are not supported; send them as text", oid)
}

// encodeBinary renders a value in PostgreSQL's binary format for the
// column's type OID. nil is SQL NULL.
func encodeBinary(v any, oid uint32) ([]byte, error) {
	b, null, err := appendBinary(nil, v, oid)
	if err != nil || null {
		return nil, err
	}
	if b == nil {
		b = []byte{} // empty, not NULL
	}
	return b, nil
}

// appendBinary is encodeBinary appending to dst; null reports SQL NULL
// (and appends nothing).
func appendBinary(dst []byte, v any, oid uint32) (b []byte, null bool, err error) {
	if v == nil {
		return dst, true, nil
	}
	switch oid {
	case 16:
		b, ok := v.(bool)
		if !ok {
			return nil, false, fmt.Errorf("bool column holds %T", v)
		}
		if b {
			return append(dst, 1), false, nil
		}
		return append(dst, 0), false, nil
	case 21, 23, 20:
		n, ok := toInt64(v)
		if !ok {
			return nil, false, fmt.Errorf("integer column holds %T", v)
		}
		switch oid {
		case 21:
			return binary.BigEndian.AppendUint16(dst, uint16(n)), false, nil
		case 23:
			return binary.BigEndian.AppendUint32(dst, uint32(n)), false, nil
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)), false, nil
	case 700, 701:
		f, ok := toFloat64(v)
		if !ok {
			return nil, false, fmt.Errorf("float column holds %T", v)
		}
		if oid == 700 {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(f))), false, nil
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), false, nil
	case 1114, 1184:
		t, ok := v.(time.Time)
		if !ok {
			return nil, false, fmt.Errorf("timestamp column holds %T", v)
		}
		us, err := schema.ToPGMicros(t.UnixMicro())
		if err != nil {
			return nil, false, rangeError(err)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(us)), false, nil
	case 1083:
		// time: microseconds since midnight. The text fallback below sent
		// "12:00:00", which a client read as a number.
		t, ok := v.(time.Time)
		if !ok {
			return nil, false, fmt.Errorf("time column holds %T", v)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(pgtext.ClockMicros(t))), false, nil
	case 1266:
		// timetz: microseconds since midnight, then the zone in seconds
		// west of UTC, as PostgreSQL sends it.
		t, ok := v.(time.Time)
		if !ok {
			return nil, false, fmt.Errorf("timetz column holds %T", v)
		}
		_, east := t.Zone()
		dst = binary.BigEndian.AppendUint64(dst, uint64(pgtext.ClockMicros(t)))
		return binary.BigEndian.AppendUint32(dst, uint32(int32(-east))), false, nil
	case 1082:
		t, ok := v.(time.Time)
		if !ok {
			return nil, false, fmt.Errorf("date column holds %T", v)
		}
		// Days from Unix seconds, rounded down: a time.Duration from
		// 2000 would saturate 292 years away.
		days := t.Unix() / 86400
		if t.Unix()%86400 < 0 {
			days--
		}
		pgDays, err := schema.ToPGDays(days)
		if err != nil {
			return nil, false, rangeError(err)
		}
		return binary.BigEndian.AppendUint32(dst, uint32(pgDays)), false, nil
	case 1186:
		iv, ok := v.(duckdb.Interval)
		if !ok {
			return nil, false, fmt.Errorf("interval column holds %T", v)
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(iv.Micros))
		dst = binary.BigEndian.AppendUint32(dst, uint32(iv.Days))
		return binary.BigEndian.AppendUint32(dst, uint32(iv.Months)), false, nil
	case 2249:
		if r, ok := v.(planner.Record); ok {
			return appendBinaryRecord(dst, r)
		}
	case 1560, 1562:
		if s, ok := v.(string); ok {
			if err := schema.CheckBitText(s); err != nil {
				return nil, false, err
			}
			return schema.AppendPGBinaryBits(dst, s), false, nil
		}
	case 1700:
		n, err := encodeNumeric(string(encodeText(v, oid, utcStyle())))
		if err != nil {
			return nil, false, err
		}
		return append(dst, n...), false, nil
	case 2950:
		if u, ok := v.(duckdb.UUID); ok {
			return append(dst, u[:]...), false, nil
		}
	}
	if elem := planner.ArrayElement(oid); elem != 0 {
		xs, ok := v.([]any)
		if !ok {
			return nil, false, fmt.Errorf("array column holds %T", v)
		}
		return appendBinaryArray(dst, xs, elem)
	}
	// text, varchar, json, bytea and everything rendered as text: the
	// binary format of these types is their bytes.
	if b, ok := v.([]byte); ok {
		return append(dst, b...), false, nil
	}
	b, _ = appendText(dst, v, oid, utcStyle())
	return b, false, nil
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), true
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if n, ok := toInt64(v); ok {
		return float64(n), true
	}
	return 0, false
}

// encodeNumeric writes a decimal string in PostgreSQL's binary numeric
// format: base-10000 digits with a weight, sign and display scale.
func encodeNumeric(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	const nanSign, negSign = 0xC000, 0x4000
	if s == "NaN" {
		return []byte{0, 0, 0, 0, 0xC0, 0, 0, 0}, nil
	}
	sign := uint16(0)
	if strings.HasPrefix(s, "-") {
		sign, s = negSign, s[1:]
	}
	if strings.ContainsAny(s, "eE") {
		f, ok := new(big.Float).SetString(s)
		if !ok {
			return nil, fmt.Errorf("numeric %q", s)
		}
		s = f.Text('f', -1)
	}
	intPart, frac, _ := strings.Cut(s, ".")
	dscale := len(frac)
	for _, r := range intPart + frac {
		if r < '0' || r > '9' {
			return nil, fmt.Errorf("numeric %q", s)
		}
	}
	// Pad to whole groups of four digits on both sides of the point.
	if pad := (4 - len(intPart)%4) % 4; pad > 0 {
		intPart = strings.Repeat("0", pad) + intPart
	}
	if pad := (4 - len(frac)%4) % 4; pad > 0 {
		frac += strings.Repeat("0", pad)
	}
	var digits []uint16
	for i := 0; i < len(intPart); i += 4 {
		d, _ := strconv.Atoi(intPart[i : i+4])
		digits = append(digits, uint16(d))
	}
	weight := len(digits) - 1
	for i := 0; i < len(frac); i += 4 {
		d, _ := strconv.Atoi(frac[i : i+4])
		digits = append(digits, uint16(d))
	}
	// Strip leading and trailing zero groups.
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, 0
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(dscale))
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b, nil
}

// decodeNumeric reads PostgreSQL's binary numeric into its decimal text.
func decodeNumeric(raw []byte) (any, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("numeric parameter of %d bytes", len(raw))
	}
	n := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	dscale := int(binary.BigEndian.Uint16(raw[6:]))
	if sign == 0xC000 {
		return "NaN", nil
	}
	if len(raw) != 8+2*n {
		return nil, fmt.Errorf("numeric parameter with %d digits in %d bytes", n, len(raw))
	}
	var intPart, frac strings.Builder
	for i := 0; i <= weight; i++ {
		d := 0
		if i < n {
			d = int(binary.BigEndian.Uint16(raw[8+2*i:]))
		}
		if intPart.Len() == 0 {
			if d != 0 {
				intPart.WriteString(strconv.Itoa(d))
			}
		} else {
			fmt.Fprintf(&intPart, "%04d", d)
		}
	}
	if intPart.Len() == 0 {
		intPart.WriteString("0")
	}
	for i := weight + 1; frac.Len() < dscale; i++ {
		d := 0
		if i >= 0 && i < n {
			d = int(binary.BigEndian.Uint16(raw[8+2*i:]))
		}
		fmt.Fprintf(&frac, "%04d", d)
	}
	s := intPart.String()
	if dscale > 0 {
		s += "." + frac.String()[:dscale]
	}
	if sign == 0x4000 {
		s = "-" + s
	}
	return s, nil
}

// appendBinaryArray writes an array in PostgreSQL's binary format:
// dimensions, a has-NULLs flag, the element type, each dimension's length
// and lower bound (1), then each element with its length (-1: NULL), the
// last dimension varying fastest. An empty array has no dimensions. A
// list of lists is a multidimensional array, which must be rectangular
// (2202E otherwise, as PostgreSQL refuses to build one).
func appendBinaryArray(dst []byte, xs []any, elem uint32) ([]byte, bool, error) {
	var lens []int
	for level := any(xs); ; {
		l, ok := level.([]any)
		if !ok {
			break
		}
		lens = append(lens, len(l))
		if len(l) == 0 {
			break
		}
		level = l[0]
	}
	var flat []any
	if err := flattenArray(xs, lens, &flat); err != nil {
		return nil, false, err
	}
	hasNull := uint32(0)
	for _, x := range flat {
		if x == nil {
			hasNull = 1
		}
	}
	dims := uint32(len(lens))
	if len(flat) == 0 {
		dims = 0
	}
	dst = binary.BigEndian.AppendUint32(dst, dims)
	dst = binary.BigEndian.AppendUint32(dst, hasNull)
	dst = binary.BigEndian.AppendUint32(dst, elem)
	if dims == 0 {
		return dst, false, nil
	}
	for _, n := range lens {
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, 1)
	}
	for _, x := range flat {
		at := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, 0) // the length, set below
		var null bool
		var err error
		if dst, null, err = appendBinary(dst, x, elem); err != nil {
			return nil, false, err
		}
		if null {
			binary.BigEndian.PutUint32(dst[at:], 0xFFFFFFFF)
			continue
		}
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst, false, nil
}

// flattenArray appends the elements of a list of lists whose dimensions
// must be lens to flat, in row-major order.
func flattenArray(xs []any, lens []int, flat *[]any) error {
	if len(xs) != lens[0] {
		return sqlerr.New("2202E", "multidimensional arrays must have array expressions with matching dimensions")
	}
	for _, x := range xs {
		if len(lens) == 1 {
			if _, ok := x.([]any); ok {
				return sqlerr.New("2202E", "multidimensional arrays must have array expressions with matching dimensions")
			}
			*flat = append(*flat, x)
			continue
		}
		sub, ok := x.([]any)
		if !ok {
			return sqlerr.New("2202E", "multidimensional arrays must have array expressions with matching dimensions")
		}
		if err := flattenArray(sub, lens[1:], flat); err != nil {
			return err
		}
	}
	return nil
}

// decodeArrayParam turns a binary array parameter (dimensions, then each
// element in its binary form) into PostgreSQL's array text, which the
// planner casts to the array type: {1,2}, {{"a","b"},{"c",NULL}}.
func decodeArrayParam(raw []byte, elem uint32) (any, error) {
	if len(raw) < 12 {
		return nil, fmt.Errorf("array parameter of %d bytes", len(raw))
	}
	ndim := int(int32(binary.BigEndian.Uint32(raw)))
	if got := binary.BigEndian.Uint32(raw[8:]); got != elem {
		return nil, fmt.Errorf("array parameter of element type %d, want %d", got, elem)
	}
	if ndim < 0 || ndim > 6 || len(raw) < 12+8*ndim {
		return nil, fmt.Errorf("array parameter of %d dimensions", ndim)
	}
	if ndim == 0 {
		return "{}", nil
	}
	dims := make([]int, ndim)
	total := 1
	for d := range dims {
		dims[d] = int(int32(binary.BigEndian.Uint32(raw[12+8*d:])))
		if dims[d] < 0 || dims[d] > 1<<24 {
			return nil, fmt.Errorf("array parameter dimension of %d", dims[d])
		}
		total *= dims[d]
		if total > 1<<24 {
			return nil, fmt.Errorf("array parameter of more than %d elements", 1<<24)
		}
	}
	rest := raw[12+8*ndim:]
	if total > len(rest)/4 {
		// Each element takes at least its 4-byte length: a count the
		// message cannot hold is refused before anything is allocated.
		return nil, fmt.Errorf("array parameter of %d elements in %d bytes", total, len(rest))
	}
	elems := make([]string, total)
	for i := range elems {
		if len(rest) < 4 {
			return nil, fmt.Errorf("array parameter ends early")
		}
		n := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if n < 0 {
			elems[i] = "NULL"
			continue
		}
		if n > len(rest) {
			return nil, fmt.Errorf("array parameter ends early")
		}
		v, err := decodeParam(rest[:n], 1, elem)
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
		elems[i] = quoteArrayElement(elementText(v, elem))
	}
	var b strings.Builder
	var write func(d, from int) int
	write = func(d, from int) int {
		b.WriteByte('{')
		for k := 0; k < dims[d]; k++ {
			if k > 0 {
				b.WriteByte(',')
			}
			if d == ndim-1 {
				b.WriteString(elems[from])
				from++
			} else {
				from = write(d+1, from)
			}
		}
		b.WriteByte('}')
		return from
	}
	write(0, 0)
	return b.String(), nil
}

// elementText is an element decoded from binary as PostgreSQL's text.
func elementText(v any, oid uint32) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "t"
		}
		return "f"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return string(dialect.AppendFloat(nil, x, 64, 1))
	case time.Time:
		switch oid {
		case 1082:
			return x.Format("2006-01-02")
		case 1114:
			return x.Format("2006-01-02 15:04:05.999999")
		}
		return x.Format("2006-01-02 15:04:05.999999") + "+00"
	}
	return fmt.Sprint(v)
}

// quoteArrayElement quotes an element of array text: in double quotes,
// with backslashes before quotes and backslashes.
func quoteArrayElement(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// appendBinaryRecord writes a row value as PostgreSQL's record_send does:
// the field count, then per field its type OID, its length (-1 for NULL)
// and its binary value.
func appendBinaryRecord(dst []byte, r planner.Record) ([]byte, bool, error) {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Fields)))
	for i, f := range r.Fields {
		dst = binary.BigEndian.AppendUint32(dst, r.OIDs[i])
		at := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, 0)
		if f == nil {
			binary.BigEndian.PutUint32(dst[at:], math.MaxUint32) // -1
			continue
		}
		var null bool
		var err error
		if dst, null, err = appendBinary(dst, f, r.OIDs[i]); err != nil {
			return nil, false, err
		}
		n := uint32(len(dst) - at - 4)
		if null {
			n = math.MaxUint32
		}
		binary.BigEndian.PutUint32(dst[at:], n)
	}
	return dst, false, nil
}
