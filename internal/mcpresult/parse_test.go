package mcpresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentvalues/values/internal/jsontext"
)

// decoded is Content as a caller that decoded the blocks has it.
type decoded struct {
	texts []string
	other int // blocks that are not text
}

func (d decoded) Len() int              { return len(d.texts) + d.other }
func (d decoded) AllText() bool         { return d.other == 0 }
func (d decoded) Text() []byte          { return []byte(strings.Join(d.texts, "\n")) }
func (d decoded) JSON() ([]byte, error) { return nil, errNoJSON }

var errNoJSON = errors.New("no JSON of decoded blocks")

// outlined returns the outline of r a scan of a larger line would make:
// the scan of r in an envelope, its parts made relative to r.
func outlined(r []byte) (result []byte, parts []jsontext.Part) {
	line := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), r...), '}')
	_, sh, err := jsontext.Scan(line, jsontext.Limits{Head: 4, Outline: OutlineMax, Descend: func(depth int, key []byte) bool {
		if depth == 1 {
			return key != nil && jsontext.KeyEquals(key, "result")
		}
		return Descend(depth-1, key)
	}})
	if err != nil || sh.Outline == nil || len(sh.Head) < 3 {
		return nil, nil
	}
	result = sh.Head[2].Val.Of(line)
	at := cap(line) - cap(result)
	for _, p := range sh.Outline {
		if p.Depth < 2 {
			continue
		}
		p.Depth--
		p.Val.Start, p.Val.End = p.Val.Start-at, p.Val.End-at
		if p.Key != (jsontext.Span{}) {
			p.Key.Start, p.Key.End = p.Key.Start-at, p.Key.End-at
		}
		parts = append(parts, p)
	}
	return result, parts
}

// FuzzParse holds Parse to the SDK's decoding: a result it reads is one
// the SDK decodes (when it decodes it at all) into the same text blocks,
// with the same texts, structured content and isError, and one of text
// blocks alone that it reads the SDK decodes; it reads a result the same
// from an outline of it as from one it makes, and as a result of many
// blocks; and the rule's mirror test reads it as it reads the decoded
// blocks.
func FuzzParse(f *testing.F) {
	text := func(s string) string { b, _ := json.Marshal(s); return `{"type":"text","text":` + string(b) + `}` }
	for _, seed := range []string{
		`{"content":[` + text("hello <world> & ✓") + `]}`,
		`{"content":[` + text(`{"a":1,"b":2}`) + `],"structuredContent":{"b":2,"a":1}}`,
		`{"content":[` + text(`{"a":1.0}`) + `],"structuredContent":{"a":1}}`,
		`{"content":[` + text(`{"a":1,"a":2}`) + `],"structuredContent":{"a":1,"a":2}}`,
		`{"content":[` + text("plain") + `],"structuredContent":{"text":"plain"}}`,
		`{"content":[` + text("a picture") + `,{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1},"_meta":{"k":1}}],"isError":true,"_meta":{"z":1}}`,
		`{"content":[` + text("one") + `],"content":[` + text("two") + `]}`,
		`{"content":[{"type":"text","type":"text","text":"x"}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"type":"hologram","text":"x"}]}`,
		`{"content":{"type":"text","text":"x"}}`,
		`{"content":[` + text("x") + `],"isError":"yes"}`,
		`{"content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"content":[{"type":"text","type":"text","text":"a\ud83d\ude00"},{"text":"b","type":"text","annotations":{"x":[1]}}],"isError":false}`,
		`{"content":[[{"type":"text","text":"a"}]],"structuredContent":{"content":"a"}}`,
		` {"cont\u0065nt":[{"type":"text","text":"x"}],"_meta":null}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"\u0062"}],"structuredContent":{"k":"a\nb"}}`,
		`{"content":[{"type":"text","text":"a"}],"structuredContent":{"k":"a","l":"a"}}`,
		`{"content":[{"type":"text","text":"a` + "\xff\xe2\x82" + `b\ud800"}],"structuredContent":{"content":"a` + "\xff\xe2\x82" + `b\ud800"}}`,
		`{"content":[{"type":"text","text":"` + "\xed\xa0\x80\xc0\xaf" + `"},{"type":"text","text":"\udc00\ud800\u0041"}],"_meta":{"` + "\xf4\x90\x80\x80" + `":1}}`,
		`{"content":[{"type":"text","text":"{\"a\":\"` + "\x80" + `\"}"}],"structuredContent":{"a":"` + "\x80" + `"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, r []byte) {
		if !json.Valid(r) {
			return
		}
		if !utf8.Valid(r) {
			// As the proxy's connection reads it: each byte that begins no
			// valid sequence as U+FFFD. The SDK decodes it to what it
			// decodes the original to, and the scanner takes it.
			fixed := jsontext.AppendValidUTF8(nil, r)
			if err := jsontext.Valid(fixed); err != nil {
				t.Fatalf("%q, repaired to %q, is refused: %v", r, fixed, err)
			}
			var was, is mcp.CallToolResult
			errWas, errIs := json.Unmarshal(r, &was), json.Unmarshal(fixed, &is)
			if (errWas == nil) != (errIs == nil) {
				t.Fatalf("the SDK decodes %q: %v, repaired to %q: %v", r, errWas, fixed, errIs)
			}
			if diff := cmp.Diff(&was, &is, cmpopts.IgnoreUnexported(mcp.CallToolResult{})); errWas == nil && diff != "" {
				t.Fatalf("the SDK decodes %q and its repair differently (-original +repaired):\n%s", r, diff)
			}
			var anyWas, anyIs any
			json.Unmarshal(r, &anyWas)
			json.Unmarshal(fixed, &anyIs)
			if !reflect.DeepEqual(anyWas, anyIs) {
				t.Fatalf("encoding/json decodes %q and its repair differently: %#v, %#v", r, anyWas, anyIs)
			}
			r = fixed
		}
		if jsontext.Valid(r) != nil {
			return
		}
		res, ok := Parse(r, nil)
		if result, parts := outlined(r); parts != nil {
			res2, ok2 := Parse(result, parts)
			if ok2 != ok || ok && !reflect.DeepEqual(res, res2) {
				t.Fatalf("Parse(%s): %v %+v, from an outline %v %+v", r, ok, res, ok2, res2)
			}
		}
		tr := bytes.TrimSpace(r)
		if tr[0] == '{' {
			if blocks, okBlocks := parseBlocks(tr); okBlocks != ok || ok && (blocks.AllText() != res.AllText() || blocks.Plain() != res.Plain()) {
				t.Fatalf("parseBlocks(%s): %v (all text %v, plain %v), Parse %v (%v, %v)", r, okBlocks, blocks.AllText(), blocks.Plain(), ok, res.AllText(), res.Plain())
			}
		}
		if !ok {
			return
		}
		checkOthers(t, tr, res)
		var want mcp.CallToolResult
		if err := json.Unmarshal(r, &want); err != nil {
			if res.AllText() && res.Plain() {
				t.Fatalf("Parse read %s as plain text blocks alone, which the SDK refuses: %v", r, err)
			}
			return // a block of a type the SDK does not know, a member of a type it refuses
		}
		// A block Parse reads as text the SDK decodes as text, with the same
		// text; one it does not (a type member twice, say) may be text to
		// the SDK, and takes the SDK route.
		var texts [][]byte
		res.eachText(func(t []byte) { texts = append(texts, t) })
		if len(want.Content) != res.Len() {
			t.Fatalf("Parse(%s): %d blocks; the SDK %d", r, res.Len(), len(want.Content))
		}
		var sdkTexts []string // of the blocks Parse reads as text
		i := 0
		if res.content != nil {
			jsontext.EachChild(res.content, func(_, blk []byte) bool {
				tc, isText := want.Content[i].(*mcp.TextContent)
				if text, kind := blockText(blk); kind == kindText {
					if !isText || tc.Text != string(jsontext.AppendUnquoted(nil, text)) {
						t.Fatalf("Parse(%s): block %d is the text %s, the SDK's %#v", r, i, text, want.Content[i])
					}
					sdkTexts = append(sdkTexts, tc.Text)
				}
				i++
				return true
			})
		}
		if len(texts) != len(sdkTexts) {
			t.Fatalf("Parse(%s): %d texts, %d blocks of text", r, len(texts), len(sdkTexts))
		}
		// Read as a result of many blocks is (see parseBlocks), it is read
		// the same.
		{
			blocks, _ := parseBlocks(tr)
			var got [][]byte
			blocks.eachText(func(t []byte) { got = append(got, t) })
			if !reflect.DeepEqual(got, texts) || blocks.n != res.n || string(blocks.structured) != string(res.structured) ||
				string(blocks.isError) != string(res.isError) || string(blocks.meta) != string(res.meta) ||
				res.AllText() && blocks.TextOver(len(r)/3) != res.TextOver(len(r)/3) || string(blocks.Text()) != string(res.Text()) {
				t.Fatalf("parseBlocks(%s) reads %+v, Parse %+v", r, blocks, res)
			}
		}
		if (res.isError != nil && string(res.isError) == "true") != want.IsError {
			t.Fatalf("Parse(%s): isError %s, the SDK's %v", r, res.isError, want.IsError)
		}
		if (res.structured != nil) != (want.StructuredContent != nil) {
			t.Fatalf("Parse(%s): structured %s, the SDK's %v", r, res.structured, want.StructuredContent)
		}
		if res.structured != nil && res.AllText() {
			text := strings.Join(sdkTexts, "\n")
			// Read every member whole: one member, a string, the text.
			n, same := 0, false
			if res.structured[0] == '{' {
				jsontext.EachChild(res.structured, func(_, v []byte) bool {
					n++
					same = v[0] == '"' && string(jsontext.AppendUnquoted(nil, v)) == text
					return true
				})
			}
			want := n == 1 && same
			if got, gotDecoded := mirrors(res.structured, res, res), mirrors(res.structured, decoded{texts: sdkTexts}, nil); got != want || gotDecoded != want {
				t.Fatalf("Parse(%s): mirrors %v, of the decoded blocks %v; want %v", r, got, gotDecoded, want)
			}
			if same, sameDecoded := sameJSON(res.structured, res, res), sameJSON(res.structured, decoded{texts: sdkTexts}, nil); same != sameDecoded {
				t.Fatalf("Parse(%s): the text is the structured content again: %v, of the decoded blocks %v", r, same, sameDecoded)
			}
		}
	})
}

// TestTextOver checks the bound TextOver takes from the JSON lengths
// against the decoded length, at and around it, for texts with and without
// escapes.
func TestTextOver(t *testing.T) {
	for _, texts := range [][]string{
		{""},
		{"plain"},
		{"a\"b\\c\n", "\x01\x02"},
		{strings.Repeat("\x00", 50)},
		{strings.Repeat("é", 30), "x", ""},
		{strings.Repeat(`{"a":"b"},`, 40)},
	} {
		res := Result{allText: true}
		for _, s := range texts {
			q, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			res.texts = append(res.texts, q)
			res.n++
		}
		l := len(strings.Join(texts, "\n"))
		for n := -1; n <= 3*l+2; n++ {
			if got := res.TextOver(n); got != (l > n) {
				t.Errorf("TextOver(%d) of %q (length %d) = %v", n, texts, l, got)
			}
		}
	}
}

func TestCloneLarge(t *testing.T) {
	const block = 1 << 20
	for _, n := range []int{0, 1, block - 1, block, block + 1, 3*block + 5} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		c := cloneLarge(b, nil)
		if !bytes.Equal(c, b) {
			t.Fatalf("%d bytes: the copy differs", n)
		}
		if n > 0 {
			c[0]++
			if c[0] == b[0] {
				t.Fatalf("%d bytes: the copy shares the original's memory", n)
			}
		}
	}
}

// TestOnlyStringMember: a mirror's structured content is an object of one
// string member; anything else is not one, however its members are spaced
// or escaped.
func TestOnlyStringMember(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":"a log"}`:               `"a log"`,
		`{ "k" : "x\"}" }`:                  `"x\"}"`,
		`{"\u006b":"\u0078"}`:               `"\u0078"`,
		`{}`:                                "",
		`{ }`:                               "",
		`{"a":"x","a":"x"}`:                 "",
		`{"a":"x","b":"x"}`:                 "",
		`{"a":"x","b":1}`:                   "",
		`{"a":[1],"b":"x"}`:                 "",
		`{"a":{"b":"x"}}`:                   "",
		`{"a":null}`:                        "",
		`["x"]`:                             "",
		`"x"`:                               "",
		`{"rows":[` + `"x"` + `]}`:          "",
		`{"a":"` + `\ud800` + `"}`:          `"\ud800"`,
		`{"a":"x"` + "\n\t" + ` , "b":"y"}`: "",
	} {
		got, ok := onlyStringMember([]byte(in))
		if string(got) != want || ok != (want != "") {
			t.Errorf("onlyStringMember(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
}

// checkOthers checks Result.Others of res, read from the result r: the
// members it reports are those beside content, structuredContent, isError
// and _meta, in order, and its blocks are plain when no text block has a
// member beside its type and text.
func checkOthers(t *testing.T, r []byte, res *Result) {
	t.Helper()
	var got [][]byte
	plainBlocks, kept := res.Others(func(k, v []byte) { got = append(got, k, v) })
	if !kept {
		return
	}
	var want [][]byte
	wantPlain := true
	jsontext.EachChild(r, func(k, v []byte) bool {
		switch {
		case jsontext.KeyEquals(k, "content"):
			if v[0] == '[' {
				jsontext.EachChild(v, func(_, blk []byte) bool {
					if _, kind, plain := readBlock(blk); kind == kindText && !plain {
						wantPlain = false
					}
					return true
				})
			}
		case jsontext.KeyEquals(k, "structuredContent"), jsontext.KeyEquals(k, "isError"), jsontext.KeyEquals(k, "_meta"):
		default:
			want = append(want, k, v)
		}
		return true
	})
	if !reflect.DeepEqual(got, want) || plainBlocks != wantPlain {
		t.Fatalf("Others of %s: %q, plain blocks %v; want %q, %v", r, got, plainBlocks, want, wantPlain)
	}
}

func TestOthers(t *testing.T) {
	for _, r := range []string{
		`{"content":[{"type":"text","text":"a"}]}`,
		`{"content":[{"type":"text","text":"a"}],"resultType":"complete","_meta":{"k":1}}`,
		`{"x":1,"content":[{"type":"text","text":"a","annotations":{}}],"y":[2]}`,
		`{"content":[{"type":"image","data":"AA=="},{"type":"text","text":"a"}],"z":null}`,
	} {
		res, ok := Parse([]byte(r), nil)
		if !ok {
			t.Fatalf("Parse(%s) failed", r)
		}
		checkOthers(t, []byte(r), res)
	}
}
