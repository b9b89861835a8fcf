package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentvalues/values/contrib/mcpgo"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The body is the usage snippet of the README: an mcp-go server with
// agentvalues installed, its tools added as before. scriptedModel then
// drives it the way a host drives a model's calls, through mcp-go's
// in-process client; a real server would run server.ServeStdio(s).
func Example() {
	av := mcpgo.New()
	s := server.NewMCPServer("files", "1.0.0", av.ServerOption())
	s.AddTool(listFiles, handleListFiles) // tools are added as before
	s.AddTool(readFile, handleReadFile)
	scriptedModel(s)
	// Output:
	// tools: list_files query_value read_file read_value
	//
	// model: list_files {}
	// r1 = array(len=200, bytes=7.6 KiB, items={path: text, bytes: number 1000..1199}, [:3]=[{path: "src/file000.go", bytes: 1000}, {path: "src/file001.go", bytes: 1001}, {path: "src/file002.go", bytes: 1002}], [-2:]=[{path: "src/file198.go", bytes: 1198}, {path: "src/file199.go", bytes: 1199}])
	// [r1 holds the full value for this run: pass "$r1" as a tool argument to use all of it, "$r1.0" for an item ("$r1.-1" is the last); read_value {"ref":"r1"} pages its bytes]
	//
	// model: read_file {"path":"$r1.-1.path"}
	// package main // the contents of src/file199.go
	// [stored as r2 (text, 46 B, 1 line): pass "$r2" as a tool argument to reuse it]
	//
	// model: read_file {"path":"$r1.200.path"}
	// error: read_file was not called: values: arguments do not match the tool's input schema (1 violation)
	// /path: "$r1.200.path": no such path: index 200 is out of range for $r1, an array of 200 items
	//
	// model: read_value {"ref":"r1","limit":200}
	// [{"path":"src/file000.go","bytes":1000},{"path":"src/file001.go","bytes":1001},{"path":"src/file002.go","bytes":1002}
	// [shown: bytes 0-116 of 7801; next page: read_value {"ref":"r1","offset":117}]
}

var listFiles = mcp.NewTool("list_files", mcp.WithDescription("List every file under the project."))

func handleListFiles(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	type file struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	}
	var files []file
	for i := range 200 {
		files = append(files, file{fmt.Sprintf("src/file%03d.go", i), 1000 + i})
	}
	return mcp.NewToolResultJSON(files)
}

var readFile = mcp.NewTool("read_file", mcp.WithDescription("Read a file."), mcp.WithString("path", mcp.Required()))

func handleReadFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	path, err := req.RequireString("path")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("package main // the contents of " + path), nil
}

// scriptedModel lists the tools of s and makes a model's calls through
// mcp-go's in-process client, printing each call and what the client
// hands back.
func scriptedModel(s *server.MCPServer) {
	ctx := context.Background()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		panic(err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Print("tools:")
	for _, t := range list.Tools {
		fmt.Print(" ", t.Name)
	}
	fmt.Println()
	for _, call := range [][2]string{
		{"list_files", `{}`},
		{"read_file", `{"path":"$r1.-1.path"}`},
		{"read_file", `{"path":"$r1.200.path"}`},
		{"read_value", `{"ref":"r1","limit":200}`},
	} {
		fmt.Printf("\nmodel: %s %s\n", call[0], call[1])
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = call[0], json.RawMessage(call[1])
		res, err := c.CallTool(ctx, req)
		if err != nil {
			panic(err)
		}
		if res.IsError {
			fmt.Print("error: ")
		}
		fmt.Println(text(res))
	}
}
