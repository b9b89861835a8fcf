package values

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeWithDecoder is the decoding of the arguments before decodeArgs:
// encoding/json's Decoder with UseNumber.
func decodeWithDecoder(args []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

var decodeArgsSeeds = []string{
	`{}`, `[]`, ` {"a":1} `, `{"a":[1,2.5,-0,1e3,-1.5E-7,true,false,null,"x"]}`,
	`{"a":{"b":{"c":[[],{}]}}}`, `{"a":1,"a":2}`, `"\u00e9\ud83d\ude00\ud800x\n\"\\\/"`,
	"\"\xff\xfe\"", "\"caf\xc3\xa9\"", `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`,
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a":tru}`, `nul`, `1 2`, `{} x`, `"a` + "\x01" + `"`,
	`"\x"`, `"\u12"`, `{"a":"b"}}`, strings.Repeat("[", 70) + strings.Repeat("]", 70), ``, ` `, `0`, `-0.0e+0`,
}

// TestDecodeArgsMatchesDecoder checks decodeArgs against the Decoder on
// the seeds: the same value whenever it decodes; when it declines, the
// caller falls back to the Decoder itself.
func TestDecodeArgsMatchesDecoder(t *testing.T) {
	fast := 0
	for _, s := range decodeArgsSeeds {
		if checkDecodeArgs(t, []byte(s)) {
			fast++
		}
	}
	if fast < 10 {
		t.Fatalf("decodeArgs decoded only %d of the seeds", fast)
	}
}

// checkDecodeArgs reports whether decodeArgs decoded args, failing t when
// it decoded what the Decoder refuses or decoded it differently.
func checkDecodeArgs(t *testing.T, args []byte) bool {
	t.Helper()
	v, ok := decodeArgs(args)
	if !ok {
		return false
	}
	want, err := decodeWithDecoder(args)
	if err != nil {
		t.Fatalf("decodeArgs(%q) = %#v, the Decoder refuses it: %v", args, v, err)
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("decodeArgs(%q) = %#v, the Decoder gives %#v", args, v, want)
	}
	// Valid JSON alone, with whitespace around it: what the callers of
	// violations pass.
	if !json.Valid(args) {
		t.Fatalf("decodeArgs(%q) decoded text that is not one JSON value", args)
	}
	return true
}

// FuzzDecodeArgs holds decodeArgs to the Decoder: whatever it decodes, the
// Decoder decodes to the same value; and it declines no valid JSON within
// its depth (so that the fast path is the path taken).
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range decodeArgsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if checkDecodeArgs(t, args) {
			return
		}
		if json.Valid(args) && bytes.Count(args, []byte("["))+bytes.Count(args, []byte("{")) < maxFastDepth {
			t.Fatalf("decodeArgs declined valid JSON %q", args)
		}
	})
}

// BenchmarkPrepareSmall prepares the small arguments of a typical call
// against a schema: the validation every call on the proxy's raw call route
// makes.
//
//	go test -run='^$' -bench=PrepareSmall -benchmem .
func BenchmarkPrepareSmall(b *testing.B) {
	sch, err := CompileSchema([]byte(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"]}`))
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"query":"select the rows of the last week","limit":20,"tags":["a","b"]}`)
	vals := New()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := vals.Prepare(sch, args); err != nil {
			b.Fatal(err)
		}
	}
}
