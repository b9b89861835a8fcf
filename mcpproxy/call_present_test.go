package mcpproxy

import (
	"fmt"
	"testing"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/internal/mcpresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPresentBlocks: the result the agent gets holds the server's blocks,
// in order, and then the block present adds (the handle line), whatever
// their number; previewed, the preview and then the images; and two
// results presented one after another share none of their blocks.
func TestPresentBlocks(t *testing.T) {
	image := &mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"}
	for n := range 4 {
		for _, preview := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d blocks, preview %v", n, preview), func(t *testing.T) {
				p := &Proxy{threshold: 1 << 20}
				if preview {
					p.threshold = -1
				}
				vals := values.New()
				blocks := func(tag string) []mcp.Content {
					var c []mcp.Content
					for i := range n {
						if i == 1 {
							c = append(c, image)
							continue
						}
						c = append(c, &mcp.TextContent{Text: fmt.Sprintf("%s %d", tag, i)})
					}
					return c
				}
				first, second := blocks("first"), blocks("second")
				out := p.present(vals, &mcp.CallToolResult{Content: first}, nil)
				want := append([]mcp.Content(nil), first...)
				h, _ := out.Meta[MetaHandle].(string)
				if preview {
					want = []mcp.Content{&mcp.TextContent{Text: mcpresult.Preview(vals, h, "")}}
					if n > 1 {
						want = append(want, image)
					}
				} else {
					want = append(want, &mcp.TextContent{Text: mcpresult.HandleLine(vals, h, "")})
				}
				again := p.present(vals, &mcp.CallToolResult{Content: second}, nil)
				if err := sameBlocks(out.Content, want); err != nil {
					t.Errorf("the first result (after a second was presented): %v", err)
				}
				if len(again.Content) == 0 || &again.Content[0] == &out.Content[0] {
					t.Errorf("the two results share their blocks")
				}
			})
		}
	}
}

// sameBlocks says how got differs from want, block by block: a text block
// by its text, any other by identity.
func sameBlocks(got, want []mcp.Content) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d blocks, want %d", len(got), len(want))
	}
	for i := range got {
		g, gok := got[i].(*mcp.TextContent)
		w, wok := want[i].(*mcp.TextContent)
		switch {
		case gok != wok:
			return fmt.Errorf("block %d is %T, want %T", i, got[i], want[i])
		case gok && g.Text != w.Text:
			return fmt.Errorf("block %d is the text %q, want %q", i, g.Text, w.Text)
		case !gok && got[i] != want[i]:
			return fmt.Errorf("block %d is %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}
