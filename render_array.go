package values

import (
	"strconv"
	"strings"

	"github.com/agentvalues/values/internal/jsontext"
)

// renderArray appends "array(len=N, bytes=…, items=…, …)" for c, or
// "json-stream(len=N, …)" for a text holding a stream of values, in at most
// budget bytes: its length and size, what its items hold (the keys of its
// object items with the kinds of their values, over every item), and its
// head and tail items; or, for a one-item array whose item is dominant, a
// preview of that item.
func renderArray(dst []byte, c *container, budget int) []byte {
	start := len(dst)
	if c.stream {
		dst = append(dst, "json-stream(len="...)
	} else {
		dst = append(dst, "array(len="...)
	}
	dst = strconv.AppendInt(dst, int64(c.n), 10)
	dst = append(dst, ", bytes="...)
	dst = appendSize(dst, len(c.raw))
	left := func() int { return budget - (len(dst) - start) - len(")") }
	if c.dom != nil {
		dst = append(dst, ", [0]="...)
		dst = appendPart(dst, c.raw, c.dom, left())
		return append(dst, ')')
	}
	wide := wideItems(c)
	if c.items != nil && c.items.Kinds != 0 && c.n > 1 && (c.n > len(c.nodes) || c.items.Objects > 0) {
		dst = append(dst, ", items="...)
		need := elementsNeed(c)
		if wide {
			need = 2 * wideItemNeed
		}
		dst = appendItems(dst, c.raw, c.items, max(left()*2/5, left()-need))
	}
	if len(c.nodes) == 0 {
		return append(dst, ')')
	}
	if wide {
		// The first and the last item, each as whole as half the rest
		// lets it be.
		per := (left() - len(", [0]=, [-1]=")) / 2
		dst = append(dst, ", [0]="...)
		dst = appendWideItem(dst, c.raw, &c.nodes[0], per)
		dst = append(dst, ", [-1]="...)
		dst = appendWideItem(dst, c.raw, &c.nodes[len(c.nodes)-1], per)
		return append(dst, ')')
	}
	long := c.n > len(c.nodes)
	framing := len(", [") + len("]")
	if long {
		framing = len(", [:3]=[], [-2:]=[]")
	}
	per := (left()-framing)/len(c.nodes) - len(", ")
	if per < minElement {
		dst = append(dst, ", "+jsontext.Ellipsis...)
		return append(dst, ')')
	}
	if !long {
		dst = append(dst, ", ["...)
		dst = appendElements(dst, c.raw, c.nodes, per)
		return append(dst, "])"...)
	}
	dst = append(dst, ", [:"...)
	dst = strconv.AppendInt(dst, arrayHeadItems, 10)
	dst = append(dst, "]=["...)
	dst = appendElements(dst, c.raw, c.nodes[:arrayHeadItems], per)
	dst = append(dst, "], [-"...)
	dst = strconv.AppendInt(dst, arrayTailItems, 10)
	dst = append(dst, ":]=["...)
	dst = appendElements(dst, c.raw, c.nodes[arrayHeadItems:], per)
	return append(dst, "])"...)
}

// wideItem is the number of fields past which an object item is wide: an
// array whose first or last item is (go list -json, apt records, GitHub
// issues) is shown by those two items only, each with as many of its
// fields as fit, its identifying ones first, rather than by five items
// of eight fields each, clipped until none can be told from another.
const wideItem = itemFields

// wideItemNeed is the room a wide item would like.
const wideItemNeed = 480

// wideItems reports whether the array c is shown by its first and last
// items only (see wideItem).
func wideItems(c *container) bool {
	if c.n < 2 || len(c.nodes) < 2 {
		return false
	}
	first, last := &c.nodes[0], &c.nodes[len(c.nodes)-1]
	return first.kind == KindObject && first.n > wideItem || last.kind == KindObject && last.n > wideItem
}

// elementsNeed is the room the head and tail items of c would like.
func elementsNeed(c *container) int {
	return len(c.nodes) * (elementBudget + len(", "))
}

// appendElements appends the items nodes of the array raw, each in at most
// per bytes, separated by ", ".
func appendElements(dst, raw []byte, nodes []node, per int) []byte {
	for i := range nodes {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendElement(dst, raw, &nodes[i], per)
	}
	return dst
}

// appendItems appends what the items of an array hold, in at most budget
// bytes: "{id: number 1..90, name: text, state: "open"|"closed", tags?:
// array, … 3 more keys}" for object items (a key missing from some items
// marked "?", what its values take as appendSummary writes it), what the
// other items take ("number 1..5|null"), both joined by "|" when the items
// are mixed. The values are shown in as much detail as lets every key be
// named, and in the least detail when none does.
func appendItems(dst, raw []byte, it *jsontext.Items, budget int) []byte {
	start := len(dst)
	for detail := summaryFull; ; detail++ {
		var all bool
		dst, all = appendItemsAt(dst[:start], raw, it, budget, detail)
		if all || detail == summaryKinds {
			return dst
		}
	}
}

// appendItemsAt is appendItems at one detail; it reports whether every key
// was named.
func appendItemsAt(dst, raw []byte, it *jsontext.Items, budget int, detail summaryDetail) ([]byte, bool) {
	start := len(dst)
	other := it.Kinds &^ jsontext.KindObject
	var tailBuf [256]byte
	tail := tailBuf[:0]
	if other != 0 {
		if it.Objects > 0 {
			tail = append(tail, '|')
		}
		tail = appendSummary(tail, raw, other, &it.Scalars, false, detail)
	}
	if it.Objects == 0 {
		if len(tail) > budget {
			return jsontext.AppendClipped(dst, tail, budget), false
		}
		return append(dst, tail...), true
	}
	if len(it.Keys) == 0 && it.Untracked == 0 { // only empty objects
		dst = append(dst, "object"...)
		return jsontext.AppendClipped(dst, tail, budget-len("object")), len("object")+len(tail) <= budget
	}
	dst = append(dst, '{')
	room := budget - len("{}") - len(tail)
	all := true
	for i, k := range it.Keys {
		// The key is written in place, and taken back if it does not fit.
		mark := len(dst)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendKey(dst, k.Key.Of(raw))
		if k.Count < it.Objects {
			dst = append(dst, '?')
		}
		dst = append(dst, ": "...)
		dst = appendSummary(dst, raw, k.Kinds, &k.Values, false, detail)
		more := len(it.Keys) - i
		if len(dst)-start > room-len(", … 9999 more keys") && (more > 1 || it.Untracked > 0) || len(dst)-start > room {
			dst = appendMoreKeys(dst[:mark], more, it.Untracked > 0, i > 0)
			all = false
			break
		}
		if i == len(it.Keys)-1 && it.Untracked > 0 {
			dst = appendMoreKeys(dst, 0, true, true)
		}
	}
	dst = append(dst, '}')
	return append(dst, tail...), all
}

// appendMoreKeys appends "… N more keys", or "… more keys" when their
// number is not known (untracked keys), after a comma unless first.
func appendMoreKeys(dst []byte, n int, untracked, comma bool) []byte {
	if comma {
		dst = append(dst, ", "...)
	}
	dst = append(dst, jsontext.Ellipsis...)
	switch {
	case n > 0 && untracked:
		dst = append(dst, " "...)
		dst = strconv.AppendInt(dst, int64(n), 10)
		return append(dst, "+ more keys"...)
	case n == 1:
		return append(dst, " 1 more key"...)
	case n > 0:
		dst = append(dst, " "...)
		dst = strconv.AppendInt(dst, int64(n), 10)
		return append(dst, " more keys"...)
	}
	return append(dst, " more keys"...)
}

// appendKinds appends the kinds of ks joined by "|": text, number, bool,
// null, array, object.
func appendKinds(dst []byte, ks jsontext.Kinds) []byte {
	first := true
	for _, k := range []struct {
		bit  jsontext.Kinds
		name string
	}{
		{jsontext.KindString, "text"}, {jsontext.KindNumber, "number"}, {jsontext.KindBool, "bool"},
		{jsontext.KindNull, "null"}, {jsontext.KindArray, "array"}, {jsontext.KindObject, "object"},
	} {
		if ks&k.bit == 0 {
			continue
		}
		if !first {
			dst = append(dst, '|')
		}
		dst = append(dst, k.name...)
		first = false
	}
	return dst
}

// appendElement appends the summary of one array item in at most budget
// bytes: an object as its fields, each value within a budget of its own so
// that a long one does not hide the next; an array as its length and size;
// a string or other scalar literally. Elisions are marked with "…".
func appendElement(dst, raw []byte, nd *node, budget int) []byte {
	if budget < len(jsontext.Ellipsis) {
		return dst
	}
	switch nd.kind {
	case KindObject:
		return appendObjectItem(dst, raw, nd, budget)
	case KindArray, KindText:
		return clipFrom(appendInner(dst, raw, nd, budget), len(dst), budget)
	}
	return appendLiteral(dst, nd.val.Of(raw), budget)
}

// appendObjectItem appends "{id: 1, name: "a", …}" for the object item nd
// in at most budget bytes: its first itemFields fields.
func appendObjectItem(dst, raw []byte, nd *node, budget int) []byte {
	start := len(dst)
	if len(nd.fields) == 0 {
		return append(dst, "{}"...)
	}
	fields, more := nd.fields, nd.more
	if len(fields) > itemFields {
		fields, more = fields[:itemFields], true
	}
	dst = append(dst, '{')
	// Each field gets an equal share, at least enough for a short value.
	share := max((budget-len("{, …}"))/len(fields), 16)
	for i := range fields {
		f := &fields[i]
		// The field is written in place, and taken back if it does not fit.
		mark := len(dst)
		if i > 0 {
			dst = append(dst, ", "...)
		}
		k := len(dst)
		dst = clipFrom(appendKey(dst, f.key.Of(raw)), k, min(keyBudget, share/2))
		dst = append(dst, ": "...)
		dst = appendInner(dst, raw, f, max(share-(len(dst)-mark), minElement))
		dst = clipFrom(dst, mark, share)
		rest := i < len(fields)-1 || more
		if len(dst)-start+len("}") > budget || rest && len(dst)-start+len(", …}") > budget {
			return append(dst[:mark], ", …}"[boolInt(i == 0)*2:]...)
		}
	}
	if more {
		dst = append(dst, ", …"...)
	}
	return append(dst, '}')
}

// identifying lists, first to last, the keys (compared without case) that
// name an item: a wide item shows them first, up to maxIdentifying of them.
var identifying = [...]string{"id", "number", "name", "title", "key", "importpath", "package", "path", "file", "filename",
	"full_name", "login", "slug", "uuid", "uid", "email", "version", "url", "html_url"}

// maxIdentifying is the most fields a wide item shows first as
// identifying it.
const maxIdentifying = 4

// Budgets of a field of a wide item: an identifying one, and any other.
const (
	identifyingBudget = literalBudget
	wideFieldBudget   = 48
)

// appendWideItem appends "{id: 7, name: "a", …, k: v, … N more}" for the
// object item nd, or any other item as appendElement does, in at most
// budget bytes: its identifying fields first, then the others in their
// order, each whole or clipped to its budget, as many as fit.
func appendWideItem(dst, raw []byte, nd *node, budget int) []byte {
	if nd.kind != KindObject || len(nd.fields) == 0 {
		return appendElement(dst, raw, nd, budget)
	}
	start := len(dst)
	order := make([]int, 0, len(nd.fields))
	taken := make([]bool, len(nd.fields))
	for _, id := range identifying {
		for i := range nd.fields {
			if !taken[i] && len(order) < maxIdentifying && keyIs(nd.fields[i].key.Of(raw), id) {
				order, taken[i] = append(order, i), true
			}
		}
	}
	ids := len(order)
	for i := range nd.fields {
		if !taken[i] {
			order = append(order, i)
		}
	}
	dst = append(dst, '{')
	shown := 0
	for k, i := range order {
		f := &nd.fields[i]
		mark := len(dst)
		if k > 0 {
			dst = append(dst, ", "...)
		}
		fb := wideFieldBudget
		if k < ids {
			fb = identifyingBudget
		}
		dst = clipFrom(appendKey(dst, f.key.Of(raw)), len(dst), keyBudget/2)
		dst = append(dst, ": "...)
		if b, ok := appendSmall(dst, f.val.Of(raw)); ok && len(b)-len(dst) <= fb {
			dst = b
		} else {
			dst = appendInner(dst[:len(dst)], raw, f, fb)
		}
		if len(dst)-start+len(", … 99 more}") > budget {
			dst = dst[:mark]
			break
		}
		shown++
	}
	if rest := nd.n - shown; rest > 0 {
		if shown > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, jsontext.Ellipsis...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(rest), 10)
		dst = append(dst, " more"...)
	}
	return append(dst, '}')
}

// keyIs reports whether the quoted key raw, without escapes, is name in
// any case.
func keyIs(raw []byte, name string) bool {
	return len(raw) == len(name)+2 && strings.EqualFold(string(raw[1:len(raw)-1]), name)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendInner appends a value inside an array item: an object as its key
// count, an array as its length, a scalar literally within budget.
func appendInner(dst, raw []byte, f *node, budget int) []byte {
	switch f.kind {
	case KindObject:
		dst = append(dst, "json(keys="...)
		dst = strconv.AppendInt(dst, int64(f.n), 10)
		return append(dst, ')')
	case KindArray:
		return appendArrayLen(dst, f.n)
	case KindText:
		if f.b64.typ != "" {
			return clipFrom(appendBase64(dst, f.b64), len(dst), max(budget, minElement))
		}
	}
	return appendLiteral(dst, f.val.Of(raw), budget)
}

func appendArrayLen(dst []byte, n int) []byte {
	dst = append(dst, "array(len="...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, ')')
}
