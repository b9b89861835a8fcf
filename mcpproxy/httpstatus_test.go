package mcpproxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestHTTPStatus: the HTTP statuses the Streamable HTTP specification
// (2025-06-18, Session Management) gives. A POST without a session id of
// anything but an initialize request is answered 400 with a JSON-RPC error
// saying so (with the request's id, when it has one) and opens no
// session; a GET or DELETE without one is 400; a request naming a session
// the server does not know, or one its DELETE ended, is 404.
func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	s := newArgsServer(t, nil)
	const noSession = `"message":"mcpproxy: Bad Request: the request has no Mcp-Session-Id header: every message but initialize belongs to a session`
	for _, tc := range []struct {
		name, body, want string
		version          string // the Mcp-Protocol-Version header
	}{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `"id":1,"error":{"code":-32600,` + noSession, ""},
		{"tools/call", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"args","arguments":{}}}`, `"id":"c","error":{"code":-32600,` + noSession, ""},
		{"ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, `"id":2,"error":{"code":-32600,` + noSession, ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `"id":null,"error":{"code":-32600,` + noSession, ""},
		{"initialize notification", `{"jsonrpc":"2.0","method":"initialize","params":{}}`, `"id":null,"error":{"code":-32600,` + noSession, ""},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, `"id":3,"error":{"code":-32600,` + noSession, ""},
		{"batch", `[{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}]`, `"id":null,"error":{"code":-32600,` + noSession, ""},
		{"not JSON", `{"jsonrpc":`, "malformed", ""},
		// Protocol 2026-07-28 has no sessions: the SDK answers that it is
		// not supported, with the versions that are.
		{"stateless header", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"args","arguments":{}}}`, `is not supported by this server","data":{"supported":[`, "2026-07-28"},
		{"stateless meta", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"args","arguments":{}}}`, `is not supported by this server","data":{"supported":[`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := rawPost(t, s.url, "", []byte(tc.body), false, "Mcp-Protocol-Version", tc.version)
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s\nwant 400 and %s", status, body, tc.want)
			}
			if sid := h.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a session was opened: %s", sid)
			}
		})
	}
	for range s.server.Sessions() {
		t.Fatal("a request without a session left a session open")
	}

	sid := rawSession(t, s.url) // initialize without a session: served
	if status, _, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`), false); status != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("tools/list in the session: %d %s", status, body)
	}
	do := func(method, sid string) int {
		t.Helper()
		req, _ := http.NewRequest(method, s.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if got := do(method, ""); got != http.StatusBadRequest {
			t.Errorf("%s without a session: %d, want 400", method, got)
		}
		if got := do(method, "UNKNOWN"); got != http.StatusNotFound {
			t.Errorf("%s of an unknown session: %d, want 404", method, got)
		}
	}
	if status, _, body := rawPost(t, s.url, "UNKNOWN", []byte(`{"jsonrpc":"2.0","id":6,"method":"ping"}`), false); status != http.StatusNotFound {
		t.Errorf("a POST of an unknown session: %d %s, want 404", status, body)
	}
	if got := do(http.MethodDelete, sid); got != http.StatusNoContent {
		t.Fatalf("DELETE: %d", got)
	}
	if status, _, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`), false); status != http.StatusNotFound {
		t.Errorf("a POST of the session ended: %d %s, want 404", status, body)
	}
}
