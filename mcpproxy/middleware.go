package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Middleware returns a receiving middleware that gives a Go MCP server the
// proxy's behaviour without a proxy in front of it:
//
//	server.AddReceivingMiddleware(mcpproxy.Middleware(nil))
//
// With it the server's own tools:
//
//   - take references: before a tools/call reaches the server's handler
//     (and so before the SDK validates the arguments against the tool's
//     input schema, which it does in the handler mcp.AddTool makes), every
//     argument that is a reference ("$r3", "$r3.rows.0.id") is replaced by
//     the value it names. A bad reference is the tool's result, with
//     isError set: "TOOL was not called: …", naming it; the handler does
//     not run.
//   - return handles: every result is stored in the session's store, and
//     one over Options.Threshold comes back as its preview and a hint, as
//     through the proxy (see [Proxy]); _meta names the handle
//     ("agentvalues/handle").
//   - are listed with reference-friendly schemas: tools/list gives each
//     tool's input schema with a reference string admitted beside every
//     field (unless Options.OriginalSchemas), its description one sentence
//     on references, and no outputSchema (a preview cannot conform to it);
//     read_value and query_value are listed too (on the first page) and
//     served by the middleware over the session's store. They shadow any
//     tool of the server's own of either name (which is left out of the
//     list, with a line on Options.Log).
//
// Each client session has its own store, made at its first call and
// dropped when it ends (Options.SessionOptions configure it; handles of a
// new session start past every handle handed out before, as with
// Options.PerSession), unless Options.Values is set: then every session
// shares that one. A session a client abandons keeps its store until the
// SDK ends it (StreamableHTTPOptions.SessionTimeout; without one, for as
// long as the server runs). A stateless Streamable HTTP handler
// (StreamableHTTPOptions.Stateless) makes every request a session of its
// own, whose store ends with the request: a preview's handle would then
// name nothing by the next call, so such a server must set Options.Values,
// one store that every client can read. Threshold, Values, SessionOptions, OriginalSchemas and
// Log are the Options used; nil opts means the defaults.
func Middleware(opts *Options) mcp.Middleware {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.Values == nil {
		o.PerSession = true
	}
	st := newStores(&o)
	p := &Proxy{threshold: o.Threshold, stores: st, log: o.Log} // present's settings
	if p.threshold == 0 {
		p.threshold = DefaultThreshold
	}
	if p.log == nil {
		p.log = os.Stderr
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return st.noteHanded(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				lr, ok := res.(*mcp.ListToolsResult)
				if !ok {
					return res, nil
				}
				cursor := ""
				if params, ok := req.GetParams().(*mcp.ListToolsParams); ok && params != nil {
					cursor = params.Cursor
				}
				return p.listed(lr, cursor == "", !o.OriginalSchemas), nil
			case "tools/call":
				cr, ok := req.(*mcp.CallToolRequest)
				if !ok || cr.Params == nil {
					return next(ctx, method, req)
				}
				return p.served(ctx, cr, next)
			}
			return next(ctx, method, req)
		})
	}
}

// listed returns the tool list of a server under the middleware: each
// tool mirrored as the proxy offers it, and read_value and query_value
// added to the first page.
func (p *Proxy) listed(lr *mcp.ListToolsResult, first, admit bool) *mcp.ListToolsResult {
	out := *lr
	out.Tools = make([]*mcp.Tool, 0, len(lr.Tools)+2)
	for _, t := range lr.Tools {
		if t == nil {
			continue
		}
		if t.Name == readValueTool().Name || t.Name == queryValueTool().Name {
			fmt.Fprintf(p.log, "agentvalues: the server's own tool %s is shadowed by the one over stored values\n", t.Name)
			continue
		}
		out.Tools = append(out.Tools, listedTool(t, admit, p.log))
	}
	if first {
		out.Tools = append(out.Tools, readValueTool(), queryValueTool())
	}
	return &out
}

// listedTool is t as the middleware lists it, or t itself when its schema
// is not one the proxy can mirror (told on log).
func listedTool(t *mcp.Tool, admit bool, log io.Writer) *mcp.Tool {
	raw, err := json.Marshal(t.InputSchema)
	var schema map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &schema)
	}
	if err != nil {
		fmt.Fprintf(log, "agentvalues: listing the tool %s with its schema as it is: %v\n", t.Name, err)
		return t
	}
	in := *t
	in.InputSchema = schema
	m, _, err := mirror(&in, t.Name, admit, nil)
	if err != nil {
		fmt.Fprintf(log, "agentvalues: listing the tool %s with its schema as it is: %v\n", t.Name, err)
		return t
	}
	return m
}

// served handles a tools/call under the middleware: read_value and
// query_value over the session's store, any other tool with its arguments
// resolved and its result stored.
func (p *Proxy) served(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	vals := p.stores.of(req.Session)
	switch req.Params.Name {
	case readValueTool().Name:
		return handleReadValue(vals, req), nil
	case queryValueTool().Name:
		return handleQueryValue(ctx, p.stores, vals, req), nil
	}
	resolved, _, err := vals.Prepare(nil, toolArgs(req)) // a nil schema: resolve, and refuse what does not resolve
	if err != nil {
		return errorResult(fmt.Sprintf("%s was not called: %v", req.Params.Name, err)), nil
	}
	in := *req
	params := *req.Params
	params.Arguments = json.RawMessage(resolved)
	in.Params = &params
	res, err := next(ctx, "tools/call", &in)
	if err != nil {
		return res, err
	}
	cr, ok := res.(*mcp.CallToolResult)
	if !ok || cr == nil {
		return res, nil
	}
	out := p.present(vals, cr, nil)
	p.stores.noteResult(vals, req.Params.Name, "", out)
	return out, nil
}
