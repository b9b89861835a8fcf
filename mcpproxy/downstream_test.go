package mcpproxy

import (
	"bytes"
	"encoding/json"
	"testing"
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

// FuzzAppendString holds appendString to encoding/json's encoding of a
// string, byte for byte, as the SDK server encodes a result's text.
func FuzzAppendString(f *testing.F) {
	for _, seed := range []string{"", `{"ok":true}`, "a<b>&c", "a&b", "tab\there\nnew\\\"q\x00\x1f\x7f", "é\u2028\u2029\xff", "plain text"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
