package jsontext

// ParseUint parses s, decimal digits only (no sign, no space; leading
// zeros allowed), as an int. It reports false for an empty s, any other
// byte, or a value above max (which must not be negative); it never
// overflows, whatever the length of s. Callers that forbid leading zeros
// or want a sign check for them first.
func ParseUint[S ~string | ~[]byte](s S, max int) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if d > max || n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
