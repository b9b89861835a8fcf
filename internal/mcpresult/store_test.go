package mcpresult

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	values "github.com/agentvalues/values"
)

// stored returns the values in vals, kind and bytes, in handle order.
func stored(vals *values.SessionValues) []string {
	var out []string
	for i := 1; i <= vals.Len(); i++ {
		v, _ := vals.Get(fmt.Sprintf("r%d", i))
		out = append(out, v.Kind().String()+": "+string(v.Bytes()))
	}
	return out
}

// TestStore: the rule stores a result the same whether it reads it from
// its bytes (Result) or from decoded blocks, and keeps what the server
// sent: member order, number spelling and duplicate members make the
// text another value than the structured content, white space does not.
func TestStore(t *testing.T) {
	text := func(s string) string { return fmt.Sprintf(`{"type":"text","text":%q}`, s) }
	for _, tc := range []struct {
		name   string
		result string
		want   []string
	}{
		{"text", `{"content":[` + text("hello") + `]}`, []string{"text: hello"}},
		{"json text", `{"content":[` + text(`{"a":1}`) + `]}`, []string{`object: {"a":1}`}},
		{"two blocks", `{"content":[` + text("a") + `,` + text("b") + `]}`, []string{"text: a\nb"}},
		{"same", `{"content":[` + text(`{"a":1,"b":2}`) + `],"structuredContent":{"a":1,"b":2}}`, []string{`object: {"a":1,"b":2}`}},
		{"same spaced", `{"content":[` + text(`{ "a": 1 }`) + `],"structuredContent":{"a":1}}`, []string{`object: {"a":1}`}},
		{"member order", `{"content":[` + text(`{"a":1,"b":2}`) + `],"structuredContent":{"b":2,"a":1}}`, []string{`object: {"b":2,"a":1}`, `object: {"a":1,"b":2}`}},
		{"1.0", `{"content":[` + text(`{"a":1}`) + `],"structuredContent":{"a":1.0}}`, []string{`object: {"a":1.0}`, `object: {"a":1}`}},
		{"duplicate keys", `{"content":[` + text(`{"a":2}`) + `],"structuredContent":{"a":1,"a":2}}`, []string{`object: {"a":1,"a":2}`, `object: {"a":2}`}},
		{"mirror", `{"content":[` + text("plain") + `],"structuredContent":{"text":"plain"}}`, []string{"text: plain"}},
		{"mirror of two", `{"content":[` + text("a") + `,` + text("b") + `],"structuredContent":{"text":"a\nb"}}`, []string{"text: a\nb"}},
		{"not a mirror", `{"content":[` + text("plain") + `],"structuredContent":{"text":"plain","n":1}}`, []string{`object: {"text":"plain","n":1}`, "text: plain"}},
		{"structured only", `{"structuredContent":[1,2]}`, []string{`array: [1,2]`}},
		{"structured null", `{"content":[` + text("x") + `],"structuredContent":null}`, []string{"text: x"}},
		{"no content", `{}`, []string{"text: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, ok := Parse([]byte(tc.result), nil)
			if !ok {
				t.Fatalf("Parse(%s) refused it", tc.result)
			}
			fromBytes := values.New()
			h, ch := Store(fromBytes, res.Structured(), res)
			var texts []string
			res.eachText(func(t []byte) { texts = append(texts, string(unquote(t))) })
			fromDecoded := values.New()
			h2, ch2 := Store(fromDecoded, res.Structured(), decoded{texts: texts})
			if diff := cmp.Diff(tc.want, stored(fromBytes)); diff != "" {
				t.Errorf("stored from the bytes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(stored(fromBytes), stored(fromDecoded)); diff != "" || h != h2 || ch != ch2 {
				t.Errorf("stored from the decoded blocks %s %s, from the bytes %s %s (-bytes +decoded):\n%s", h2, ch2, h, ch, diff)
			}
			if wantCH := len(tc.want) == 2; (ch != "") != wantCH {
				t.Errorf("content handle %q", ch)
			}
		})
	}
	// Blocks that are not all text are stored as the JSON array they came
	// as, member order and all.
	const blocks = `[{"type":"text","text":"a <b>"},{"data":"QUJD","type":"image","mimeType":"image/png"}]`
	res, _ := Parse([]byte(`{"content":`+blocks+`}`), nil)
	vals := values.New()
	Store(vals, nil, res)
	if got := stored(vals); len(got) != 1 || got[0] != "array: "+blocks {
		t.Errorf("blocks stored as %q, want them as they came", got)
	}
	if res.AllText() || !strings.Contains(string(res.Text()), "a <b>") {
		t.Errorf("AllText %v, Text %q", res.AllText(), res.Text())
	}
}

func unquote(t []byte) []byte {
	var s string
	fmt.Sscanf(string(t), "%q", &s)
	return []byte(s)
}
