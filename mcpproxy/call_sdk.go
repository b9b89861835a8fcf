package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/mcpproxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressGrace is how long after a call's result the proxy still relays
// the downstream progress notifications of that call.
const progressGrace = 2 * time.Second

// spliceMin is the size of prepared arguments from which callTool has the
// downstream connection splice them into the request it writes (see
// wire.Splices), rather than the SDK encode them again.
const spliceMin = 64 << 10

// callTool handles a call of a mirrored tool: prepare the arguments, forward
// the call, store the result and return what the agent should see. Every
// failure the agent can act on is a tool result with IsError set; only a
// call the agent cancelled returns an error.
//
// The downstream call runs under a context that Close (and Run, when its
// context is done) cancels, so a stuck downstream server cannot hold the
// proxy open.
func (p *Proxy) callTool(ctx context.Context, req *mcp.CallToolRequest, m *mirroredTool) (res *mcp.CallToolResult, err error) {
	ctx, o := p.observe(ctx, "tools/call", req.Params.Name, req.Params.Meta) // telemetry.go
	var vals *values.SessionValues
	defer func() { o.endCall(ctx, vals, res, err) }()
	if err := p.downstreamErr(); err != nil {
		return p.notCalled(m.up, err), nil
	}
	vals = p.stores.of(req.Session)

	l := p.current()

	bridge := bridged(req.Session, l) // see bridge.go

	if bridge && strings.HasPrefix(req.Params.RequestState, bridgeStatePrefix) {

		return p.resumeBridge(ctx, req, m, vals, l)

	}

	args := toolArgs(req)

	prepared, resolved, err := vals.Prepare(m.schema, args)

	o.prepared(args, prepared, resolved, err)

	if err != nil {
		return errorResult(fmt.Sprintf("%s was not called: %v", m.up, err)), nil
	}

	params := &mcp.CallToolParams{
		Meta:      p.requestMeta(req.Params.Meta),
		Name:      m.name,
		Arguments: json.RawMessage(prepared),
		// The answers to the input the server asked for, passed back.
		InputResponses: req.Params.InputResponses,
		RequestState:   req.Params.RequestState,
	}
	if len(prepared) >= spliceMin && !bridge { // startBridge holds them for as long as its call runs
		var release func()
		params.Arguments, release = p.splices.Hold(prepared) // see wire.Splices
		defer release()
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		// The call's progress goes on its own stream (over Streamable
		// HTTP, the response to its POST, which a client without the
		// standalone stream reads too), written before its result.
		sess := p.stores.session(req.Session)
		own := sess.callLane(ctx)
		down, release := p.progressToken(sess, tok, own)
		defer release()
		defer own.flush(ctx) // first: the result follows its progress
		params.SetProgressToken(down)
	}
	if bridge {
		return p.startBridge(ctx, o, req, m, vals, l, params)
	}
	callCtx, cancel := context.WithCancel(wire.WithTag(ctx, vals)) // for fixResult
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	callCtx, end := p.begin(callCtx, req.Session) // what the server asks meanwhile goes to this session
	defer end()
	downCtx, meta := o.sending(callCtx, params.Meta)
	params.Meta = meta
	res, err = l.down.CallTool(downCtx, params)
	o.answered(err)
	if err == nil && res.NeedsInput() {
		return inputRequired(res), nil
	}
	return p.finishCall(ctx, callCtx, l, m, vals, res, err, nil)
}
