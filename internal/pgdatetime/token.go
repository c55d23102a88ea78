package pgdatetime

// The tokenizer: input cut into fields as PostgreSQL's ParseDateTime cuts
// it (numbers, dates, times, words, signed offsets).

import (
	"strings"
)

var months = map[string]int{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
	"may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9,
	"september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

var weekdays = map[string]bool{
	"sun": true, "sunday": true, "mon": true, "monday": true, "tue": true, "tues": true, "tuesday": true,
	"wed": true, "wednes": true, "wednesday": true, "thu": true, "thur": true, "thurs": true, "thursday": true,
	"fri": true, "friday": true, "sat": true, "saturday": true,
}

// field kinds of the tokenizer, after PostgreSQL's ParseDateTime.
const (
	fNumber = iota
	fDate
	fTime
	fString
	fZone    // a signed numeric offset: -08, +05:30
	fSpecial // a signed word: -infinity
)

type field struct {
	kind int
	text string // lower case
	raw  string // as written (zone names are case-sensitive on disk)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// keyword reports whether a word is one the reader knows other than a zone.
func keyword(w string) bool {
	if _, ok := months[w]; ok || weekdays[w] {
		return true
	}
	switch w {
	case "am", "pm", "bc", "ad", "t", "j", "today", "tomorrow", "yesterday", "now", "epoch",
		"infinity", "allballs", "at", "on":
		return true
	}
	return false
}

func tokenize(s string) ([]field, bool) {
	var out []field
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
			continue
		case isDigit(c):
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			kind := fNumber
			if i < len(s) && s[i] == ':' {
				kind = fTime
				for i < len(s) && (isDigit(s[i]) || s[i] == ':' || s[i] == '.') {
					i++
				}
			} else if i < len(s) && (s[i] == '-' || s[i] == '/' || s[i] == '.') {
				delim := s[i]
				i++
				if i < len(s) && isDigit(s[i]) {
					if delim != '.' {
						kind = fDate
					}
					for i < len(s) && isDigit(s[i]) {
						i++
					}
					if i < len(s) && s[i] == delim {
						kind = fDate
						for i < len(s) && (isDigit(s[i]) || s[i] == delim) {
							i++
						}
					}
				} else {
					kind = fDate
					for i < len(s) && (isDigit(s[i]) || isAlpha(s[i]) || s[i] == delim) {
						i++
					}
				}
			}
			out = append(out, field{kind: kind, text: strings.ToLower(s[start:i]), raw: s[start:i]})
		case c == '.':
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			out = append(out, field{kind: fNumber, text: s[start:i], raw: s[start:i]})
		case isAlpha(c):
			for i < len(s) && isAlpha(s[i]) {
				i++
			}
			word := strings.ToLower(s[start:i])
			isDate := false
			if i < len(s) && (s[i] == '-' || s[i] == '/' || s[i] == '.') {
				isDate = true
			} else if i < len(s) && (s[i] == '+' || isDigit(s[i])) && !keyword(word) {
				isDate = true
			}
			kind := fString
			if isDate {
				kind = fDate
				for i < len(s) && (s[i] == '+' || s[i] == '-' || s[i] == '/' || s[i] == '_' || s[i] == '.' || s[i] == ':' || isDigit(s[i]) || isAlpha(s[i])) {
					i++
				}
			}
			out = append(out, field{kind: kind, text: strings.ToLower(s[start:i]), raw: s[start:i]})
		case c == '+' || c == '-':
			i++
			for i < len(s) && s[i] == ' ' {
				i++
			}
			switch {
			case i < len(s) && isDigit(s[i]):
				for i < len(s) && (isDigit(s[i]) || s[i] == ':' || s[i] == '.') {
					i++
				}
				out = append(out, field{kind: fZone, text: strings.ReplaceAll(s[start:i], " ", ""), raw: s[start:i]})
			case i < len(s) && isAlpha(s[i]):
				for i < len(s) && isAlpha(s[i]) {
					i++
				}
				out = append(out, field{kind: fSpecial, text: strings.ToLower(strings.ReplaceAll(s[start:i], " ", "")), raw: s[start:i]})
			default:
				return nil, false
			}
		case c == '(' || c == ')':
			i++ // DuckDB writes "(BC)"; PostgreSQL ignores punctuation
		default:
			return nil, false
		}
	}
	return out, true
}
