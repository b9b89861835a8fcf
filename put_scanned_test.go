package values

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/hooks"
	"github.com/agentvalues/values/internal/jsontext"
)

// A JSON value whose Shape the scan of the document holding it recorded
// (mcpresult's structured content, from the scan of its line: see
// jsontext.Limits.Inner) is stored by hooks.PutScannedJSON as Put stores
// it, and previewed, read and walked alike, without being scanned again.
func TestPutScannedJSON(t *testing.T) {
	var rows, wide, nested strings.Builder
	rows.WriteString(`{"object":"list","items":[`)
	for i := range 3000 {
		if i > 0 {
			rows.WriteByte(',')
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":"Zoë %d","status":%q,"tags":["a","b"],"balance":%d.5}`, i, i, []string{"active", "closed"}[i%2], i*7)
	}
	rows.WriteString(`],"has_more":false,"next_cursor":null}`)
	wide.WriteByte('{')
	for i := range 400 {
		if i > 0 {
			wide.WriteByte(',')
		}
		fmt.Fprintf(&wide, `"key%d":{"v":%d,"s":"%s"}`, i, i, strings.Repeat("x", i%50))
	}
	wide.WriteByte('}')
	nested.WriteString(`[`)
	for i := range 2000 {
		if i > 0 {
			nested.WriteByte(',')
		}
		fmt.Fprintf(&nested, `[%d,{"deep":[[%d]]},"\u00e9\n"]`, i, i)
	}
	nested.WriteString(`]`)
	quotedRows, err := json.Marshal(rows.String())
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]struct {
		doc  string
		refs []string // read beside the preview
	}{
		"small":            {`{"a":1,"b":[true,null]}`, []string{"r1.b.0"}},
		"rows":             {rows.String(), []string{"r1.items.0", "r1.items.1777.name", "r1.items.2999", "r1.has_more"}},
		"wide object":      {wide.String(), []string{"r1.key0", "r1.key250.s", "r1.key399"}},
		"array":            {nested.String(), []string{"r1.0", "r1.1500.1.deep", "r1.1999.2"}},
		"json in a string": {`{"text":` + strings.Repeat(" ", 10) + string(quotedRows) + `,"n":1}`, []string{"r1.n"}},
	}
	lim := jsontext.Limits{Head: 6, Outline: 256,
		Descend: func(depth int, key []byte) bool { return depth == 1 && jsontext.KeyEquals(key, "result") },
		Inner: func(depth int, key []byte) bool {
			return depth == 2 && jsontext.KeyEquals(key, "structuredContent")
		},
		InnerLimits: hooks.ScanLimits,
	}
	for name, tt := range docs {
		t.Run(name, func(t *testing.T) {
			line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],"structuredContent": ` + tt.doc + ` ,"isError":false}}`)
			_, sh, err := jsontext.Scan(line, lim)
			if err != nil || sh.Inner == nil {
				t.Fatalf("scan of the line: %v, Inner %v", err, sh.Inner != nil)
			}
			if got := string(sh.InnerVal.Of(line)); got != tt.doc {
				t.Fatalf("InnerVal holds %.100q, want the document", got)
			}
			// The store keeps a copy of the value: the Shape's offsets
			// are the line's.
			scanned, put := New(), New()
			h := hooks.PutScannedJSON(scanned, []byte(tt.doc), sh.Inner, sh.InnerVal.Start)
			want, _ := mustPut(t, put, json.RawMessage(tt.doc))
			u, _ := scanned.Get(h)
			v, _ := put.Get(want)
			if h != want || u.Kind() != v.Kind() || u.Len() != v.Len() || string(u.JSON()) != string(v.JSON()) {
				t.Fatalf("PutScannedJSON: %s %v (len %d), Put: %s %v (len %d)", h, u.Kind(), u.Len(), want, v.Kind(), v.Len())
			}
			if p, q := RenderPreview(h, u), RenderPreview(want, v); p != q {
				t.Fatalf("PutScannedJSON's preview:\n%s\nPut's:\n%s", p, q)
			}
			for _, ref := range append(tt.refs, "r1") {
				p, err1 := scanned.Read(ref, 0, 4096)
				q, err2 := put.Read(ref, 0, 4096)
				if fmt.Sprint(p, err1) != fmt.Sprint(q, err2) {
					t.Fatalf("Read(%s): %v %v, Put's: %v %v", ref, p, err1, q, err2)
				}
			}
			var a, b []string
			scanned.Items("r1", 0, func(i int, key, item []byte) bool {
				a = append(a, fmt.Sprint(i, string(key), len(item)))
				return len(a) < 50
			})
			put.Items("r1", 0, func(i int, key, item []byte) bool {
				b = append(b, fmt.Sprint(i, string(key), len(item)))
				return len(b) < 50
			})
			if strings.Join(a, ",") != strings.Join(b, ",") {
				t.Fatalf("Items: %v, Put's: %v", a, b)
			}
		})
	}
}
