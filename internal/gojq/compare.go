package gojq

import (
	"cmp"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strings"
)

// Compare l and r, and returns jq-flavored comparison value.
// The result will be 0 if l == r, -1 if l < r, and +1 if l > r.
// This comparison is used by built-in operators and functions.
func Compare(l, r any) int {
	return compare(nil, 0, l, r)
}

// agentvalues: compare is Compare metered by m (nil: not metered): it
// ticks per value compared, so comparing values that share their parts
// stops at the run's deadline, and with a meter compares objects with
// scratch key buffers per depth d instead of allocating per object.
func compare(m *meter, d int, l, r any) int {
	m.tick(1)
	if m != nil { // a literal number is parsed at each comparison
		if n, ok := l.(json.Number); ok {
			chargeNumber(m, n)
		}
		if n, ok := r.(json.Number); ok {
			chargeNumber(m, n)
		}
	}
	return binopTypeSwitch(l, r,
		cmp.Compare,
		func(l, r float64) int {
			switch {
			case lt(l, r):
				return -1
			case l == r:
				return 0
			default:
				return 1
			}
		},
		(*big.Int).Cmp,
		func(l, r string) int {
			m.tick(min(len(l), len(r)) >> 6)
			return strings.Compare(l, r)
		},
		func(l, r []any) int {
			for i := range min(len(l), len(r)) {
				if cmp := compare(m, d+1, l[i], r[i]); cmp != 0 {
					return cmp
				}
			}
			return cmp.Compare(len(l), len(r))
		},
		func(l, r map[string]any) int {
			if m == nil {
				lk, rk := funcKeys(l), funcKeys(r)
				if cmp := Compare(lk, rk); cmp != 0 {
					return cmp
				}
				for _, k := range lk.([]any) {
					if cmp := Compare(l[k.(string)], r[k.(string)]); cmp != 0 {
						return cmp
					}
				}
				return 0
			}
			scratch := m.keysScratch(d)
			lk, rk := sortedKeys(m, scratch[0], l), sortedKeys(m, scratch[1], r)
			scratch[0], scratch[1] = lk, rk
			if cmp := slices.Compare(lk, rk); cmp != 0 {
				return cmp
			}
			for _, k := range lk {
				if cmp := compare(m, d+1, l[k], r[k]); cmp != 0 {
					return cmp
				}
			}
			return 0
		},
		func(l, r any) int {
			return cmp.Compare(typeIndex(l), typeIndex(r))
		},
	)
}

// agentvalues: chargeNumber charges to m the work and the memory of
// parsing n, when n is long enough to be parsed as a big integer (more
// than 18 digits): parsing it takes time quadratic in its digits.
func chargeNumber(m *meter, n json.Number) {
	if len(n) > 18 {
		m.tick(len(n) >> 4)
		m.alloc(sizeArray+len(n)/2, "a number")
	}
}

// agentvalues: sortedKeys returns the keys of v, sorted, in buf (grown,
// and charged to m, when too small).
func sortedKeys(m *meter, buf []string, v map[string]any) []string {
	if cap(buf) < len(v) {
		m.alloc(mulSize(len(v), sizeString), "the keys of an object")
		buf = make([]string, 0, len(v))
	}
	buf = buf[:0]
	for k := range v {
		buf = append(buf, k)
	}
	m.tick(len(buf))
	slices.Sort(buf)
	return buf
}

func lt(l, r float64) bool {
	return l < r || math.IsNaN(l)
}

func typeIndex(v any) int {
	switch v := v.(type) {
	default:
		return 0
	case bool:
		if !v {
			return 1
		}
		return 2
	case int, float64, *big.Int, json.Number:
		return 3
	case string:
		return 4
	case []any:
		return 5
	case map[string]any:
		return 6
	}
}
