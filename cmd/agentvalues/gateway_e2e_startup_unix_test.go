//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayIssueRepro runs the gateway, with its default flags, over
// issue 29's repro: the real server-memory beside a server that never
// speaks (sleep 100000). initialize is answered, and the memory server's
// tools are listed and called, while the hung server is still starting
// (it never stops doing so); over stdio and over Streamable HTTP.
func TestGatewayIssueRepro(t *testing.T) {
	t.Parallel()
	memory := memoryServer.command(t)
	for _, over := range []string{"stdio", "http"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			memoryFile := filepath.Join(t.TempDir(), "memory.jsonl")
			config := writeConfig(t, map[string]any{
				"memory": map[string]any{"command": memory[0], "args": memory[1:], "env": map[string]string{"MEMORY_FILE_PATH": memoryFile}},
				"stuck":  map[string]any{"command": "sleep", "args": []string{"100000"}},
			})
			cs, stderr := connectGateway(t, over, config, e2eClient(nil), clientProtocol)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			waitTools(t, cs, "create_entities", "read_graph")
			call := func(name, args string) *mcp.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
				}
				return res
			}
			if res := call("create_entities", `{"entities":[{"name":"gateway","entityType":"program","observations":["answers at once"]}]}`); res.IsError {
				t.Fatalf("create_entities: %s", textOf(res))
			}
			if res := call("read_graph", `{}`); res.IsError || !strings.Contains(textOf(res), "answers at once") {
				t.Errorf("read_graph: %.300s", textOf(res))
			}
			if kept, err := os.ReadFile(memoryFile); err != nil || !strings.Contains(string(kept), "answers at once") {
				t.Errorf("the memory server's file: %v %.300s", err, kept)
			}
			res := call("stuck__anything", `{}`)
			if want := `the server "stuck" is still starting`; !res.IsError || !strings.Contains(textOf(res), want) {
				t.Errorf("stuck__anything: %s; want an error saying %q", textOf(res), want)
			}
		})
	}
}
