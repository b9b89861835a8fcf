package mcpproxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// roundTripFunc is an http.RoundTripper made of a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// bounded runs a request whose body is reqBody through a
// BoundedRoundTripper of max bytes over a server that answers status,
// contentType and body, read one byte at a time, and returns the body the
// SDK would read and what was logged.
func boundedBody(t *testing.T, max int, status int, contentType, body string, length bool) (string, string) {
	t.Helper()
	var log bytes.Buffer
	rt := &BoundedRoundTripper{MaxMessage: max, Log: &log, Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}}, ContentLength: -1,
			Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))}
		if length {
			resp.ContentLength = int64(len(body))
		}
		return resp, nil
	})}
	req, _ := http.NewRequest("POST", "http://server.test/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{}}`))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), log.String()
}

// TestBoundedRoundTripper holds the responses of a Streamable HTTP server
// to the bound: a message within it reaches the SDK byte for byte, in a
// JSON body or an event stream (events of several data lines, comments,
// ids, CRLF line ends, a last event without its blank line); one past it
// becomes an error response for its call, found by its own id, first or
// last, or by the request's; a request or notification of the server's
// past it is left out, with a line on the log.
func TestBoundedRoundTripper(t *testing.T) {
	t.Parallel()
	const max = 100
	big := strings.Repeat("x", 200)
	// drop is the error response standing in for msg, for the call id.
	drop := func(id string, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32050,"message":"the downstream server's response was dropped: the message is ` + strconv.Itoa(len(msg)) + ` bytes, over the limit of 100"}}`
	}
	idLast := `{"result":"` + big + `","jsonrpc":"2.0","id":7}`
	idFirst := `{"jsonrpc":"2.0","id":7,"result":"` + big + `"}`
	noID := `{"result":"` + big + `"}`
	twoLines := "{\"jsonrpc\":\"2.0\",\"id\":9,\n\"result\":\"" + big + "\"}"
	stringID := `{"result":"` + big + `","jsonrpc":"2.0","id":"s"}`
	notification := `{"jsonrpc":"2.0","method":"notifications/message","params":"` + big + `"}`
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		length      bool
		want, log   string
	}{
		{"json within", 200, "application/json", `{"jsonrpc":"2.0","id":42,"result":{}}`, false, `{"jsonrpc":"2.0","id":42,"result":{}}`, ""},
		{"json within, with its length", 200, "application/json", `{"jsonrpc":"2.0","id":42,"result":{}}`, true, `{"jsonrpc":"2.0","id":42,"result":{}}`, ""},
		{"json past, its id last", 200, "application/json", idLast, false, drop("7", idLast), ""},
		{"json past, with its length: not read", 200, "application/json; charset=utf-8", idFirst, true, drop("42", idFirst), ""},
		{"json past, no id in it", 200, "application/json", noID, false, drop("42", noID), ""},
		{"error status, cut at the bound", 500, "text/plain", big, false, big[:max], ""},
		{"events within", 200, "text/event-stream",
			": hello\r\nid: 1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":42,\"result\":{}}\r\n\r\nretry: 10\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
			false,
			": hello\r\nid: 1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":42,\"result\":{}}\r\n\r\nretry: 10\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}", ""},
		{"event past, id first, between two within", 200, "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\nid: 2\nevent: message\ndata: " + strings.Replace(twoLines, "\n", "\ndata: ", 1) + "\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n\n",
			false,
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\nid: 2\nevent: message\ndata: " + drop("9", twoLines) + "\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n\n", ""},
		{"event past, id last, CRLF, at the end", 200, "text/event-stream",
			"id: 3\r\ndata: " + stringID,
			false,
			"id: 3\r\ndata: " + drop(`"s"`, stringID) + "\n\n", ""},
		{"a notification past", 200, "text/event-stream",
			"data: " + notification + "\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n\n",
			false,
			"data: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n\n",
			"agentvalues: dropped a message of the Streamable HTTP server http://server.test/mcp: the message is " + strconv.Itoa(len(notification)) + " bytes, over the limit of 100\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, log := boundedBody(t, max, tc.status, tc.contentType, tc.body, tc.length)
			if got != tc.want || log != tc.log {
				t.Errorf("got %q, log %q\nwant %q, log %q", got, log, tc.want, tc.log)
			}
		})
	}
	// No bound: as it came.
	if got, _ := boundedBody(t, -1, 200, "application/json", `{"result":"`+big+`"}`, false); got != `{"result":"`+big+`"}` {
		t.Errorf("without a bound: %q", got)
	}
}

// FuzzBoundedEvents reads any stream through the bound of a
// BoundedRoundTripper: no event whose data is over the bound reaches the
// SDK but the error response standing in for it, and a stream whose every
// event is within the bound passes byte for byte.
func FuzzBoundedEvents(f *testing.F) {
	f.Add("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", uint8(10))
	f.Add("data: {\"result\":\"xxxxxxxxxxxxxxxx\",\r\ndata: \"id\":2}\r\n\r\n: c\n", uint8(8))
	f.Add("data\n\nid\x00: 2\ndata: {\"method\":\"m\",\"id\":3}\n", uint8(4))
	f.Fuzz(func(t *testing.T, s string, max uint8) {
		var log bytes.Buffer
		req, _ := http.NewRequest("POST", "http://server.test/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"x"}`))
		b := &bounded{max: int64(max), req: req, log: &log, endpoint: "test"}
		e := &boundedEvents{bounded: b, body: io.NopCloser(nil), r: bufio.NewReaderSize(iotest.HalfReader(strings.NewReader(s)), 16)}
		out, err := io.ReadAll(e)
		if err != nil {
			t.Fatal(err)
		}
		within := true
		readEvents(strings.NewReader(s+"\n\n"), func(_ string, data []byte) bool { // the SDK takes a last event that did not end
			within = within && len(data) <= int(max)
			return true
		})
		if within && string(out) != s {
			t.Fatalf("every event within %d bytes, yet the stream changed:\n got %q\nwant %q", max, out, s)
		}
		readEvents(bytes.NewReader(out), func(_ string, data []byte) bool {
			if len(data) > int(max) && !bytes.Contains(data, []byte(`"error":{"code":-32050,"message":"the downstream server's response was dropped: the message is `)) {
				t.Fatalf("an event of %d bytes over the bound of %d reached the SDK: %q", len(data), max, data)
			}
			return true
		})
	})
}
