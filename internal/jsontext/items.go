package jsontext

import "encoding/binary"

// Kinds is a set of JSON kinds, one bit each.
type Kinds uint8

// The kinds of JSON values, as bits of a Kinds.
const (
	KindString Kinds = 1 << iota
	KindNumber
	KindBool
	KindNull
	KindArray
	KindObject
)

// kindBits maps the first byte of a valid JSON value to its kind.
var kindBits = func() (t [256]Kinds) {
	for c := '0'; c <= '9'; c++ {
		t[c] = KindNumber
	}
	t['-'] = KindNumber
	t['"'] = KindString
	t['t'], t['f'] = KindBool, KindBool
	t['n'] = KindNull
	t['['] = KindArray
	t['{'] = KindObject
	return t
}()

// KindOf returns the kind of the valid JSON value that starts with c.
func KindOf(c byte) Kinds { return kindBits[c] }

// Items is what [Scan] records of the items of a top-level array, over
// every item: the kinds of the items, and the keys of those that are
// objects, in the order they were first seen, each with the kinds of its
// values and the number of items that have it.
type Items struct {
	Kinds   Kinds     // the kinds of the items
	Objects int       // the items that are objects
	Keys    []KeyInfo // at most the number Scan was asked for
	// Untracked counts the fields of object items whose key is not among
	// Keys: keys first seen once Keys was full.
	Untracked int
}

// KeyInfo is one key of the object items of an array.
type KeyInfo struct {
	Key   Span  // its first occurrence, with its quotes
	Kinds Kinds // the kinds of its values
	Count int   // the fields with this key (an item with the key twice counts twice)
}

// itemsScan is the state of recording Items during a scan.
type itemsScan struct {
	it   Items
	max  int            // Keys tracked at most
	ids  map[string]int // key bytes → index in it.Keys
	tmpl []keyAt        // the keys of the first object item, in order
	pos  int            // the number of fields seen of the object item being scanned
}

// keyAt is one key of an object item and its index in Items.Keys (-1 when
// not tracked). word holds its first eight bytes (quotes included), for a
// key of at most eight: the common short key is compared in one load.
type keyAt struct {
	span Span
	id   int
	word uint64
}

// word8 returns the eight bytes of d from i as a little-endian word, the
// bytes past n (and past the end of d) zero.
func word8(d []byte, i, n int) uint64 {
	if i+8 <= len(d) {
		return binary.LittleEndian.Uint64(d[i:]) & (1<<(8*n) - 1)
	}
	var w uint64
	for k := 0; k < n; k++ {
		w |= uint64(d[i+k]) << (8 * k)
	}
	return w
}

// item records the start of an item whose first byte is c.
func (s *itemsScan) item(c byte) {
	k := kindBits[c]
	s.it.Kinds |= k
	if k == KindObject {
		s.it.Objects++
		s.pos = 0
	}
}

// field records the key k of a field of the object item being scanned,
// and c, the first byte of its value. Items usually have the keys of the
// first one in the same order, so the key is first compared with the one
// at the same place in that item: a byte comparison, no map lookup.
func (s *itemsScan) field(d []byte, k Span, c byte) {
	if s.pos < len(s.tmpl) {
		t := &s.tmpl[s.pos]
		n := k.End - k.Start
		if n == t.span.End-t.span.Start && t.id >= 0 && (n <= 8 && word8(d, k.Start, n) == t.word ||
			n > 8 && string(d[t.span.Start:t.span.End]) == string(d[k.Start:k.End])) {
			s.pos++
			ki := &s.it.Keys[t.id]
			ki.Kinds |= kindBits[c]
			ki.Count++
			return
		}
	}
	s.slowField(d, k, c)
}

// slowField is field for a key that is not the first item's at its place.
func (s *itemsScan) slowField(d []byte, k Span, c byte) {
	id := s.keyID(d, k)
	if s.it.Objects == 1 {
		w := uint64(0)
		if n := k.End - k.Start; n <= 8 {
			w = word8(d, k.Start, n)
		}
		s.tmpl = append(s.tmpl, keyAt{k, id, w})
	}
	s.pos++
	if id < 0 {
		s.it.Untracked++
		return
	}
	ki := &s.it.Keys[id]
	ki.Kinds |= kindBits[c]
	ki.Count++
}

// keyID returns the index in Keys of the key k, adding it when there is
// room, and -1 when it is not tracked.
func (s *itemsScan) keyID(d []byte, k Span) int {
	if id, ok := s.ids[string(d[k.Start:k.End])]; ok {
		return id
	}
	if len(s.it.Keys) == s.max {
		return -1
	}
	if s.ids == nil {
		s.ids = make(map[string]int)
	}
	id := len(s.it.Keys)
	s.it.Keys = append(s.it.Keys, KeyInfo{Key: k})
	s.ids[string(d[k.Start:k.End])] = id
	return id
}

// mergeItems returns the Items of an array whose items are those of a
// followed by those of b, both of document d, keeping at most max keys.
func mergeItems(d []byte, a, b *Items, max int) *Items {
	out := &Items{Kinds: a.Kinds | b.Kinds, Objects: a.Objects + b.Objects, Untracked: a.Untracked + b.Untracked}
	out.Keys = append(out.Keys, a.Keys...)
	ids := make(map[string]int, len(a.Keys))
	for i, k := range a.Keys {
		ids[string(k.Key.Of(d))] = i
	}
	for _, k := range b.Keys {
		if i, ok := ids[string(k.Key.Of(d))]; ok {
			out.Keys[i].Kinds |= k.Kinds
			out.Keys[i].Count += k.Count
			continue
		}
		if len(out.Keys) == max {
			out.Untracked += k.Count
			continue
		}
		ids[string(k.Key.Of(d))] = len(out.Keys)
		out.Keys = append(out.Keys, k)
	}
	return out
}
