package values

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gabriel-vasile/mimetype"
)

// png is a real PNG: the 1x1 image of the PNG specification's examples,
// padded with a comment chunk so that its base64 is long enough to be
// tried.
var png = func() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	return append(b, bytes.Repeat([]byte{0}, 199)...) // 269 bytes: one "=" of padding
}()

func TestBase64Of(t *testing.T) {
	std := base64.StdEncoding.EncodeToString(png)
	for _, tc := range []struct {
		name, body string
		size       int
		typ        string
	}{
		{"standard", std, len(png), "image/png"},
		{"unpadded", base64.RawStdEncoding.EncodeToString(png), len(png), "image/png"},
		{"URL alphabet", base64.URLEncoding.EncodeToString(png), len(png), "image/png"},
		{"escaped slashes and line breaks", strings.ReplaceAll(std[:76], "/", `\/`) + `\r\n` + std[76:], len(png), "image/png"},
		{"a hex digest", strings.Repeat("9f86d081884c7d659a2feaa0c55ad015", 3), 0, ""},
		{"letters", strings.Repeat("abcdefghij", 20), 0, ""},
		{"base64 of plain text", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("plain words of text ", 10))), 0, ""},
		{"a space", std[:100] + " " + std[100:], 0, ""},
		{"two alphabets", std[:100] + "-_" + std[102:], 0, ""},
		{"data after padding", std + "AAAA", 0, ""},
		{"a group of one character", base64.RawStdEncoding.EncodeToString(png) + "AA", 0, ""},
		{"short", std[:40], 0, ""},
	} {
		raw, _ := json.Marshal(tc.body)
		raw = bytes.ReplaceAll(raw, []byte(`\\`), []byte(`\`)) // the body holds its escapes already
		size, typ, ok := base64Of(raw)
		if ok != (tc.typ != "") || size != tc.size || typ != tc.typ {
			t.Errorf("%s: base64Of = %d, %q, %v; want %d, %q", tc.name, size, typ, ok, tc.size, tc.typ)
		}
	}
}

// An MCP image block shows its data's size and type, whether it is an
// item's field or the part that dominates the result.
func TestBase64Previews(t *testing.T) {
	data := base64.StdEncoding.EncodeToString(bytes.Repeat(png, 40))
	block := `{"type":"image","data":"` + data + `","mimeType":"image/png"}`
	want := "base64(bytes=" + size(40*len(png)) + ", type=image/png)"
	for _, out := range []string{
		`{"content":[` + block + `]}`,
		`{"content":[{"type":"text","text":"here it is"},` + block + `]}`,
		`[` + block + `,` + block + `,` + block + `,` + block + `,` + block + `,` + block + `]`,
		`{"image":"` + data + `","note":"` + strings.Repeat("n", 5000) + `","a":1}`,
	} {
		p := preview(t, json.RawMessage(out))
		if !strings.Contains(p, want) || strings.Contains(p, data[:40]) {
			t.Errorf("want %s, and none of the base64, in:\n%s", want, p)
		}
	}
}

// FuzzBase64 checks base64Of against the standard library's decoders: it
// reports the data's size and mimetype's type of its first bytes, and
// only for a string that decodes.
func FuzzBase64(f *testing.F) {
	f.Add([]byte(base64.StdEncoding.EncodeToString(png)))
	f.Add([]byte(base64.RawURLEncoding.EncodeToString(png)))
	f.Add([]byte(strings.Repeat("A", 100)))
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := json.Marshal(string(body))
		if err != nil {
			return
		}
		size, typ, ok := base64Of(raw)
		if !ok {
			return
		}
		text := strings.NewReplacer("\n", "", "\r", "", "=", "").Replace(string(body))
		enc := base64.RawStdEncoding
		if strings.ContainsAny(text, "-_") {
			enc = base64.RawURLEncoding
		}
		data, err := enc.DecodeString(text)
		if err != nil {
			// The last group may hold bits a lenient decoder drops.
			if data, err = enc.Strict().DecodeString(text); err == nil || len(text)%4 == 1 {
				t.Fatalf("base64Of(%q) = %d, %q; it does not decode: %v", body, size, typ, err)
			}
			data = make([]byte, len(text)*3/4)
		}
		if size != len(data) {
			t.Fatalf("base64Of(%q) = %d bytes, decoded %d", body, size, len(data))
		}
		if want := mimetype.Detect(data[:min(len(data), 3072)]).String(); len(data) > 0 && typ != want {
			t.Fatalf("base64Of(%q) type %q, mimetype %q", body, typ, want)
		}
	})
}
