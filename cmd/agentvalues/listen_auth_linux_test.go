//go:build linux

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenToken drives the built proxy serving HTTP with a bearer token:
// from AGENTVALUES_TOKEN on every interface, from -token-file (which wins
// over the environment) on loopback, and none with -insecure-no-auth.
// A request without the token is answered 401 with WWW-Authenticate:
// Bearer; with it, the session is served.
func TestListenToken(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		token string // "": none required
	}{
		{"env", []string{tokenEnv + "=env-token"}, []string{"--listen", "0.0.0.0:0"}, "env-token"},
		{"file", []string{tokenEnv + "=env-token"}, []string{"--listen", "0", "-token-file", file}, "file-token"},
		{"insecure", nil, []string{"--listen", "0.0.0.0:0", "-insecure-no-auth"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := startListenerEnv(t, tc.env, append(append([]string{"proxy"}, tc.args...), "--", os.Args[0], blobServerArg)...)
			// Every interface: reach it on loopback.
			url := strings.Replace(strings.Replace(l.url, "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
			if tc.token != "" {
				for _, auth := range []string{"", "Bearer wrong", "Bearer env-token"} {
					if auth == "Bearer "+tc.token {
						continue
					}
					r := postString(url, "", initializeRequest, "Authorization", auth)
					code, msg, _ := r.rpcError()
					if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") || code != -32052 || !strings.Contains(msg, "Unauthorized") {
						t.Errorf("initialize with Authorization %q: %d %q %.300s, want 401", auth, r.status, r.header.Get("WWW-Authenticate"), r.body)
					}
				}
			}
			auth := []string{}
			if tc.token != "" {
				auth = []string{"Authorization", "Bearer " + tc.token}
			}
			sid := initialize(t, url, auth...)
			r := postString(url, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}`, auth...)
			if r.status != http.StatusOK || !strings.Contains(r.body, `"result"`) {
				t.Errorf("a call with the token: %d %.300s", r.status, r.body)
			}
			if tc.token != "" {
				if r := postString(url, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.status != http.StatusUnauthorized {
					t.Errorf("a request of the session without the token: %d, want 401", r.status)
				}
			}
		})
	}
}
