package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

// sameJSONModel is what SameJSON must say: b is valid JSON and both
// compact to the same bytes.
func sameJSONModel(a, b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"a":[1,2]}`, `{"a":[1,2]}`, true},
		{`{"a":[1,2]}`, "{ \"a\" : [ 1 ,\n\t2 ] }\n", true},
		{`{"a":"x y"}`, `{"a":"x  y"}`, false},
		{`{"a":"x y"}`, `{"a":"xy"}`, false},
		{`[12]`, `[1 2]`, false},
		{`[true]`, `[tr ue]`, false},
		{`[true]`, `[ true ]`, true},
		{`{"a":1}`, `{"a":1}x`, false},
		{`{"a":1}`, `{"a":1`, false},
		{`{"a":"\""}`, `{"a":"\""}`, true},
		{`{"a":"\" "}`, `{"a":"\"  "}`, false},
		{`"é"`, `"\u00e9"`, false}, // escapes are not normalized, as in json.Compact
		{`1`, ` 1 `, true},
		{`[]`, ``, false},
	} {
		if got := SameJSON([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("SameJSON(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if model := sameJSONModel([]byte(tc.a), []byte(tc.b)); model != tc.want {
			t.Errorf("the model says %v for %s, %s", model, tc.a, tc.b)
		}
		s := AppendQuote(nil, []byte(tc.b))
		if got := SameJSONString([]byte(tc.a), s); got != tc.want {
			t.Errorf("SameJSONString(%s, %s) = %v, want %v", tc.a, s, got, tc.want)
		}
	}
}

func FuzzSameJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,2]}`), []byte("{ \"a\" : [ 1 ,\n2 ] }"))
	f.Add([]byte(`["\"",true]`), []byte(`[ "\"" , tr ue]`))
	f.Add([]byte(`"😀"`), []byte(`"\ud83d\ude00"`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if Valid(a) != nil {
			return
		}
		want := sameJSONModel(a, b)
		if got := SameJSON(a, b); got != want {
			t.Fatalf("SameJSON(%q, %q) = %v, want %v", a, b, got, want)
		}
		// The same text held in a string: as a server sends it.
		var s []byte
		if json.Valid(b) || bytes.IndexByte(b, '"') < 0 {
			s, _ = json.Marshal(string(b))
		}
		if s == nil || Valid(s) != nil {
			return
		}
		var text string
		if err := json.Unmarshal(s, &text); err != nil {
			t.Fatal(err)
		}
		if got := equalDecoded(a, s[1:len(s)-1]); got != (string(a) == text) {
			t.Fatalf("equalDecoded(%q, %s) = %v, want %v", a, s, got, !got)
		}
		// v against the decoding of any string, not only the JSON of one.
		if got := equalDecoded([]byte(text), s[1:len(s)-1]); !got {
			t.Fatalf("equalDecoded(%q, %s) = false: it is its decoding", text, s)
		}
		// A piece at a time, of every size up to the string's.
		for every := 1; every <= len(s); every = every*2 + 1 {
			if got := equalPieces(a, s[1:len(s)-1], every); got != (string(a) == text) {
				t.Fatalf("equalPieces(%q, %s, %d) = %v, want %v", a, s, every, got, !got)
			}
			if !equalPieces([]byte(text), s[1:len(s)-1], every) {
				t.Fatalf("equalPieces(%q, %s, %d) = false: it is its decoding", text, s, every)
			}
		}
		want = sameJSONModel(a, []byte(text))
		if got := SameJSONString(a, s); got != want {
			t.Fatalf("SameJSONString(%q, %s) = %v, want %v", a, s, got, want)
		}
	})
}
