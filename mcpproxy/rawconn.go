package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// rawStructuredKey names the one member of the object that stands in for a
// tool result's structuredContent between the downstream connection and the
// proxy. See rawConn.
const rawStructuredKey = "agentvalues/raw-structured-content"

// rawTransport wraps the downstream transport so that the structuredContent
// of every tool result reaches the proxy as the exact bytes the server sent.
//
// The SDK decodes structuredContent into map[string]any: keys would come back
// sorted and integers beyond 2^53 rounded, so a stored value (and every
// reference into it) would differ from what the tool returned. Before the SDK
// decodes a response, rawConn replaces structuredContent with
// {rawStructuredKey: "<the raw JSON, as a string>"}; the proxy unwraps it.
type rawTransport struct{ mcp.Transport }

func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rawConn{c}, nil
}

type rawConn struct{ mcp.Connection }

func (c rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && len(resp.Result) > 0 {
		resp.Result = wrapStructured(resp.Result)
	}
	return msg, err
}

// wrapStructured returns result with its top-level structuredContent, if any,
// replaced by the wrapper object. Anything unexpected leaves result as is.
func wrapStructured(result json.RawMessage) json.RawMessage {
	sc := gjson.GetBytes(result, "structuredContent")
	// null is no structured content: left as is, the SDK decodes it to nil.
	if !sc.Exists() || sc.Type == gjson.Null || sc.Index <= 0 || sc.Index+len(sc.Raw) > len(result) ||
		!bytes.Equal(result[sc.Index:sc.Index+len(sc.Raw)], []byte(sc.Raw)) {
		return result
	}
	var s bytes.Buffer
	s.Grow(len(sc.Raw) + len(sc.Raw)/8 + 64)
	s.WriteString(`{"` + rawStructuredKey + `":`)
	enc := json.NewEncoder(&s)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sc.Raw); err != nil {
		return result
	}
	s.WriteByte('}')
	out := make([]byte, 0, len(result)-len(sc.Raw)+s.Len())
	out = append(out, result[:sc.Index]...)
	out = append(out, s.Bytes()...)
	out = append(out, result[sc.Index+len(sc.Raw):]...)
	return out
}

// unwrapStructured returns the raw JSON of a result's structured content as
// the downstream server sent it, or nil if there is none.
func unwrapStructured(sc any) (json.RawMessage, error) {
	if sc == nil {
		return nil, nil
	}
	if m, ok := sc.(map[string]any); ok && len(m) == 1 {
		if s, ok := m[rawStructuredKey].(string); ok {
			if s == "null" {
				return nil, nil
			}
			return json.RawMessage(s), nil
		}
	}
	// Not wrapped (rawConn left it alone): the decoded form is all there is.
	return json.Marshal(sc)
}
