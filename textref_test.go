package values

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// References continue into the JSON a text holds: a text value that is
// one JSON value, the records of a JSON stream, and a string field that
// holds JSON, as MCP results carry it.
func TestReferencesIntoText(t *testing.T) {
	s := New()
	jsonText, _ := s.Put(`[{"name":"a","size":1},{"name":"b","size":2},{"name":"c"}]`)
	stream := s.PutOutput([]byte("{\"Action\":\"start\",\"N\":0}\n{\"Action\":\"run\",\"N\":1}\n{\"Action\":\"output\",\"N\":2}\n{\"Action\":\"run\",\"N\":3}\n{\"Action\":\"output\",\"N\":4}\n{\"Action\":\"output\",\"N\":5}\n{\"Action\":\"pass\",\"N\":6}\n"))
	mcp, _ := s.Put(json.RawMessage(`{"content":[{"type":"text","text":"[{\"name\":\"x\",\"deps\":[1,2]},{\"name\":\"y\",\"deps\":[]}]"}],"isError":false}`))
	notJSON, _ := s.Put(json.RawMessage(`{"content":[{"type":"text","text":"plain words"}]}`))
	for ref, want := range map[string]string{
		"$" + jsonText + ".1.name":             `"b"`,
		"$" + jsonText + ".-1":                 `{"name":"c"}`,
		"$" + stream + ".0.Action":             `"start"`,
		"$" + stream + ".3.N":                  `3`,
		"$" + stream + ".-1.Action":            `"pass"`,
		"$" + stream + ".5":                    `{"Action":"output","N":5}`,
		"$" + mcp + ".content.0.text.1.name":   `"y"`,
		"$" + mcp + ".content.0.text.0.deps.1": `2`,
		"$" + mcp + ".content.0.text.-1":       `{"name":"y","deps":[]}`,
	} {
		out, _, err := s.Resolve([]byte(`"` + ref + `"`))
		if err != nil || string(out) != want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", ref, out, err, want)
		}
		if p, err := s.Read(ref, 0, 0); err != nil || p.Content != strings.Trim(want, `"`) && p.Content != want {
			t.Errorf("Read(%s) = %q, %v; want %s", ref, p.Content, err, want)
		}
	}
	// The whole values are still the text and the string as given.
	out, _, _ := s.Resolve([]byte(`["$` + jsonText + `","$` + mcp + `.content.0.text"]`))
	var back []string
	if err := json.Unmarshal(out, &back); err != nil || back[0] != `[{"name":"a","size":1},{"name":"b","size":2},{"name":"c"}]` || !strings.HasPrefix(back[1], `[{"name":"x"`) {
		t.Errorf("whole text values: %s, %v", out, err)
	}
	// A path into a string that holds no JSON, or past a record's end.
	for _, ref := range []string{"$" + notJSON + ".content.0.text.0", "$" + stream + ".7", "$" + stream + ".0.Missing"} {
		res, err := s.ResolveDetail([]byte(`"` + ref + `"`))
		if err != nil || len(res.Refs) != 1 || !errors.Is(res.Refs[0].Err, ErrNoPath) {
			t.Errorf("Resolve(%s): %v, %+v; want ErrNoPath", ref, err, res.Refs)
		}
	}
}

// The captured go test -json stream: references name records by index.
func TestReferencesIntoCapturedStream(t *testing.T) {
	data, err := os.ReadFile("testdata/outputs/go-test-json.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	s := New()
	h := s.PutOutput(data)
	for _, i := range []int{0, 1, 100, len(lines) / 2, len(lines) - 1} {
		var rec map[string]any
		json.Unmarshal([]byte(lines[i]), &rec)
		want, _ := json.Marshal(rec["Action"])
		out, _, err := s.Resolve([]byte(`"$` + h + `.` + itoa(i) + `.Action"`))
		if err != nil || string(out) != string(want) {
			t.Errorf("record %d: %s, %v; want %s", i, out, err, want)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
