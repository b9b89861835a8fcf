package browse

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
)

// A table (an array of objects) is paged by rows on the server: each page
// walks the array from the index mark before its first row
// ([values.SessionValues.Items]), so a page of a 100 MB array costs about
// the page. Sorting is done on the server over every row, when the array
// has at most MaxSortRows: one walk over the array takes each row's value
// of the column (a string's first SortKeyBytes bytes), and the order of
// the rows is kept (the last few sorts, by the store, handle, column and
// direction) so that paging a sorted table walks the array once, not once
// a page. A larger array is not sorted on the server; the page then sorts
// the rows of the page it shows, and says so.

const (
	// MaxRows bounds the rows of one page of a table.
	MaxRows = 500
	// MaxRowBytes bounds a row sent whole; a larger row is sent as its
	// size and reference, to open on its own.
	MaxRowBytes = 64 << 10
	// MaxSortRows bounds the rows of a table sorted on the server: one
	// walk over all of them, and some 100 bytes each while sorting.
	MaxSortRows = 250_000
	// SortKeyBytes is how much of a string a sort compares: rows whose
	// strings agree that far are kept in their order.
	SortKeyBytes = 64
	// maxSorts bounds the sorts run at once; more wait their turn.
	maxSorts = 2
	// sortCacheSize is the number of sorted orders kept.
	sortCacheSize = 4
)

type rowJSON struct {
	I    int             `json:"i"`
	JSON json.RawMessage `json:"json,omitempty"`
	Size int             `json:"size"`
}

// rows answers n rows of the table ref from row from, in the order of the
// column sort (none: the array's order).
func (h *handler) rows(w http.ResponseWriter, ctx context.Context, vals *values.SessionValues, ref string, from, n int, sort string, desc bool) {
	v, ok := vals.Get(baseHandle(ref))
	if !ok || strings.Contains(strings.TrimPrefix(ref, "$"), ".") || v.Kind() != values.KindArray {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a stored array", ref))
		return
	}
	total := v.Len()
	n = max(1, min(n, MaxRows))
	from = max(0, min(from, total))
	out := map[string]any{"total": total, "from": from, "sorted": false}
	list := []rowJSON{}
	add := func(i int, item []byte) {
		r := rowJSON{I: i, Size: len(item)}
		if len(item) <= MaxRowBytes {
			r.JSON = json.RawMessage(item)
		}
		list = append(list, r)
	}
	if sort != "" && total > MaxSortRows {
		out["sortNote"] = fmt.Sprintf("this array has %d rows, more than the %d the server sorts: only the rows shown are sorted", total, MaxSortRows)
		sort = ""
	}
	if sort == "" {
		err := vals.Items(ref, from, func(i int, _, item []byte) bool {
			add(i, item)
			return len(list) < n
		})
		if err != nil {
			apiError(w, statusOf(err), err.Error())
			return
		}
	} else {
		perm, err := h.sorts.order(ctx, vals, ref, sort, desc)
		if err != nil {
			apiError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		for _, i := range perm[from:min(len(perm), from+n)] {
			vals.Items(ref, int(i), func(i int, _, item []byte) bool {
				add(i, item)
				return false
			})
		}
		out["sorted"] = true
	}
	out["rows"] = list
	writeJSON(w, http.StatusOK, out)
}

// sortCache keeps the last sorted orders, and bounds the sorts at once.
type sortCache struct {
	turn chan struct{}
	mu   sync.Mutex
	kept []sorted // most recent last
}

type sortID struct {
	vals     *values.SessionValues
	ref, col string
	desc     bool
}

type sorted struct {
	id   sortID
	perm []int32
}

func newSortCache() *sortCache { return &sortCache{turn: make(chan struct{}, maxSorts)} }

// order returns the order of the rows of ref by the column col.
func (c *sortCache) order(ctx context.Context, vals *values.SessionValues, ref, col string, desc bool) ([]int32, error) {
	id := sortID{vals, ref, col, desc}
	if p := c.lookup(id); p != nil {
		return p, nil
	}
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("browse: waiting for other sorts: %w", ctx.Err())
	}
	defer func() { <-c.turn }()
	if p := c.lookup(id); p != nil { // sorted meanwhile
		return p, nil
	}
	v, _ := vals.Get(baseHandle(ref))
	keys := make([]sortKey, 0, min(v.Len(), MaxSortRows+1))
	err := vals.Items(ref, 0, func(i int, _, item []byte) bool {
		keys = append(keys, keyOf(int32(i), item, col))
		return len(keys) <= MaxSortRows
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(keys, func(a, b sortKey) int {
		if a.rank >= rankNull || b.rank >= rankNull { // missing and null last either way
			return cmp.Compare(a.rank, b.rank)
		}
		c := compareKeys(a, b)
		if desc {
			c = -c
		}
		return c
	})
	perm := make([]int32, len(keys))
	for i, k := range keys {
		perm[i] = k.i
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.kept) == sortCacheSize {
		c.kept = slices.Delete(c.kept, 0, 1)
	}
	c.kept = append(c.kept, sorted{id, perm})
	return perm, nil
}

func (c *sortCache) lookup(id sortID) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.kept {
		if s.id == id {
			c.kept = append(slices.Delete(c.kept, i, i+1), s)
			return s.perm
		}
	}
	return nil
}

// The ranks of sort keys: numbers, then strings, booleans, containers,
// null, and rows without the column (or not objects).
const (
	rankNumber uint8 = iota
	rankString
	rankBool
	rankContainer
	rankNull
	rankMissing
)

type sortKey struct {
	i    int32
	rank uint8
	num  float64
	str  string
}

// keyOf is the sort key of the row item, numbered i, by the column col.
func keyOf(i int32, item []byte, col string) sortKey {
	k := sortKey{i: i, rank: rankMissing}
	if item[0] != '{' {
		return k
	}
	v, ok := jsontext.Member(item, col)
	if !ok {
		return k
	}
	switch v[0] {
	case '"':
		k.rank = rankString
		k.str = stringPrefix(v)
	case 't', 'f':
		k.rank = rankBool
		if v[0] == 't' {
			k.num = 1
		}
	case 'n':
		k.rank = rankNull
	case '{', '[':
		k.rank, k.str = rankContainer, string(v[:min(len(v), SortKeyBytes)])
	default:
		k.rank = rankNumber
		k.num, _ = strconv.ParseFloat(string(v), 64)
	}
	return k
}

// stringPrefix returns the first SortKeyBytes bytes, about, of the text
// of the valid JSON string v, decoding no more of it than that.
func stringPrefix(v []byte) string {
	i := 1
	for n := 0; i < len(v)-1 && n < SortKeyBytes; n++ {
		switch {
		case v[i] != '\\':
			i++
		case v[i+1] == 'u':
			i += 6
		default:
			i += 2
		}
	}
	if i >= len(v)-1 {
		return string(jsontext.AppendUnquoted(nil, v))
	}
	quoted := make([]byte, 0, i+1)
	quoted = append(append(quoted, v[:i]...), '"')
	return string(jsontext.AppendUnquoted(nil, quoted))
}

func compareKeys(a, b sortKey) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := cmp.Compare(a.num, b.num); c != 0 {
		return c
	}
	return strings.Compare(a.str, b.str)
}
