package jsontext

import (
	"strconv"
	"unsafe"
)

// Summary is what [Scan] records of the scalar values of one key of the
// object items of an array (see [KeyInfo]), or of the scalar items
// themselves (see [Items]), over every one of them, in a fixed size
// whatever their number: which short strings occur, when there are few,
// the range of the numbers, and which booleans occur. Whether a null
// occurs is told by the kinds beside it.
//
// The zero Summary is that of no value; [Summary.Add] adds one.
type Summary struct {
	// Strings holds the distinct strings met, as in the document (quoted,
	// but for AddText), in the order they were first met; valid for the
	// first NStrings, and only when Open is false.
	Strings  [MaxStrings]Span
	NStrings uint8
	// Open is set once a string is met that is not short (ShortString),
	// that holds an escape, or that would be one distinct string more than
	// MaxStrings: the strings are then not told.
	Open bool
	// Bools has bit 1 set when false occurs, bit 2 when true does.
	Bools uint8
	// Min and Max span the smallest and largest number met (the first
	// met of equal ones), when Numbers is set; minF and maxF are their
	// values.
	Numbers    bool
	Min, Max   Span
	minF, maxF float64
}

// The bounds of a Summary: at most MaxStrings distinct strings are told,
// each of at most ShortString bytes between its quotes. A field with more
// than that (names, messages, timestamps) is not a set a query filters on
// by value, and keeping its values would cost memory per key that grows
// with the input.
const (
	MaxStrings  = 8
	ShortString = 32
)

// Add records the valid JSON scalar v of the document d.
func (s *Summary) Add(d []byte, v Span) {
	switch d[v.Start] {
	case '"':
		s.addString(d, v)
	case 't':
		s.Bools |= 2
	case 'f':
		s.Bools |= 1
	case 'n':
	default:
		s.addNumber(d, v)
	}
}

// addString records the quoted JSON string v of d.
func (s *Summary) addString(d []byte, v Span) {
	if !s.Open && (v.End-v.Start > ShortString+2 || bytesIndexByte(d[v.Start:v.End], '\\') >= 0) {
		s.Open = true
	}
	s.addDistinct(d, v)
}

// AddText records the text v of d as a string: a table cell, which is not
// quoted, and which AddText takes as it is, escapes and all.
func (s *Summary) AddText(d []byte, v Span) {
	if v.End-v.Start > ShortString {
		s.Open = true
	}
	s.addDistinct(d, v)
}

// AddNumber records v of d, which must be a valid JSON number, as a number.
func (s *Summary) AddNumber(d []byte, v Span) { s.addNumber(d, v) }

// addDistinct adds the string v of d to the distinct strings, unless it is
// among them or the strings are not told.
func (s *Summary) addDistinct(d []byte, v Span) {
	if s.Open {
		return
	}
	n := v.End - v.Start
	b := d[v.Start:v.End]
	for i := range s.NStrings {
		if t := s.Strings[i]; t.End-t.Start == n && string(d[t.Start:t.End]) == string(b) {
			return
		}
	}
	if s.NStrings == MaxStrings {
		s.Open = true
		return
	}
	s.Strings[s.NStrings] = v
	s.NStrings++
}

// bytesIndexByte is bytes.IndexByte, for a short slice.
func bytesIndexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// addNumber records the valid JSON number v of d.
func (s *Summary) addNumber(d []byte, v Span) { s.addValue(v, NumberValue(v.Of(d))) }

// addValue records the number v whose value is f.
func (s *Summary) addValue(v Span, f float64) {
	if !s.Numbers {
		s.Numbers = true
		s.Min, s.Max, s.minF, s.maxF = v, v, f, f
		return
	}
	if f < s.minF {
		s.Min, s.minF = v, f
	}
	if f > s.maxF {
		s.Max, s.maxF = v, f
	}
}

// Merge adds to s what t recorded of the values that came after s's, in
// the same document: as if s had recorded them all.
func (s *Summary) Merge(d []byte, t *Summary) {
	s.Bools |= t.Bools
	if t.Open {
		s.Open = true
	}
	for i := range t.NStrings {
		if s.Open {
			break
		}
		s.addDistinct(d, t.Strings[i])
	}
	if t.Numbers {
		if !s.Numbers {
			s.Numbers, s.Min, s.Max, s.minF, s.maxF = true, t.Min, t.Max, t.minF, t.maxF
		} else {
			if t.minF < s.minF {
				s.Min, s.minF = t.Min, t.minF
			}
			if t.maxF > s.maxF {
				s.Max, s.maxF = t.Max, t.maxF
			}
		}
	}
}

// Rebase moves every span of s by -base, as a caller does that takes a
// part of the document as its own.
func (s *Summary) Rebase(base int) {
	for i := range s.NStrings {
		s.Strings[i].Start -= base
		s.Strings[i].End -= base
	}
	if s.Numbers {
		s.Min.Start, s.Min.End = s.Min.Start-base, s.Min.End-base
		s.Max.Start, s.Max.End = s.Max.Start-base, s.Max.End-base
	}
}

// IsNumber reports whether b is exactly one JSON number, without white
// space.
func IsNumber(b []byte) bool {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return false
	}
	end, _, err := scanNumber(b, 0, false)
	return err == nil && end == len(b)
}

// NumberValue returns the value of the valid JSON number b as the nearest
// float64 (±Inf past its range), as strconv.ParseFloat does.
func NumberValue(b []byte) float64 {
	_, f, _ := scanNumber(b, 0, true)
	return f
}

// number returns the value of the valid JSON number b, whose digits (all
// of them, frac of them after the point) make mant when there are at most
// 19 of them, and which has an exponent when exp: exactly as
// strconv.ParseFloat does, and without it for a number of at most 15
// digits and no exponent.
func number(b []byte, mant uint64, digits, frac int, exp bool) float64 {
	if exp || digits > 15 {
		f, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64) // ±Inf when out of range
		return f
	}
	f := float64(mant) // exact: below 2^53
	if frac > 0 {
		f /= pow10[frac] // both exact: the quotient is correctly rounded
	}
	if b[0] == '-' {
		f = -f
	}
	return f
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// scan validates the number or literal at d[i], as scanScalar does, and
// records it.
func (s *Summary) scan(d []byte, i int) (int, error) {
	switch d[i] {
	case 't':
		s.Bools |= 2
		return scanLiteral(d, i, "true")
	case 'f':
		s.Bools |= 1
		return scanLiteral(d, i, "false")
	case 'n':
		return scanLiteral(d, i, "null")
	}
	if j := quickScalar(d, i); j > 0 && j-i <= 15 { // an integer whose float is exact
		mant, _ := appendDigits(0, d[:j], i)
		s.addValue(Span{i, j}, float64(mant))
		return j, nil
	}
	end, f, err := scanNumber(d, i, true)
	if err == nil {
		s.addValue(Span{i, end}, f)
	}
	return end, err
}
