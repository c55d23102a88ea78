package pgdatetime

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Interval is PostgreSQL's interval: months, days and microseconds, each
// with its own sign.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// IntervalRangeError is an interval field out of range (SQLSTATE 22015),
// or, with Total, fields that each fit but whose months together do not
// (22008, "interval out of range": years and months are added up last,
// as PostgreSQL's tm2interval does).
type IntervalRangeError struct {
	Input string
	Total bool
}

func (e *IntervalRangeError) Error() string {
	if e.Total {
		return "interval out of range"
	}
	return fmt.Sprintf("interval field value out of range: %q", e.Input)
}

// SQLState is the error's SQLSTATE.
func (e *IntervalRangeError) SQLState() string {
	if e.Total {
		return "22008"
	}
	return "22015"
}

// String writes the interval in the one form the engine reads exactly. The
// time goes as hours and microseconds: the engine negates a microsecond
// count as it reads it, and -9223372036854775808 has no positive.
func (iv Interval) String() string {
	return fmt.Sprintf("%d months %d days %d hours %d microseconds", iv.Months, iv.Days, iv.Micros/3_600_000_000, iv.Micros%3_600_000_000)
}

// interval field masks: a field may be given once.
const (
	ivYear = 1 << iota
	ivDecade
	ivCentury
	ivMillennium
	ivMonth
	ivWeek
	ivDay
	ivHour
	ivMinute
	ivSecond
	ivMilli
	ivMicro
)

type ivUnit struct {
	mask   int
	months int64 // months per unit (years and longer, months)
	days   int64 // days per unit (weeks, days)
	micros int64 // microseconds per unit (hours and shorter)
}

var ivUnits = func() map[string]ivUnit {
	m := map[string]ivUnit{}
	add := func(u ivUnit, names ...string) {
		for _, n := range names {
			m[n] = u
		}
	}
	add(ivUnit{mask: ivMillennium, months: 12000}, "millennium", "millennia", "millenniums", "mil", "mils")
	add(ivUnit{mask: ivCentury, months: 1200}, "century", "centuries", "c", "cent")
	add(ivUnit{mask: ivDecade, months: 120}, "decade", "decades", "dec", "decs")
	add(ivUnit{mask: ivYear, months: 12}, "year", "years", "y", "yr", "yrs")
	add(ivUnit{mask: ivMonth, months: 1}, "month", "months", "mon", "mons")
	add(ivUnit{mask: ivWeek, days: 7}, "week", "weeks", "w")
	add(ivUnit{mask: ivDay, days: 1}, "day", "days", "d")
	add(ivUnit{mask: ivHour, micros: 3600e6}, "hour", "hours", "h", "hr", "hrs")
	add(ivUnit{mask: ivMinute, micros: 60e6}, "minute", "minutes", "m", "min", "mins")
	add(ivUnit{mask: ivSecond, micros: 1e6}, "second", "seconds", "s", "sec", "secs")
	add(ivUnit{mask: ivMilli, micros: 1e3}, "millisecond", "milliseconds", "ms", "msec", "msecs", "millisecon")
	add(ivUnit{mask: ivMicro, micros: 1}, "microsecond", "microseconds", "us", "usec", "usecs")
	return m
}()

// ivAcc adds fields up exactly (in rationals): whole parts in their
// field, fractions cascading down (a fraction of a month is 30 days, of a
// day 24 hours), as PostgreSQL does; overflow is a range error.
type ivAcc struct {
	years, months, days, micros big.Rat
	mask                        int
	overflow                    bool // a field out of range, not a bad format
}

func ratInt(n int64) *big.Rat { return new(big.Rat).SetInt64(n) }

// split cuts a rational into its integer part (toward zero) and the rest.
func split(v *big.Rat) (*big.Rat, *big.Rat) {
	q := new(big.Int).Quo(v.Num(), v.Denom())
	whole := new(big.Rat).SetInt(q)
	return whole, new(big.Rat).Sub(v, whole)
}

// roundEven rounds a rational to the nearest integer, halves to even.
func roundEven(v *big.Rat) *big.Int {
	whole, frac := split(v)
	w := new(big.Int).Set(whole.Num())
	twice := new(big.Rat).Mul(frac, ratInt(2))
	switch c := twice.Cmp(ratInt(0)); {
	case c > 0 && twice.Cmp(ratInt(1)) > 0, c > 0 && twice.Cmp(ratInt(1)) == 0 && w.Bit(0) == 1:
		w.Add(w, big.NewInt(1))
	case c < 0 && twice.Cmp(ratInt(-1)) < 0, c < 0 && twice.Cmp(ratInt(-1)) == 0 && w.Bit(0) == 1:
		w.Sub(w, big.NewInt(1))
	}
	return w
}

// ParseInterval reads s as PostgreSQL reads interval input in its
// default (postgres) style: unit words with their own signs ('1 year -2
// days'), abbreviations ('1h', '10ms'), times ('-12:34:56.7'), SQL's
// year-month and day-time forms ('1-2', '3 4:05:06'), ISO 8601
// ('P1Y2M3DT4H5M6S', 'P0001-02-03T04:05:06'), '@' and 'ago'.
func ParseInterval(s string) (Interval, error) { return ParseIntervalStyle(s, Postgres) }

// ParseIntervalStyle is ParseInterval under an IntervalStyle: in
// sql_standard a leading minus applies to every field when no other field
// has a sign ('-1 2:03:04' is minus one day, two hours, three minutes and
// four seconds), as the SQL standard reads it.
func ParseIntervalStyle(s string, style IntervalStyle) (Interval, error) {
	iv, err := parseInterval(s)
	if err != nil || style != SQLStandard {
		return iv, err
	}
	fields := strings.Fields(s)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "-") {
		return iv, nil
	}
	for _, f := range fields[1:] {
		if f[0] == '-' || f[0] == '+' {
			return iv, nil
		}
	}
	// Every field is unsigned but the first: the value without that
	// minus, negated, has each field negative as PostgreSQL forces them.
	pos, err := parseInterval(strings.Replace(s, "-", "", 1))
	if err != nil {
		return iv, nil
	}
	return Interval{Months: -pos.Months, Days: -pos.Days, Micros: -pos.Micros}, nil
}

func parseInterval(s string) (Interval, error) {
	syntax := &SyntaxError{Type: "interval", Input: s}
	t := strings.TrimSpace(s)
	if t == "" {
		return Interval{}, syntax
	}
	if s[0] == 'P' {
		// ISO 8601, which PostgreSQL reads from the input as it is
		// (' P1D' and 'p1d' are errors).
		return decodeISO8601Interval(s)
	}
	var acc ivAcc
	if ok := acc.words(t); !ok {
		if acc.overflow {
			return Interval{}, &IntervalRangeError{Input: s}
		}
		return Interval{}, syntax
	}
	return acc.result(s)
}

func (a *ivAcc) add(u ivUnit, v *big.Rat) bool {
	if a.mask&u.mask != 0 {
		return false
	}
	a.mask |= u.mask
	whole, frac := split(v)
	switch {
	case u.months >= 12:
		// Years and longer: whole years in the year field, a fraction
		// in whole months.
		a.years.Add(&a.years, new(big.Rat).Mul(whole, ratInt(u.months/12)))
		a.months.Add(&a.months, new(big.Rat).SetInt(roundEven(new(big.Rat).Mul(frac, ratInt(u.months)))))
	case u.months > 0:
		a.months.Add(&a.months, whole)
		a.fracDays(new(big.Rat).Mul(frac, ratInt(30)))
	case u.days > 0:
		a.fracDays(new(big.Rat).Mul(v, ratInt(u.days)))
	default:
		a.micros.Add(&a.micros, new(big.Rat).Mul(v, ratInt(u.micros)))
	}
	return true
}

// fracDays adds d days, the fraction of a day as microseconds.
func (a *ivAcc) fracDays(d *big.Rat) {
	whole, frac := split(d)
	a.days.Add(&a.days, whole)
	a.micros.Add(&a.micros, new(big.Rat).Mul(frac, ratInt(86400e6)))
}

func (a *ivAcc) result(input string) (Interval, error) {
	years, months, days, micros := roundEven(&a.years), roundEven(&a.months), roundEven(&a.days), roundEven(&a.micros)
	fits32 := func(v *big.Int) bool { return v.IsInt64() && v.Int64() >= math.MinInt32 && v.Int64() <= math.MaxInt32 }
	if !fits32(years) || !fits32(months) || !fits32(days) || !micros.IsInt64() {
		return Interval{}, &IntervalRangeError{Input: input}
	}
	total := years.Int64()*12 + months.Int64()
	if total < math.MinInt32 || total > math.MaxInt32 {
		return Interval{}, &IntervalRangeError{Input: input, Total: true}
	}
	return Interval{Months: int32(total), Days: int32(days.Int64()), Micros: micros.Int64()}, nil
}

// parseRat reads a decimal number (with an optional exponent).
func parseRat(s string) (*big.Rat, bool) {
	if s == "" || s == "+" || s == "-" || s == "." {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strings.TrimPrefix(s, "+"))
	return r, ok
}

func (a *ivAcc) words(t string) bool {
	fields := strings.Fields(strings.ReplaceAll(strings.ToLower(t), ",", " "))
	if len(fields) > 0 && fields[0] == "@" {
		fields = fields[1:]
	} else if len(fields) > 0 && strings.HasPrefix(fields[0], "@") {
		fields[0] = fields[0][1:]
	}
	ago := false
	if n := len(fields); n > 0 && fields[n-1] == "ago" {
		ago, fields = true, fields[:n-1]
	}
	if len(fields) == 0 {
		return false
	}
	fields = splitDayClock(fields)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.Contains(f, ":"):
			if !a.clock(f) {
				return false
			}
		case isYearMonth(f):
			// SQL's year-month: 1-2, -1-2
			neg := f[0] == '-'
			y, m, _ := strings.Cut(strings.TrimLeft(f, "+-"), "-")
			yv, ok1 := parseRat(y)
			mv, ok2 := parseRat(m)
			if !ok1 || !ok2 || a.mask&(ivYear|ivMonth) != 0 {
				return false
			}
			total := new(big.Rat).Add(new(big.Rat).Mul(yv, ratInt(12)), mv)
			if neg {
				total.Neg(total)
			}
			// One field: PostgreSQL checks years*12 + months as it reads
			// it (an overflow is 22015, not 22008).
			a.mask |= ivYear | ivMonth
			a.months.Add(&a.months, total)
		default:
			num, unit := splitNumber(f)
			v, ok := parseRat(num)
			if !ok {
				return false
			}
			if unit == "" && i+1 < len(fields) {
				if _, isUnit := ivUnits[fields[i+1]]; isUnit {
					unit = fields[i+1]
					i++
				}
			}
			var u ivUnit
			switch {
			case unit != "":
				var ok bool
				if u, ok = ivUnits[unit]; !ok {
					return false
				}
			case i+1 < len(fields) && strings.Contains(fields[i+1], ":"):
				u = ivUnits["day"] // SQL's day-time: 3 4:05:06
			default:
				u = ivUnits["second"] // a bare number is seconds
			}
			if u.mask == ivSecond && !v.IsInt() {
				u.mask |= ivMilli | ivMicro // 5.5 seconds 3 milliseconds is refused
			}
			if !a.add(u, v) {
				return false
			}
		}
	}
	if ago {
		a.years.Neg(&a.years)
		a.months.Neg(&a.months)
		a.days.Neg(&a.days)
		a.micros.Neg(&a.micros)
	}
	return true
}

// splitDayClock splits "1.5:02:03" into "1.5" and "02:03": PostgreSQL's
// tokenizer ends a number at the punctuation after its fraction, so the
// number is a count of days before a clock, not a fractional hour (and
// 2562047788.1:0:54 is a day count out of range, 22015, not bad syntax).
func splitDayClock(fields []string) []string {
	var out []string
	for _, f := range fields {
		head, rest, ok := strings.Cut(f, ":")
		if ok && strings.Contains(head, ".") && strings.Contains(rest, ":") && isNumber(head) {
			out = append(out, head, rest)
			continue
		}
		out = append(out, f)
	}
	return out
}

func isYearMonth(f string) bool {
	t := strings.TrimLeft(f, "+-")
	y, m, ok := strings.Cut(t, "-")
	return ok && y != "" && m != "" && isNumber(y) && isNumber(m) && !strings.Contains(y+m, ".")
}

func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '.' {
			return false
		}
	}
	return s != ""
}

// splitNumber cuts "1.5h" into "1.5" and "h".
func splitNumber(f string) (string, string) {
	i := 0
	if i < len(f) && (f[i] == '+' || f[i] == '-') {
		i++
	}
	for i < len(f) && (isDigit(f[i]) || f[i] == '.') {
		i++
	}
	if i < len(f) && (f[i] == 'e') && i+1 < len(f) && (isDigit(f[i+1]) || f[i+1] == '-' || f[i+1] == '+') {
		// 1e3 seconds: an exponent, not the unit "e"
		j := i + 1
		if f[j] == '-' || f[j] == '+' {
			j++
		}
		for j < len(f) && isDigit(f[j]) {
			j++
		}
		i = j
	}
	return f[:i], f[i:]
}

// clock reads [-]h:m[:s[.frac]] as hours, minutes and seconds.
func (a *ivAcc) clock(f string) bool {
	neg := strings.HasPrefix(f, "-")
	parts := strings.Split(strings.TrimLeft(f, "+-"), ":")
	// PostgreSQL reads the hours as a 64-bit count of hours and the
	// minutes as a C int before it checks the form: too many of them are
	// out of range, whatever follows.
	for i, p := range parts[:min(2, len(parts))] {
		digits := p[:len(p)-len(strings.TrimLeft(p, "0123456789"))]
		limit := int64(math.MaxInt64 / 3_600_000_000)
		if i == 1 {
			limit = math.MaxInt32
		}
		if v, err := strconv.ParseInt(digits, 10, 64); len(digits) > 0 && (err != nil || v > limit) {
			a.overflow = true
			return false
		}
	}
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	if a.mask&(ivHour|ivMinute|ivSecond|ivMilli|ivMicro) != 0 {
		return false
	}
	a.mask |= ivHour | ivMinute | ivSecond | ivMilli | ivMicro
	scale := []int64{3600e6, 60e6, 1e6}
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		scale = scale[1:] // 2:03.4567 is minutes and seconds
	}
	total := new(big.Rat)
	for i, p := range parts {
		if p == "" || !isNumber(strings.TrimLeft(p, "+-")) || i < len(parts)-1 && strings.Contains(p, ".") {
			return false
		}
		v, ok := parseRat(p)
		if !ok {
			return false
		}
		total.Add(total, new(big.Rat).Mul(v, ratInt(scale[i])))
	}
	if neg {
		total.Neg(total)
	}
	a.micros.Add(&a.micros, total)
	return true
}

// Day and month lengths justify_* uses.
const (
	usPerDay    = 86_400_000_000
	daysInMonth = 30
)

// justified checks that justified fields fit an interval.
func justified(months, days, micros int64) (Interval, bool) {
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 {
		return Interval{}, false
	}
	return Interval{Months: int32(months), Days: int32(days), Micros: micros}, true
}

// JustifyHours is PostgreSQL's justify_hours: whole days of the time move
// to the days, the time keeping the days' sign.
func (iv Interval) JustifyHours() (Interval, bool) {
	days, t := int64(iv.Days)+iv.Micros/usPerDay, iv.Micros%usPerDay
	switch {
	case days > 0 && t < 0:
		t, days = t+usPerDay, days-1
	case days < 0 && t > 0:
		t, days = t-usPerDay, days+1
	}
	return justified(int64(iv.Months), days, t)
}

// JustifyDays is PostgreSQL's justify_days: 30-day months of the days move
// to the months, the days keeping the months' sign.
func (iv Interval) JustifyDays() (Interval, bool) {
	months, days := int64(iv.Months)+int64(iv.Days)/daysInMonth, int64(iv.Days)%daysInMonth
	switch {
	case months > 0 && days < 0:
		days, months = days+daysInMonth, months-1
	case months < 0 && days > 0:
		days, months = days-daysInMonth, months+1
	}
	return justified(months, days, iv.Micros)
}

// JustifyInterval is PostgreSQL's justify_interval: both, with every field
// given one sign.
func (iv Interval) JustifyInterval() (Interval, bool) {
	months, days, t := int64(iv.Months), int64(iv.Days), iv.Micros
	if days > 0 && t > 0 || days < 0 && t < 0 {
		months, days = months+days/daysInMonth, days%daysInMonth
	}
	days, t = days+t/usPerDay, t%usPerDay
	months, days = months+days/daysInMonth, days%daysInMonth
	switch {
	case months > 0 && (days < 0 || days == 0 && t < 0):
		days, months = days+daysInMonth, months-1
	case months < 0 && (days > 0 || days == 0 && t > 0):
		days, months = days-daysInMonth, months+1
	}
	switch {
	case days > 0 && t < 0:
		t, days = t+usPerDay, days-1
	case days < 0 && t > 0:
		t, days = t-usPerDay, days+1
	}
	return justified(months, days, t)
}

// ErrIntervalOverflow is interval arithmetic out of range (SQLSTATE
// 22008, "interval out of range").
var ErrIntervalOverflow = errors.New("interval out of range")

// Scale is PostgreSQL's interval_mul (div false) and interval_div (div
// true) of iv by factor: months and days scaled and truncated, their
// fractions cascaded down (a month is 30 days, a day 86,400 seconds) and
// rounded to microseconds, as float.c's arithmetic does it.
func (iv Interval) Scale(factor float64, div bool) (Interval, error) {
	const daysPerMonth, secsPerDay, usecsPerSec = 30.0, 86400.0, 1e6
	tsRound := func(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }
	op := func(x float64) float64 {
		if div {
			return x / factor
		}
		return x * factor
	}
	fits32 := func(x float64) bool { return !math.IsNaN(x) && x <= math.MaxInt32 && x >= math.MinInt32 }
	m, d := op(float64(iv.Months)), op(float64(iv.Days))
	if !fits32(m) || !fits32(d) {
		return Interval{}, ErrIntervalOverflow
	}
	out := Interval{Months: int32(m), Days: int32(d)}
	monthRemainderDays := tsRound((m - float64(out.Months)) * daysPerMonth)
	secRemainder := tsRound((d - float64(out.Days) + monthRemainderDays - float64(int32(monthRemainderDays))) * secsPerDay)
	// The days cascaded down are added with overflow checks, as
	// PostgreSQL 15 adds them.
	days := int64(out.Days)
	if math.Abs(secRemainder) >= secsPerDay {
		days += int64(int32(secRemainder / secsPerDay))
		secRemainder -= float64(int32(secRemainder/secsPerDay)) * secsPerDay
	}
	days += int64(int32(monthRemainderDays))
	if days > math.MaxInt32 || days < math.MinInt32 {
		return Interval{}, ErrIntervalOverflow
	}
	out.Days = int32(days)
	micros := math.RoundToEven(op(float64(iv.Micros)) + secRemainder*usecsPerSec)
	if math.IsNaN(micros) || micros >= 9223372036854775807 || micros < -9223372036854775808 {
		return Interval{}, ErrIntervalOverflow
	}
	out.Micros = int64(micros)
	return out, nil
}
