package mcpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proxy between an agent and an MCP server, all in one process over
// the SDK's in-memory transports (which carry messages of up to 16 MiB;
// for a local command use a [mcpproxy.CommandTransport], for stdio a
// [mcpproxy.LineTransport]). A large result reaches the agent as a preview
// and a hint; the agent passes part of it to the next call by reference.
func Example() {
	ctx := context.Background()

	// The downstream server: list_files returns 500 entries, read_file
	// echoes the path it is given.
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "list_files", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var files []map[string]any
			for i := range 500 {
				files = append(files, map[string]any{"path": fmt.Sprintf("src/file%03d.go", i), "size": 1000 + i})
			}
			out, _ := json.Marshal(files)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	server.AddTool(&mcp.Tool{
		Name:        "read_file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Path string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "package main // " + in.Path}}}, nil
	})
	serverSide, proxyDown := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverSide, nil); err != nil {
		log.Fatal(err)
	}

	// The proxy, and the agent connected to it.
	p, err := mcpproxy.Connect(ctx, proxyDown, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	proxyUp, agentSide := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, proxyUp, nil); err != nil {
		log.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, agentSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	tools, err := agent.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools.Tools {
		fmt.Println("tool:", tool.Name)
	}
	for _, call := range []struct{ name, args string }{
		{"list_files", `{}`},
		{"read_file", `{"path":"$r1.-1.path"}`},
		{"read_value", `{"ref":"$r1.7"}`},
	} {
		res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: call.name, Arguments: json.RawMessage(call.args)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\n%s %s:\n%s\n", call.name, call.args, text(res))
	}
	// Output:
	// tool: list_files
	// tool: query_value
	// tool: read_file
	// tool: read_value
	//
	// list_files {}:
	// r1 = array(len=500, bytes=19 KiB, items={path: text, size: number 1000..1499}, [:3]=[{path: "src/file000.go", size: 1000}, {path: "src/file001.go", size: 1001}, {path: "src/file002.go", size: 1002}], [-2:]=[{path: "src/file498.go", size: 1498}, {path: "src/file499.go", size: 1499}])
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.0" for an item ("$r1.-1" is the last); read_value {"ref":"r1"} pages its bytes]
	//
	// read_file {"path":"$r1.-1.path"}:
	// package main // src/file499.go
	// [stored as r2 (text, 30 B, 1 line): pass "$r2" as a tool argument to reuse it]
	//
	// read_value {"ref":"$r1.7"}:
	// {"path":"src/file007.go","size":1007}
}

// text joins the text blocks of a tool result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
