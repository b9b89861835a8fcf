package mcpresult

import (
	"encoding/json"
	"testing"

	values "github.com/agentvalues/values"
)

func TestWithHandle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"agentvalues/handle":"r7","a":1}`},
		{` { } `, `{"agentvalues/handle":"r7" } `},
		{`{"agentvalues/handle":"r1", "a":2}`, `{"agentvalues/handle":"r7", "a":2}`},
		{`[1,2]`, `[1,2]`},
		{`"s"`, `"s"`},
		{`{"a":`, `{"a":`},
	} {
		got := string(WithHandle([]byte(tc.in), "r7"))
		if got != tc.want {
			t.Errorf("WithHandle(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
			t.Errorf("WithHandle(%s) = %s, not valid JSON", tc.in, got)
		}
	}
}

// TestWhole: a result is shown whole when its structured content and the
// size of its blocks are at most the threshold and its value is not
// binary; never with a negative threshold. Images and audio do not count.
func TestWhole(t *testing.T) {
	vals := values.New()
	text, _ := vals.Get(vals.PutOutput([]byte("text")))
	binary, _ := vals.Get(vals.PutOutput([]byte("\xff\xfe")))
	res, ok := Parse([]byte(`{"content":[{"type":"text","text":"1234"},{"type":"image","data":"`+
		"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="+`","mimeType":"image/png"},{"type":"resource_link","uri":"x"}]}`), nil)
	if !ok {
		t.Fatal("not parsed")
	}
	size := len("1234") + len(`{"type":"resource_link","uri":"x"}`)
	if got := res.Size(); got != size {
		t.Fatalf("Size() = %d, want %d", got, size)
	}
	structured := []byte(`{"a":1}`)
	for _, tc := range []struct {
		threshold int
		v         values.Value
		want      bool
	}{
		{size + len(structured), text, true},
		{size + len(structured) - 1, text, false},
		{1 << 20, binary, false},
		{-1, text, false},
	} {
		if got := Whole(tc.threshold, tc.v, structured, res); got != tc.want {
			t.Errorf("Whole(%d, %v) = %v, want %v", tc.threshold, tc.v.Kind(), got, tc.want)
		}
	}
}
