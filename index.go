package values

import "github.com/agentvalues/values/internal/jsontext"

// This file holds the preview index: what Put records of a stored array or
// object so that rendering its preview never rescans it.

// Children of a top-level container that Put has the scan record. Arrays
// preview 3 head and 2 tail items; objects describe up to 24 fields, or
// list 8 keys.
const (
	scanHead = objectFieldsMax + 1
	scanTail = arrayTailItems
)

// node is the preview index entry of one child of a top-level container,
// computed once at Put so that rendering never rescans the value.
type node struct {
	key    jsontext.Span // quoted key of an object field
	val    jsontext.Span // the jsontext.Child's JSON
	kind   Kind          // the jsontext.Child's kind (a JSON string is KindText)
	n      int           // items or keys of a container; decoded bytes of a string
	lines  int           // lines of a string
	fields []node        // an object element of an array: its first two fields
	more   bool          // an object element with more than two fields
}

func (nd *node) rebase(off int) {
	nd.key.Start, nd.key.End = max(nd.key.Start-off, 0), max(nd.key.End-off, 0)
	nd.val.Start -= off
	nd.val.End -= off
	for i := range nd.fields {
		nd.fields[i].rebase(off)
	}
}

// indexChildren describes the children of a top-level container that its
// preview shows: the head and tail items of an array, the fields of an
// object with at most objectFieldsMax keys, or the first keys of a larger one.
func indexChildren(b []byte, k Kind, sh *jsontext.Shape) []node {
	var picked []jsontext.Child
	switch {
	case k == KindArray && sh.Count <= arrayHeadItems+arrayTailItems:
		picked = sh.Head
	case k == KindArray:
		picked = append(sh.Head[:arrayHeadItems:arrayHeadItems], sh.Last(arrayTailItems)...)
	case sh.Count <= objectFieldsMax:
		picked = sh.Head
	default:
		nodes := make([]node, min(objectKeysListed, len(sh.Head)))
		for i := range nodes {
			nodes[i].key = sh.Head[i].Key
		}
		return nodes
	}
	nodes := make([]node, len(picked))
	for i, c := range picked {
		nodes[i] = describe(b, c.Key, c.Val, k == KindArray)
	}
	return nodes
}

// describe indexes one child; an array element that is an object also gets
// its first two fields described.
func describe(b []byte, key, val jsontext.Span, element bool) node {
	raw := b[val.Start:val.End]
	nd := node{key: key, val: val, kind: kindOf(raw[0])}
	switch nd.kind {
	case KindText:
		nd.n, nd.lines = jsontext.StringStats(raw)
	case KindArray:
		nd.n = jsontext.CountChildren(raw)
	case KindObject:
		if !element {
			nd.n = jsontext.CountChildren(raw)
			break
		}
		jsontext.EachChild(raw, func(k, v []byte) bool {
			if len(nd.fields) == 2 {
				nd.more = true
				return false
			}
			ks := val.Start + offsetIn(raw, k)
			vs := val.Start + offsetIn(raw, v)
			nd.fields = append(nd.fields, describe(b, jsontext.Span{Start: ks, End: ks + len(k)}, jsontext.Span{Start: vs, End: vs + len(v)}, false))
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
