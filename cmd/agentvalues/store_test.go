package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/internal/testkit"
	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayStore runs the gateway with -store and -session, then again:
// the second run continues the first's session (its handle reads back and
// numbering goes on), in a directory and, as another worker of a fleet
// would, in Redis.
func TestGatewayStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	redis := testkit.StartRedis(t)
	for _, spec := range []string{"dir:" + filepath.Join(t.TempDir(), "values"), "redis://" + redis.Addr + "/0"} {
		t.Run(strings.SplitN(spec, ":", 2)[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			call := func(cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return res
			}
			first, _ := connectCommand(t, "gateway", "--config", path, "--store", spec, "--session", "run-7")
			waitTools(t, first, "blob")
			blob := call(first, "blob", `{"kind":"json","size":20000}`)
			if h := blob.Meta[mcpproxy.MetaHandle]; h != "r1" {
				t.Fatalf("first handle %v", h)
			}
			page := textOf(call(first, "read_value", `{"ref":"r1","limit":300}`))
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			second, stderr := connectCommand(t, "gateway", "--config", path, "--store", spec, "--session", "run-7")
			waitTools(t, second, "blob")
			if again := textOf(call(second, "read_value", `{"ref":"r1","limit":300}`)); again != page {
				t.Errorf("r1 in the second run reads\n%.300s\nwant\n%.300s\nstderr:\n%s", again, page, stderr.String())
			}
			if h := call(second, "blob", `{"kind":"text","size":100}`).Meta[mcpproxy.MetaHandle]; h != "r2" {
				t.Errorf("the second run's first handle is %v, want r2", h)
			}
			if err := second.Close(); err != nil { // a directory is open in one process at a time
				t.Fatal(err)
			}
			other, _ := connectCommand(t, "gateway", "--config", path, "--store", spec, "--session", "another")
			if res := call(other, "read_value", `{"ref":"r1"}`); !res.IsError {
				t.Errorf("another session reads r1: %.200s", textOf(res))
			}
		})
	}
}

func TestStoreFlagErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"a":{"command":"x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway", "--config", path, "--store", "s3://bucket"}, `want dir:PATH`},
		{[]string{"gateway", "--config", path, "--store", "s3://bucket", "--listen", "0"}, `want dir:PATH`},
		{[]string{"proxy", "--store", "redis://127.0.0.1:1/0", "--", "x"}, "does not answer"},
	} {
		command := gatewayCommand
		if tc.args[0] == "proxy" {
			command = proxyCommand
		}
		err := command(tc.args[1:], strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
