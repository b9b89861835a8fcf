package jsontext

import "bytes"

// The functions in this file move over valid JSON (see the package doc);
// they do not check it again.

// SkipValue returns the index after the valid value starting at d[i].
func SkipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return SkipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				i = SkipString(d, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default:
		for i < len(d) {
			switch d[i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// SkipString returns the index after the valid string starting at the
// quote d[i].
//
// It searches for the next quote and counts the backslashes before it.
// Where denseEscapes escaped quotes come within blockLen bytes (JSON held
// in a string), it looks at the rest a block of 64 bytes at a time
// (skipBlocks), up to a block with no quote.
func SkipString(d []byte, i int) int {
	i++
	mark, escaped := i, 0
	for {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d)
		}
		i += j
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := i - 1; d[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
		if escaped++; escaped < denseEscapes {
			continue
		}
		if i-mark <= blockLen {
			end, j := skipBlocks(d, i)
			if end > 0 {
				return end
			}
			i = j
		}
		mark, escaped = i, 0
	}
}

// EachChild calls fn for every direct child of the valid array or object
// d, in order, until fn returns false. key is the quoted key of an object
// field and nil for an array item. d may run on past the container's end:
// EachChild stops at its closing bracket.
func EachChild(d []byte, fn func(key, val []byte) bool) {
	i := SkipSpace(d, 1)
	for i < len(d) && d[i] != ']' && d[i] != '}' {
		var key []byte
		if d[0] == '{' {
			end := SkipString(d, i)
			key = d[i:end]
			i = SkipSpace(d, end)
			i = SkipSpace(d, i+1) // the colon
		}
		end := SkipValue(d, i)
		if !fn(key, d[i:end]) {
			return
		}
		i = SkipSpace(d, end)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
		}
	}
}

// EachChildAt calls fn for every direct child of the valid array or object
// that starts at d[i], in order, with the child's quoted key (nil for an
// array item) and the index its value starts at. fn returns the index
// after the value, having skipped it ([SkipValue]) or walked it (a walk
// that descends rather than skipping reads each byte once, where
// EachChild would have skipped the child whole first), or a negative
// number to stop. EachChildAt returns the index after the container's
// closing bracket, or -1 when fn stopped.
func EachChildAt(d []byte, i int, fn func(key []byte, at int) int) int {
	obj := d[i] == '{'
	i = SkipSpace(d, i+1)
	for i < len(d) && d[i] != ']' && d[i] != '}' {
		var key []byte
		if obj {
			end := SkipString(d, i)
			key = d[i:end]
			i = SkipSpace(d, end)
			i = SkipSpace(d, i+1) // the colon
		}
		end := fn(key, i)
		if end < 0 {
			return -1
		}
		i = SkipSpace(d, end)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
		}
	}
	return min(i+1, len(d))
}

// OutlineOf returns the outline of the valid JSON d that [Scan] records
// with Limits{Outline: max, Descend: descend}: nil unless d is an object
// and the outline has at most max parts. It skips the values it does not
// descend into, as the walks here do, without validating them again.
func OutlineOf(d []byte, max int, descend Descend) []Part {
	i := SkipSpace(d, 0)
	if max <= 0 || i >= len(d) || d[i] != '{' {
		return nil
	}
	parts := make([]Part, 0, min(max, 8)) // a tool result has a few
	if outlineWalk(d, i, 1, max, descend, &parts) < 0 {
		return nil
	}
	return parts
}

// outlineWalk adds the children of the container at d[i], at depth, to
// parts, descending as descend says, and returns the index after the
// container, or -1 when parts would hold more than max.
func outlineWalk(d []byte, i, depth, max int, descend Descend, parts *[]Part) int {
	return EachChildAt(d, i, func(key []byte, at int) int {
		if len(*parts) == max {
			return -1
		}
		var k Span
		if key != nil {
			k.Start = cap(d) - cap(key) // key is d[k.Start:k.End]
			k.End = k.Start + len(key)
		}
		n := len(*parts)
		*parts = append(*parts, Part{Depth: depth, Key: k, Val: Span{at, -1}})
		var end int
		if c := d[at]; (c == '{' || c == '[') && depth < MaxOutlineDepth && descend != nil && descend(depth, key) {
			end = outlineWalk(d, at, depth+1, max, descend, parts)
		} else {
			end = SkipValue(d, at)
		}
		if end >= 0 {
			(*parts)[n].Val.End = end
		}
		return end
	})
}

// CountChildren returns the number of direct children of the valid array
// or object d.
func CountChildren(d []byte) int {
	n := 0
	EachChild(d, func(_, _ []byte) bool { n++; return true })
	return n
}

// Member returns the value of the field named key in the valid object
// obj (leading whitespace allowed), and whether there is one. Of duplicate keys the last wins, as in
// encoding/json and JavaScript, so the whole object is scanned. For
// anything but an object it returns false.
func Member(obj []byte, key string) (val []byte, ok bool) {
	obj = obj[SkipSpace(obj, 0):]
	if len(obj) == 0 || obj[0] != '{' {
		return nil, false
	}
	EachChild(obj, func(k, v []byte) bool {
		if KeyEquals(k, key) {
			val, ok = v, true
		}
		return true
	})
	return val, ok
}

// Depth returns the deepest nesting of arrays and objects in the JSON d:
// 0 for a scalar, 1 for [1], 2 for [[1]] or {"a":[]}. Unlike the other
// functions here it takes any bytes, valid JSON or not, and counts the
// brackets outside strings.
func Depth(d []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(d); i++ {
		switch d[i] {
		case '"':
			i = SkipString(d, i) - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
