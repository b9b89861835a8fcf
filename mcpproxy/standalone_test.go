package mcpproxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadEvents(t *testing.T) {
	stream := ": a comment\r\n" +
		"id: 1\r\n" +
		"data: {\"a\":\r\n" +
		"data: 1}\r\n" +
		"\r\n" +
		"event: message\n" +
		"data:no space\n" +
		"\n" +
		"retry: 100\n" +
		"id\n" + // an empty id resets it
		"data\n" + // a field without a colon: empty data
		"\n" +
		"id: 3\n" +
		"data: last, without a blank line after it\n"
	var got []string
	err := readEvents(strings.NewReader(stream), func(id string, data []byte) bool {
		got = append(got, id+"|"+string(data))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1|{\"a\":\n1}", "1|no space", "|"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReadEventsTooLarge(t *testing.T) {
	stream := "data: " + strings.Repeat("x", maxStandaloneEvent/2) + "\n" +
		"data: " + strings.Repeat("y", maxStandaloneEvent/2) + "\n\n"
	calls := 0
	err := readEvents(strings.NewReader(stream), func(string, []byte) bool { calls++; return true })
	if err == nil || !strings.Contains(err.Error(), "over") || calls != 0 {
		t.Errorf("an event over the limit: err %v after %d events", err, calls)
	}
}

func TestReadEventsStops(t *testing.T) {
	calls := 0
	err := readEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(string, []byte) bool { calls++; return false })
	if err != nil || calls != 1 {
		t.Errorf("stopped after the first: err %v, %d events", err, calls)
	}
}

// FuzzReadEvents reads any bytes as an event stream: no panic, every
// event within the bound.
func FuzzReadEvents(f *testing.F) {
	f.Add("id: 1\ndata: {}\n\n")
	f.Add("data: a\r\ndata: b\r\n\r\n: c\n")
	f.Add("data\n\nid\x00: 2\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = readEvents(strings.NewReader(s), func(id string, data []byte) bool {
			if len(data) > maxStandaloneEvent {
				t.Fatalf("an event of %d bytes", len(data))
			}
			return true
		})
	})
}
