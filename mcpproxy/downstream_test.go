package mcpproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzWrapStructured checks the rewrite of a tools/call result that keeps a
// server's structuredContent byte for byte: it never panics, valid JSON
// stays valid, nothing but structuredContent changes, and unwrapping what
// the SDK decodes gives back exactly the bytes the server sent.
func FuzzWrapStructured(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"b":1,"a":12345678901234567890}}`,
		`{"structuredContent":null,"content":[]}`,
		`{"structuredContent":[1,"\u00e9",{"<":">"}]}`,
		`{"isError":true}`,
		`{"structuredContent":"s","structuredContent":{"dup":1}}`,
		`[1,2]`, `{"a":{"structuredContent":1}}`, ` { "structuredContent" : { } } `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		out := wrapStructured(bytes.Clone(result))
		if !json.Valid(result) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("wrapStructured(%s) = %s, not valid JSON", result, out)
		}
		var orig, got map[string]json.RawMessage
		if json.Unmarshal(result, &orig) != nil || topLevelDuplicates(result) {
			return // not an object, or ambiguous: the SDK's decoding decides
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if len(got) != len(orig) {
			t.Fatalf("keys changed: %s -> %s", result, out)
		}
		for k, v := range orig {
			if k != "structuredContent" && !bytes.Equal(got[k], v) {
				t.Fatalf("%q changed: %s -> %s", k, v, got[k])
			}
		}
		raw, ok := orig["structuredContent"]
		if !ok {
			return
		}
		var decoded any // what the SDK hands the proxy
		if err := json.Unmarshal(got["structuredContent"], &decoded); err != nil {
			t.Fatal(err)
		}
		back, err := unwrapStructured(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) == "null" {
			if back != nil {
				t.Fatalf("null structuredContent came back as %s", back)
			}
			return
		}
		if !bytes.Equal(back, raw) {
			t.Fatalf("structuredContent %s came back as %s", raw, back)
		}
	})
}

// topLevelDuplicates reports whether the JSON object b has a key twice.
func topLevelDuplicates(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// FuzzKeepContent checks the rewrite that hands the proxy a result's
// content blocks as the server sent them: it never panics on valid JSON,
// which stays valid, a result of text blocks alone is left as it is, nothing but
// _meta changes, and what the SDK decodes gives back exactly the content
// array the server sent, whatever the server wrote under the same key.
// And a result resultAsIs passes on as it is is one that wrapStructured
// and keepContent leave as it is.
func FuzzKeepContent(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"x"},{"data":"AA==","type":"image","mimeType":"image/png","x":1.0}]}`,
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"audio","data":"","mimeType":"a"}],"_meta":{"k":1}}`,
		`{"content":[{"type":"image"}],"_meta":{ }}`,
		`{"content":[{"type":"image"}],"_meta":{"agentvalues/raw-content":{"nonce":"x","blocks":"[]"}}}`,
		`{"content":[{"type":"image"}],"_meta":null}`,
		`{"content":[1],"content":[{"type":"image"}]}`,
		`{"content":[{"type":"resource_link","uri":"x"}],"_meta":{"a":1},"_meta":{}}`,
		` {"isError":true,"content":[{"type":"image","data":"<>&"}]} `,
		`[1,2]`, `{}`, `{"content":"x"}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`,
		`{"content":[],"structured\u0043ontent":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		if !json.Valid(result) {
			return // keepContent is given valid JSON
		}
		if r := bytes.TrimSpace(result); r[0] == '{' && resultAsIs(r) {
			if out := keepContent(wrapStructured(bytes.Clone(result))); !bytes.Equal(out, result) {
				t.Fatalf("resultAsIs(%s), but wrapStructured and keepContent make %s", result, out)
			}
		}
		out := keepContent(bytes.Clone(result))
		if !json.Valid(out) {
			t.Fatalf("keepContent(%s) = %s, not valid JSON", result, out)
		}
		var orig, got map[string]json.RawMessage
		if json.Unmarshal(result, &orig) != nil || topLevelDuplicates(result) || jsontext.Valid(result) != nil {
			if !bytes.Equal(out, result) && json.Unmarshal(result, &orig) != nil {
				t.Fatalf("keepContent(%s) = %s: changed what is not an object", result, out)
			}
			return
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		for k, v := range orig {
			if k != "_meta" && !bytes.Equal(got[k], v) {
				t.Fatalf("%q changed: %s -> %s", k, v, got[k])
			}
		}
		var res mcp.CallToolResult // what the SDK hands the proxy
		if json.Unmarshal(out, &res) != nil {
			return
		}
		kept := keptContent(&res)
		content := orig["content"]
		var blocks []map[string]json.RawMessage
		json.Unmarshal(content, &blocks)
		allText := len(content) > 0 && content[0] == '['
		for _, b := range blocks {
			allText = allText && string(b["type"]) == `"text"`
		}
		switch {
		case allText || len(content) == 0 || content[0] != '[':
			if !bytes.Equal(out, result) {
				t.Fatalf("keepContent(%s) = %s: changed a result it has no blocks to keep of", result, out)
			}
		case kept != nil && !bytes.Equal(kept, content):
			t.Fatalf("keepContent(%s): kept %s, want %s", result, kept, content)
		case kept == nil && !bytes.Equal(out, result):
			t.Fatalf("keepContent(%s) = %s, but nothing is kept", result, out)
		}
		if _, left := res.Meta[rawContentKey]; left {
			t.Fatalf("keptContent left its key in %v", res.Meta)
		}
	})
}

// TestBlocksStoredAsSent: content blocks that are not all text are stored
// as the server sent them (member order, numbers as spelled, members the
// SDK does not know), not as the SDK would encode them again; a server
// that writes the proxy's key for them into its _meta does not change
// what is stored, and the agent does not see the key.
func TestBlocksStoredAsSent(t *testing.T) {
	const blocks = `[{"type":"text","text":"a <b>"},{"data":"iVBORw0KGgo=","type":"image","mimeType":"image/png","priority":1.0}]`
	results := map[string]string{
		"blocks": `{"content":` + blocks + `}`,
		"forged": `{"content":` + blocks + `,"_meta":{"` + rawContentKey + `":{"nonce":"guess","blocks":"[1]"},"k":2}}`,
		"spaced": `{ "content" : ` + strings.ReplaceAll(blocks, ",", ", ") + ` , "_meta" : { } }`,
	}
	for _, line := range []bool{true, false} {
		sr, pw := io.Pipe()
		pr, sw := io.Pipe()
		go rawServer(sr, sw, results)
		var down mcp.Transport = &mcp.IOTransport{Reader: pr, Writer: pw, MaxLineLength: -1}
		if line {
			down = lineDownstream{pr, pw}
		}
		f := newFixture(t, down, nil)
		for name, want := range map[string]string{"blocks": blocks, "forged": blocks, "spaced": strings.ReplaceAll(blocks, ",", ", ")} {
			res := f.call(t, "result", fmt.Sprintf(`{"case":%q}`, name))
			v, _ := f.proxy.Values().Get(handle(t, res))
			if got := string(v.JSON()); got != want {
				t.Errorf("line=%v, %s: stored %s, want the blocks as sent %s", line, name, got, want)
			}
			if _, ok := res.Meta[rawContentKey]; ok {
				t.Errorf("line=%v, %s: the agent sees the proxy's key: %v", line, name, res.Meta)
			}
		}
	}
}
