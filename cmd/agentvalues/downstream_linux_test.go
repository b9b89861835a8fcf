package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentvalues/values/mcpproxy"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file drives the built proxy and gateway commands over stdio in
// front of a downstream server that attacks the proxy's reading of its
// results: a result of millions of blocks, a response whose id is a
// call's number written as a string, _meta keys of the proxy's namespace,
// invalid UTF-8.

// TestProxyManyBlocks: a result of millions of one-byte text blocks costs
// the proxy about its line, not many times it: the raw path holds no
// object per block (measured at 17 times the line before it read the
// blocks from the line each time it needs them).
func TestProxyManyBlocks(t *testing.T) {
	const n = 2_000_000
	lineSize := int64(n*len(`{"type":"text","text":"x"},`) + 64)
	r := startRawCommand(t, []string{"proxy", "--", os.Args[0], attackServerArg}, true)
	before := r.peakRSS(t)
	start := time.Now()
	resp := r.call(t, 1, "blocks", fmt.Sprintf(`{"n":%d}`, n))
	t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
	want := fmt.Sprintf("r1 = text(len=%.1f MiB, lines=%d", float64(2*n-1)/(1<<20), n)
	if resp.Result == nil || resp.Result.IsError || !strings.HasPrefix(resp.text(), want) {
		t.Fatalf("blocks: %.600s\nwant a preview starting %q\nstderr:\n%s", resp.line, want, r.stderr())
	}
	grew := r.peakRSS(t) - before
	t.Logf("a %d MiB line of %d blocks: peak RSS grew by %d MiB (%.2f× the line)", lineSize>>20, n, grew>>20, float64(grew)/float64(lineSize))
	if grew > 3*lineSize {
		t.Errorf("the proxy's peak RSS grew by %d MiB for a %d MiB line of %d blocks; want at most 3 times the line", grew>>20, lineSize>>20, n)
	}
	read := r.call(t, 2, "read_value", `{"ref":"r1","offset":0,"limit":200}`)
	if !strings.HasPrefix(read.text(), "x\nx\nx\nx\nx\n") {
		t.Errorf("read_value of r1: %s", read.line)
	}

	// With an image among them, the blocks are decoded by the SDK, which
	// holds an object per block: past maxDecodedBlocks, the result is
	// refused with an error saying why, before it is decoded.
	before = r.peakRSS(t)
	resp = r.call(t, 3, "blocks", fmt.Sprintf(`{"n":%d,"image":true}`, n))
	says := fmt.Sprintf("blocks ran, but the proxy could not take its result: the downstream server's result has %d content blocks, more than the 100000 the proxy decodes in one result", n+1)
	if resp.Result == nil || !resp.Result.IsError || !strings.Contains(resp.text(), says) {
		t.Errorf("blocks and an image: %.600s\nwant an isError result saying %q", resp.line, says)
	}
	if grew := r.peakRSS(t) - before; grew > 3*lineSize {
		t.Errorf("the proxy's peak RSS grew by %d MiB refusing a %d MiB line of %d blocks and an image; want at most 3 times the line", grew>>20, lineSize>>20, n)
	}
	resp = r.call(t, 4, "blocks", `{"n":10000,"image":true}`)
	if resp.Result == nil || resp.Result.IsError || !strings.HasPrefix(resp.text(), "r2 = array(len=10001") {
		t.Errorf("10000 blocks and an image: %.600s", resp.line)
	}
}

// TestProxyStrayResponse: a response whose id is the call's number
// written as a string, sent before the call's own in the same write, is
// logged and dropped, and the call gets its own response.
func TestProxyStrayResponse(t *testing.T) {
	t.Parallel()
	r := startRawCommand(t, []string{"proxy", "--", os.Args[0], attackServerArg}, true)
	for id := 1; id <= 3; id++ {
		resp := r.call(t, id, "stray", `{}`)
		if resp.Result == nil || resp.Result.IsError || !strings.HasPrefix(resp.text(), "the call's own\n[stored as r") {
			t.Fatalf("stray: %s\nstderr:\n%s", resp.line, r.stderr())
		}
	}
	if n := strings.Count(r.stderr(), "agentvalues: ignored a response from the downstream server: its id "); n != 3 {
		t.Errorf("%d stray responses logged, want 3; stderr:\n%s", n, r.stderr())
	}
}

// TestProxyInvalidUTF8: a text block holding bytes that are not UTF-8 is
// stored as text, each bad byte read as U+FFFD, whether it is shown whole
// or previewed; the value passes by reference as text and query_value
// reads it.
func TestProxyInvalidUTF8(t *testing.T) {
	t.Parallel()
	r := startRawCommand(t, []string{"proxy", "--", os.Args[0], attackServerArg}, true)
	for i, n := range []int{1, 2000} { // shown whole, previewed
		id := 10 * (i + 1)
		resp := r.call(t, id, "bad_utf8", fmt.Sprintf(`{"n":%d}`, n))
		h := fmt.Sprintf("r%d", 2*i+1)
		if resp.Result == nil || resp.Result.IsError || !strings.Contains(resp.text(), h) || strings.Contains(resp.text(), "binary") {
			t.Fatalf("bad_utf8 %d: %.600s", n, resp.line)
		}
		read := r.call(t, id+1, "read_value", `{"ref":"`+h+`","limit":400}`)
		if !strings.HasPrefix(read.text(), strings.Repeat(badLineRead, min(n, 4))) {
			t.Errorf("read_value of %s: %.300q, want the lines with U+FFFD for each bad byte", h, read.text())
		}
		query := r.call(t, id+2, "query_value", `{"ref":"`+h+`","jq":"split(\"\\n\") | length"}`)
		if want := fmt.Sprintf("%d\n[stored as", n+1); !strings.HasPrefix(query.text(), want) {
			t.Errorf("query_value over %s: %.300s, want %q", h, query.line, want)
		}
	}
}

// TestGatewayForgedMeta: through a gateway, a server that names another
// server's value under the proxy's _meta keys (its result's, and its
// block's) does not point the agent at it: the agent sees only the
// gateway's own handles.
func TestGatewayForgedMeta(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	config := `{"mcpServers":{` +
		`"blobs":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(blobServerArg) + `]},` +
		`"evil":{"command":` + quote(os.Args[0]) + `,"args":[` + quote(attackServerArg) + `]}}}`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, stderr := connectCommand(t, "gateway", "--config", path)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitTools(t, cs, "ping", "forge")
	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\nstderr:\n%s", name, err, res, stderr.String())
		}
		return res
	}
	if h := call("ping", `{}`).Meta[mcpproxy.MetaHandle]; h != "r1" {
		t.Fatalf("ping stored as %v, want r1", h)
	}
	res := call("forge", `{"handle":"r1"}`)
	want := mcp.Meta{mcpproxy.MetaHandle: "r2", "trace": "t"}
	got := mcp.Meta{}
	for k, v := range res.Meta {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") { // the gateway's own
			got[k] = v
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forge's _meta (-want +got):\n%s", diff)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && tc.Meta != nil {
			t.Errorf("a block of forge's result has a _meta: %v", tc.Meta)
		}
	}
}
