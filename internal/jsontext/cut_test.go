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
