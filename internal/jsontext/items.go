package jsontext

import (
	"bytes"
	"encoding/binary"
)

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
// every item: the kinds of the items, the [Summary] of those that are
// scalars, and the keys of those that are objects, in the order they were
// first seen, each with the kinds of its values, the Summary of those that
// are scalars, and the number of items that have it.
type Items struct {
	Kinds   Kinds     // the kinds of the items
	Objects int       // the items that are objects
	Keys    []KeyInfo // at most the number Scan was asked for
	// Untracked counts the fields of object items whose key is not among
	// Keys: keys first seen once Keys was full.
	Untracked int
	Scalars   Summary // of the items that are strings, numbers, booleans or null
}

// KeyInfo is one key of the object items of an array.
type KeyInfo struct {
	Key    Span    // its first occurrence, with its quotes
	Kinds  Kinds   // the kinds of its values
	Count  int     // the fields with this key (an item with the key twice counts twice)
	Values Summary // of its values that are scalars
}

// itemsScan is the state of recording Items during a scan.
type itemsScan struct {
	it   Items
	max  int            // Keys tracked at most
	ids  map[string]int // key bytes → index in it.Keys
	tmpl []keyAt        // the keys of the first object item, in order
	pos  int            // the number of fields seen of the object item being scanned
	// cur is the Summary of the item, or of the field of an object item,
	// whose value comes next, while it may be a scalar; nil for a field
	// whose key is not tracked.
	cur *Summary
	// The halves of a split scan each write their itemsScan at every field,
	// and both are allocated on one goroutine, often next to each other:
	// without a cache line between them (the last fields of one and the
	// first of the next), each half's writes stall the other's, and the
	// scan of an envelope on two cores took 2.3× as long in most runs.
	_ [64]byte
}

// keyAt is one key of the first object item: its index in Items.Keys (-1
// when not tracked), its first eight bytes (quotes included) and the mask
// of those it has, so that a field with the same key is known in one
// load, and the kinds and count of the fields found at its place that had
// it, added to Keys when the scan ends.
type keyAt struct {
	span  Span
	id    int
	word  uint64
	mask  uint64 // 0: the fast comparison is not used for this key
	kinds Kinds
	count int
}

// item records the start of an item whose first byte is c, and returns
// the Summary its value adds to when it is a scalar, else nil.
func (s *itemsScan) item(c byte) *Summary {
	k := kindBits[c]
	s.it.Kinds |= k
	switch k {
	case KindObject:
		s.it.Objects++
		s.pos = 0
		return nil
	case KindArray:
		return nil
	}
	return &s.it.Scalars
}

// sameKey is the scanner's fast path for the key of a field of an object
// item that starts at i in d: when its bytes are those of the first item's
// key at the same place (one load and a mask for the first eight, a byte
// comparison for the rest), it is that key, already validated, so it
// records the field without scanning the key again and returns the offset
// of its value. Otherwise it reports false, and the scanner scans the key
// and calls field. Items usually have the keys of the first one in the
// same order, so most fields take this path.
func (s *itemsScan) sameKey(d []byte, i int) (int, bool) {
	p := s.pos
	if p >= len(s.tmpl) {
		return 0, false
	}
	t := &s.tmpl[p]
	n := t.span.End - t.span.Start
	if t.mask == 0 || i+8 > len(d) || i+n > len(d) ||
		binary.LittleEndian.Uint64(d[i:i+8])&t.mask != t.word ||
		n > 8 && string(d[i+8:i+n]) != string(d[t.span.Start+8:t.span.End]) {
		return 0, false
	}
	j := i + n
	if j >= len(d) || d[j] != ':' {
		// White space before the colon: rare, so off the common path.
		if j = SkipSpace(d, j); j >= len(d) || d[j] != ':' {
			return 0, false
		}
	}
	if j++; j >= len(d) || d[j] <= ' ' {
		if j = SkipSpace(d, j); j >= len(d) {
			return 0, false
		}
	}
	s.pos = p + 1
	t.kinds |= kindBits[d[j]]
	t.count++
	s.cur = &s.it.Keys[t.id].Values
	return j, true
}

// fieldAt scans the key of a field of the object item being scanned, at i
// (after white space), and its colon, and records the field: by sameKey
// when it is the first item's key at its place, else by newField. It
// returns the offset of the field's value, white space passed, and the
// key's span when newField scanned it (zero after sameKey); cur is then
// the Summary the value adds to.
func (s *itemsScan) fieldAt(d []byte, i int) (int, Span, error) {
	i = SkipSpace(d, i)
	if j, ok := s.sameKey(d, i); ok {
		return j, Span{}, nil
	}
	return s.newField(d, i)
}

// newField is fieldAt of a key that sameKey did not find: it scans the key
// and its colon, records the field (but at the end of d), and returns the
// offset of its value, white space passed, and the key's span.
func (s *itemsScan) newField(d []byte, i int) (int, Span, error) {
	j, k, err := scanKey(d, i)
	if err != nil {
		return j, k, err
	}
	if j = SkipSpace(d, j); j < len(d) {
		s.field(d, k, d[j])
	}
	return j, k, nil
}

// field records the key k of a field of the object item being scanned,
// and c, the first byte of its value, when sameKey did not: the key is
// looked up, or added.
func (s *itemsScan) field(d []byte, k Span, c byte) {
	s.slowField(d, k, c)
}

// slowField is field for a key that is not the first item's at its place.
func (s *itemsScan) slowField(d []byte, k Span, c byte) {
	id := s.keyID(d, k)
	if s.it.Objects == 1 {
		t := keyAt{span: k, id: id}
		if n := k.End - k.Start; id >= 0 && k.Start+8 <= len(d) {
			t.mask = ^uint64(0)
			if n < 8 {
				t.mask = 1<<(8*n) - 1
			}
			t.word = binary.LittleEndian.Uint64(d[k.Start:]) & t.mask
		}
		if s.tmpl == nil {
			s.tmpl = make([]keyAt, 0, keysCompared)
		}
		s.tmpl = append(s.tmpl, t)
	}
	s.pos++
	if id < 0 {
		s.it.Untracked++
		s.cur = nil
		return
	}
	ki := &s.it.Keys[id]
	ki.Kinds |= kindBits[c]
	ki.Count++
	s.cur = &ki.Values
}

// items returns the Items recorded, the counts kept at the first item's
// places added in.
func (s *itemsScan) items() *Items {
	for i := range s.tmpl {
		if t := &s.tmpl[i]; t.id >= 0 && t.count > 0 {
			s.it.Keys[t.id].Kinds |= t.kinds
			s.it.Keys[t.id].Count += t.count
			t.kinds, t.count = 0, 0
		}
	}
	return &s.it
}

// keyID returns the index in Keys of the key k, adding it when there is
// room, and -1 when it is not tracked.
//
// The first few keys are found by comparing their bytes, the rest in a map:
// most items have a handful of keys, and the map and its strings would
// cost more than the comparisons.
func (s *itemsScan) keyID(d []byte, k Span) int {
	key := d[k.Start:k.End]
	if s.ids != nil {
		if id, ok := s.ids[string(key)]; ok {
			return id
		}
	} else {
		for id := range s.it.Keys {
			if bytes.Equal(s.it.Keys[id].Key.Of(d), key) {
				return id
			}
		}
	}
	if len(s.it.Keys) == s.max {
		return -1
	}
	if s.it.Keys == nil {
		s.it.Keys = make([]KeyInfo, 0, min(s.max, firstKeys))
	}
	id := len(s.it.Keys)
	s.it.Keys = append(s.it.Keys, KeyInfo{Key: k})
	switch {
	case s.ids != nil:
		s.ids[string(key)] = id
	case len(s.it.Keys) > keysCompared:
		s.ids = make(map[string]int, 2*len(s.it.Keys))
		for id, ki := range s.it.Keys {
			s.ids[string(ki.Key.Of(d))] = id
		}
	}
	return id
}

// keysCompared is the number of keys keyID finds by comparing bytes.
const keysCompared = 16

// firstKeys is the room Keys is made with: a KeyInfo, with its Summary,
// takes some 200 bytes, and the items of a small array have few keys.
const firstKeys = 4

// mergeItems returns the Items of an array whose items are those of a
// followed by those of b, both of document d, keeping at most max keys;
// or nil when b's cannot be told apart so: b tracked some fields as
// Untracked that may have had keys a tracks (b, scanned alone, had
// filled its Keys before it met them). The second half of a split scan
// tracks more keys (secondHalfKeys) so that this is rare.
func mergeItems(d []byte, a, b *Items, max int) *Items {
	out := &Items{Kinds: a.Kinds | b.Kinds, Objects: a.Objects + b.Objects, Untracked: a.Untracked + b.Untracked, Scalars: a.Scalars}
	out.Scalars.Merge(d, &b.Scalars)
	out.Keys = append(out.Keys, a.Keys...)
	ids := make(map[string]int, len(a.Keys))
	for i, k := range a.Keys {
		ids[string(k.Key.Of(d))] = i
	}
	found := 0 // of a's keys, among b's
	for _, k := range b.Keys {
		if i, ok := ids[string(k.Key.Of(d))]; ok {
			if i < len(a.Keys) {
				found++
			}
			out.Keys[i].Kinds |= k.Kinds
			out.Keys[i].Count += k.Count
			out.Keys[i].Values.Merge(d, &k.Values)
			continue
		}
		if len(out.Keys) == max {
			out.Untracked += k.Count
			continue
		}
		ids[string(k.Key.Of(d))] = len(out.Keys)
		out.Keys = append(out.Keys, k)
	}
	if b.Untracked > 0 && found < len(a.Keys) {
		return nil
	}
	return out
}

// secondHalfKeys is how many keys the second half of a split scan tracks
// for max kept: more than the first, so that the keys the first tracks are
// among them (see mergeItems).
func secondHalfKeys(max int) int { return 2*max + 16 }
