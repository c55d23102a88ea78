package dialect

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"tsdb/internal/sqlerr"
)

// to_char(number, format): PostgreSQL's number templates (9, 0, . and D,
// comma and G, S, MI, PL, SG, PR, FM, TH, L, V, EEEE, RN, quoted text),
// answered in Go by the engine function _tsdb_to_char_num (registered by
// the planner), since the rules, where a sign goes, which zeros FM drops,
// when digits become #, are PostgreSQL's own. The rules here were taken
// from PostgreSQL 15's answers to a grid of values and templates
// (TestToCharNumber), in the C locale: D is '.', G is ',' and L a space.

// numNode is one element of a number template.
type numNode struct {
	kind  string // "9", "0", ".", ",", "S", "MI", "PL", "SG", "PR", "TH", "L", "V", "EEEE", "RN", "B" or "" for text
	text  string // the text of a "" node
	lower bool   // th, rn
}

// numTemplate is a parsed number template.
type numTemplate struct {
	nodes []numNode
	// pre and post count the digit positions before and after the
	// decimal point (V's digits are before it).
	pre, post int
	// zeroStart is the first pre position (1-based) that is a 0, or 0;
	// zeroEnd the last post position that is a 0, or 0.
	zeroStart, zeroEnd int
	multi              int // digits after V
	fill               bool
	// signAt: S, MI or SG place the sign; without them it goes just before
	// the number (PL and PR keep that place too).
	lsign, lsignBefore, minus, plus, sg, bracket bool
	decimal, eeee, roman                         bool
}

var numKeywords = []string{"EEEE", "FM", "MI", "PL", "PR", "RN", "SG", "TH", "9", "0", ".", ",", "B", "D", "G", "L", "S", "V"}

// parseNumTemplate reads a number template, refusing what PostgreSQL
// refuses (two decimal points, V with one, S beside MI, PL or SG, PR
// beside a sign).
func parseNumTemplate(format string) (*numTemplate, error) {
	t := &numTemplate{}
	seenDigit := false
	syntax := func(msg string) error { return sqlerr.New(sqlerr.SyntaxError, "%s", msg) }
	for i := 0; i < len(format); {
		rest := format[i:]
		switch {
		case rest[0] == '"':
			var b strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				b.WriteByte(rest[j])
			}
			t.nodes = append(t.nodes, numNode{text: b.String()})
			i += min(j+1, len(rest))
			continue
		case rest[0] == '\\' && len(rest) > 1:
			t.nodes = append(t.nodes, numNode{text: rest[1:2]})
			i += 2
			continue
		}
		kw := ""
		for _, k := range numKeywords {
			if len(rest) >= len(k) && strings.EqualFold(rest[:len(k)], k) {
				kw = k
				break
			}
		}
		if kw == "" {
			t.nodes = append(t.nodes, numNode{text: rest[:1]})
			i++
			continue
		}
		n := numNode{kind: kw, lower: rest[0] >= 'a' && rest[0] <= 'z'}
		i += len(kw)
		switch kw {
		case "FM":
			t.fill = true
			continue
		case "9", "0":
			seenDigit = true
			n.kind = kw
			switch {
			case t.decimal:
				t.post++
				if kw == "0" {
					t.zeroEnd = t.post
				}
			default:
				t.pre++
				if t.multi > 0 || len(t.nodes) > 0 && t.hasV() {
					t.multi++
				}
				if kw == "0" && t.zeroStart == 0 {
					t.zeroStart = t.pre
				}
			}
		case ".", "D":
			if t.decimal {
				return nil, syntax("multiple decimal points")
			}
			if t.hasV() {
				return nil, syntax(`cannot use "V" and decimal point together`)
			}
			t.decimal = true
			n.kind = "."
		case "G":
			n.kind = ","
		case "S":
			if t.lsign {
				return nil, syntax(`cannot use "S" twice`)
			}
			if t.plus || t.minus || t.sg {
				return nil, syntax(`cannot use "S" and "PL"/"MI"/"SG" together`)
			}
			if t.bracket {
				return nil, syntax(`cannot use "PR" and "S"/"PL"/"MI"/"SG" together`)
			}
			t.lsign, t.lsignBefore = true, !seenDigit
		case "MI", "PL", "SG":
			if t.lsign {
				return nil, syntax(`cannot use "S" and "PL"/"MI"/"SG" together`)
			}
			if t.bracket {
				return nil, syntax(`cannot use "PR" and "S"/"PL"/"MI"/"SG" together`)
			}
			switch kw {
			case "MI":
				t.minus = true
			case "PL":
				t.plus = true
			default:
				t.sg = true
			}
		case "PR":
			if t.lsign || t.plus || t.minus || t.sg {
				return nil, syntax(`cannot use "PR" and "S"/"PL"/"MI"/"SG" together`)
			}
			t.bracket = true
		case "V":
			if t.decimal {
				return nil, syntax(`cannot use "V" and decimal point together`)
			}
		case "EEEE":
			t.eeee = true
		case "RN":
			t.roman = true
		}
		t.nodes = append(t.nodes, n)
	}
	if t.eeee && (t.fill || t.lsign || t.bracket || t.minus || t.plus || t.sg || t.roman || t.multi > 0) {
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError, Message: `"EEEE" is incompatible with other formats`,
			Detail: `"EEEE" may only be used together with digit and decimal point patterns.`}
	}
	return t, nil
}

func (t *numTemplate) hasV() bool {
	for _, n := range t.nodes {
		if n.kind == "V" {
			return true
		}
	}
	return false
}

// ToCharNumber formats value, the text of a number of the engine type
// typeName (BIGINT, DECIMAL(p,s), DOUBLE, …), by a to_char template.
func ToCharNumber(value, typeName, format string) (string, error) {
	t, err := parseNumTemplate(format)
	if err != nil {
		return "", err
	}
	neg := strings.HasPrefix(value, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(value, "-"), "+")
	float := typeName == "DOUBLE" || typeName == "FLOAT"
	if !float && !plainDecimal(digits) {
		// Not a number the engine printed: to_char of text, a date with
		// a number template, … PostgreSQL has no such function.
		return "", sqlerr.New(sqlerr.UndefinedFunction, "function to_char(%s, text) does not exist", strings.ToLower(typeName))
	}
	var f float64
	if float {
		bits := 64
		if typeName == "FLOAT" {
			bits = 32 // the real's own value, as PostgreSQL widens it
		}
		if f, err = strconv.ParseFloat(value, bits); err != nil {
			return "", sqlerr.New(sqlerr.InvalidTextRep, "invalid number %q", value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", sqlerr.New(sqlerr.FeatureNotSupported, "to_char of %s is not supported", value)
		}
		neg = math.Signbit(f) && f != 0
	}
	if t.multi > 0 {
		if float {
			f *= math.Pow(10, float64(t.multi))
		} else {
			digits = shiftDecimal(digits, t.multi)
		}
	}
	if t.roman {
		return t.romanOut(digits, f, float, neg)
	}
	if t.eeee {
		return t.sciOut(digits, f, float, neg, typeName == "FLOAT"), nil
	}
	var intPart, frac string
	avail := t.post // post digits the number has (fewer for a wide float)
	if float {
		post := t.post
		maxDigits := 15 // DBL_DIG, as PostgreSQL's float8 to_char
		if typeName == "FLOAT" {
			maxDigits = 6 // FLT_DIG
		}
		preLen := len(strconv.FormatFloat(math.Abs(f), 'f', 0, 64))
		if preLen >= maxDigits {
			post = 0
		} else if preLen+post > maxDigits {
			post = maxDigits - preLen
		}
		s := strconv.FormatFloat(math.Abs(f), 'f', post, 64)
		intPart, frac, _ = strings.Cut(s, ".")
		avail = post
		frac += strings.Repeat("0", t.post-len(frac))
	} else {
		intPart, frac = roundDecimalText(digits, t.post)
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" && t.post == 0 {
		intPart = "0"
	}
	if !float && strings.Trim(intPart+frac, "0") == "" {
		neg = false // -0.4 to no places is 0: the sign is the rounded value's
	}
	return t.fixedOut(intPart, frac, avail, neg), nil
}

// fixedOut writes the number intPart.frac by the template. avail is how
// many of the template's post digits the number has: a float keeps 15
// significant digits (6 for real), and PostgreSQL's output ends where its
// digits do, at the decimal point if none is left after it.
func (t *numTemplate) fixedOut(intPart, frac string, avail int, neg bool) string {
	overflow := len(intPart) > t.pre
	first := t.pre - len(intPart) + 1 // the pre position of the first digit
	start := first
	if t.zeroStart > 0 && t.zeroStart < start {
		start = t.zeroStart
	}
	if intPart == "" && t.zeroStart == 0 {
		start = t.pre + 1 // the number starts at the decimal point
	}
	if overflow {
		start = 1
	}
	var b strings.Builder
	slotDone := false
	digitOut := false // a digit (or a zero it pads with, or #) was written
	var postAt []int  // where each post digit was written
	slot := func() {
		if slotDone {
			return
		}
		slotDone = true
		switch {
		case t.lsign && t.lsignBefore:
			b.WriteByte("+-"[b2i(neg)])
		case t.lsign || t.minus || t.sg:
		case t.bracket:
			if neg {
				b.WriteByte('<')
			} else if !t.fill {
				b.WriteByte(' ')
			}
		case neg:
			b.WriteByte('-')
		case !t.fill:
			b.WriteByte(' ')
		}
	}
	pos, postPos := 0, 0
	exhausted := false
nodes:
	for _, n := range t.nodes {
		switch n.kind {
		case "9", "0":
			if postPos > 0 || (t.decimal && pos >= t.pre) {
				if postPos >= avail {
					// Digits the number does not have: they, and the
					// separators and text after them, print nothing.
					exhausted = true
					continue
				}
				postPos++
				postAt = append(postAt, b.Len())
				if overflow {
					b.WriteByte('#')
				} else {
					b.WriteByte(frac[postPos-1])
				}
				digitOut = true
				continue
			}
			pos++
			switch {
			case pos < start:
				if !t.fill {
					b.WriteByte(' ')
				}
			default:
				slot()
				switch {
				case overflow:
					b.WriteByte('#')
				case pos >= first:
					b.WriteByte(intPart[pos-first])
				default:
					b.WriteByte('0')
				}
				digitOut = true
			}
		case ".":
			if avail == 0 && t.post > 0 && !overflow {
				break nodes
			}
			if start > t.pre {
				slot()
			}
			b.WriteByte('.')
			pos = t.pre
		case ",":
			switch {
			case exhausted:
			case digitOut:
				b.WriteByte(',')
			case !t.fill:
				b.WriteByte(' ')
			}
		case "S":
			if !t.lsignBefore {
				b.WriteByte("+-"[b2i(neg)])
			}
		case "MI":
			if neg {
				b.WriteByte('-')
			} else if !t.fill {
				b.WriteByte(' ')
			}
		case "PL":
			if !neg {
				b.WriteByte('+')
			} else if !t.fill {
				b.WriteByte(' ')
			}
		case "SG":
			b.WriteByte("+-"[b2i(neg)])
		case "PR":
			if neg {
				b.WriteByte('>')
			} else if !t.fill {
				b.WriteByte(' ')
			}
		case "TH":
			if !neg && !overflow {
				b.WriteString(ordinalSuffix(intPart, n.lower))
			}
		case "L":
			b.WriteByte(' ')
		case "V", "B":
		default:
			if !exhausted {
				b.WriteString(n.text)
			}
		}
	}
	out := b.String()
	if t.fill && !overflow {
		// FM drops the zeros of 9 positions at the end of the fraction.
		cut := []int{}
		for j := len(postAt) - 1; j >= 0 && j+1 > t.zeroEnd && out[postAt[j]] == '0'; j-- {
			cut = append(cut, postAt[j])
		}
		for _, at := range cut {
			out = out[:at] + out[at+1:]
		}
		if len(cut) == len(postAt) && intPart == "" && t.zeroStart == 0 && t.zeroEnd == 0 && !strings.ContainsAny(strings.Trim(frac, "0"), "123456789") {
			// Nothing of the number is left: PostgreSQL writes 0 before
			// the point (FM9.99 of 0 is "0.").
			if at := strings.IndexByte(out, '.'); at >= 0 {
				out = out[:at] + "0" + out[at:]
			}
		}
	}
	return out
}

// romanOut writes the number as Roman numerals (RN), 1 to 3999, right
// aligned in 15 places without FM; anything else is 15 #.
func (t *numTemplate) romanOut(digits string, f float64, float, neg bool) (string, error) {
	// PostgreSQL takes the value as an int4 first: a float rounded half to
	// even (rint), a numeric half away from zero.
	var n int64
	if float {
		r := math.RoundToEven(math.Abs(f))
		if r > math.MaxInt32 {
			return strings.Repeat("#", 15), nil
		}
		n = int64(r)
	} else {
		i, _ := roundDecimalText(digits, 0)
		i = strings.TrimLeft(i, "0")
		if len(i) > 10 {
			return "", sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
		}
		n, _ = strconv.ParseInt(i+"0", 10, 64)
		if n /= 10; n > math.MaxInt32 {
			return "", sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
		}
	}
	if neg || n < 1 || n > 3999 {
		return strings.Repeat("#", 15), nil
	}
	var b strings.Builder
	for _, r := range []struct {
		v int64
		s string
	}{{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for ; n >= r.v; n -= r.v {
			b.WriteString(r.s)
		}
	}
	s := b.String()
	for _, nd := range t.nodes {
		if nd.kind == "RN" && nd.lower {
			s = strings.ToLower(s)
		}
	}
	if !t.fill {
		s = strings.Repeat(" ", 15-len(s)) + s
	}
	return s, nil
}

// sciOut writes the number in scientific notation (EEEE) with the
// template's digits after the point.
func (t *numTemplate) sciOut(digits string, f float64, float, neg, float4 bool) string {
	var mant string
	if float {
		mant = strconv.FormatFloat(math.Abs(f), 'e', t.post, 64)
	} else {
		mant = sciDecimal(digits, t.post)
	}
	sign := " "
	if neg {
		sign = "-"
	} else if t.fill {
		sign = ""
	}
	return sign + mant
}

// sciDecimal is the decimal text d in d.ddde±XX form with post digits,
// rounded half away from zero.
func sciDecimal(d string, post int) string {
	intPart, frac, _ := strings.Cut(d, ".")
	all := strings.TrimLeft(intPart+frac, "0")
	if all == "" {
		return "0" + dotDigits(strings.Repeat("0", post)) + "e+00"
	}
	exp := len(strings.TrimLeft(intPart, "0")) - 1
	if strings.TrimLeft(intPart, "0") == "" {
		exp = -(len(frac) - len(strings.TrimLeft(frac, "0"))) - 1
	}
	v, _ := new(big.Int).SetString(all, 10)
	keep := post + 1
	if len(all) > keep {
		q, r := new(big.Int).QuoRem(v, pow10Big(len(all)-keep), new(big.Int))
		if r.Lsh(r, 1).Cmp(pow10Big(len(all)-keep)) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		v = q
	} else {
		v.Mul(v, pow10Big(keep-len(all)))
	}
	// The exponent is the unrounded value's, as PostgreSQL's
	// numeric_out_sci has it: 99.995 to three places is 10.000e+01.
	s := v.String()
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	e := strconv.Itoa(exp)
	if len(e) < 2 {
		e = "0" + e
	}
	return s[:len(s)-post] + dotDigits(s[len(s)-post:]) + "e" + es + e
}

func dotDigits(s string) string {
	if s == "" {
		return ""
	}
	return "." + s
}

func pow10Big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// roundDecimalText rounds unsigned decimal text to post places, half away
// from zero, into its integer digits and post fraction digits.
func roundDecimalText(d string, post int) (string, string) {
	intPart, frac, _ := strings.Cut(d, ".")
	if len(frac) <= post {
		return intPart, frac + strings.Repeat("0", post-len(frac))
	}
	v, ok := new(big.Int).SetString(intPart+frac[:post], 10)
	if !ok {
		v = new(big.Int)
	}
	if frac[post] >= '5' {
		v.Add(v, big.NewInt(1))
	}
	s := v.String()
	if len(s) <= post {
		s = strings.Repeat("0", post-len(s)+1) + s
	}
	return s[:len(s)-post], s[len(s)-post:]
}

// shiftDecimal multiplies unsigned decimal text by 10^n.
func shiftDecimal(d string, n int) string {
	intPart, frac, _ := strings.Cut(d, ".")
	frac += strings.Repeat("0", max(0, n-len(frac)))
	return intPart + frac[:n] + dotDigits(frac[n:])
}

// ordinalSuffix is the English ordinal suffix of an integer's digits.
func ordinalSuffix(intPart string, lower bool) string {
	s := "TH"
	n := len(intPart)
	switch {
	case n >= 2 && intPart[n-2] == '1':
	case n >= 1 && intPart[n-1] == '1':
		s = "ST"
	case n >= 1 && intPart[n-1] == '2':
		s = "ND"
	case n >= 1 && intPart[n-1] == '3':
		s = "RD"
	}
	if lower {
		return strings.ToLower(s)
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plainDecimal reports whether s is unsigned decimal digits with at most
// one point and at least one digit, as the engine prints integers and
// decimals.
func plainDecimal(s string) bool {
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}
