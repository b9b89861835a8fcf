package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/jsontext"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer is a downstream MCP server written by hand, so that a test
// controls every byte of its results: it answers tools/call of its one
// tool, "result", with results[args.case], as is (see scriptServer).
func rawServer(r io.Reader, w io.WriteCloser, results map[string]string) {
	(&scriptServer{results: results}).serve(r, w)
}

// lineDownstream is a transport to a server over r and w through the
// proxy's own line connection, as CommandTransport connects.
type lineDownstream struct {
	r io.Reader
	w io.WriteCloser
}

func (t lineDownstream) Connect(context.Context) (mcp.Connection, error) {
	return wire.NewConn(t.r, t.w, t.w, -1, false, nil), nil
}

// rawCases are results that must be stored and shown the same on both
// paths: each kind of content the raw path takes, and the results it
// leaves to the SDK path.
func rawCases() map[string]string {
	var rows []map[string]any
	for i := range 400 {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("item-%d \"q\" é", i), "big": int64(1)<<60 + int64(i)})
	}
	compact, _ := json.Marshal(map[string]any{"rows": rows, "next": nil})
	pretty, _ := json.MarshalIndent(map[string]any{"rows": rows, "next": nil}, "", "  ")
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var log strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&log, "2026-12-03T10:%02d:00Z INFO line %d: tab\there, quote \" and ✓\n", i%60, i)
	}
	text := func(s string) string { return `{"type":"text","text":` + str(s) + `}` }
	// Results of several MiB: their lines are mapped (on Linux), and
	// storing them gives the line's memory back a piece at a time.
	bigLog := strings.Repeat(log.String(), 3<<19/log.Len()+1)
	var bigRows strings.Builder
	bigRows.WriteString(`{"rows":[`)
	for i := 0; bigRows.Len() < 5<<18; i++ {
		if i > 0 {
			bigRows.WriteByte(',')
		}
		fmt.Fprintf(&bigRows, `{"id":%d,"name":"item-%d \"q\" é","tags":["a","b"]}`, i, i)
	}
	bigRows.WriteString(`]}`)
	big := bigRows.String()
	bigEscapes := strings.Repeat(`\"x\"\\ \ud83d\ude00 \ud800 \u00e9 `, 3<<19/36)
	// More blocks than an outline keeps (see parseRawBlocks).
	var many, manyRows []string
	for i := range 3000 {
		many = append(many, text(fmt.Sprintf("block %d \"q\" é", i)))
	}
	for i := range 3000 {
		row := fmt.Sprintf(`%d,`, i)
		switch i {
		case 0:
			row = "[" + row
		case 2999:
			row = "2999]"
		}
		manyRows = append(manyRows, text(row))
	}
	manyBlocks := strings.Join(many, ",")
	return map[string]string{
		"many blocks":                `{"content":[` + manyBlocks + `]}`,
		"many blocks one large":      `{"_meta":{"before":1},"content":[` + manyBlocks + `,` + text(bigLog) + `,` + manyBlocks + `],"isError":false}`,
		"many blocks structured":     `{"content":[` + manyBlocks + `],"structuredContent":` + string(compact) + `}`,
		"many blocks mirror":         `{"content":[` + manyBlocks + `],"structuredContent":{"content":"x"}}`,
		"many blocks same":           `{"content":[` + strings.Join(manyRows, ",") + `],"structuredContent":` + strings.Join(strings.Fields(strings.NewReplacer(`{"type":"text","text":"`, "", `"}`, "").Replace(strings.Join(manyRows, " "))), "") + `}`,
		"many blocks and an image":   `{"content":[` + manyBlocks + `,{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
		"many blocks, one not text":  `{"content":[` + manyBlocks + `,{"type":"text","text":5}]}`,
		"many blocks, twice":         `{"content":[` + manyBlocks + `],"content":[]}`,
		"large text":                 `{"content":[` + text(bigLog) + `]}`,
		"large json text":            `{"content":[` + text(big) + `]}`,
		"large structured same":      `{"content":[` + text(big) + `],"structuredContent":` + big + `}`,
		"large structured other":     `{"content":[` + text(bigLog) + `],"structuredContent":` + big + `,"_meta":{"after":"the large members"}}`,
		"large structured mirror":    `{"content":[` + text(bigLog) + `],"structuredContent":{"content":` + str(bigLog) + `}}`,
		"large blocks":               `{"content":[` + text(bigLog) + `,` + text(big) + `],"isError":true}`,
		"large escapes":              `{"content":[{"type":"text","text":"` + bigEscapes + `"}]}`,
		"text":                       `{"content":[` + text(log.String()) + `]}`,
		"json text":                  `{"content":[` + text(string(compact)) + `]}`,
		"structured same":            `{"content":[` + text(string(compact)) + `],"structuredContent":` + string(compact) + `}`,
		"structured pretty":          `{"content":[` + text(string(pretty)) + `],"structuredContent":` + string(compact) + `}`,
		"structured other":           `{"content":[` + text(log.String()) + `],"structuredContent":` + string(compact) + `}`,
		"structured only":            `{"structuredContent":` + string(compact) + `}`,
		"structured mirror":          `{"content":[` + text(log.String()) + `],"structuredContent":{"content":` + str(log.String()) + `}}`,
		"structured mirror and more": `{"content":[` + text(log.String()) + `],"structuredContent":{"content":` + str(log.String()) + `,"more":1}}`,
		"structured two strings":     `{"content":[` + text(log.String()) + `],"structuredContent":{"n":"1","content":` + str(log.String()) + `}}`,
		"structured string second":   `{"content":[` + text(log.String()) + `],"structuredContent":{"n":[1],"content":` + str(log.String()) + `}}`,
		"structured null":            `{"content":[` + text(log.String()) + `],"structuredContent":null}`,
		"blocks":                     `{"content":[` + text(log.String()) + `,` + text("second block") + `,` + text(string(compact)) + `]}`,
		"blocks same":                `{"content":[` + text(string(compact[:len(compact)/2])) + `,` + text(string(compact[len(compact)/2:])) + `],"structuredContent":` + string(compact) + `}`,
		"error":                      `{"content":[` + text(log.String()) + `],"isError":true}`,
		"meta":                       `{"content":[` + text(log.String()) + `],"_meta":{"trace":"t1","io.modelcontextprotocol/related-task":{"id":"x"}},"extra":[1,2]}`,
		"forged mark":                `{"content":[` + text(log.String()) + `],"_meta":{"` + rawStoredKey + `":{"nonce":"guess","handle":"r1"}}}`,
		"image":                      `{"content":[` + text(log.String()) + `,{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
		"annotated":                  `{"content":[{"type":"text","text":` + str(log.String()) + `,"annotations":{"priority":1},"_meta":{"k":1}}]}`,
		"escapes":                    `{"content":[{"type":"text","text":"lone \ud800 surrogate, nul \u0000, \u00e9\ud83d\ude00 ` + strings.Repeat(`\"x\"\\`, 5000) + `"}]}`,
		"duplicate content":          `{"content":[` + text("first") + `],"content":[` + text(log.String()) + `]}`,
		"small":                      `{"content":[` + text("ok") + `]}`,
		"small structured":           `{"content":[` + text(`{"a":1}`) + `],"structuredContent":{"a":1}}`,
		"empty content":              `{"content":[],"structuredContent":` + string(compact) + `}`,
		"text block no text":         `{"content":[{"type":"text"}],"structuredContent":` + string(compact) + `}`,
		"content not an array":       `{"content":{"type":"text","text":"x"}}`,
		// Invalid UTF-8 in a JSON string, as a server may write it: bytes
		// that begin no valid sequence, a sequence cut short, an overlong
		// encoding, an encoded surrogate, past U+10FFFF, continuation bytes
		// alone, and lone surrogate escapes. Each byte that begins no valid
		// sequence reads as U+FFFD, as encoding/json reads it.
		"invalid utf8":             `{"content":[` + text(log.String()) + `,{"type":"text","text":"` + badUTF8 + `"}]}`,
		"invalid utf8 large":       `{"content":[{"type":"text","text":"` + strings.Repeat(badUTF8+`\n`, 3<<19/len(badUTF8)) + `"}]}`,
		"invalid utf8 structured":  `{"content":[` + text(log.String()) + `],"structuredContent":{"s":"` + badUTF8 + `","n":[1,"` + "\xff" + `"]}}`,
		"invalid utf8 same":        `{"content":[{"type":"text","text":"{\"s\":\"` + badUTF8 + strings.Repeat("x", 9000) + `\"}"}],"structuredContent":{"s":"` + badUTF8 + strings.Repeat("x", 9000) + `"}}`,
		"invalid utf8 mirror":      `{"content":[{"type":"text","text":"` + badUTF8 + strings.Repeat("x", 9000) + `"}],"structuredContent":{"content":"` + badUTF8 + strings.Repeat("x", 9000) + `"}}`,
		"small invalid utf8":       `{"content":[{"type":"text","text":"` + badUTF8 + `"}]}`,
		"small invalid utf8 meta":  `{"content":[{"type":"text","text":"ok"}],"_meta":{"k":"` + badUTF8 + `"}}`,
		"small invalid structured": `{"content":[{"type":"text","text":"ok"}],"structuredContent":{"s":"` + badUTF8 + `"}}`,
	}
}

// badUTF8 is the body of a JSON string holding invalid UTF-8 of every
// kind, and lone surrogate escapes, between valid text.
const badUTF8 = "a\xffb \xe2\x82 c\xc0\xafd \xed\xa0\x80e \xf4\x90\x80\x80f \x80\xbf g\xf0\x9f\x98 é ✓ \\ud800 \\udc00x \\ud800\\u0041 \\ud800\\ud83d\\ude00 h\xfe"

// TestRawPathMatchesSDKPath calls every case through a proxy whose results
// all take the raw path and through one whose results all take the SDK
// path, over the proxy's own line connection and over the SDK's: the agent
// must get the same result and the store must hold the same values.
func TestRawPathMatchesSDKPath(t *testing.T) {
	cases := rawCases()
	type outcome struct {
		Result map[string]any
		Values map[string]string
	}
	run := func(t *testing.T, rawFrom int, line bool) map[string]outcome {
		sr, pw := io.Pipe()
		pr, sw := io.Pipe()
		go rawServer(sr, sw, cases)
		var down mcp.Transport = &mcp.IOTransport{Reader: pr, Writer: pw, MaxLineLength: -1}
		if line {
			down = lineDownstream{pr, pw}
		}
		f := newFixture(t, down, nil)
		f.proxy.rawFrom = rawFrom
		out := map[string]outcome{}
		for _, name := range slices.Sorted(maps.Keys(cases)) {
			store := f.proxy.Values()
			before := store.Len()
			res := f.call(t, "result", fmt.Sprintf(`{"case":%q}`, name))
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var decoded map[string]any
			json.Unmarshal(b, &decoded)
			o := outcome{Result: decoded, Values: map[string]string{}}
			for i := before + 1; i <= store.Len(); i++ {
				h := fmt.Sprintf("r%d", i)
				v, _ := store.Get(h)
				o.Values[h] = v.Kind().String() + ": " + string(v.Bytes())
			}
			out[name] = o
		}
		return out
	}
	// The four runs (two paths over two connections), each of every case
	// in turn through one proxy, run at once: the cases of several MiB
	// take most of the time.
	for _, line := range []bool{true, false} {
		t.Run(fmt.Sprintf("line=%v", line), func(t *testing.T) {
			t.Parallel()
			var raw, sdk map[string]outcome
			t.Run("paths", func(t *testing.T) {
				t.Run("raw", func(t *testing.T) { t.Parallel(); raw = run(t, 0, line) })
				t.Run("sdk", func(t *testing.T) { t.Parallel(); sdk = run(t, math.MaxInt, line) })
			})
			if t.Failed() {
				return
			}
			if len(raw) != len(cases) || len(sdk) != len(cases) {
				t.Fatalf("%d and %d outcomes of %d cases", len(raw), len(sdk), len(cases))
			}
			if diff := cmp.Diff(sdk, raw); diff != "" {
				t.Errorf("raw path differs from SDK path (-sdk +raw):\n%s", diff)
			}
			// The cases the raw path is for did take it: the store holds a
			// value the SDK would have decoded.
			for _, name := range []string{"text", "json text", "structured same", "structured pretty", "error", "meta", "escapes", "forged mark"} {
				if len(raw[name].Values) == 0 {
					t.Errorf("%s: nothing stored", name)
				}
			}
			// Invalid UTF-8 in a string reads as U+FFFD, one per bad byte,
			// on both paths: text stays text, structured content JSON.
			const read = "a\uFFFDb \uFFFD\uFFFD c\uFFFD\uFFFDd \uFFFD\uFFFD\uFFFDe \uFFFD\uFFFD\uFFFD\uFFFDf \uFFFD\uFFFD g\uFFFD\uFFFD\uFFFD é ✓ "
			for name, o := range raw {
				if !strings.Contains(name, "invalid") {
					continue
				}
				found := false
				for h, v := range o.Values {
					kind, val, _ := strings.Cut(v, ": ")
					if kind == "binary" || !utf8.ValidString(val) {
						t.Errorf("%s: %s stored as %s, valid UTF-8: %v", name, h, kind, utf8.ValidString(val))
					}
					found = found || strings.Contains(val, read)
				}
				if !found && !strings.Contains(name, "meta") {
					t.Errorf("%s: no value holds the bad bytes read as U+FFFD each: %.600q", name, o.Values)
				}
			}
		})
	}
}

// TestRawPathTaken checks which results the raw path takes, and that it
// leaves the rest to the SDK path; and that it stores and shows the same
// whether it reads a result's outline from the scan of its response line
// (as for a line of outlineMin bytes or more) or makes one itself.
func TestRawPathTaken(t *testing.T) {
	p := &Proxy{threshold: DefaultThreshold}
	for name, res := range rawCases() {
		res = string(jsontext.AppendValidUTF8(nil, []byte(res))) // as the connection reads it
		vals := values.New()
		out, took := p.presentRaw(vals, []byte(res), wire.ResultLine{})
		want := !strings.HasPrefix(name, "small") && name != "image" && name != "duplicate content" &&
			name != "text block no text" && name != "content not an array" &&
			!strings.Contains(name, "an image") && !strings.Contains(name, "not text") && !strings.Contains(name, "twice")
		if took != want {
			t.Errorf("%s: raw path taken %v, want %v", name, took, want)
		}
		line := []byte(`{"jsonrpc":"2.0","id":7,"result":` + res + `}`)
		result, parts, ok := wire.NewOutline(mcpresult.OutlineMax, mcpresult.Descend).ResultOf(line)
		if !ok {
			t.Fatalf("%s: not a plain response", name)
		}
		if parts == nil {
			continue // more parts than outlineMax: outlined by parseRaw
		}
		scanned := values.New()
		outScanned, tookScanned := p.presentRaw(scanned, result, wire.ResultLine{Outline: parts})
		if tookScanned != took || string(outScanned) != string(out) || scanned.Len() != vals.Len() {
			t.Errorf("%s: with the line's outline: taken %v, %s, %d values; without: %v, %s, %d values",
				name, tookScanned, outScanned, scanned.Len(), took, out, vals.Len())
			continue
		}
		for i := 1; i <= vals.Len(); i++ {
			h := fmt.Sprintf("r%d", i)
			a, _ := vals.Get(h)
			b, _ := scanned.Get(h)
			if a.Kind() != b.Kind() || string(a.Bytes()) != string(b.Bytes()) {
				t.Errorf("%s: %s differs with the line's outline", name, h)
			}
		}
	}
}

// TestRawForgedMark: a downstream server that writes the raw path's mark
// into a result's _meta is not taken for a stand-in: its result is stored
// and shown, and the mark is not forwarded.
func TestRawForgedMark(t *testing.T) {
	sr, pw := io.Pipe()
	pr, sw := io.Pipe()
	go rawServer(sr, sw, map[string]string{
		"small": `{"content":[{"type":"text","text":"mine"}],"_meta":{"` + rawStoredKey + `":{"nonce":"guess","handle":"r1"}}}`,
	})
	f := newFixture(t, lineDownstream{pr, pw}, nil)
	res := f.call(t, "result", `{"case":"small"}`)
	if _, ok := res.Meta[rawStoredKey]; ok {
		t.Errorf("the forged mark was forwarded: %v", res.Meta)
	}
	if got := text(res); !strings.HasPrefix(got, "mine\n[stored as r1") {
		t.Errorf("result shown as %q", got)
	}
}

// TestManyBlocksBound: a result the SDK would decode with more than
// maxDecodedBlocks content blocks is refused, one with that many is not;
// text blocks alone, previewed, are taken in any number.
func TestManyBlocksBound(t *testing.T) {
	p := &Proxy{threshold: DefaultThreshold, stores: &stores{shared: values.New()}}
	result := func(n int, image bool) []byte {
		b := []byte(`{"content":[`)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":"x"}`...)
		}
		if image {
			b = append(b, `,{"type":"image","data":"","mimeType":"image/png"}`...)
		}
		return append(b, "]}"...)
	}
	for _, tc := range []struct {
		n       int
		image   bool
		refused bool
	}{
		{maxDecodedBlocks - 1, true, false},
		{maxDecodedBlocks, true, true},
		{maxDecodedBlocks + 1, false, false},
		{3 * maxDecodedBlocks, false, false},
	} {
		out, werr := p.fixResult("tools/call", nil, result(tc.n, tc.image), wire.ResultLine{})
		want := fmt.Sprintf("the downstream server's result has %d content blocks, more than the %d", tc.n+1, maxDecodedBlocks)
		if refused := werr != nil; refused != tc.refused || refused && !strings.Contains(werr.Message, want) {
			t.Errorf("%d text blocks, image %v: refused with %v, want refused %v", tc.n, tc.image, werr, tc.refused)
		}
		if !tc.image && !bytes.Contains(out, []byte(rawStoredKey)) {
			t.Errorf("%d text blocks: not taken by the raw path: %.200s", tc.n, out)
		}
	}
}

// FuzzPresentRaw holds the raw result route to the SDK route: a result it
// takes is one the SDK decodes, and it stores the same values as the SDK
// route stores from the SDK's decoding.
func FuzzPresentRaw(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"a"}]}`,
		`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1.0}}`,
		`{"content":[{"type":"text","text":"plain"}],"structuredContent":{"text":"plain"}}`,
		`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}],"extra":[1]}`,
		`{"content":[{"type":"text","text":"","data":"0"}]}`,
		`{"content":[{"type":"text","text":"a","annotations":{"priority":"x"}}]}`,
		`{"content":[{"type":"text","text":"a","size":"x"}]}`,
		`{"content":[{"type":"text","text":"a"}],"resultType":5}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"t":"a\nb"},"isError":true,"_meta":{"k":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, r []byte) {
		if !json.Valid(r) {
			return
		}
		r = jsontext.AppendValidUTF8(nil, r) // as the connection reads it
		if jsontext.Valid(r) != nil {
			return
		}
		p := &Proxy{threshold: -1} // every result previewed: the raw result route takes what it can
		raw := values.New()
		if _, took := p.presentRaw(raw, r, wire.ResultLine{}); !took {
			return
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(keepContent(wrapStructured(r)), &res); err != nil {
			t.Fatalf("the raw result route took %s, which the SDK refuses: %v", r, err)
		}
		sdk := values.New()
		p.present(sdk, &res, nil)
		if raw.Len() != sdk.Len() {
			t.Fatalf("%s: the raw result route stored %d values, the SDK route %d", r, raw.Len(), sdk.Len())
		}
		for i := 1; i <= raw.Len(); i++ {
			h := fmt.Sprintf("r%d", i)
			a, _ := raw.Get(h)
			b, _ := sdk.Get(h)
			if a.Kind() != b.Kind() || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("%s: %s is %s %q on the raw result route, %s %q on the SDK route", r, h, a.Kind(), a.Bytes(), b.Kind(), b.Bytes())
			}
		}
	})
}
