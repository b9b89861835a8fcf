package mcpproxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentvalues/values/internal/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzRawCall holds the raw path's readers and writer to the SDK's: a
// result textResult reads decodes, through the SDK's types, to the same
// result, and encodeResult writes it as the SDK's encoding does; params
// callParams reads decode to the same name and arguments.
func FuzzRawCall(f *testing.F) {
	for _, c := range scriptCases() {
		line := strings.ReplaceAll(c, "%ID%", "1")
		if !json.Valid([]byte(line)) {
			continue
		}
		if r, ok := jsontext.Member([]byte(line), "result"); ok {
			f.Add(r, []byte(`{"name":"t","arguments":{"a":1}}`))
		}
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"<a> & \u2028"}],"isError":true}`), []byte(`{"name":"\u0074","arguments":null,"_meta":{}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"content":[{"type":"text","text":"x"}],"resultType":"complete"}`), []byte(`{}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol\/x":1,"k":2},"content":[],"resultType":"input_required"}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, result, params []byte) {
		if res, ok := textResult(result, nil); ok {
			want := new(mcp.CallToolResult)
			if err := json.Unmarshal(result, want); err != nil {
				t.Fatalf("textResult read %q, which the SDK does not decode: %v", result, err)
			}
			if want.NeedsInput() {
				t.Fatalf("textResult read %q, which asks for input", result)
			}
			want.Meta = forwardMeta(want.Meta) // the protocol's keys, which textResult leaves out
			if diff := cmp.Diff(want, res, cmpopts.IgnoreUnexported(mcp.CallToolResult{})); diff != "" {
				t.Fatalf("textResult(%q) (-sdk +raw):\n%s", result, diff)
			}
			res.Meta = mcp.Meta{MetaHandle: "r1", mcp.MetaKeyServerInfo: json.RawMessage(`{"name":"a<b>"}`)}
			got, err := encodeResult(res)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
			if want := strings.TrimSuffix(b.String(), "\n"); string(got) != want {
				t.Fatalf("encodeResult:\n got %s\nwant %s", got, want)
			}
		}
		name, args, meta, ok := callParams(params, false)
		if jsontext.Valid(bytes.TrimSpace(params)) == nil { // as a line's scan finds params (wire.Hooks.Take)
			n2, a2, m2, ok2 := callParams(params, true)
			if n2 != name || !bytes.Equal(a2, args) || !bytes.Equal(m2, meta) || ok2 != ok {
				t.Fatalf("callParams(%q) told it is valid: %q %q %q %v, not %q %q %q %v", params, n2, a2, m2, ok2, name, args, meta, ok)
			}
		}
		if ok {
			var want mcp.CallToolParamsRaw
			if err := json.Unmarshal(params, &want); err != nil {
				t.Fatalf("callParams read %q, which does not decode: %v", params, err)
			}
			if name != want.Name {
				t.Fatalf("callParams(%q): name %q, want %q", params, name, want.Name)
			}
			if w := bytes.TrimSpace(want.Arguments); string(w) != "null" && !bytes.Equal(args, w) {
				t.Fatalf("callParams(%q): arguments %q, want %q", params, args, w)
			}
		}
	})
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
