package values

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
)

// The item schema of an array says which values each key takes, over
// every item (never a sample): a set of up to 8 short strings when the key
// has no more, the range of its numbers, which booleans occur, and null.
func TestItemSchemaValues(t *testing.T) {
	item := func(i int) map[string]any {
		m := map[string]any{
			"id":     i,
			"name":   fmt.Sprintf("pkg-%04d", i),
			"state":  []string{"open", "closed", "merged"}[i%3],
			"size":   6 + (i*7919)%510238,
			"ok":     i%2 == 0,
			"always": true,
			"score":  float64(i%1000) / 8,
			"when":   nil,
		}
		if i%5 == 0 {
			m["when"] = "2026-01-02"
		}
		if i == 777 {
			m["state"] = "draft" // once, in the middle: no sample shows it
			m["size"] = 510243
		}
		if i != 3 {
			m["tag"] = "v1"
		}
		return m
	}
	for _, n := range []int{20, 5000, 80_000} { // the last one scanned by two goroutines
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = item(i)
		}
		data, _ := json.Marshal(items)
		s := New()
		v, _ := s.Get(s.PutOutput(data))
		p := RenderPreview("r1", v)
		maxSize, maxID := 510243, n-1
		if n <= 777 {
			maxSize = 0
			for i := range n {
				maxSize = max(maxSize, item(i)["size"].(int))
			}
		}
		states := `state: "open"|"closed"|"merged"`
		if n > 777 {
			states += `|"draft"`
		}
		for _, want := range []string{
			fmt.Sprintf("id: number 0..%d", maxID),
			"name: text",
			states,
			fmt.Sprintf("size: number 6..%d", maxSize),
			"ok: bool", "always: true",
			fmt.Sprintf("score: number 0..%v", float64(min(n, 1000)-1)/8),
			`when: "2026-01-02"|null`,
			`tag?: "v1"`,
		} {
			if !strings.Contains(p, want) {
				t.Errorf("%d items: %q is not in the preview\n%s", n, want, p)
			}
		}
	}
}

// A key whose strings are not few, or not short, or escaped, is shown as
// text: a partial set would read as the whole of it.
func TestItemSchemaOpenSets(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, `k: "a"|"b"|"c"|"d"|"e"|"f"|"g"|"h"`},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "k: text"},
		{[]string{"a", strings.Repeat("x", jsontext.ShortString+1)}, "k: text"},
		{[]string{"a", strings.Repeat("x", jsontext.ShortString)}, `k: "a"|"` + strings.Repeat("x", jsontext.ShortString) + `"`},
		{[]string{"a", "b\n"}, "k: text"},
	} {
		var items []map[string]string
		for range 3 {
			for _, v := range tc.values {
				items = append(items, map[string]string{"k": v})
			}
		}
		data, _ := json.Marshal(items)
		p := preview(t, json.RawMessage(data))
		if !strings.Contains(p, "items={"+tc.want+"}") {
			t.Errorf("values %q: want items={%s} in\n%s", tc.values, tc.want, p)
		}
	}
}

// Items that are not objects are summarized as a key's values are.
func TestItemSchemaScalars(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`["amd64","arm64","amd64","riscv64","arm64","amd64"]`, `items="amd64"|"arm64"|"riscv64"`},
		{`[3,1,4,1,5,9,2,6]`, "items=number 1..9"},
		{`[1,null,2,null,3,4]`, "items=number 1..4|null"},
		{`[{"a":1},2,3,"x",{"a":2},true]`, `items={a: number 1..2}|"x"|number 2..3|true`},
	} {
		if p := preview(t, json.RawMessage(tc.data)); !strings.Contains(p, tc.want) {
			t.Errorf("%s: want %s in\n%s", tc.data, tc.want, p)
		}
	}
}

// A schema too long for its budget shows its values in less detail, so
// that every key is still named.
func TestItemSchemaDetail(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("{")
		for k := range 30 {
			fmt.Fprintf(&b, `"key_%02d":"value-%02d-%d",`, k, k, i%8)
		}
		fmt.Fprintf(&b, `"n":%d}`, i)
	}
	b.WriteString("]")
	p := preview(t, json.RawMessage(b.String()))
	if !strings.Contains(p, "key_29: text, n: number 0..39}") || strings.Contains(p, "more keys") {
		t.Errorf("want every key named, values as kinds where sets do not fit:\n%s", p)
	}
}

// A table column is summarized cell by cell as a key is value by value.
func TestColumnSummary(t *testing.T) {
	doc := []byte("amd64|arm64| amd64 ||12|6|510243|true|x\"y")
	cells := func(ix ...int) []jsontext.Span {
		var spans []jsontext.Span
		start := 0
		for i := 0; i <= len(doc); i++ {
			if i == len(doc) || doc[i] == '|' {
				spans = append(spans, jsontext.Span{Start: start, End: i})
				start = i + 1
			}
		}
		var out []jsontext.Span
		for _, i := range ix {
			out = append(out, spans[i])
		}
		return out
	}
	for _, tc := range []struct {
		cells []int
		want  string
	}{
		{[]int{0, 1, 2}, `"amd64"|"arm64"`},
		{[]int{0, 3}, `"amd64"|null`},
		{[]int{4, 5, 6}, "number 6..510243"},
		{[]int{4, 7}, "12|true"},
		{[]int{8, 0}, `"x\"y"|"amd64"`},
	} {
		var c columnSummary
		for _, sp := range cells(tc.cells...) {
			c.add(doc, sp)
		}
		if got := string(c.appendTo(nil, doc, summaryFull)); got != tc.want {
			t.Errorf("cells %v: %s, want %s", tc.cells, got, tc.want)
		}
	}
}
