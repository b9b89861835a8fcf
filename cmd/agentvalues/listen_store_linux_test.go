//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListenStore: the gateway serving HTTP with -store keeps each HTTP
// session's values under the session's ID, in a directory and in Redis: a
// gateway started again on the same store continues the session when its
// client comes back with the same Mcp-Session-Id, r1 reading the same,
// and its next handle is r2; another session does not see them.
func TestListenStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	redis := testkit.StartRedis(t)
	for _, spec := range []string{"dir:" + filepath.Join(t.TempDir(), "values"), "redis://" + redis.Addr + "/0"} {
		t.Run(strings.SplitN(spec, ":", 2)[0], func(t *testing.T) {
			call := func(url, sid, name, args string) string {
				t.Helper()
				r := postString(url, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`)
				if r.err != nil || r.status != 200 || !strings.Contains(r.body, `"result"`) {
					t.Fatalf("%s in session %s: %d %v %.500s", name, sid, r.status, r.err, r.body)
				}
				return r.body
			}
			first := startListener(t, "gateway", "--config", path, "--listen", "0", "-store", spec, "-start-wait", "10m")
			sid := initialize(t, first.url)
			waitHTTPTool(t, first.url, sid, "blob")
			if body := call(first.url, sid, "blob", `{"kind":"json","size":2000}`); !strings.Contains(body, `"agentvalues/handle":"r1"`) {
				t.Fatalf("the first result is not r1: %.500s", body)
			}
			page := call(first.url, sid, "read_value", `{"ref":"r1","limit":300}`)
			// A new session's handles start past those handed out before
			// it, durable or not: an old transcript's "$r1" names nothing
			// in it.
			fresh := initialize(t, first.url)
			if body := call(first.url, fresh, "blob", `{"kind":"text","size":10}`); !strings.Contains(body, `"agentvalues/handle":"r2"`) {
				t.Errorf("a new session's first result is not r2: %.500s", body)
			}
			first.cmd.Process.Signal(syscall.SIGTERM)
			first.cmd.Wait()

			second := startListener(t, "gateway", "--config", path, "--listen", "0", "-store", spec, "-start-wait", "10m")
			if again := call(second.url, sid, "read_value", `{"ref":"r1","limit":300}`); again != page {
				t.Errorf("r1 after the restart reads\n%.300s\nwant\n%.300s\nstderr:\n%s", again, page, second.stderr())
			}
			waitHTTPTool(t, second.url, sid, "blob")
			if body := call(second.url, sid, "blob", `{"kind":"text","size":100}`); !strings.Contains(body, `"agentvalues/handle":"r2"`) {
				t.Errorf("the next result after the restart is not r2: %.500s", body)
			}
			second.waitStderr(t, "continued HTTP session "+sid[:6]+"… from its store")
			other := initialize(t, second.url)
			if body := call(second.url, other, "read_value", `{"ref":"r1"}`); !strings.Contains(body, `"isError":true`) {
				t.Errorf("another session reads r1: %.300s", body)
			}
		})
	}
}

// TestListenStoreSDKClient: the go-sdk's own client, connected to the
// gateway serving HTTP with -store, goes on calling in its session across
// a restart of the gateway on the same address and store: r1 reads the
// same after it.
func TestListenStoreSDKClient(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "dir:" + filepath.Join(t.TempDir(), "values")
	first := startListener(t, "gateway", "--config", path, "--listen", "0", "-store", spec, "-start-wait", "10m")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := e2eClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: first.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	waitTools(t, cs, "blob")
	if h := call("blob", `{"kind":"json","size":2000}`).Meta[mcpproxy.MetaHandle]; h != "r1" {
		t.Fatalf("the first handle is %v", h)
	}
	page := textOf(call("read_value", `{"ref":"r1","limit":300}`))
	first.cmd.Process.Signal(syscall.SIGTERM)
	first.cmd.Wait()

	addr := strings.TrimSuffix(strings.TrimPrefix(first.url, "http://"), "/mcp")
	second := startListener(t, "gateway", "--config", path, "--listen", addr, "-store", spec, "-start-wait", "10m")
	if again := textOf(call("read_value", `{"ref":"r1","limit":300}`)); again != page {
		t.Errorf("r1 after the restart reads\n%.300s\nwant\n%.300s\nstderr:\n%s", again, page, second.stderr())
	}
	waitTools(t, cs, "blob")
	if h := call("blob", `{"kind":"text","size":100}`).Meta[mcpproxy.MetaHandle]; h != "r2" {
		t.Errorf("the next handle after the restart is %v, want r2", h)
	}
}

// waitHTTPTool checks that the gateway at url offers the tool name in the
// session sid. The tests start the gateway with a long -start-wait: a
// listing waits until its servers have started (or failed once).
func waitHTTPTool(t *testing.T, url, sid, name string) {
	t.Helper()
	r := postString(url, sid, `{"jsonrpc":"2.0","id":"tools","method":"tools/list"}`)
	if r.err != nil || !strings.Contains(r.body, `"name":"`+name+`"`) {
		t.Fatalf("the gateway does not offer %s: %d %v %.300s", name, r.status, r.err, r.body)
	}
}
