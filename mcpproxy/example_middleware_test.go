package mcpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lsInput struct {
	Dir string `json:"dir"`
}

type catInput struct {
	Path string `json:"path"`
}

// A Go MCP server of your own returns handles and previews, takes
// references and offers read_value: one line after its tools are added.
func ExampleMiddleware() {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "ls"}, func(_ context.Context, _ *mcp.CallToolRequest, in lsInput) (*mcp.CallToolResult, any, error) {
		paths := make([]string, 2000)
		for i := range paths {
			paths[i] = fmt.Sprintf("%s/file%04d.go", in.Dir, i)
		}
		out, _ := json.Marshal(paths)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "cat"}, func(_ context.Context, _ *mcp.CallToolRequest, in catInput) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
	})
	server.AddReceivingMiddleware(mcpproxy.Middleware(nil))

	// A client, as an agent's host would connect.
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	ls, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"dir": "src"}})
	fmt.Println(ls.Meta["agentvalues/handle"], len(ls.Content[0].(*mcp.TextContent).Text) < 3000)
	cat, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cat", Arguments: map[string]any{"path": "$r1.1999"}})
	fmt.Println(cat.Content[0].(*mcp.TextContent).Text)
	// Output:
	// r1 true
	// contents of src/file1999.go
}
