package pgdatetime

import (
	"math"
	"strconv"
)

// ISO 8601 interval input is read as PostgreSQL 15's DecodeISO8601Interval
// reads it, step for step: every number is a C double (strtod), split
// into a whole part and a fraction, and the fraction cascades down in
// double precision (a fraction of an hour is rounded to microseconds
// after it is multiplied out). Read exactly instead, 'PT2562047788.0152155019444'
// came out 378 microseconds off PostgreSQL's answer.

// isoFields are the fields PostgreSQL's pg_itm_in accumulates.
type isoFields struct {
	years, months, days int32
	usec                int64
}

func addInt32(a *int32, v int64) bool {
	s := int64(*a) + v
	if v < math.MinInt32 || v > math.MaxInt32 || s < math.MinInt32 || s > math.MaxInt32 {
		return false
	}
	*a = int32(s)
	return true
}

func addInt64(a *int64, v int64) bool {
	s := *a + v
	if (v > 0 && s < *a) || (v < 0 && s > *a) {
		return false
	}
	*a = s
	return true
}

// mulInt64 is a*b, false when it overflows.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

func (f *isoFields) years1(val int64) bool {
	return val >= math.MinInt32 && val <= math.MaxInt32 && addInt32(&f.years, val)
}

func (f *isoFields) fractYears(frac float64) bool {
	return addInt32(&f.months, int64(int32(math.RoundToEven(frac*12))))
}

func (f *isoFields) months1(val int64) bool {
	return val >= math.MinInt32 && val <= math.MaxInt32 && addInt32(&f.months, val)
}

func (f *isoFields) days1(val int64, scale int64) bool {
	if val < math.MinInt32 || val > math.MaxInt32 {
		return false
	}
	d := val * scale
	return d >= math.MinInt32 && d <= math.MaxInt32 && addInt32(&f.days, d)
}

func (f *isoFields) fractDays(frac float64, scale float64) bool {
	if frac == 0 {
		return true
	}
	frac *= scale
	extra := int32(frac)
	if !addInt32(&f.days, int64(extra)) {
		return false
	}
	return f.fractMicros(frac-float64(extra), 86400e6)
}

// fractMicros is AdjustFractMicroseconds: the fraction times scale,
// truncated to microseconds, the rest rounded (rint, half to even).
func (f *isoFields) fractMicros(frac float64, scale float64) bool {
	if frac == 0 {
		return true
	}
	frac *= scale
	if math.IsNaN(frac) || frac >= 9.2233720368547758e18 || frac < -9.2233720368547758e18 {
		return false
	}
	usec := int64(frac)
	usec += int64(math.RoundToEven(frac - float64(usec)))
	return addInt64(&f.usec, usec)
}

// micros is AdjustMicroseconds: val whole units of scale microseconds
// and the fraction fval of one.
func (f *isoFields) micros(val int64, fval float64, scale int64) bool {
	p, ok := mulInt64(val, scale)
	if !ok || !addInt64(&f.usec, p) {
		return false
	}
	return f.fractMicros(fval, float64(scale))
}

// isoNumber is ParseISO8601Number: the longest prefix of s strtod takes as
// a decimal number (it must start with a digit, '-' or '.'), its whole
// part toward zero and its fraction. overflow reports a number beyond
// ±1e15.
func isoNumber(s string) (ipart int64, fpart float64, rest string, ok, overflow bool) {
	if s == "" || !(s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '.') {
		return 0, 0, s, false, false
	}
	i := 0
	if s[0] == '-' {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0, s, false, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	val, err := strconv.ParseFloat(s[:i], 64)
	if err != nil && !math.IsInf(val, 0) {
		return 0, 0, s, false, false
	}
	if err != nil {
		return 0, 0, s, false, false // strtod's ERANGE is a bad format
	}
	if math.IsNaN(val) || val < -1e15 || val > 1e15 {
		return 0, 0, s, false, true
	}
	if val >= 0 {
		ipart = int64(math.Floor(val))
	} else {
		ipart = -int64(math.Floor(-val))
	}
	return ipart, val - float64(ipart), s[i:], true, false
}

// isoIntegerWidth counts the digits a field starts with, after a minus.
func isoIntegerWidth(s string) int {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// decodeISO8601Interval reads s, which starts with P, into fields; the
// error is a *SyntaxError or an *IntervalRangeError as PostgreSQL's.
func decodeISO8601Interval(s string) (Interval, error) {
	syntax := &SyntaxError{Type: "interval", Input: s}
	overflow := &IntervalRangeError{Input: s}
	if len(s) < 2 || s[0] != 'P' {
		return Interval{}, syntax
	}
	var f isoFields
	str := s[1:]
	datepart, havefield := true, false
	// number reads the next number, or tells why not.
	var val int64
	var fval float64
	number := func() error {
		v, fv, rest, ok, over := isoNumber(str)
		switch {
		case over:
			return overflow
		case !ok:
			return syntax
		}
		val, fval, str = v, fv, rest
		return nil
	}
	// unit takes the character after a number ('\x00' at the end).
	unit := func() byte {
		if str == "" {
			return 0
		}
		u := str[0]
		str = str[1:]
		return u
	}
	for str != "" {
		if str[0] == 'T' {
			datepart, havefield = false, false
			str = str[1:]
			continue
		}
		fieldstart := str
		if err := number(); err != nil {
			return Interval{}, err
		}
		u := unit()
		if datepart {
			switch u {
			case 'Y':
				if !f.years1(val) || !f.fractYears(fval) {
					return Interval{}, overflow
				}
			case 'M':
				if !f.months1(val) || !f.fractDays(fval, 30) {
					return Interval{}, overflow
				}
			case 'W':
				if !f.days1(val, 7) || !f.fractDays(fval, 7) {
					return Interval{}, overflow
				}
			case 'D':
				if !f.days1(val, 1) || !f.fractMicros(fval, 86400e6) {
					return Interval{}, overflow
				}
			case 'T', 0, '-':
				if u != '-' && isoIntegerWidth(fieldstart) == 8 && !havefield {
					// P00021015: basic alternative format.
					if !f.years1(val/10000) || !f.months1((val/100)%100) || !f.days1(val%100, 1) || !f.fractMicros(fval, 86400e6) {
						return Interval{}, overflow
					}
					if u == 0 {
						return f.interval(s)
					}
					datepart, havefield = false, false
					continue
				}
				// P0002-10-15: the extended alternative format.
				if havefield {
					return Interval{}, syntax
				}
				if !f.years1(val) || !f.fractYears(fval) {
					return Interval{}, overflow
				}
				if u == 0 {
					return f.interval(s)
				}
				if u == 'T' {
					datepart, havefield = false, false
					continue
				}
				if err := number(); err != nil {
					return Interval{}, err
				}
				if !f.months1(val) || !f.fractDays(fval, 30) {
					return Interval{}, overflow
				}
				if str == "" {
					return f.interval(s)
				}
				if str[0] == 'T' {
					continue // the loop reads the T
				}
				if str[0] != '-' {
					return Interval{}, syntax
				}
				str = str[1:]
				if err := number(); err != nil {
					return Interval{}, err
				}
				if !f.days1(val, 1) || !f.fractMicros(fval, 86400e6) {
					return Interval{}, overflow
				}
				if str == "" {
					return f.interval(s)
				}
				if str[0] == 'T' {
					continue // the loop reads the T
				}
				return Interval{}, syntax
			default:
				return Interval{}, syntax
			}
		} else {
			switch u {
			case 'H':
				if !f.micros(val, fval, 3600e6) {
					return Interval{}, overflow
				}
			case 'M':
				if !f.micros(val, fval, 60e6) {
					return Interval{}, overflow
				}
			case 'S':
				if !f.micros(val, fval, 1e6) {
					return Interval{}, overflow
				}
			case 0, ':':
				if u == 0 && isoIntegerWidth(fieldstart) == 6 && !havefield {
					// PT103020: basic alternative format.
					if !f.micros(val/10000, 0, 3600e6) || !f.micros((val/100)%100, 0, 60e6) || !f.micros(val%100, 0, 1e6) || !f.fractMicros(fval, 1) {
						return Interval{}, overflow
					}
					return f.interval(s)
				}
				// PT10:30:20: the extended alternative format.
				if havefield {
					return Interval{}, syntax
				}
				if !f.micros(val, fval, 3600e6) {
					return Interval{}, overflow
				}
				if u == 0 {
					return f.interval(s)
				}
				if err := number(); err != nil {
					return Interval{}, err
				}
				if !f.micros(val, fval, 60e6) {
					return Interval{}, overflow
				}
				if str == "" {
					return f.interval(s)
				}
				if str[0] != ':' {
					return Interval{}, syntax
				}
				str = str[1:]
				if err := number(); err != nil {
					return Interval{}, err
				}
				if !f.micros(val, fval, 1e6) {
					return Interval{}, overflow
				}
				if str == "" {
					return f.interval(s)
				}
				return Interval{}, syntax
			default:
				return Interval{}, syntax
			}
		}
		havefield = true
	}
	return f.interval(s)
}

// interval is itmin2interval: the years and months as one month count.
func (f isoFields) interval(input string) (Interval, error) {
	total := int64(f.years)*12 + int64(f.months)
	if total < math.MinInt32 || total > math.MaxInt32 {
		return Interval{}, &IntervalRangeError{Input: input, Total: true}
	}
	return Interval{Months: int32(total), Days: f.days, Micros: f.usec}, nil
}
