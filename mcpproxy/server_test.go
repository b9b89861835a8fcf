package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file holds the downstream MCP server the tests put the proxy in
// front of, built with the SDK. It runs in process, or as a child process
// (the test binary itself, see TestMain) to test CommandTransport.

// testServerEnv, set in the environment of the test binary, makes it serve
// the test server on stdio instead of running tests.
const testServerEnv = "MCPPROXY_TEST_SERVER"

// hangStartedLine is what the test server run as a child writes to its
// standard error when a call of hang starts.
const hangStartedLine = "test server: hang started"

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) == "1" {
		s, calls := newTestServer()
		go func() {
			for range calls.hangStarted {
				fmt.Fprintln(os.Stderr, hangStartedLine)
			}
		}()
		if err := s.Run(context.Background(), &mcp.StdioTransport{MaxLineLength: -1}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// An item is one element of list_items' structured result.
type item struct {
	ID   int    `json:"id"`
	Path string `json:"path"`
	Size int    `json:"size"`
}

type listItemsIn struct {
	N int `json:"n"`
}

type listItemsOut struct {
	Items []item `json:"items"`
	// Big is an integer beyond 2^53: the proxy must store it exactly.
	Big int64 `json:"big"`
}

// listItems is the structured content list_items returns for n.
func listItems(n int) listItemsOut {
	out := listItemsOut{Items: make([]item, n), Big: 1<<62 + 1}
	for i := range out.Items {
		out.Items[i] = item{ID: i, Path: fmt.Sprintf("/files/f%04d.txt", i), Size: 100 * i}
	}
	return out
}

// bigLines is the text big_text returns: a JSON array of n strings of
// 98 bytes each, "line 0000042 xxx…".
func bigLines(n int) string {
	pad := strings.Repeat("x", 85)
	b := make([]byte, 0, n*101+2)
	b = append(b, '[')
	var num [20]byte
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"line `...)
		// "%07d", without fmt: this runs 220,000 times for a 20 MiB result.
		d := strconv.AppendInt(num[:0], int64(i), 10)
		b = append(b, "0000000"[min(len(d), 7):]...)
		b = append(b, d...)
		b = append(b, ' ')
		b = append(b, pad...)
		b = append(b, '"')
	}
	b = append(b, ']')
	return string(b)
}

// mib20Lines is how many bigLines make a result of over 20 MiB.
const mib20Lines = 21 << 20 / 100

// rawStructured is the structured content raw_structured returns: keys out
// of order and an integer beyond 2^53, which a decode into map[string]any
// and re-encode would change.
const rawStructured = `{"zeta":1,"big":4611686018427387905,"alpha":[1.50,"x"]}`

// serverCalls counts the calls each tool of an in-process test server got.
type serverCalls struct {
	all  atomic.Int64 // calls of every tool
	echo atomic.Int64

	hangStarted chan struct{} // receives when hang starts
	hangRelease chan struct{} // closing it lets hang return

	lateStarted chan struct{} // receives when late_progress starts
	lateRelease chan struct{} // closing it lets late_progress send its progress and return
}

// newTestServer returns the downstream test server:
//   - list_items {n}: structured content {items: [{id, path, size}], big}
//     with an output schema;
//   - echo {path?, value?}: returns the raw arguments it received as text;
//   - count {n: integer}: returns n as text;
//   - big_text {lines}: returns bigLines(lines) as text;
//   - raw_structured {}: returns rawStructured as structured content;
//   - progress {}: sends two progress notifications, then returns "done";
//   - late_progress {}: once the test closes lateRelease, sends one
//     progress notification, then returns "done";
//   - hang {}: returns once the test closes hangRelease;
//   - mixed {text, repeat, structured}: returns text repeated, with
//     structured as its structured content;
//   - image {}: returns a text and an image block;
//   - log {level, text}: logs text at level, then returns "logged".
//
// Its prompt is greet {name}; its resources test://big (bigResource) and
// test://small, and the template test://item/{n} ("item n").
func newTestServer() (*mcp.Server, *serverCalls) {
	calls := &serverCalls{
		hangStarted: make(chan struct{}, 16), hangRelease: make(chan struct{}),
		lateStarted: make(chan struct{}, 16), lateRelease: make(chan struct{}),
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				calls.all.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "list_items", Description: "List n items."},
		func(_ context.Context, _ *mcp.CallToolRequest, in listItemsIn) (*mcp.CallToolResult, listItemsOut, error) {
			return nil, listItems(in.N), nil
		})
	s.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "Return the arguments.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"value":{}},"additionalProperties":false}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.echo.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "count",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "big_text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"lines":{"type":"integer","minimum":0}},"required":["lines"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Lines int }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bigLines(in.Lines)}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "raw_structured",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "see structuredContent"}},
			StructuredContent: json.RawMessage(rawStructured),
		}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "progress",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 2 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(),
				Progress:      float64(i + 1),
				Total:         2,
				Message:       fmt.Sprintf("step %d", i+1),
			})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "late_progress",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The test lets it go on once an earlier call's token has expired.
		calls.lateStarted <- struct{}{}
		select {
		case <-calls.lateRelease:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1, Message: "late"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "hang",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.hangStarted <- struct{}{}
		<-calls.hangRelease // ignores ctx, like a stuck server
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "woke"}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "mixed",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"repeat":{"type":"integer"},"structured":{}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Text       string
			Repeat     int
			Structured json.RawMessage
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat(in.Text, max(in.Repeat, 1))}}}
		if in.Structured != nil {
			res.StructuredContent = in.Structured
		}
		return res, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "image",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a picture"},
			&mcp.ImageContent{Data: testImage, MIMEType: "image/png"},
		}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "log",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"level":{"type":"string"},"text":{"type":"string"}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Level, Text string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(in.Level), Logger: "tester", Data: in.Text}); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{n}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			n := strings.TrimPrefix(req.Params.URI, "test://item/")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + n}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}}}}, nil
		})
	for _, r := range []struct{ uri, text string }{{"test://big", bigResource}, {"test://small", "small resource"}} {
		s.AddResource(&mcp.Resource{URI: r.uri, Name: strings.TrimPrefix(r.uri, "test://"), MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.uri, MIMEType: "text/plain", Text: r.text}}}, nil
			})
	}
	return s, calls
}

// bigResource is the text of the test server's resource test://big, past
// the proxy's default threshold.
var bigResource = strings.Repeat("a line of the big resource\n", 1000)

// testImage is the image the image tool returns: 12 KiB, over the default
// threshold once base64-encoded.
var testImage = bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 3<<10)
