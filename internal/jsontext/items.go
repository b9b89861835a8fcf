package jsontext

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
	prev []keyAt        // the keys of the previous object item, in order
	cur  []keyAt        // the keys of the object item being scanned
	key  int            // index in it.Keys of the field being scanned, or -1
}

// keyAt is one key of an object item and its index in Items.Keys (-1 when
// not tracked).
type keyAt struct {
	span Span
	id   int
}

// item records the start of an item whose first byte is c.
func (s *itemsScan) item(c byte) {
	k := kindBits[c]
	s.it.Kinds |= k
	if k == KindObject {
		s.it.Objects++
		if len(s.cur) > 0 {
			s.prev, s.cur = s.cur, s.prev[:0]
		}
	}
}

// field records the key k of a field of the object item being scanned.
// Items usually repeat the keys of the item before them in order, so the
// key is first compared with the one at the same place in that item.
func (s *itemsScan) field(d []byte, k Span) {
	if n := len(s.cur); n < len(s.prev) {
		if p := s.prev[n]; string(d[p.span.Start:p.span.End]) == string(d[k.Start:k.End]) {
			s.cur = append(s.cur, keyAt{k, p.id})
			s.key = p.id
			return
		}
	}
	id, ok := s.ids[string(d[k.Start:k.End])]
	if !ok {
		id = -1
		if len(s.it.Keys) < s.max {
			if s.ids == nil {
				s.ids = make(map[string]int)
			}
			id = len(s.it.Keys)
			s.it.Keys = append(s.it.Keys, KeyInfo{Key: k})
			s.ids[string(d[k.Start:k.End])] = id
		}
	}
	s.cur = append(s.cur, keyAt{k, id})
	s.key = id
}

// value records the first byte c of the value of the field being scanned.
func (s *itemsScan) value(c byte) {
	if s.key < 0 {
		s.it.Untracked++
		return
	}
	ki := &s.it.Keys[s.key]
	ki.Kinds |= kindBits[c]
	ki.Count++
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
