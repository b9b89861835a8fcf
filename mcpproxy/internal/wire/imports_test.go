package wire

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports holds the wire layer to its floor: data flows down, so it
// imports neither the agentvalues library (the root package, its stores,
// the proxy) nor the SDK's mcp package; of the module, only the JSON
// toolkit below every layer, and of the SDK, only its jsonrpc message
// types and what they import.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	found := map[string]bool{}
	for _, p := range deps {
		found[p] = true
		switch {
		case p == "github.com/agentvalues/values/mcpproxy/internal/wire",
			p == "github.com/agentvalues/values/internal/jsontext":
		case p == "github.com/agentvalues/values" || strings.HasPrefix(p, "github.com/agentvalues/values/"):
			t.Errorf("the wire layer imports %s, above it or beside it", p)
		case p == "github.com/modelcontextprotocol/go-sdk/mcp" || strings.HasPrefix(p, "github.com/modelcontextprotocol/go-sdk/") &&
			p != "github.com/modelcontextprotocol/go-sdk/jsonrpc" && !strings.HasPrefix(p, "github.com/modelcontextprotocol/go-sdk/internal/"):
			t.Errorf("the wire layer imports %s of the SDK, which only its jsonrpc package may be", p)
		}
	}
	// The check above cannot pass for want of a list.
	for _, p := range []string{"github.com/agentvalues/values/mcpproxy/internal/wire", "github.com/modelcontextprotocol/go-sdk/jsonrpc"} {
		if !found[p] {
			t.Errorf("go list -deps does not list %s: %q", p, deps)
		}
	}
}
