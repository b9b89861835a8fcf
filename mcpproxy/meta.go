package mcpproxy

import (
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolMetaPrefix begins the protocol's own keys of a _meta.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// ownMetaPrefix begins the keys of a _meta that are the proxy's own
// ([MetaHandle], [MetaContentHandle]): the proxy drops every such key a
// downstream server writes, wherever it relays a _meta (results, their
// content blocks, resource contents, prompts, log messages), so that one
// the agent sees was set by the proxy it talks to. A server could
// otherwise name, through a gateway, another server's value as its own
// result's content blocks.
const ownMetaPrefix = "agentvalues/"

// forwardMeta copies _meta across the proxy, leaving out the protocol's own
// keys (io.modelcontextprotocol/...), which each side sets for itself, and
// the proxy's (ownMetaPrefix), which only the proxy sets.
func forwardMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := maps.Clone(m)
	for k := range out {
		if strings.HasPrefix(k, protocolMetaPrefix) || strings.HasPrefix(k, ownMetaPrefix) {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withoutOwnKeys returns m without the proxy's keys (ownMetaPrefix): m
// itself when it has none, else a copy (nil when nothing is left). It is
// for the _meta of what the proxy relays inside a message (content
// blocks), whose protocol keys are the server's to set.
func withoutOwnKeys(m mcp.Meta) mcp.Meta {
	for k := range m {
		if strings.HasPrefix(k, ownMetaPrefix) {
			out := maps.Clone(m)
			maps.DeleteFunc(out, func(k string, _ any) bool { return strings.HasPrefix(k, ownMetaPrefix) })
			if len(out) == 0 {
				return nil
			}
			return out
		}
	}
	return m
}

// dropOwnKeys removes the proxy's keys (ownMetaPrefix) from the _meta of
// each content block, and of the resource a block embeds, in place.
func dropOwnKeys(content []mcp.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ImageContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.AudioContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ResourceLink:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.EmbeddedResource:
			c.Meta = withoutOwnKeys(c.Meta)
			if c.Resource != nil {
				c.Resource.Meta = withoutOwnKeys(c.Resource.Meta)
			}
		case *mcp.ToolUseContent:
			c.Meta = withoutOwnKeys(c.Meta)
		case *mcp.ToolResultContent:
			c.Meta = withoutOwnKeys(c.Meta)
			dropOwnKeys(c.Content)
		}
	}
}
