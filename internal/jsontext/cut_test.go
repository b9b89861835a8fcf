package jsontext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// ClipString and QuoteTail keep messages within ShownMax bytes, whole
// characters only, for every length around the bound.
func TestClipStringLengths(t *testing.T) {
	for n := 0; n < ShownMax+12; n++ {
		for _, unit := range []string{"x", "é", "😀"} {
			s := strings.Repeat(unit, n)
			c := ClipString(s)
			if len(c) > ShownMax || !utf8.ValidString(c) {
				t.Fatalf("ClipString(%d × %q) = %q: %d bytes", n, unit, c, len(c))
			}
			if (len(s) <= ShownMax) != (c == s) {
				t.Fatalf("ClipString(%d × %q) = %q", n, unit, c)
			}
			if q := QuoteTail(s); !utf8.ValidString(q) || len(s) > ShownMax && !strings.HasPrefix(q, `"…`) {
				t.Fatalf("QuoteTail(%d × %q) = %q", n, unit, q)
			}
		}
	}
}

// ClipStringTo is AppendClipped of a string: the same bytes for every
// budget and length around it, valid or not, within budget.
func TestClipStringToMatchesAppendClipped(t *testing.T) {
	for budget := len(Ellipsis); budget < 16; budget++ {
		for n := 0; n < budget+8; n++ {
			for _, unit := range []string{"x", "é", "😀", "\xff", "\xe2\x80"} {
				s := strings.Repeat(unit, n)
				got, want := ClipStringTo(s, budget), string(AppendClipped(nil, []byte(s), budget))
				if got != want {
					t.Fatalf("ClipStringTo(%d × %q, %d) = %q, AppendClipped gives %q", n, unit, budget, got, want)
				}
				if len(got) > budget || (len(s) <= budget) != (got == s) {
					t.Fatalf("ClipStringTo(%d × %q, %d) = %q: %d bytes", n, unit, budget, got, len(got))
				}
				if utf8.ValidString(s) && !utf8.ValidString(got) {
					t.Fatalf("ClipStringTo(%d × %q, %d) = %q splits a character", n, unit, budget, got)
				}
			}
		}
	}
}
