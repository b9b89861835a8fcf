package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Telemetry is told of every tool call and resource read a [Proxy] or
// [Gateway] forwards downstream, on every route the call takes, at three
// points: as the request begins, as it is sent downstream, and as it ends,
// with the facts of [Request]. Package mcpproxy/telemetry implements it
// with OpenTelemetry. Its methods are called concurrently, for calls in
// flight at once, and must not block; a nil Telemetry (the default) costs
// nothing.
type Telemetry interface {
	// Begin is called as the proxy starts serving r, whose Method, Server
	// and Name are set. meta is the request's _meta (nil for none), which
	// may carry the client's trace context ("traceparent"). It returns the
	// context the request runs under.
	Begin(ctx context.Context, r *Request, meta mcp.Meta) context.Context
	// Downstream is called, under the context Begin returned, as r is about
	// to be sent to the downstream server with the _meta meta (never nil),
	// to which it may add (trace context, for the server to continue). It
	// returns the context to send the request under and a function the
	// proxy calls once with the outcome of the downstream request (nil
	// when the server answered, even with an error result). A request
	// that never reaches the server (invalid arguments) has no Downstream.
	Downstream(ctx context.Context, r *Request, meta mcp.Meta) (context.Context, func(error))
	// End is called once, under the context Begin returned, when r has
	// been answered, with its facts filled in.
	End(ctx context.Context, r *Request)
}

// Request is what the proxy tells [Telemetry] of one request it serves.
// Every route of a call fills it in alike.
type Request struct {
	// Method is "tools/call" or "resources/read".
	Method string
	// Server is the gateway's name of the server, or, for a lone proxy,
	// the name the downstream server gave in its initialize response;
	// OwnServer for the proxy's own tools (read_value, query_value).
	Server string
	// Name is the tool's name as offered to the client, or the resource's
	// URI.
	Name string
	// Handle is the handle under which the result (for a resource read,
	// its first content) was stored, "" when none was; ContentHandle is
	// that of a result's content blocks stored apart (MetaContentHandle).
	Handle, ContentHandle string
	// Stored is the number of values stored for the result, and
	// BytesReturned their total size: the bytes the server returned.
	Stored        int
	BytesReturned int64
	// BytesToModel is the size of what the client got: the text of its
	// text content blocks and resource contents, and its structured
	// content's JSON (images, audio and blobs not counted).
	BytesToModel int64
	// Refs is the number of references resolved in the arguments, and
	// RefBytes the bytes of the values they put in place of the
	// references.
	Refs     int
	RefBytes int64
	// Validation is "ok" when the arguments were resolved and validated,
	// "invalid" when that failed (the tool was not called), and "" when
	// they were not checked (a resource read, or a call refused before).
	Validation string
	// ErrorClass is "" for a request that succeeded, else one of the
	// ErrorClass constants.
	ErrorClass string
}

// OwnServer is the [Request.Server] of the calls of the proxy's own tools,
// read_value and query_value, which are answered from the store and
// have no downstream request. An error result of one (a reference that
// names nothing, a bad jq filter) is of class ErrorInvalidArguments.
const OwnServer = "agentvalues"

// The classes of [Request.ErrorClass].
const (
	// ErrorInvalidArguments: the arguments did not resolve or validate;
	// the tool was not called.
	ErrorInvalidArguments = "invalid_arguments"
	// ErrorUnavailable: the downstream server was not connected (dead, or
	// being restarted); the request was not sent.
	ErrorUnavailable = "unavailable"
	// ErrorTool: the tool answered with a result whose isError is set.
	ErrorTool = "tool_error"
	// ErrorDownstream: the server answered with a JSON-RPC error.
	ErrorDownstream = "downstream_error"
	// ErrorResult: the server answered with a result the proxy could not
	// take (not a valid result, too many content blocks).
	ErrorResult = "invalid_result"
	// ErrorConnection: the connection to the server failed during the
	// request, or the proxy shut down under it.
	ErrorConnection = "connection"
	// ErrorCancelled: the client cancelled the request.
	ErrorCancelled = "cancelled"
)

// observed is a request being observed; nil when telemetry is off, and
// then every method returns at once.
type observed struct {
	tel     Telemetry
	r       Request
	down    func(error) // Downstream's, until called
	downErr error       // what the downstream request ended with
	sent    bool        // Downstream was called
	own     bool        // a call of the proxy's own tool: none is sent
}

// observe begins observing a request: a tool call named name as offered,
// or a resource read of the URI name.
func (p *Proxy) observe(ctx context.Context, method, name string, meta mcp.Meta) (context.Context, *observed) {
	if p.tel == nil {
		return ctx, nil
	}
	o := &observed{tel: p.tel, r: Request{Method: method, Server: p.gatewayName(), Name: name}}
	if o.r.Server == "" {
		if l := p.current(); l != nil && l.down != nil {
			if init := l.down.InitializeResult(); init != nil && init.ServerInfo != nil {
				o.r.Server = init.ServerInfo.Name
			}
		}
	}
	return p.tel.Begin(ctx, &o.r, meta), o
}

// observeOwn returns h, the handler of one of the proxy's own tools, with
// its calls observed by tel (as calls of OwnServer) when tel is not nil.
func observeOwn(tel Telemetry, st *stores, h mcp.ToolHandler) mcp.ToolHandler {
	if tel == nil {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		o := &observed{tel: tel, own: true, r: Request{Method: "tools/call", Server: OwnServer, Name: req.Params.Name}}
		ctx = tel.Begin(ctx, &o.r, req.Params.Meta)
		res, err := h(ctx, req)
		o.endCall(ctx, st.of(req.Session), res, err)
		return res, err
	}
}

// prepared notes the outcome of preparing the arguments args: prepared,
// with the references resolved, or err.
func (o *observed) prepared(args, prepared []byte, resolved []string, err error) {
	if o == nil {
		return
	}
	if err != nil {
		o.r.Validation, o.r.ErrorClass = "invalid", ErrorInvalidArguments
		return
	}
	o.r.Validation, o.r.Refs = "ok", len(resolved)
	if len(resolved) > 0 {
		// Each reference was a JSON string in args, and its value's JSON
		// is in prepared in its place.
		n := int64(len(prepared) - len(args))
		for _, ref := range resolved {
			n += int64(len(ref) + 2)
		}
		o.r.RefBytes = max(n, 0)
	}
}

// sending notes that the request is being sent downstream with the _meta
// meta, and returns the context and _meta to send it with.
func (o *observed) sending(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta) {
	ctx, meta, down := o.sendingDetached(ctx, meta)
	if o != nil {
		o.down = down
	}
	return ctx, meta
}

// sendingDetached is sending for a downstream request that outlives the
// observation (a bridged call, bridge.go, runs across several of its
// client's requests): the returned end, called once with the downstream
// outcome, ends what Downstream began, and the observation's end does not.
func (o *observed) sendingDetached(ctx context.Context, meta mcp.Meta) (context.Context, mcp.Meta, func(error)) {
	if o == nil {
		return ctx, meta, func(error) {}
	}
	if meta == nil {
		meta = mcp.Meta{}
	}
	o.sent = true
	ctx, end := o.tel.Downstream(ctx, &o.r, meta)
	return ctx, meta, end
}

// answered notes the outcome of the downstream request: nil when the
// server answered.
func (o *observed) answered(err error) {
	if o == nil || o.down == nil {
		return
	}
	o.downErr = err
	o.down(err)
	o.down = nil
}

// endCall ends the observation of a tool call answered with res, or err,
// whose results went to vals.
func (o *observed) endCall(ctx context.Context, vals *values.SessionValues, res *mcp.CallToolResult, err error) {
	if o == nil {
		return
	}
	o.answered(nil) // a route that could not tell: the server answered
	switch {
	case err != nil:
		o.r.ErrorClass = ErrorCancelled
	case res != nil:
		o.stored(vals, res.Meta)
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				o.r.BytesToModel += int64(len(t.Text))
			}
		}
		if s, ok := res.StructuredContent.(json.RawMessage); ok {
			o.r.BytesToModel += int64(len(s))
		} else if res.StructuredContent != nil {
			j, _ := json.Marshal(res.StructuredContent)
			o.r.BytesToModel += int64(len(j))
		}
		if o.r.ErrorClass == "" && res.IsError {
			o.r.ErrorClass = o.downClass()
		}
	}
	o.tel.End(ctx, &o.r)
}

// endRead ends the observation of a resource read answered with res, or
// err, whose contents went to vals.
func (o *observed) endRead(ctx context.Context, vals *values.SessionValues, res *mcp.ReadResourceResult, err error) {
	if o == nil {
		return
	}
	if o.sent {
		o.answered(nil)
	}
	switch {
	case err != nil && !o.sent:
		o.r.ErrorClass = ErrorUnavailable
	case err != nil:
		if ctx.Err() != nil {
			o.r.ErrorClass = ErrorCancelled
		} else {
			o.r.ErrorClass = classOf(err)
		}
	case res != nil:
		for _, c := range res.Contents {
			if c == nil {
				continue
			}
			o.r.BytesToModel += int64(len(c.Text))
			h, _ := c.Meta[MetaHandle].(string)
			if h == "" {
				continue
			}
			if o.r.Handle == "" {
				o.r.Handle = h
			}
			o.storedOne(vals, h)
		}
	}
	o.tel.End(ctx, &o.r)
}

// stored notes the values a result's _meta names.
func (o *observed) stored(vals *values.SessionValues, meta mcp.Meta) {
	o.r.Handle, _ = meta[MetaHandle].(string)
	o.r.ContentHandle, _ = meta[MetaContentHandle].(string)
	o.storedOne(vals, o.r.Handle)
	o.storedOne(vals, o.r.ContentHandle)
}

func (o *observed) storedOne(vals *values.SessionValues, h string) {
	if h == "" || vals == nil {
		return
	}
	if v, ok := vals.Get(h); ok {
		o.r.Stored++
		o.r.BytesReturned += int64(v.Size())
	}
}

// downClass is the class of an error result: the server's own
// (ErrorTool) when it answered, else what went wrong on the way.
func (o *observed) downClass() string {
	switch {
	case o.own:
		return ErrorInvalidArguments
	case !o.sent:
		return ErrorUnavailable
	case o.downErr == nil:
		return ErrorTool
	}
	return classOf(o.downErr)
}

// classOf classes the error a downstream request failed with.
func classOf(err error) string {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr) && werr.Code == wire.CodeProxy:
		return ErrorResult
	case errors.As(err, &werr):
		return ErrorDownstream
	case errors.Is(err, context.Canceled):
		return ErrorCancelled
	}
	return ErrorConnection
}
