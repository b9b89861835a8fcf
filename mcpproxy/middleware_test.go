package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	values "github.com/agentvalues/values"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type listInput struct {
	N int `json:"n" jsonschema:"how many files"`
}

type statInput struct {
	Path  string `json:"path"`
	Times int    `json:"times"`
}

type statOutput struct {
	Path  string `json:"path"`
	Times int    `json:"times"`
}

// middlewareServer is a go-sdk server with two typed tools and the
// middleware, and what its stat tool received.
func middlewareServer(t *testing.T) (*mcp.Server, *[]statInput) {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "list_files", Description: "List files."},
		func(_ context.Context, _ *mcp.CallToolRequest, in listInput) (*mcp.CallToolResult, any, error) {
			var b strings.Builder
			b.WriteString("[")
			for i := range in.N {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"path":"/srv/files/f%04d.txt","size":%d}`, i, 100+i)
			}
			b.WriteString("]")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil, nil
		})
	var mu sync.Mutex
	var got []statInput
	mcp.AddTool(server, &mcp.Tool{Name: "stat", Description: "Stat a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in statInput) (*mcp.CallToolResult, statOutput, error) {
			mu.Lock()
			got = append(got, in)
			mu.Unlock()
			return nil, statOutput(in), nil
		})
	server.AddReceivingMiddleware(Middleware(&Options{Log: &syncBuffer{}}))
	return server, &got
}

// TestMiddleware drives a go-sdk server with the middleware through the
// SDK's client, as a model's calls would come: a large result comes back
// as a preview with its handle, a part of it passed by reference reaches
// the tool as the real value (through the SDK's own input validation), a
// bad reference is a tool error naming it, and read_value pages the value.
func TestMiddleware(t *testing.T) {
	server, got := middlewareServer(t)
	cs := connectClient(t, server)
	ctx := context.Background()

	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	for _, name := range []string{"list_files", "stat", "read_value", "query_value"} {
		if tools[name] == nil {
			t.Fatalf("tools/list lacks %s: %v", name, tools)
		}
	}
	raw, _ := json.Marshal(tools["stat"].InputSchema)
	schema, err := values.CompileSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate([]byte(`{"path":"$r1.0.path","times":"$r1.0.size"}`)); err != nil {
		t.Errorf("the listed schema of stat refuses references: %v", err)
	}
	if tools["stat"].OutputSchema != nil {
		t.Errorf("stat is listed with an outputSchema")
	}

	list := callTool(t, cs, "list_files", `{"n":400}`)
	h, _ := list.Meta[MetaHandle].(string)
	if h != "r1" || len(text(list)) > 4<<10 || !strings.Contains(text(list), "r1 holds the full value") {
		t.Fatalf("list_files of 400 came back as %d bytes, handle %q:\n%.300s", len(text(list)), h, text(list))
	}
	res := callTool(t, cs, "stat", `{"path":"$r1.123.path","times":"$r1.-1.size"}`)
	if res.IsError {
		t.Fatalf("stat by reference: %s", text(res))
	}
	if len(*got) != 1 || (*got)[0] != (statInput{Path: "/srv/files/f0123.txt", Times: 499}) {
		t.Errorf("stat received %+v", *got)
	}
	// A small result comes whole, with its handle named.
	if !strings.Contains(text(res), "/srv/files/f0123.txt") || res.Meta[MetaHandle] != "r2" {
		t.Errorf("stat's result: %s %v", text(res), res.Meta)
	}

	bad := callTool(t, cs, "stat", `{"path":"$r9.0.path","times":1}`)
	if !bad.IsError || !strings.Contains(text(bad), "stat was not called") || !strings.Contains(text(bad), "$r9") {
		t.Errorf("a bad reference: %s", text(bad))
	}
	if len(*got) != 1 {
		t.Errorf("stat ran on a bad reference: %+v", *got)
	}

	page := callTool(t, cs, "read_value", `{"ref":"r1","offset":0,"limit":2000}`)
	if page.IsError || !strings.Contains(text(page), `/srv/files/f0000.txt`) {
		t.Errorf("read_value: %s", text(page))
	}
	q := callTool(t, cs, "query_value", `{"ref":"r1","jq":"length"}`)
	if q.IsError || !strings.Contains(text(q), "400") {
		t.Errorf("query_value: %s", text(q))
	}

	// Another client session has a store of its own.
	other := connectClient(t, server)
	if res := callTool(t, other, "read_value", `{"ref":"r1"}`); !res.IsError {
		t.Errorf("another session reads r1: %.200s", text(res))
	}
}
