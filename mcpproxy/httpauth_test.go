package mcpproxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPToken: with a Token, every request without it as a bearer token
// (none, another scheme, a wrong token, the token with a byte more) is
// answered 401 with WWW-Authenticate: Bearer and a JSON-RPC error saying
// what is missing, and opens no session; a DELETE without it ends
// nothing. With the token (the scheme in any case) the session is served.
func TestHTTPToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	s := newArgsServer(t, &HTTPOptions{Token: token})
	initialize := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	for _, tc := range []struct {
		name, auth, challenge, msg string
	}{
		{"none", "", `Bearer realm="mcp"`, "the request has no Authorization header: this server requires Authorization: Bearer <token>"},
		{"basic", "Basic czNjcmV0LXRva2Vu", `Bearer realm="mcp"`, "the Authorization header is not one Bearer token"},
		{"wrong", "Bearer s3cret-tokem", `Bearer realm="mcp", error="invalid_token"`, "the bearer token is not this server's"},
		{"longer", "Bearer " + token + "x", `Bearer realm="mcp", error="invalid_token"`, "the bearer token is not this server's"},
		{"prefix", "Bearer " + token[:4], `Bearer realm="mcp", error="invalid_token"`, "the bearer token is not this server's"},
		{"empty", "Bearer ", `Bearer realm="mcp", error="invalid_token"`, "the bearer token is not this server's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := rawPost(t, s.url, "", initialize, false, "Authorization", tc.auth)
			if status != http.StatusUnauthorized || h.Get("WWW-Authenticate") != tc.challenge ||
				!strings.Contains(body, `"error":{"code":-32052,"message":"mcpproxy: Unauthorized: `+tc.msg) {
				t.Errorf("initialize: %d WWW-Authenticate %q %s\nwant 401, %q and %q", status, h.Get("WWW-Authenticate"), body, tc.challenge, tc.msg)
			}
			if sid := h.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a session was opened: %s", sid)
			}
		})
	}
	for range s.server.Sessions() {
		t.Fatal("a request refused opened a session")
	}

	status, h, body := rawPost(t, s.url, "", initialize, false, "Authorization", "bearer "+token)
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize with the token: %d %s", status, body)
	}
	if status, _, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false, "Authorization", "Bearer "+token); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	// Requests of the session need the token too.
	if status, _, _ := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), false); status != http.StatusUnauthorized {
		t.Errorf("a ping of the session without the token: %d, want 401", status)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, s.url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %s, want 401", method, resp.Status)
		}
	}
	if status, _, body := rawPost(t, s.url, sid, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"args","arguments":{"a":1}}}`), false, "Authorization", "Bearer "+token); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("a call with the token: %d %s", status, body)
	}
}

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		ok    bool
	}{
		{"abc-DEF_123.~+/=", true},
		{"", false},
		{"two words", false},
		{"line\n", false},
		{"tëst", false},
	} {
		err := CheckToken(tc.token)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadToken)) {
			t.Errorf("CheckToken(%q) = %v", tc.token, err)
		}
	}
}
