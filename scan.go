package values

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"unicode/utf8"
)

// This file holds the one-pass JSON validator that indexes a value at Put,
// and the small walkers over already-validated JSON that previews and
// references use. Nothing here recurses: nesting depth is bounded only by
// memory, never by the goroutine stack.

// errSyntax is wrapped by every validation error of the scanner.
var errSyntax = errors.New("invalid JSON")

// span is a half-open byte range [start, end) of a stored value's bytes.
type span struct{ start, end int }

// of returns the bytes of b that s spans.
func (s span) of(b []byte) []byte { return b[s.start:s.end] }

// child is one direct child of a top-level container, as recorded by the scan.
type child struct {
	key span // the key with its quotes, for object fields; empty for array elements
	val span // the value
}

// Children kept by the scan of a top-level container. Arrays preview 3 head
// and 2 tail items; objects describe up to 24 fields, or list 8 keys.
const (
	scanHead = objectFieldsMax + 1
	scanTail = arrayTailItems
)

// shape is what one scan learns about a JSON value.
type shape struct {
	count int             // direct children of a top-level container
	head  []child         // the first scanHead children
	tail  [scanTail]child // ring of the last scanTail children
}

// lastChildren returns the last k (≤ scanTail) children in order.
func (sh *shape) lastChildren(k int) []child {
	out := make([]child, 0, k)
	for i := sh.count - k; i < sh.count; i++ {
		out = append(out, sh.tail[i%scanTail])
	}
	return out
}

// strPlain marks bytes that may appear unescaped in a JSON string and need
// no further check: printable ASCII other than '"' and '\\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// scanJSON validates d as exactly one JSON value (surrounding whitespace
// allowed) in one pass and records the shape of a top-level container.
// It returns the span of the value without the surrounding whitespace.
//
// A large top-level array is scanned by two goroutines, each over about
// half of it (see scanSplit); both have ended when scanJSON returns.
func scanJSON(d []byte) (span, shape, error) {
	if len(d) >= splitScanMin && runtime.GOMAXPROCS(0) > 1 {
		if top, sh, err, ok := scanSplit(d); ok {
			return top, sh, err
		}
	}
	top, sh, err, _ := scanFrom(d, 0, false, -1)
	return top, sh, err
}

// splitScanMin is the size from which scanJSON splits the scan of an array
// in two: below it, starting a goroutine costs more than it saves.
const splitScanMin = 4 << 20

// scanSplit scans a top-level array in two halves at once. The second
// half starts at a guessed boundary between two items of the array; the
// guess is confirmed when the scan of the first half arrives at that very
// offset as the start of an item of the array (the rest of the document is
// then context-free). When the guess was wrong, the first scan simply goes
// on to the end and the second one's result is dropped. ok is false when d
// is not an array or no boundary was found, and the caller scans alone.
func scanSplit(d []byte) (top span, sh shape, err error, ok bool) {
	start := skipSpace(d, 0)
	if start >= len(d) || d[start] != '[' {
		return top, sh, nil, false
	}
	mid := guessItemStart(d, start+len(d)/2)
	if mid < 0 {
		return top, sh, nil, false
	}
	type result struct {
		top span
		sh  shape
		err error
	}
	second := make(chan result, 1)
	go func() {
		t, s, e, _ := scanFrom(d, mid, true, -1)
		second <- result{t, s, e}
	}()
	top, sh, err, stopped := scanFrom(d, 0, false, mid)
	r := <-second // always wait: no goroutine outlives the call
	if !stopped {
		return top, sh, err, true // the guess was wrong; the first scan did it all
	}
	if r.err != nil {
		return top, sh, r.err, true
	}
	top.end = r.top.end
	return top, joinShapes(&sh, &r.sh), nil, true
}

// guessItemStart returns the first offset at or after from that follows
// "}," or "]," (with optional whitespace) and starts an object or array: a
// likely start of an item of a large array of objects or arrays. It
// returns -1 when there is none within a small window.
func guessItemStart(d []byte, from int) int {
	const window = 1 << 20
	for i, end := from, min(len(d), from+window); i < end; i++ {
		if d[i] != ',' || i == 0 || (d[i-1] != '}' && d[i-1] != ']') {
			continue
		}
		j := skipSpace(d, i+1)
		if j < len(d) && (d[j] == '{' || d[j] == '[') {
			return j
		}
	}
	return -1
}

// joinShapes returns the shape of an array whose items are those of a
// followed by those of b.
func joinShapes(a, b *shape) shape {
	sh := shape{count: a.count + b.count, head: a.head}
	for _, c := range b.head {
		if len(sh.head) == scanHead {
			break
		}
		sh.head = append(sh.head, c)
	}
	last := append(a.lastChildren(min(a.count, scanTail)), b.lastChildren(min(b.count, scanTail))...)
	last = last[max(0, len(last)-scanTail):]
	for k, c := range last {
		sh.tail[(sh.count-len(last)+k)%scanTail] = c
	}
	return sh
}

// scanFrom is the scanner. With inArray false it scans d from offset from
// as one whole JSON value. With inArray true it starts inside a top-level
// array, at the item at offset from, and scans to the end of the document.
// With stop ≥ 0 it stops, reporting stopped, when an item of a top-level
// array starts exactly at offset stop, and gives up stopping once it has
// gone past it.
func scanFrom(d []byte, from int, inArray bool, stop int) (top span, sh shape, err error, stopped bool) {
	var (
		stack    []byte // open containers, '[' or '{'
		curStart int    // start of the current depth-1 child
		curKey   span   // key of the current depth-1 field
	)
	i := skipSpace(d, from)
	top.start = i
	if inArray {
		stack = append(stack, '[')
	}
	for {
		// A value starts at i (after optional whitespace).
		i = skipSpace(d, i)
		if i >= len(d) {
			return top, sh, syntaxErr(d, i, "unexpected end of input"), false
		}
		if len(stack) == 1 {
			if i >= stop && stop >= 0 {
				if i == stop && stack[0] == '[' {
					return top, sh, nil, true
				}
				stop = -1
			}
			curStart = i
		}
		switch c := d[i]; c {
		case '{', '[':
			stack = append(stack, c)
			i = skipSpace(d, i+1)
			if i < len(d) && d[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				var k span
				if i, k, err = scanKey(d, i); err != nil {
					return top, sh, err, false
				}
				if len(stack) == 1 {
					curKey = k
				}
			}
			continue
		case '"':
			if i, err = scanString(d, i); err != nil {
				return top, sh, err, false
			}
		default:
			if i, err = scanScalar(d, i); err != nil {
				return top, sh, err, false
			}
		}
		// A value ended at i; close containers until one continues.
		for {
			switch len(stack) {
			case 0:
				top.end = i
				if j := skipSpace(d, i); j != len(d) {
					return top, sh, syntaxErr(d, j, "unexpected data after the value"), false
				}
				return top, sh, nil, false
			case 1:
				c := child{key: curKey, val: span{curStart, i}}
				if sh.count < scanHead {
					sh.head = append(sh.head, c)
				}
				sh.tail[sh.count%scanTail] = c
				sh.count++
			}
			i = skipSpace(d, i)
			if i >= len(d) {
				return top, sh, syntaxErr(d, i, "unexpected end of input"), false
			}
			open := stack[len(stack)-1]
			if d[i] == open+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if d[i] != ',' {
				return top, sh, syntaxErr(d, i, fmt.Sprintf("want ',' or %q", open+2)), false
			}
			i++
			if open == '{' {
				var k span
				if i, k, err = scanKey(d, i); err != nil {
					return top, sh, err, false
				}
				if len(stack) == 1 {
					curKey = k
				}
			}
			break
		}
	}
}

// scanKey scans `ws string ws ':'` and returns the index after the colon and
// the span of the quoted key.
func scanKey(d []byte, i int) (int, span, error) {
	i = skipSpace(d, i)
	if i >= len(d) || d[i] != '"' {
		return i, span{}, syntaxErr(d, i, "want an object key")
	}
	start := i
	i, err := scanString(d, i)
	if err != nil {
		return i, span{}, err
	}
	k := span{start, i}
	i = skipSpace(d, i)
	if i >= len(d) || d[i] != ':' {
		return i, k, syntaxErr(d, i, "want ':' after an object key")
	}
	return i + 1, k, nil
}

// scanString validates the string starting at the quote d[i] and returns the
// index after its closing quote. It looks at eight bytes at a time up to the
// first byte that needs a closer look, so a short plain string (a key, a
// name) costs one or two loads.
func scanString(d []byte, i int) (int, error) {
	i++
	for {
		for {
			if i+8 > len(d) {
				// Fewer than eight bytes left: one at a time.
				for i < len(d) && strPlain[d[i]] {
					i++
				}
				if i >= len(d) {
					return i, syntaxErr(d, i, "unterminated string")
				}
				break
			}
			if m := specialBytes(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return i, syntaxErr(d, i, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					return i, syntaxErr(d, i, `bad \u escape`)
				}
				i += 6
			default:
				return i, syntaxErr(d, i, "bad escape")
			}
		case c < 0x20:
			return i, syntaxErr(d, i, "control character in string")
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, syntaxErr(d, i, "invalid UTF-8 in string")
			}
			i += n
		}
	}
}

// specialBytes returns a mask whose lowest set bit is the high bit of the
// first byte of w (in memory order) that is '"', '\\', a control character
// or not ASCII, and 0 when there is none. Bits above the lowest may be
// spurious (borrows of the byte-wise subtractions), so only the lowest is
// used.
func specialBytes(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	return (w | (w - ones*0x20) | (quote-ones)&^quote | (slash-ones)&^slash) & highs
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// scanScalar validates a number or literal at d[i] and returns the index after it.
func scanScalar(d []byte, i int) (int, error) {
	switch d[i] {
	case 't':
		return scanLiteral(d, i, "true")
	case 'f':
		return scanLiteral(d, i, "false")
	case 'n':
		return scanLiteral(d, i, "null")
	}
	start := i
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i = skipDigits(d, i+1)
	default:
		return i, syntaxErr(d, start, "want a value")
	}
	if i < len(d) && d[i] == '.' {
		j := skipDigits(d, i+1)
		if j == i+1 {
			return j, syntaxErr(d, j, "want digits after '.'")
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := skipDigits(d, i)
		if j == i {
			return j, syntaxErr(d, j, "want digits in exponent")
		}
		i = j
	}
	return i, nil
}

func skipDigits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return i, syntaxErr(d, i, "want a value")
	}
	return i + len(lit), nil
}

func syntaxErr(d []byte, i int, msg string) error {
	if i >= len(d) {
		return fmt.Errorf("values: %w: %s at end of input (byte %d)", errSyntax, msg, i)
	}
	return fmt.Errorf("values: %w: %s at byte %d", errSyntax, msg, i)
}

// The functions below walk JSON that scanJSON has already validated; they
// never see invalid input and do not check it.

// skipValue returns the index after the validated value starting at d[i].
func skipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				i = skipString(d, i) - 1
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

// skipString returns the index after the validated string starting at d[i].
func skipString(d []byte, i int) int {
	i++
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
	}
}

// eachChild calls fn for every direct child of the validated container d
// (which starts with '[' or '{'), in order, until fn returns false. key is
// the quoted key of an object field and nil for array elements.
func eachChild(d []byte, fn func(key, val []byte) bool) {
	i := skipSpace(d, 1)
	for i < len(d) && d[i] != ']' && d[i] != '}' {
		var key []byte
		if d[0] == '{' {
			end := skipString(d, i)
			key = d[i:end]
			i = skipSpace(d, end)
			i = skipSpace(d, i+1) // the colon
		}
		end := skipValue(d, i)
		if !fn(key, d[i:end]) {
			return
		}
		i = skipSpace(d, end)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
}

// countChildren returns the number of direct children of the validated container d.
func countChildren(d []byte) int {
	n := 0
	eachChild(d, func(_, _ []byte) bool { n++; return true })
	return n
}

// node is the preview index entry of one child of a top-level container,
// computed once at Put so that rendering never rescans the value.
type node struct {
	key    span   // quoted key of an object field
	val    span   // the child's JSON
	kind   Kind   // the child's kind (a JSON string is KindText)
	n      int    // items or keys of a container; decoded bytes of a string
	lines  int    // lines of a string
	fields []node // an object element of an array: its first two fields
	more   bool   // an object element with more than two fields
}

func (nd *node) rebase(off int) {
	nd.key.start, nd.key.end = max(nd.key.start-off, 0), max(nd.key.end-off, 0)
	nd.val.start -= off
	nd.val.end -= off
	for i := range nd.fields {
		nd.fields[i].rebase(off)
	}
}

// indexChildren describes the children of a top-level container that its
// preview shows: the head and tail items of an array, the fields of an
// object with at most objectFieldsMax keys, or the first keys of a larger one.
func indexChildren(b []byte, k Kind, sh *shape) []node {
	var picked []child
	switch {
	case k == KindArray && sh.count <= arrayHeadItems+arrayTailItems:
		picked = sh.head
	case k == KindArray:
		picked = append(sh.head[:arrayHeadItems:arrayHeadItems], sh.lastChildren(arrayTailItems)...)
	case sh.count <= objectFieldsMax:
		picked = sh.head
	default:
		nodes := make([]node, min(objectKeysListed, len(sh.head)))
		for i := range nodes {
			nodes[i].key = sh.head[i].key
		}
		return nodes
	}
	nodes := make([]node, len(picked))
	for i, c := range picked {
		nodes[i] = describe(b, c.key, c.val, k == KindArray)
	}
	return nodes
}

// describe indexes one child; an array element that is an object also gets
// its first two fields described.
func describe(b []byte, key, val span, element bool) node {
	raw := b[val.start:val.end]
	nd := node{key: key, val: val, kind: kindOf(raw[0])}
	switch nd.kind {
	case KindText:
		nd.n, nd.lines = stringStats(raw)
	case KindArray:
		nd.n = countChildren(raw)
	case KindObject:
		if !element {
			nd.n = countChildren(raw)
			break
		}
		eachChild(raw, func(k, v []byte) bool {
			if len(nd.fields) == 2 {
				nd.more = true
				return false
			}
			ks := val.start + offsetIn(raw, k)
			vs := val.start + offsetIn(raw, v)
			nd.fields = append(nd.fields, describe(b, span{ks, ks + len(k)}, span{vs, vs + len(v)}, false))
			return true
		})
	}
	return nd
}

// offsetIn returns the offset of sub within outer; sub must be a subslice.
func offsetIn(outer, sub []byte) int {
	return cap(outer) - cap(sub)
}

// kindOf returns the kind of the JSON value starting with c.
func kindOf(c byte) Kind {
	switch c {
	case '"':
		return KindText
	case '[':
		return KindArray
	case '{':
		return KindObject
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	}
	return KindNumber
}
